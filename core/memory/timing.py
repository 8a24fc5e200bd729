"""Facts with a time: when a fact holds (from, until) and when to check it again (pure).

The time of a fact lives in MEMORY.md, at the end of its bullet, in words a person
reads and edits without a manual::

    - Trip to Kyoto (from 2027-07-01 until 2027-07-31; check after 2027-08-01)
    - Training for the Berlin marathon (until 2027-09-26; checked 2026-12-04; check after 2027-03-04)

:func:`split` reads it back. The last parenthesis of the fact is the time only when
every one of its ``;``-separated parts is one of ``from D``, ``until D``, ``from D
until D``, ``check after D``, ``checked D`` with a real ISO date (case, spaces, a
comma for ``;`` and ``to``/``till`` for ``until`` are forgiven). Anything else there
("(born 2019)", "(until 2027-13-45)") is ordinary text: a garbled hand edit stays in
the fact as written and never fails a read.

:func:`read_members` is the door for a model's ``from`` / ``until`` / ``review_after``
members: ISO dates only, in a sane range and order, else a reason the change is held
for. :func:`supports` is the receipt check of a time: the quote must say when.
:func:`status` and :func:`note` say what is upcoming, current and past on a given day;
the caller passes the day (from the injected clock), nothing here reads one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta

from memtray import resources
from memtray.core.memory import factdiff

__all__ = [
    "GRACE_DAYS",
    "MEMBERS",
    "When",
    "anchored",
    "body",
    "due",
    "ended",
    "is_note",
    "note",
    "note_lines",
    "note_none",
    "read_members",
    "relative_span",
    "render",
    "same_words",
    "split",
    "status",
    "supports",
    "with_when",
]

#: how long a fact past its end is still shown (as past) before it leaves memory
GRACE_DAYS = 7
#: the review interval when nothing says better (the first "yes", a fact without a check date)
DEFAULT_REVIEW_DAYS = 90
MIN_REVIEW_DAYS = 7
MAX_REVIEW_DAYS = 365
#: the ``save_memory`` members that carry a time (an edit's, or a receipt's)
MEMBERS = ("from", "until", "review_after")
_EARLIEST = date(1900, 1, 1)
_LATEST = date(2200, 12, 31)


@dataclass(frozen=True)
class When:
    """When a fact holds and when to ask about it again; every field optional."""

    start: date | None = None
    until: date | None = None
    review: date | None = None
    checked: date | None = None

    @property
    def empty(self) -> bool:
        return self.start is None and self.until is None and self.review is None and self.checked is None

    def to_json(self) -> dict[str, str]:
        out = {"from": self.start, "until": self.until, "review_after": self.review, "checked": self.checked}
        return {k: v.isoformat() for k, v in out.items() if v is not None}


_DATE = r"(\d{4}-\d{1,2}-\d{1,2})"
_UNTIL = r"(?:until|till|til|to|through|thru)"
_PART_RES = (
    ("range", re.compile(rf"from\s+{_DATE}\s+{_UNTIL}\s+{_DATE}", re.I)),
    ("from", re.compile(rf"(?:from|since|starting)\s+{_DATE}", re.I)),
    ("until", re.compile(rf"{_UNTIL}\s+{_DATE}", re.I)),
    ("review", re.compile(rf"(?:check|review)(?:\s+again)?\s+(?:after|on|from)\s+{_DATE}", re.I)),
    ("checked", re.compile(rf"(?:last\s+)?checked(?:\s+on)?\s+{_DATE}", re.I)),
)
#: a time at a fact's end, in ASCII or full-width brackets (a Chinese keyboard types the latter)
_TAIL_RE = re.compile(r"\s*[(\uff08]([^()\uff08\uff09]{4,200})[)\uff09]\s*$")
#: a full stop after the time ("(until 2027-07-31).") is a sentence's end, not part of the words
_END_STOP_RE = re.compile(r"([)\uff09])\s*[.\u3002]\s*$")


def _date(text: str) -> date | None:
    try:
        y, m, d = (int(x) for x in text.split("-"))
        out = date(y, m, d)
    except ValueError:
        return None
    return out if _EARLIEST <= out <= _LATEST else None


def _read(inner: str) -> When | None:
    fields: dict[str, date] = {}
    parts = [p.strip() for p in re.split(r"[;,]", inner) if p.strip()]
    if not parts:
        return None
    for part in parts:
        for kind, rx in _PART_RES:
            m = rx.fullmatch(part)
            if m is None:
                continue
            days = [_date(g) for g in m.groups()]
            if any(d is None for d in days):
                return None
            names = {"range": ("start", "until"), "from": ("start",), "until": ("until",),
                     "review": ("review",), "checked": ("checked",)}[kind]
            for name, d in zip(names, days, strict=True):
                if name in fields:
                    return None  # "from X; from Y": not ours to choose
                assert d is not None
                fields[name] = d
            break
        else:
            return None
    when = When(**fields)
    if when.start and when.until and when.start > when.until:
        return None
    return when


def split(text: str) -> tuple[str, When | None]:
    """A fact's words and its time, or ``(text, None)`` when it ends in no (valid) time.

    Hand edits are read as people write them: the time in one group or several
    ("(from 2027-07-01 until 2027-07-31) (check after 2027-01-01)"), in full-width
    brackets, with a full stop after it. Two groups that both say one thing ("from")
    or a start after the end are no time: the text stays words (:func:`problem` says why).
    """
    words = _END_STOP_RE.sub(r"\1", text.rstrip())
    found: dict[str, date] = {}
    while (m := _TAIL_RE.search(words)) is not None and m.start() > 0:
        when = _read(m.group(1))
        if when is None:
            if found and _looks_timed(m.group(1)):
                return text, None  # "(from 2027-01-01 until 2026-01-01) (checked …)": not half of it
            break
        part = {k: v for k, v in vars(when).items() if v is not None}
        if part.keys() & found.keys():
            return text, None  # "(from X) (from Y)": not ours to choose
        found.update(part)
        words = words[: m.start()].rstrip()
    if not found:
        return text, None
    joined = When(**found)
    if joined.start and joined.until and joined.start > joined.until:
        return text, None
    return words, joined


def problem(text: str) -> str | None:
    """Why the time at the end of ``text`` cannot be read, when it looks like one (a
    bracket with a date and a word of time in it); None when it reads or is no time."""
    if split(text)[1] is not None:
        return None
    inner = " ".join(m.group(1) for m in _GROUP_RE.finditer(_END_STOP_RE.sub(r"\1", text.rstrip())))
    if not _looks_timed(inner):
        return None
    bad = next((d for d in re.findall(_DATE, inner) if _date(d) is None), None)
    if bad is not None:
        return f"{bad} is not a date memtray can use"
    dates = [_date(d) for d in re.findall(rf"(?:from|since|starting)\s+{_DATE}", inner, re.I)]
    ends = [_date(d) for d in re.findall(rf"{_UNTIL}\s+{_DATE}", inner, re.I)]
    if len(dates) > 1 or len(ends) > 1:
        return "the time says 'from' or 'until' twice"
    if dates and ends and dates[0] and ends[0] and dates[0] > ends[0]:
        return f"'from' {dates[0].isoformat()} is after 'until' {ends[0].isoformat()}"
    return ("the time is not in a form memtray reads: write it as "
            "(from YYYY-MM-DD until YYYY-MM-DD; check after YYYY-MM-DD), each part optional")


_GROUP_RE = re.compile(r"[(\uff08]([^()\uff08\uff09]{4,200})[)\uff09]")


def _looks_timed(inner: str) -> bool:
    """Whether a bracket's words look like a time: a date and a word of time."""
    return bool(re.search(_DATE, inner)) and bool(re.search(
        r"\b(?:from|since|starting|until|till|til|to|through|thru|check|review|checked)\b", inner, re.I))


def body(text: str) -> str:
    """A fact without its time."""
    return split(text)[0]


def render(when: When | None) -> str:
    """The time as MEMORY.md writes it (without the parentheses); "" for none."""
    if when is None or when.empty:
        return ""
    parts: list[str] = []
    if when.start and when.until:
        parts.append(f"from {when.start.isoformat()} until {when.until.isoformat()}")
    elif when.start:
        parts.append(f"from {when.start.isoformat()}")
    elif when.until:
        parts.append(f"until {when.until.isoformat()}")
    if when.checked:
        parts.append(f"checked {when.checked.isoformat()}")
    if when.review:
        parts.append(f"check after {when.review.isoformat()}")
    return "; ".join(parts)


def with_when(text: str, when: When | None) -> str:
    """``text`` (its old time, if any, replaced) with ``when`` at its end."""
    words = body(text)
    shown = render(when)
    return f"{words} ({shown})" if shown else words


def same_words(texts: Sequence[str], text: str) -> int | None:
    """The index of the first of ``texts`` that says what ``text`` says, its time aside (so a
    time given to a fact memory holds is set on that fact, not written as a second one)."""
    words = factdiff.normalize(body(text))
    return next((k for k, t in enumerate(texts) if factdiff.normalize(body(t)) == words), None) if words else None


# --- the door ------------------------------------------------------------------------------

def read_members(raw: Mapping[str, object], today: date | None = None) -> tuple[When | None, str]:
    """A model's ``from`` / ``until`` / ``review_after`` members, validated: ``(When, "")``,
    ``(None, "")`` when it sent none, or ``(None, reason)`` when one is not a date it may
    set (the change is then held with that reason). ``today``, when given, bounds how far
    ahead a review may be set."""
    got: dict[str, date] = {}
    for key, name in (("from", "start"), ("until", "until"), ("review_after", "review")):
        value = raw.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            return None, f"'{key}' is not a date (YYYY-MM-DD)"
        v = value.strip()
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
            return None, f"'{key}' is not a date in the form YYYY-MM-DD: {v[:40]!r}"
        d = _date(v)
        if d is None:
            return None, f"'{key}' is not a real date: {v!r}"
        got[name] = d
    if not got:
        return None, ""
    when = When(**got)
    if when.start and when.until and when.start > when.until:
        return None, f"'from' ({when.start}) is after 'until' ({when.until})"
    if when.review and when.start and when.review < when.start:
        return None, f"'review_after' ({when.review}) is before 'from' ({when.start})"
    if when.review and today is not None and when.review > today + timedelta(days=5 * 366):
        return None, f"'review_after' ({when.review}) is more than five years away"
    return when, ""


_MONTHS = {m: n for n, names in enumerate((
    ("january", "jan", "janvier", "januar", "enero"), ("february", "feb", "février", "fevrier", "februar", "febrero"),
    ("march", "mar", "mars", "märz", "marzo"), ("april", "apr", "avril", "abril"), ("may", "mai", "mayo"),
    ("june", "jun", "juin", "juni", "junio"), ("july", "jul", "juillet", "juli", "julio"),
    ("august", "aug", "août", "aout", "agosto"), ("september", "sep", "sept", "septembre", "septiembre"),
    ("october", "oct", "octobre", "oktober", "octubre"), ("november", "nov", "novembre", "noviembre"),
    ("december", "dec", "décembre", "decembre", "dezember", "diciembre"),
), 1) for m in names}
_WORD_RE = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)


def _time_words() -> frozenset[str]:
    return frozenset(resources.text("corpus/time_words.txt").split())


def supports(quote: str, when: When) -> str:
    """Whether ``quote`` (the receipt's words) says the time the model gave: "" when it
    does, else why not. A quote must say *when* (a month, a year, "this week", "until the
    end of the year", "tomorrow", a date); a month or a year it names must be the month or
    the year of the dates ("in July" is no 2027-08-01). The review date is the model's
    judgement of when to ask again and needs no quote; a check date is never the model's."""
    if when.checked is not None:
        return "a check date is recorded by memtray, never set by the model"
    dates = [d for d in (when.start, when.until) if d is not None]
    if not dates:
        return ""
    low = quote.casefold()
    words = _WORD_RE.findall(low)
    months = {_MONTHS[w] for w in words if w in _MONTHS and (len(w) > 3 or w in ("may", "mai"))}
    years = {int(w) for w in words if len(w) == 4 and w.isdigit() and 1900 <= int(w) <= 2200}
    numeric = [(int(y), int(mo)) for y, mo in re.findall(r"\b(\d{4})-(\d{1,2})(?:-\d{1,2})?\b", low)]
    months |= {mo for _y, mo in numeric}
    years |= {y for y, _mo in numeric}
    if not (months or years or any(w in _time_words() for w in words)):
        return "the quote does not say when (a month, a year, 'this week', 'until the end of the year'...)"
    if months and not any(d.month in months for d in dates):
        shown = ", ".join(sorted(d.isoformat() for d in dates))
        return f"the quote names another month than {shown}"
    if years and not any(d.year in years for d in dates):
        shown = ", ".join(sorted(d.isoformat() for d in dates))
        return f"the quote names another year than {shown}"
    return ""


# --- relative words, on the day they were said ----------------------------------------------

def _week(d: date) -> tuple[date, date]:
    monday = d - timedelta(days=d.weekday())  # weeks run Monday to Sunday (ISO 8601)
    return monday, monday + timedelta(days=6)


def _next_week(d: date) -> tuple[date, date]:
    monday, sunday = _week(d)
    return monday + timedelta(days=7), sunday + timedelta(days=7)


def _weekend(d: date) -> tuple[date, date]:
    sunday = _week(d)[1]
    return sunday - timedelta(days=1), sunday


#: the phrases read as days relative to the day they were said (English; any other words
#: keep the check of :func:`supports` alone)
_RELATIVE = (
    (re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b"), lambda d: (d, d)),
    (re.compile(r"\btomorrow\b"), lambda d: (d + timedelta(days=1), d + timedelta(days=1))),
    (re.compile(r"\bthis weekend\b"), _weekend),
    (re.compile(r"\bnext week\b"), _next_week),
    (re.compile(r"\b(?:this week|(?:the )?end of (?:the|this) week)\b"), _week),
)
_CONNECTORS = frozenset({"until", "till", "til"})


def relative_span(quote: str, said: date) -> tuple[date, date] | None:
    """The days ``quote``'s relative words name when said on ``said`` ("this week": its
    Monday to its Sunday; "tomorrow": the next day; several: from the first to the last),
    or None when it names none, or also says when in other words (a month, a year, a date,
    a weekday, "next month"...), which this does not read."""
    rest = quote.casefold().replace("’", "'")
    spans: list[tuple[date, date]] = []
    for rx, span in _RELATIVE:
        if rx.search(rest):
            spans.append(span(said))
            rest = rx.sub(" ", rest)
    if not spans:
        return None
    words = _WORD_RE.findall(rest)
    if re.search(r"\d{4}-\d{1,2}", rest) or any(
            (w in _MONTHS and (len(w) > 3 or w in ("may", "mai"))) or (len(w) == 4 and w.isdigit())
            or (w in _time_words() and w not in _CONNECTORS) for w in words):
        return None
    return min(a for a, _ in spans), max(b for _, b in spans)


def anchored(when: When, quote: str, said: date) -> When:
    """``when`` with a start or an end that lies outside the days ``quote`` names when said
    on ``said`` (:func:`relative_span`) moved onto them: "this week" said on a Wednesday
    ends on that Sunday, whenever the consolidation runs. A date inside them stays ("this
    week, until Friday"); a quote that says when in other words changes nothing."""
    span = relative_span(quote, said)
    if span is None:
        return when
    lo, hi = span
    start = when.start if when.start is None or lo <= when.start <= hi else lo
    until = when.until if when.until is None or lo <= when.until <= hi else hi
    return replace(when, start=start, until=until)


# --- as of a day -----------------------------------------------------------------------------

def status(when: When | None, today: date) -> str | None:
    """``upcoming``, ``current`` or ``past`` on ``today``; None for a fact that holds always."""
    if when is None or (when.start is None and when.until is None):
        return None
    if when.start is not None and today < when.start:
        return "upcoming"
    if when.until is not None and today > when.until:
        return "past"
    return "current"


def ended(when: When | None, today: date, grace: int = GRACE_DAYS) -> bool:
    """Whether a fact is past its end by more than ``grace`` days: it leaves memory."""
    return when is not None and when.until is not None and today > when.until + timedelta(days=grace)


def due(when: When | None, today: date) -> bool:
    """Whether a fact's review date has come."""
    return when is not None and when.review is not None and when.review <= today


def next_review(when: When | None, today: date) -> date:
    """The review date after a "still true" on ``today``: the same interval as last time
    (from the last check, or the day the review was set), within a week and a year."""
    days = DEFAULT_REVIEW_DAYS
    if when is not None and when.review is not None and when.checked is not None and when.review > when.checked:
        days = (when.review - when.checked).days
    days = max(MIN_REVIEW_DAYS, min(MAX_REVIEW_DAYS, days))
    out = today + timedelta(days=days)
    if when is not None and when.until is not None and out > when.until:
        out = max(today + timedelta(days=1), when.until)  # ask again at the end at the latest
    return out


def checked(when: When | None, today: date) -> When:
    """``when`` after a "still true" on ``today``: the check recorded, the review moved."""
    return replace(when or When(), checked=today, review=next_review(when, today))


def note(facts: Iterable[str], today: date) -> str:
    """What the prompt says of dated facts (their texts) on ``today``: one line each for
    upcoming, current and past, or "" when no fact has a time. It goes with the runtime
    context of the user's message (core/agent/loop.py), not into the system prompt, which
    stays the same from day to day for the providers' prompt caches."""
    groups: dict[str, list[str]] = {"upcoming": [], "current": [], "past": []}
    for text in facts:
        words, when = split(text)
        s = status(when, today)
        if s is None or when is None:
            continue
        groups[s].append(f"{words} ({render(replace(when, review=None, checked=None))})")
    if not any(groups.values()):
        return ""
    lines = [f"> {s.capitalize()}: " + "; ".join(groups[s]) for s in ("upcoming", "current", "past") if groups[s]]
    template = resources.text("prompts/memory_time.txt").strip()
    return template.replace("{date}", today.isoformat()).replace("{facts}", "\n".join(lines))


def note_none(today: date) -> str:
    """The note that says no fact has a time any more (after one that named some)."""
    template = resources.text("prompts/memory_time.txt").strip()
    return template.replace("{date}", today.isoformat()).replace("{facts}", "> (none)")


def is_note(text: str) -> bool:
    """Whether ``text`` (a user message's runtime context) carries a :func:`note`."""
    head = resources.text("prompts/memory_time.txt").split("{date}", 1)[0]
    return head in text


def note_lines(text: str) -> list[str]:
    """The Upcoming / Current / Past lines of the note in ``text`` (its date left out)."""
    return [ln for ln in text.split("\n") if ln.startswith(("> Upcoming:", "> Current:", "> Past:"))]
