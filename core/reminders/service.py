"""Reminders: the service that schedules, delivers and cancels them, and its agent tools.

The event log is the only store: ``reminder.scheduled``, ``reminder.fired`` and
``reminder.cancelled`` fold into ``State.reminders``; the apscheduler
BackgroundScheduler (memory job store) is rebuilt from that state by
:meth:`ReminderService.start` and kept in step by a store listener. There is no
second database.

Firing is split so tests drive time without sleeping: :func:`reminder_spec.due`
says which occurrences are due at a given ``now`` (pure), :meth:`fire` delivers
one. In production apscheduler is only the timer that calls into them.

Delivery order (never lose, never log twice): the notification is shown
*first*, then ``reminder.fired`` is appended, and before either the projection
is checked for that occurrence key. A crash between the two means the
occurrence is not in the log, so the next start delivers it again (marked
late); the log records it exactly once. The reverse order could lose a
reminder for good in the same window. Several missed occurrences of a
recurring reminder coalesce into the newest one; a late one is delivered only
within ``config.reminder_grace_hours``; a one-shot missed beyond that is
recorded as ``reminder.cancelled`` with reason ``expired`` (never delivered).

Threads: the timer is the App's :class:`~memtray.core.base.scheduler.Scheduler`
(which also runs the App's maintenance chores); its threads only hand work to the
app worker; all log writes, agent turns and notifier calls for reminders happen
there. Notifiers are looked up at delivery time (the App's notifier slot). A job
wakes the service every minute, since the timer's sleep does not advance while the
machine is suspended.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import threading
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from memtray import resources
from memtray.core.base.clock import Clock, parse_ts
from memtray.core.base.config import Settings
from memtray.core.base.errors import MemtrayError
from memtray.core.base.notify import NotifierSlot
from memtray.core.base.redact import redact
from memtray.core.base.scheduler import Scheduler
from memtray.core.base.worker import Worker
from memtray.core.llm.tools import ToolContext
from memtray.core.log.events import (
    REMINDER_TYPES,
    Payload,
    Record,
    ReminderCancelled,
    ReminderFired,
    ReminderScheduled,
)
from memtray.core.log.folded import ReminderState
from memtray.core.log.store import Store
from memtray.core.reminders import natural
from memtray.core.reminders.dueindex import DueIndex
from memtray.core.reminders.spec import (
    MODES,
    Occurrence,
    ReminderError,
    Schedule,
    check_text,
    describe_time,
    due,
    local,
    make_spec,
    zone,
)

__all__ = ["Occurrence", "ReminderError", "ReminderService"]

log = logging.getLogger(__name__)

_NEXT_JOB = "memtray:next-reminder"
_UNARMED = datetime.min.replace(tzinfo=UTC)  # forces _arm to look again
_WAKE_JOB = "memtray:wake"
#: the scheduler re-reads the wall clock at least this often
WAKE_SECONDS = 60


#: how long "Snooze" waits when nobody says
SNOOZE = "10m"


def session_of(reminder_id: str) -> str:
    """The session an agent-mode reminder's turns run in."""
    return f"reminder:{reminder_id}"


@functools.cache
class TurnRunner(Protocol):
    """Runs one agent turn (the agent room provides it): for ``--agent`` reminders."""

    async def turn(self, session: str, text: str, *, stream: bool = ..., tool_ctx: ToolContext | None = ...) -> Any: ...


class ReminderService:
    """Schedules, lists, cancels and delivers reminders for one App."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Clock,
        worker: Worker,
        notifier: NotifierSlot,
        agent: TurnRunner,
        scheduler: Scheduler,
        *,
        can_start: bool,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.worker = worker
        self.notifier = notifier
        self.agent = agent
        self.scheduler = scheduler
        self._can_start = can_start
        self._lock = threading.RLock()
        self._delivering = False
        self._schedules: dict[str, Schedule] = {}
        self._inflight: set[tuple[str, str]] = set()
        self._closed = False
        self._index: DueIndex | None = None
        self._armed: datetime | None = _UNARMED
        store.subscribe(self._on_records)

    # --- settings -------------------------------------------------------------------

    def default_zone(self) -> str:
        """config.timezone, else the system's zone (UTC if that is not a usable IANA name)."""
        name = self.settings.current.timezone or self.clock.local_zone_name()
        try:
            zone(name)
        except ReminderError:
            log.warning("the system time zone %r is not an IANA zone; reminders default to UTC", name)
            return "UTC"
        return name

    @property
    def grace(self) -> timedelta:
        return timedelta(hours=self.settings.current.reminder_grace_hours)

    @property
    def running(self) -> bool:
        return self._delivering

    def schedule_of(self, r: ReminderState) -> Schedule:
        s = self._schedules.get(r.id)
        if s is None:
            s = self._schedules[r.id] = Schedule.of(r)
        return s

    # --- commands -------------------------------------------------------------------

    def schedule(
        self,
        text: str,
        *,
        at: str | None = None,
        every: str | None = None,
        cron: str | None = None,
        tz: str | None = None,
        mode: str = "notify",
        session: str | None = None,
    ) -> ReminderState:
        """Validate and append ``reminder.scheduled``. Raises ReminderError; nothing is
        written then."""
        text = check_text(redact(text))
        if mode not in MODES:
            raise ReminderError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        spec = make_spec(at=at, every=every, cron=cron, tz=tz or self.default_zone(), now=self.clock.now())
        rid = self.store.new_id()
        payload = ReminderScheduled(reminder=rid, text=text, kind=spec.kind, spec=spec.spec, tz=spec.tz, mode=mode)
        self.store.append(payload, session=session)
        return self.store.state.reminders[rid]

    def find(self, ident: str) -> ReminderState:
        """A reminder by id or unique id prefix (case-insensitive)."""
        reminders = self.store.state.reminders
        key = ident.strip()
        if key in reminders:
            return reminders[key]
        up = key.upper()
        matches = [r for rid, r in reminders.items() if rid.upper().startswith(up)] if len(up) >= 4 else []
        if len(matches) > 1:
            active = [r for r in matches if r.active]
            if len(active) == 1:
                return active[0]
            raise ReminderError(f"{ident!r} matches {len(matches)} reminders; give more of the id")
        if not matches:
            raise ReminderError(f"no reminder with id {ident!r}", hint="See `memtray remind list`.")
        return matches[0]

    def cancel(self, ident: str, *, reason: str = "user") -> ReminderState:
        r = self.find(ident)
        if not r.active:
            raise ReminderError(f"reminder {r.id} is not active (it already fired or was cancelled)")
        self.store.append(ReminderCancelled(reminder=r.id, reason=reason))
        return r

    def snooze(self, ident: str, delay: str = SNOOZE) -> ReminderState:
        """Remind of ``ident``'s text again after ``delay`` (``10m``, ``1 hour``) or at a time
        (``tomorrow at 9``): a new one-shot with the same text and mode. A one-shot that has
        not fired yet moves there (it is cancelled, reason ``snoozed``, in the same write);
        a recurring one keeps its schedule. Returns the new reminder."""
        r = self.find(ident)
        raw = delay.strip()
        at = f"in {raw}" if natural.duration(raw) is not None else raw
        spec = make_spec(at=at, tz=r.tz, now=self.clock.now())
        rid = self.store.new_id()
        items: list[tuple[Payload, str | None, str | None]] = [(ReminderScheduled(
            reminder=rid, text=r.text, kind=spec.kind, spec=spec.spec, tz=spec.tz, mode=r.mode), None, None)]
        if r.active and r.kind == "at":
            items.append((ReminderCancelled(reminder=r.id, reason="snoozed"), None, None))
        self.store.append_many(items)
        return self.store.state.reminders[rid]

    def reminders(self, *, include_inactive: bool = False) -> list[ReminderState]:
        rs = [r for r in self.store.state.reminders.values() if include_inactive or r.active]
        return sorted(rs, key=lambda r: r.scheduled_seq)

    def next_fire(self, r: ReminderState, now: datetime | None = None) -> datetime | None:
        """When ``r`` fires next (a one-shot still awaiting catch-up: its own time)."""
        if not r.active:
            return None
        try:
            s = self.schedule_of(r)
        except ReminderError:
            return None
        if r.kind == "at":
            return parse_ts(r.spec).astimezone(UTC)
        return s.first_at_or_after(now or self.clock.now())

    def describe(self, r: ReminderState) -> str:
        try:
            return self.schedule_of(r).describe()
        except ReminderError as exc:
            return f"{r.kind} {r.spec!r} ({exc})"

    def as_json(self, r: ReminderState, now: datetime | None = None) -> dict[str, Any]:
        nxt = self.next_fire(r, now)
        status = "active" if r.active else ("done" if r.kind == "at" and r.fired else "cancelled")
        return {
            "id": r.id,
            "text": r.text,
            "kind": r.kind,
            "spec": r.spec,
            "tz": r.tz,
            "mode": r.mode,
            "status": status,
            "next": local(nxt, r.tz).isoformat() if nxt is not None else None,
            "last_fired": r.last_fired,
            "scheduled": r.scheduled_ts,
        }

    # --- firing ---------------------------------------------------------------------

    def due(self, now: datetime | None = None, ids: list[str] | None = None) -> list[Occurrence]:
        now = now or self.clock.now()
        return due(self.store.state, now, grace=self.grace, ids=ids, schedule_of=self.schedule_of)

    def _still_due(self, occ: Occurrence) -> ReminderState | None:
        r = self.store.state.reminders.get(occ.reminder)
        if r is None or not r.active or occ.key in r.fired:
            return None
        if r.device is not None:  # imported from the device that owns it: that one fires it
            return None
        if r.kind != "at" and r.last_fired is not None and occ.key <= r.last_fired:
            return None
        return r

    async def fire(self, occ: Occurrence) -> bool:
        """Deliver ``occ`` at most once per log: notify, then append ``reminder.fired``.

        Returns True if it was delivered now. Runs on the app worker.
        """
        key = (occ.reminder, occ.key)
        if key in self._inflight or self._still_due(occ) is None:
            return False
        self._inflight.add(key)
        try:
            r = self._still_due(occ)
            assert r is not None
            if occ.expired:
                log.warning(
                    "reminder %s missed its time %s by more than the grace period; recorded as expired",
                    r.id, occ.key,
                )
                self.store.append(
                    ReminderCancelled(reminder=r.id, reason="expired")
                )
                return False
            reply: str | None = None
            body = r.text
            if r.mode == "agent":
                reply, body = await self._agent_body(r, occ)
                if self._still_due(occ) is None:
                    return False  # cancelled while the agent ran
            self._notify(r, occ, body)
            fired = ReminderFired(reminder=r.id, occurrence=occ.key, late=occ.late, reply=reply)
            # a deterministic id: even a duplicate append of this occurrence is a no-op
            self.store.append(fired, id=f"reminder.fired:{r.id}:{occ.key}")
            return True
        finally:
            self._inflight.discard(key)

    async def fire_due(self, ids: list[str] | None = None, now: datetime | None = None) -> list[Occurrence]:
        """Fire everything due now; one failure does not stop the others."""
        delivered = []
        for occ in self.due(now, ids):
            try:
                if await self.fire(occ):
                    delivered.append(occ)
            except MemtrayError as exc:
                log.error("reminder %s (%s) could not be recorded: %s", occ.reminder, occ.key, exc)
        return delivered

    def tick(self) -> list[Occurrence]:
        """Fire what is due at the app clock's now, waiting for it (not from the worker)."""
        return self.worker.run(self.fire_due())

    def _notify(self, r: ReminderState, occ: Occurrence, body: str) -> None:
        title = "Reminder"
        if occ.late:
            title = f"Reminder (late: was due {describe_time(occ.at, r.tz)})"
        try:
            self.notifier.notify(title, body, kind="reminder", target=session_of(r.id))
        except Exception:  # a broken notifier must not block the log
            log.exception("the notifier failed for reminder %s; its text was: %s", r.id, body)

    async def _agent_body(self, r: ReminderState, occ: Occurrence) -> tuple[str | None, str]:
        session = session_of(r.id)
        marker = f"occurrence {occ.key}"
        prior = _reply_after(self.store.state.sessions.get(session), marker)
        if prior is not None:  # delivered before a crash, not yet logged: do not ask again
            return prior, prior
        prompt = resources.text("prompts/reminder_turn.txt").format(
            reminder=r.id, occurrence=occ.key, late=", delivered late" if occ.late else "", text=r.text
        )
        try:
            result = await self.agent.turn(
                session, prompt, stream=False, tool_ctx=ToolContext(session=session, in_reminder=True)
            )
        except MemtrayError as exc:
            log.warning("reminder %s: the agent run failed (%s); delivering its text", r.id, exc)
            return None, f"{r.text} (the assistant could not run: {exc})"
        reply = result.reply.strip()
        return (reply, reply) if reply else (None, r.text)

    # --- the timer ------------------------------------------------------------------

    def start(self) -> bool:
        """Start delivery: rebuild the jobs from the state, then catch up on missed ones.

        Only the daemon and the desktop call this; a service installed with
        ``start=False`` (and every one-shot CLI command) never fires. It starts the App's
        timer, and so its maintenance chores, too.
        """
        if not self._can_start:
            log.info("reminder delivery is disabled for this App")
            return False
        if self.store.readonly:
            log.warning("the event log is read-only; reminders are not delivered until it is repaired")
            return False
        with self._lock:
            if self._closed:  # the app is quitting (the desktop starts delivery on the worker)
                return False
            if self._delivering:
                return True
            if not self.scheduler.start():  # the App is closing
                return False
            now = self.clock.now()
            # what was missed while off or asleep: only what the next-due index says is
            # due is looked at, so start-up does not grow with the number of reminders
            self._index = DueIndex.open(self.store.home.state)
            self._index.sync(self.store.log, self.store.state, self.schedule_of)
            missed = self.due(now, ids=self._index.due_ids(now))
            # apscheduler sleeps on a monotonic timeout, which stands still while the
            # machine is suspended; waking it every minute bounds how late a reminder
            # that fell due during sleep is delivered after resume (or a clock change)
            self.scheduler.every(_WAKE_JOB, WAKE_SECONDS, self._on_timer, "wake up")
            self._delivering = True
        if missed:
            self._submit(self._fire_all(missed))  # once each, marked late
        self._arm()
        return True

    async def _fire_all(self, occurrences: list[Occurrence]) -> None:
        for occ in occurrences:
            try:
                await self.fire(occ)
            except MemtrayError as exc:
                log.error("reminder %s (%s) could not be recorded: %s", occ.reminder, occ.key, exc)

    def close(self) -> None:
        """Stop delivering (the App closes its timer first, so no job of ours runs on)."""
        with self._lock:
            self._closed = True
            self._delivering = False
            self.scheduler.remove(_WAKE_JOB)
            self.scheduler.remove(_NEXT_JOB)
        index, self._index = self._index, None
        if index is not None:
            index.close()

    def _arm(self) -> None:
        """One timer for the earliest next-due reminder (the index knows which)."""
        index = self._index
        if not self._delivering or index is None:
            return
        when = index.earliest()
        if when == self._armed:
            return
        self._armed = when
        if when is None:
            self.scheduler.remove(_NEXT_JOB)
            return
        self.scheduler.at(_NEXT_JOB, max(when, self.clock.now()), self._on_timer, "next reminder")

    def _on_timer(self) -> None:
        self._submit(self._fire_index_due())

    async def _fire_index_due(self) -> None:
        """Fire what the index says is due; move on any reminder that had nothing to fire
        (an occurrence skipped as too late), then arm the timer for the next one."""
        index = self._index
        if index is None:
            return
        now = self.clock.now()
        ids = index.due_ids(now)
        if ids:
            fired = {occ.reminder for occ in await self.fire_due(ids=ids, now=now)}
            for rid in ids:
                r = self.store.state.reminders.get(rid)
                if rid in fired or r is None:
                    continue
                if not r.active:
                    index.move(rid, None)
                    continue
                try:
                    nxt = self.schedule_of(r).next_after(now) if r.kind != "at" else None
                except ReminderError:
                    nxt = None
                index.move(rid, nxt)
        self._armed = _UNARMED
        self._arm()

    def _submit(self, coro: Coroutine[Any, Any, Any]) -> None:
        try:
            fut = self.worker.submit(coro)
        except RuntimeError:  # the worker has stopped (shutting down)
            coro.close()
            return
        fut.add_done_callback(_log_failure)

    def _on_records(self, records: list[Record], _state: Any) -> None:
        """Keep the next-due index and the timer in step with the log, whoever appended."""
        mine = [r for r in records if r.type in REMINDER_TYPES]
        for rec in mine:
            if isinstance(ev := rec.payload, ReminderScheduled | ReminderCancelled):
                self._schedules.pop(ev.reminder, None)  # a new or cancelled reminder: its schedule is parsed afresh
        index = self._index
        if index is None:
            return
        index.note(records, self.store.state, self.schedule_of)
        if mine:
            self._armed = _UNARMED
            self._arm()


def _log_failure(fut: concurrent.futures.Future[Any]) -> None:
    if fut.cancelled():
        return
    exc = fut.exception()
    if exc is not None:
        log.error("reminder delivery failed", exc_info=exc)


def _reply_after(session: Any, marker: str) -> str | None:
    """The assistant's final reply to the user message containing ``marker``, if any."""
    if session is None:
        return None
    msgs = session.messages
    for i in range(len(msgs) - 1, -1, -1):
        m = msgs[i]
        if m.get("role") == "user" and marker in (m.get("content") or ""):
            for later in msgs[i + 1 :]:
                if later.get("role") == "user":
                    return None
                if later.get("role") == "assistant" and not later.get("tool_calls") and not later.get("stop"):
                    text = str(later.get("content") or "").strip()
                    return text or None
            return None
    return None
