"""Facts with a time, as memory changes: what is dated, what ended, what is due for a check.

The time of a fact is in its words (:mod:`memtray.core.memory.timing`); this module is
what :class:`~memtray.core.memory.service.MemoryService` does with it, every change a
revision like any other (undoable by ``memtray memory undo``):

* :meth:`DatedOps.expire_ended` removes the facts past their end by more than
  :data:`timing.GRACE_DAYS` in one revision (reason ``expired``) whose dropped facts say
  "ended on 2027-07-31". Until then the prompt shows such a fact as past.
* :meth:`DatedOps.review_due` lists the facts whose check date has come;
  :meth:`DatedOps.check_fact` records the user's answer: ``yes`` (the check date is
  written and the next one moved, reason ``review``; a fact checked today already is left
  as it is, no revision), ``no-longer`` (the fact is removed, "no longer true", reason
  ``review``) or ``edit`` (new words, checked).

The day is always the caller's (from the injected clock, in the user's zone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memtray.core.base.clock import Clock
from memtray.core.base.errors import MemtrayError
from memtray.core.base.notify import Notifier
from memtray.core.log.events import CheckinAsked, MemoryWritten, Record
from memtray.core.log.store import Store
from memtray.core.memory import factdiff, scopes, timing
from memtray.core.memory import facts as fact_ids
from memtray.core.memory.browse import MemoryError_
from memtray.core.memory.factdiff import Fact
from memtray.core.memory.facts import Ledger
from memtray.core.memory.projection import GitProjection
from memtray.core.memory.revisions import Revision
from memtray.core.memory.wording import clean_controls

log = logging.getLogger(__name__)

#: the answers a check-in offers (``memtray memory check``, the quick chat's buttons)
ANSWERS = ("yes", "no-longer", "edit")
NO_LONGER = "no longer true (answered when asked to check it)"


def fact_json(f: Fact, today: date) -> dict[str, Any]:
    """One dated fact as the CLI's ``--json`` and the desktop show it."""
    words, when = timing.split(f.text)
    status = timing.status(when, today)
    return {"id": f.id, "text": f.text, "words": words, "section": f.section,
            "time": when.to_json() if when else {}, "status": status,
            # a fact past its end is not asked "still true?" (it has ended; it leaves memory)
            "due": timing.due(when, today) and status != "past", "question": question(words)}


def question(words: str) -> str:
    """The gentle question a check-in asks: "Still training for the marathon?" for a fact
    that starts with a verb in -ing, else "Still true: Lives in Graz?"."""
    w = words.rstrip(" .")
    return f"Still {w[:1].lower()}{w[1:]}?" if w[:1].isupper() and w.split(" ", 1)[0].endswith("ing") else (
        f"Still true: {w}?")


class DatedOps:
    """The dated-fact changes of :class:`~memtray.core.memory.service.MemoryService`."""

    store: Store
    projection: GitProjection
    write: Callable[..., list[Record]]
    ledger: Callable[[], Ledger]
    revision: Callable[[str], Revision]
    edit_fact: Callable[..., Revision]
    memory_events: Callable[[], list[Record]]

    def dated(self, today: date) -> list[dict[str, Any]]:
        """Every fact of memory with a time, as :func:`fact_json` shows it."""
        return [fact_json(f, today) for f in self.ledger().facts if timing.split(f.text)[1] is not None]

    def review_due(self, today: date, scope: str | None = None) -> list[dict[str, Any]]:
        """The facts whose check date has come, oldest check date first; with ``scope``, only
        those a conversation of that scope sees (the global ones and the scope's: a work chat
        is never asked about a family fact)."""
        due = [d for d in self.dated(today) if d["due"]]
        if scope is not None:
            where = scopes.scope_map(self.ledger(), self.store.state.memory)
            due = [d for d in due if where.get(d["id"], scopes.GLOBAL) in (scopes.GLOBAL, scope)]
        return sorted(due, key=lambda d: (d["time"].get("review_after", ""), d["id"]))

    def expire_ended(self, today: date) -> dict[str, Any] | None:
        """Remove the facts past their end (by more than the grace days) in one revision,
        each with "ended on ..." as its reason: ``{"rev", "removed": [{id, text, reason}]}``,
        or None when none has ended."""
        self.projection.adopt_worktree()
        led = self.ledger()
        gone = [(f, w) for f in led.facts if timing.ended(w := timing.split(f.text)[1], today)]
        if gone:  # one the user brought back (an undo of its expiry) stays: they chose so
            back = self._expired_before()
            gone = [(f, w) for f, w in gone if f.id not in back]
        if not gone:
            return None
        text = self.store.state.memory
        for k in sorted((led.facts.index(f) for f, _w in gone), reverse=True):  # the ledger is in text order
            text = factdiff.remove_fact(text, factdiff.parse(text)[k])
        keep = Ledger(tuple(f for f in led.facts if f.id not in {g.id for g, _ in gone}), led.next)
        # the reason is said inside other words ("removed by the end of its time: ended on ...",
        # `memory expire`'s line), so it has no parentheses of its own: nesting them read badly
        reasons = {f.id: f"ended on {w.until.isoformat()}" for f, w in gone if w and w.until}
        self.write(text, reason="expired", source="memtray", dropped_reasons=reasons, facts=keep)
        return {"rev": self.revision("HEAD").rev,
                "removed": [{"id": f.id, "text": f.text, "reason": reasons.get(f.id, "")} for f, _w in gone]}

    def _expired_before(self) -> set[str]:
        out: set[str] = set()
        for rec in self.memory_events():
            w = MemoryWritten.of(rec)
            if w.reason == "expired" and w.diff:
                out |= {d["id"] for d in w.diff["dropped"]}
        return out

    def _left_at_its_end(self, key: str | None) -> None:
        """Say so when the fact ``key`` left memory at its end (:meth:`expire_ended`): "no fact"
        would read as a wrong id. Nothing when it did not (or came back since)."""
        for rec in reversed(self.memory_events()):
            w = MemoryWritten.of(rec)
            gone = next((d for d in w.diff["dropped"] if d["id"] == key), None) if key and w.diff else None
            if gone is None:
                continue
            if w.reason != "expired":
                return
            rev = self.revision(f"seq:{rec.seq}")
            raise MemoryError_(f"{key} has ended and is no longer in memory: {gone['reason'] or 'past its end'}, "
                               f"removed in revision {rev.short}: {gone['text']}",
                               hint=f"To bring it back: memtray memory undo {rev.short}")

    def check_fact(self, fact_id: str, answer: str, today: date, text: str | None = None) -> Revision:
        """Record the user's answer to "still true?" for one fact (by id); one revision. A
        ``yes`` for a fact already checked on ``today`` writes nothing and returns HEAD."""
        if answer not in ANSWERS:
            raise MemoryError_(f"unknown answer {answer!r}", hint="Answer yes, no-longer or edit.")
        self.projection.adopt_worktree()
        led = self.ledger()
        key = fact_ids.id_key(fact_id)  # "F12", "f12", "#F12" as the user types it
        found = led.get(key) if key else None
        if found is None:
            self._left_at_its_end(key)
            raise MemoryError_(f"no fact {fact_id!r} in memory now",
                               hint="`memtray memory review-due` lists the facts to check.")
        when = timing.split(found.text)[1]
        if when is not None and when.until is not None and today > when.until and (
                answer == "yes" or (answer == "edit" and timing.split(text or "")[1] is None)):
            # "still true" (or new words keeping its time) would keep a fact whose time says it ended
            raise MemoryError_(
                f"{found.id} ended on {when.until.isoformat()}: it is past its end, so it cannot be checked as "
                f"still true: {found.text}", hint=(
                    f"If it holds again, give it a new time: memtray memory check {found.id} --edit "
                    f"'WORDS (until YYYY-MM-DD)'; if not, --no-longer removes it now (a fact past its end "
                    f"leaves memory on its own {timing.GRACE_DAYS} days after it)."))
        current = self.store.state.memory
        k = led.facts.index(found)
        if answer == "no-longer":
            new = factdiff.remove_fact(current, factdiff.parse(current)[k])
            self.write(new, reason="review", source="user", dropped_reasons={found.id: NO_LONGER},
                       facts=Ledger(tuple(f for f in led.facts if f.id != found.id), led.next))
            return self.revision("HEAD")
        if answer == "edit":
            words = " ".join(clean_controls(text or "").split())
            if not words:
                raise MemoryError_("the new text is empty", hint="Answer no-longer to remove the fact.")
            own = timing.split(words)[1]
            return self.edit_fact(found.id, timing.with_when(words, own or timing.checked(when, today)),
                                  "edited when asked to check it")
        if when is not None and when.checked == today:
            # checked today already: a second "yes" would write the same words again, an empty
            # revision; memory stands as it is (the caller sees no new revision)
            return self.revision("HEAD")
        after = timing.checked(when, today)
        new = factdiff.replace_fact(current, k, timing.with_when(found.text, after))
        assert after.review is not None
        self.write(new, reason="review", source="user", facts=Ledger.with_ids(new, led.ids, led.next),
                   dropped_reasons={found.id: f"still true on {today.isoformat()}; asked again after "
                                              f"{after.review.isoformat()}"})
        return self.revision("HEAD")


def local_day(now: datetime, zone: str) -> date:
    """The user's day at ``now`` (an aware time) in the IANA zone ``zone`` (UTC when unknown)."""
    try:
        tz = ZoneInfo(zone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        tz = ZoneInfo("UTC")
    return now.astimezone(tz).date()


class CheckIns:
    """The background side of dated facts, on the reminders' maintenance timer and before
    each turn: facts past their end leave memory (:meth:`DatedOps.expire_ended`), and each
    fact due for a check is asked about once per check date by a notification whose
    buttons answer it (``target`` ``check:<id>``). Each question asked is a ``checkin.asked``
    event in the log, read back at the first sweep and followed after, so a restart never
    asks again about the same check date (each device asks once: the event is this
    device's bookkeeping and does not sync, core/log/origin.py); a new one
    (after "yes", or a hand edit) asks again. A read-only log remembers for this run only."""

    def __init__(self, memory: DatedOps, clock: Clock, zone: Callable[[], str], notifier: Notifier,
                 readonly: Callable[[], bool]) -> None:
        self.memory = memory
        self.clock = clock
        self.zone = zone
        self.notifier = notifier
        self.readonly = readonly
        self._asked: set[tuple[str, str]] = set()
        self._read_to = 0  # the log's seq up to which the asked questions are in _asked

    def _follow(self) -> None:
        """Add the questions asked since the last look (this process's, or an earlier one's)."""
        store = self.memory.store
        last = store.log.last_seq
        if last <= self._read_to:
            return
        for rec in store.log.records(self._read_to):
            if rec.type == CheckinAsked.TYPE:
                a = CheckinAsked.of(rec)
                self._asked.add((a.fact, a.review_after))
        self._read_to = last

    def today(self) -> date:
        return local_day(self.clock.now(), self.zone())

    def expire(self) -> dict[str, Any] | None:
        """Remove the ended facts now; never fails the caller (a turn goes on without it)."""
        if self.readonly():
            return None
        try:
            return self.memory.expire_ended(self.today())
        except MemtrayError as exc:
            log.warning("could not remove the facts past their end: %s", exc)
            return None
        except Exception:  # upkeep, not a step a turn depends on: the turn goes on (as recall)
            log.exception("removing the facts past their end failed")
            return None

    def sweep(self) -> None:
        """Expire, then ask about what is due and not asked yet."""
        gone = self.expire()
        if gone is not None:
            self.notifier.notify("Memory: past their end", "; ".join(timing.body(f["text"]) for f in gone["removed"]),
                                 kind="memory", target=f"memory:{gone['rev']}")
        self._follow()
        today = self.today()
        for item in self.memory.review_due(today):
            key = (item["id"], item["time"].get("review_after", ""))
            if key in self._asked:
                continue
            self._asked.add(key)
            if not self.readonly():  # durable before it is shown: a crash after never asks twice
                self.memory.store.append(CheckinAsked(fact=key[0], review_after=key[1], day=today.isoformat()))
            self.notifier.notify("Still true?", f"{item['question']} ({item['words']})", kind="memory",
                                 target=f"check:{item['id']}")
