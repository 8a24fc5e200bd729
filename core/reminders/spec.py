"""When reminders fire: parsing and validating specs, next and missed occurrences.

Pure functions over values, no I/O and no clock of their own (``now`` is always
passed in), so tests drive time with a FakeClock. Three kinds:

* ``at``: one instant. Input is ISO 8601 with or without an offset (without:
  wall time in the reminder's zone), ``in 10m`` / ``+10m`` / ``in 2 minutes``
  relative to now, a bare ``HH:MM`` (today, or tomorrow if that has passed), or a
  phrase (``tomorrow at noon``, ``friday 9am``: :mod:`.natural`). Stored as ISO
  with the zone's offset.
* ``every``: a fixed interval of elapsed time (``90s``, ``30m``, ``1h30m``,
  ``1d``), at least :data:`MIN_INTERVAL`. Occurrences are ``anchor + k*interval``
  where the anchor is the ``reminder.scheduled`` event's time, floored to the
  second, so a rebuild from the log gives the same occurrences. A phrase
  (``2 hours``, ``weekday at 9``) becomes an interval or a cron (:mod:`.natural`).
* ``cron``: a standard 5-field expression (0 or 7 = Sunday, names allowed,
  ``@daily`` style nicknames) evaluated as wall time in the reminder's zone.

Next-fire computation uses apscheduler's DateTrigger/IntervalTrigger/CronTrigger.
Daylight-saving time (see docs/REMINDERS.md): a wall time that does not exist
(02:30 on a spring-forward day) resolves with the offset before the jump, i.e.
one hour later on the clock (03:30), exactly once; a wall time that happens
twice (autumn) fires on its first pass only, unless the cron's hour field is a
wildcard (``0 * * * *`` still fires every elapsed hour). Intervals are elapsed
time, so ``every 1d`` drifts by an hour in wall time across a change; use cron
for "every day at 9".

Occurrence keys are the scheduled fire time in UTC, ``YYYY-MM-DDTHH:MM:SSZ``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memtray.core.base.clock import parse_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.log.folded import ReminderState
from memtray.core.log.projections import State
from memtray.core.reminders import natural

if TYPE_CHECKING:  # apscheduler is imported where a trigger is built: not on the start-up path
    from apscheduler.triggers.base import BaseTrigger
    from apscheduler.triggers.cron import CronTrigger

KINDS = ("at", "every", "cron")
MODES = ("notify", "agent")
MIN_INTERVAL = timedelta(minutes=1)
MAX_TEXT = 2000
#: An occurrence delivered later than this after its time is marked late.
LATE_AFTER = timedelta(seconds=60)

_TICK = timedelta(microseconds=1)
_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION_RE = re.compile(r"(\d+)\s*([wdhms])")
_CRON_HINT = (
    "Use five fields: minute hour day-of-month month day-of-week, "
    "e.g. '30 9 * * mon-fri' (or @hourly, @daily, @weekly, @monthly, @yearly)."
)
_NICKNAMES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_STD_DAYS = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_APS_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # apscheduler 3.x: 0 = Monday


class ReminderError(MemtrayError):
    """A reminder request is invalid (bad time, zone, cron, interval, id); nothing was scheduled."""


# --- zones and times ---------------------------------------------------------------------


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``, or a ReminderError saying it is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ReminderError(
            f"unknown time zone {name!r}", hint="Use an IANA name like Europe/Berlin or America/New_York."
        ) from None


def occurrence_key(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def local(t: datetime, tz: str) -> datetime:
    """``t`` as wall time in ``tz`` (normalised: a nonexistent wall time never shows)."""
    return t.astimezone(UTC).astimezone(zone(tz))


def describe_time(t: datetime, tz: str) -> str:
    lt = local(t, tz)
    return lt.strftime("%Y-%m-%d %H:%M:%S %Z")


def _floor_second(t: datetime) -> datetime:
    return t.replace(microsecond=0)


# --- durations ---------------------------------------------------------------------------


def parse_duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``2h``, ``1d``, ``1w``, ``1h30m`` (spaces allowed). Positive only."""
    raw = text.strip().lower()
    if raw.startswith("-"):
        raise ReminderError(f"the interval must be positive, not {text!r}")
    compact = raw.replace(" ", "")
    pos = 0
    total = 0
    for m in _DURATION_RE.finditer(compact):
        if m.start() != pos:
            break
        total += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not compact or pos != len(compact):
        raise ReminderError(
            f"{text!r} is not a duration",
            hint="Write it like 90s, 30m, 2h, 1d, 1h30m or '2 hours'; a repetition may also be days and a "
            "time, like 'weekday at 9' or 'monday and thursday at 18:00'."
        )
    if total <= 0:
        raise ReminderError(f"the interval must be positive, not {text!r}")
    return timedelta(seconds=total)


def format_duration(d: timedelta) -> str:
    left = int(d.total_seconds())
    parts = []
    for unit in ("d", "h", "m", "s"):
        n, left = divmod(left, _UNITS[unit])
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts) or "0s"


def parse_interval(text: str) -> timedelta:
    d = parse_duration(text)
    if d < MIN_INTERVAL:
        raise ReminderError(
            f"the interval {text!r} is too short; the minimum is {format_duration(MIN_INTERVAL)}",
            hint="Use --at for a one-off reminder soon.",
        )
    return d


# --- at ----------------------------------------------------------------------------------

_RELATIVE_RE = re.compile(r"^(?:in\s+|\+)(.+)$", re.IGNORECASE)
_TIME_OF_DAY_RE = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


def parse_at(text: str, tz: str, now: datetime) -> datetime:
    """The instant ``text`` names (UTC, whole seconds); must be in the future."""
    raw = text.strip()
    z = zone(tz)
    m = _RELATIVE_RE.match(raw)
    tod = _TIME_OF_DAY_RE.match(raw)
    if m:
        when = now + (natural.duration(m.group(1)) or parse_duration(m.group(1)))
    elif tod:
        h, mi, s = int(tod.group(1)), int(tod.group(2)), int(tod.group(3) or 0)
        if h > 23 or mi > 59 or s > 59:
            raise ReminderError(f"{text!r} is not a time of day")
        today = now.astimezone(z)
        when = today.replace(hour=h, minute=mi, second=s, microsecond=0, fold=0)
        if when.astimezone(UTC) <= now:
            when = (today + timedelta(days=1)).replace(hour=h, minute=mi, second=s, microsecond=0, fold=0)
    else:
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            said = natural.moment(raw, z, now)
            if said is None:
                raise ReminderError(
                    f"{text!r} is not a date and time",
                    hint="Say it like 'in 2 minutes', 'tomorrow at noon', 'friday 9am', '18:30', or ISO 8601 "
                    "like 2026-12-01T09:30 (optionally with an offset, +01:00 or Z).",
                ) from None
            when = said
        if when.tzinfo is None:
            # wall time in the reminder's zone; fold=0: a repeated hour means its first
            # pass, a skipped hour resolves with the offset before the jump
            when = when.replace(tzinfo=z, fold=0)
    out = _floor_second(when.astimezone(UTC))
    if out <= now:
        raise ReminderError(
            f"{describe_time(out, tz)} is in the past (it is now {describe_time(now, tz)})",
            hint="Give a time in the future.",
        )
    return out


# --- cron --------------------------------------------------------------------------------


def _dow_value(tok: str, text: str) -> int:
    if tok.isdigit() and int(tok) <= 7:
        return int(tok)
    if tok in _STD_DAYS:
        return _STD_DAYS[tok]
    if tok[:3] in _STD_DAYS and tok == _FULL_DAYS[_STD_DAYS[tok[:3]]]:
        return _STD_DAYS[tok[:3]]
    raise ReminderError(f"invalid cron expression {text!r}: bad day of week {tok!r}", hint=_CRON_HINT)


_FULL_DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")


def _dow_to_apscheduler(field_: str, text: str) -> str:
    """A standard day-of-week field (0/7 = Sunday) in apscheduler 3.x names (0 = Monday)."""
    if field_ == "*":
        return "*"
    days: set[int] = set()
    for part in field_.split(","):
        m = re.fullmatch(r"(\*|[0-9a-z]+)(?:-([0-9a-z]+))?(?:/(\d+))?", part)
        if m is None:
            raise ReminderError(f"invalid cron expression {text!r}: bad day of week {part!r}", hint=_CRON_HINT)
        first, last, step_s = m.groups()
        if first == "*":
            if last is not None:
                raise ReminderError(f"invalid cron expression {text!r}: bad day of week {part!r}", hint=_CRON_HINT)
            lo, hi = 0, 6
        else:
            lo = _dow_value(first, text)
            hi = _dow_value(last, text) if last is not None else (6 if step_s else lo)
        step = int(step_s) if step_s else 1
        if step <= 0 or lo > hi:
            raise ReminderError(f"invalid cron expression {text!r}: bad day of week {part!r}", hint=_CRON_HINT)
        days.update(d % 7 for d in range(lo, hi + 1, step))
    return ",".join(_APS_DAYS[(d - 1) % 7] for d in sorted(days, key=lambda d: (d - 1) % 7))


def normalise_cron(text: str) -> str:
    """The canonical form of a cron expression (lower case, single spaces, nicknames expanded)."""
    raw = " ".join(text.lower().split())
    raw = _NICKNAMES.get(raw, raw)
    fields = raw.split(" ") if raw else []
    if len(fields) != 5:
        raise ReminderError(
            f"invalid cron expression {text!r}: {len(fields)} fields, expected 5", hint=_CRON_HINT
        )
    if fields[2] != "*" and fields[4] != "*":
        raise ReminderError(
            f"invalid cron expression {text!r}: it restricts both day of month and day of week",
            hint="Classic cron fires when *either* matches, which surprises most people; "
            "schedule two reminders instead.",
        )
    return raw


def cron_trigger(expr: str, tz: str) -> CronTrigger:
    """apscheduler's trigger for a standard cron expression in ``tz``."""
    canonical = normalise_cron(expr)
    try:
        return _cron_trigger(canonical, tz)
    except ValueError as exc:
        raise ReminderError(f"invalid cron expression {expr!r}: {exc}", hint=_CRON_HINT) from None
    except ReminderError as exc:
        raise ReminderError(str(exc).replace(repr(canonical), repr(expr)), hint=exc.hint) from None


@functools.lru_cache(maxsize=4096)
def _cron_trigger(canonical: str, tz: str) -> CronTrigger:
    # shared between reminders: a trigger keeps no state between calls, and compiling
    # one costs more than evaluating it
    from apscheduler.triggers.cron import CronTrigger

    minute, hour, day, month, dow = canonical.split(" ")
    return CronTrigger(
        minute=minute, hour=hour, day=day, month=month,
        day_of_week=_dow_to_apscheduler(dow, canonical), timezone=zone(tz),
    )


# --- schedules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """A validated spec plus the apscheduler trigger that computes its fire times."""

    kind: str
    spec: str
    tz: str
    created: datetime  # when the reminder was scheduled (UTC); bounds the first occurrence
    trigger: BaseTrigger = field(compare=False, repr=False)
    pinned_hour: bool = False  # cron with a fixed hour: a repeated wall hour fires once
    #: the last answer of next_after as (query, result): next_after is monotonic, so it
    #: answers any query in [query, result) too (the timer asks right after due() did)
    _memo: list[tuple[datetime, datetime]] = field(default_factory=list, init=False, compare=False, repr=False)

    @classmethod
    def build(cls, kind: str, spec: str, tz: str, created: datetime) -> Schedule:
        from apscheduler.triggers.date import DateTrigger
        from apscheduler.triggers.interval import IntervalTrigger

        z = zone(tz)
        created = created.astimezone(UTC)
        if kind == "at":
            return cls(kind, spec, tz, created, DateTrigger(run_date=parse_ts(spec), timezone=z))
        if kind == "every":
            iv = parse_duration(spec)
            start = _floor_second(created) + iv
            trig = IntervalTrigger(seconds=int(iv.total_seconds()), start_date=start, timezone=z)
            return cls(kind, spec, tz, created, trig)
        if kind == "cron":
            hour = normalise_cron(spec).split(" ")[1]
            return cls(kind, spec, tz, created, cron_trigger(spec, tz), pinned_hour=not hour.startswith("*"))
        raise ReminderError(f"unknown reminder kind {kind!r}; expected one of {', '.join(KINDS)}")

    @classmethod
    def of(cls, r: ReminderState) -> Schedule:
        return cls.build(r.kind, r.spec, r.tz, parse_ts(r.scheduled_ts))

    @property
    def interval(self) -> timedelta:
        assert self.kind == "every"
        return self.trigger.interval  # type: ignore[no-any-return]

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire time strictly after ``after`` (UTC), or None if there is none."""
        after = after.astimezone(UTC)
        if self.kind == "at":
            t: datetime = self.trigger.get_next_fire_time(None, after)
            return t.astimezone(UTC) if t > after else None
        memo = self._memo
        if memo and memo[0][0] <= after < memo[0][1]:
            return memo[0][1]
        found = self._next_after(after)
        if found is not None:
            self._memo[:] = [(after, found)]
        return found

    def _next_after(self, after: datetime) -> datetime | None:
        cur = after
        while True:
            nxt: datetime | None = self.trigger.get_next_fire_time(None, cur + _TICK)
            if nxt is None:
                return None
            nxt = nxt.astimezone(UTC)
            if self.pinned_hour and nxt.astimezone(self.trigger.timezone).fold == 1:
                cur = nxt  # the second pass of a repeated wall hour: already fired on the first
                continue
            return nxt

    def first_at_or_after(self, now: datetime) -> datetime | None:
        return self.next_after(now - _TICK)

    def latest(self, after: datetime, now: datetime) -> datetime | None:
        """The last fire time ``t`` with ``after < t <= now`` (None if there is none)."""
        first = self.next_after(after)
        if first is None or first > now:
            return None
        if self.kind == "at":
            return first
        if self.kind == "every":
            start = _floor_second(self.created) + self.interval
            step = int(self.interval.total_seconds())
            n = int((now - start).total_seconds()) // step
            return max(first, start + timedelta(seconds=n * step))
        # cron: find an occurrence close to now, widening the window, then walk forward
        cur = first
        for window in _WINDOWS:
            lo = now - window
            if lo <= after:
                break
            t = self.next_after(lo)
            if t is not None and t <= now:
                cur = t
                break
        while True:
            nxt = self.next_after(cur)
            if nxt is None or nxt > now:
                return cur
            cur = nxt

    def describe(self) -> str:
        if self.kind == "at":
            return f"once at {describe_time(parse_ts(self.spec), self.tz)}"
        if self.kind == "every":
            return f"every {self.spec}"
        return f"cron '{self.spec}' ({self.tz})"


_WINDOWS = (
    timedelta(minutes=2), timedelta(hours=2), timedelta(days=2), timedelta(days=64), timedelta(days=800)
)


@dataclass(frozen=True)
class Spec:
    """A validated, canonical reminder spec ready to go into ``reminder.scheduled``."""

    kind: str
    spec: str
    tz: str
    first: datetime  # the first fire time, for telling the user


def make_spec(
    *, at: str | None = None, every: str | None = None, cron: str | None = None, tz: str, now: datetime
) -> Spec:
    """Validate exactly one of ``at``/``every``/``cron`` in zone ``tz``. Raises ReminderError."""
    given = [(k, v) for k, v in (("at", at), ("every", every), ("cron", cron)) if v is not None]
    if len(given) != 1:
        raise ReminderError(
            "give exactly one of at, every or cron" + (f" (got {', '.join(k for k, _ in given)})" if given else "")
        )
    kind, raw = given[0]
    tz = tz.strip()
    zone(tz)
    if kind == "at" and raw.strip().lower().startswith("every "):
        kind = "every"  # "every weekday at 9" given as a time
    if kind == "every":
        kind, raw = _every(raw)
    if kind == "at":
        spec = local(parse_at(raw, tz, now), tz).isoformat()
    elif kind == "every":
        spec = format_duration(parse_interval(raw))
    else:
        spec = normalise_cron(raw)
    sched = Schedule.build(kind, spec, tz, now)
    first = sched.next_after(now)
    if first is None:
        raise ReminderError(f"the cron expression {raw!r} never fires", hint=_CRON_HINT)
    return Spec(kind, spec, tz, first)


def _every(raw: str) -> tuple[str, str]:
    """An ``every`` spec as (kind, spec): what a phrase says ("2 hours"; "weekday at 9": a
    cron), else ``30m`` as it is (its own error when it is not a duration)."""
    said = natural.recurrence(raw)
    if said is not None:
        return said
    parse_duration(raw)  # raises the precise reason: not positive, not a duration
    return "every", raw


def check_text(text: str) -> str:
    text = text.strip()
    if not text:
        raise ReminderError("a reminder needs a text")
    if len(text) > MAX_TEXT:
        raise ReminderError(f"the reminder text is {len(text):,} characters; the limit is {MAX_TEXT:,}")
    return text


# --- due occurrences ---------------------------------------------------------------------


@dataclass(frozen=True)
class Occurrence:
    """One scheduled firing of a reminder that is due now."""

    reminder: str
    at: datetime  # scheduled fire time (UTC)
    late: bool = False
    #: a missed one-shot beyond the grace period: recorded as expired, not delivered
    expired: bool = False

    @property
    def key(self) -> str:
        return occurrence_key(self.at)


def due_one(r: ReminderState, now: datetime, grace: timedelta, sched: Schedule | None = None) -> Occurrence | None:
    """The occurrence of ``r`` to act on at ``now``, if any.

    Several missed occurrences of a recurring reminder coalesce into the newest
    one. A late occurrence (more than :data:`LATE_AFTER` after its time) is
    delivered only within ``grace``; a one-shot beyond it is returned as
    ``expired``, a recurring one is skipped (its next occurrence comes anyway).
    """
    if not r.active or r.device is not None:  # a peer's reminder: its own device fires it
        return None
    sched = sched or Schedule.of(r)
    if r.kind == "at":
        t = parse_ts(r.spec).astimezone(UTC)
        if t > now or occurrence_key(t) in r.fired:
            return None
    else:
        after = parse_ts(r.scheduled_ts)
        if r.last_fired is not None:
            after = max(after, parse_ts(r.last_fired))
        found = sched.latest(after, now)
        if found is None or occurrence_key(found) in r.fired:
            return None
        t = found
    lateness = now - t
    late = lateness > LATE_AFTER
    if late and lateness > max(grace, LATE_AFTER):
        return Occurrence(r.id, t, late=True, expired=True) if r.kind == "at" else None
    return Occurrence(r.id, t, late=late)


def due(
    state: State,
    now: datetime,
    *,
    grace: timedelta,
    ids: list[str] | None = None,
    schedule_of: Callable[[ReminderState], Schedule] | None = None,
) -> list[Occurrence]:
    """Every occurrence to act on at ``now`` (pure: reads ``state``, changes nothing).

    A reminder whose spec cannot be evaluated any more (say its zone left the
    system's tz database) is skipped here; the service logs it when it builds jobs.
    """
    out = []
    for rid in ids if ids is not None else list(state.reminders):
        r = state.reminders.get(rid)
        if r is None or not r.active:
            continue
        try:
            occ = due_one(r, now, grace, schedule_of(r) if schedule_of is not None else None)
        except ReminderError:
            continue
        if occ is not None:
            out.append(occ)
    return out
