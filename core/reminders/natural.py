"""Times as people say them, for reminders: "in 2 minutes", "tomorrow at noon",
"friday 9am", "every weekday at 9", "every 2 hours".

Pure functions (the phrase, the zone and ``now`` in; a value or None out), English
only, used by :mod:`.spec` where its exact forms (``in 10m``, ``18:30``, ISO 8601,
``30m``, cron) do not match. No dependency does this: python-dateutil (in the lock only
through botocore) reads absolute dates but not "tomorrow", "in an hour" or "every
weekday", and dateparser is not in the lock. None means "not a phrase this knows": the
caller then says what it does accept.

* durations: a number (digits, ``a``/``an``, ``one`` … ``twelve``, ``fifteen``,
  ``twenty``, ``thirty``, ``forty-five``, ``ninety``) and a unit (``s``, ``sec(ond)s``,
  ``m``, ``min(ute)s``, ``h``, ``hr(s)``, ``hour(s)``, ``d``, ``day(s)``, ``w``,
  ``week(s)``), several joined by ``and`` or commas, plus ``half an hour``, ``an hour
  and a half``, ``1.5 hours``;
* times of day: ``9``, ``9am``, ``9:30 pm``, ``21:30``, ``noon``, ``midday``,
  ``midnight``, ``morning`` (9:00), ``afternoon`` (15:00), ``evening`` (18:00),
  ``tonight`` (today 20:00);
* days: ``today``, ``tomorrow``, ``the day after tomorrow``, a weekday (``friday``,
  ``fri``; ``next friday`` is the first one after today), a date (``december 5``,
  ``5 dec``, ``dec 5th 2027``, ``2026-12-05``); a day without a time is at 9:00, a
  time without a day is the next time the clock shows it;
* recurrences (after ``every``): a duration (``2 hours``; ``hour``, ``day``, ``week``
  alone are one), or days with an optional time: ``day``, ``weekday``, ``weekend``,
  weekday names joined by ``and`` or commas, ``morning``, ``evening`` — at 9:00 when no
  time is given.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

_UNITS = {
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "d": "d", "day": "d", "days": "d",
    "w": "w", "wk": "w", "wks": "w", "week": "w", "weeks": "w",
}
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
    "forty-five": 45, "fortyfive": 45, "ninety": 90,
}
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CRON_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_PARTS = {"morning": (9, 0), "afternoon": (15, 0), "evening": (18, 0), "noon": (12, 0), "midday": (12, 0),
          "midnight": (0, 0)}
DEFAULT_TIME = (9, 0)

_NUM = r"\d+(?:\.\d+)?|" + "|".join(sorted(map(re.escape, _NUMBERS), key=len, reverse=True))
_UNIT = "|".join(sorted(_UNITS, key=len, reverse=True))
_TERM = re.compile(rf"({_NUM})\s*({_UNIT})\b(\s+and\s+a\s+half\b)?")
_CLOCK = re.compile(r"(\d{1,2})(?:[:.h](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?")


def _clean(text: str) -> str:
    return " ".join(text.lower().replace(",", " , ").split())


def duration(text: str) -> timedelta | None:
    """``2 minutes``, ``an hour and a half``, ``1h 30m``, ``half an hour`` (None: not a duration)."""
    raw = _clean(text).replace(" , ", " and ").replace(",", "")
    raw = re.sub(r"^half an? (hour|day|minute|week)$", r"0.5 \1", raw)
    pos, total = 0, 0.0
    while pos < len(raw):
        m = _TERM.match(raw, pos)
        if m is None:
            return None
        n = m.group(1)
        count = float(n) if n[0].isdigit() else float(_NUMBERS[n])
        secs = _SECONDS[_UNITS[m.group(2)]]
        total += count * secs + (secs / 2 if m.group(3) else 0)
        pos = m.end()
        rest = raw[pos:]
        sep = re.match(r"\s*(?:and\s+)?", rest)
        pos += sep.end() if sep else 0
    if total <= 0 or raw.endswith("and"):
        return None
    return timedelta(seconds=round(total))


def _time_of_day(text: str) -> tuple[int, int] | None:
    """``9``, ``9am``, ``9:30 pm``, ``21.30``, ``noon``, ``morning`` as (hour, minute)."""
    t = text.strip().removeprefix("at ").strip()
    if t in _PARTS:
        return _PARTS[t]
    m = _CLOCK.fullmatch(t)
    if m is None:
        return None
    h, mi, half = int(m.group(1)), int(m.group(2) or 0), (m.group(3) or "").replace(".", "")
    if mi > 59:
        return None
    if half:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if half == "pm" else 0)
    elif h > 23:
        return None
    return h, mi


def _weekday(word: str) -> int | None:
    for i, name in enumerate(_DAYS):
        if word == name or (len(word) >= 3 and name.startswith(word) and word in (name[:3], name[:4], name)):
            return i
    return None


def _date(text: str, today: date) -> date | None:
    """A day: today, tomorrow, a weekday, a month and day (the next one), an ISO date."""
    t = text.strip().removeprefix("on ").strip()
    if t == "today":
        return today
    if t == "tomorrow":
        return today + timedelta(days=1)
    if t in ("the day after tomorrow", "day after tomorrow"):
        return today + timedelta(days=2)
    nxt = t.startswith("next ")
    wd = _weekday(t.removeprefix("next ").removeprefix("this ").strip())
    if wd is not None:
        ahead = (wd - today.weekday()) % 7
        return today + timedelta(days=ahead or (7 if nxt else 0))
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", t):
        try:
            return date.fromisoformat(t)
        except ValueError:
            return None
    m = (re.fullmatch(r"([a-z]+)\.? (\d{1,2})(?:st|nd|rd|th)?(?: (\d{4}))?", t)
         or re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)? (?:of )?([a-z]+)\.?(?: (\d{4}))?", t))
    if m is None:
        return None
    first, second, year = m.groups()
    month_word, day_s = (first, second) if not first.isdigit() else (second, first)
    month = next((i + 1 for i, name in enumerate(_MONTHS) if len(month_word) >= 3 and name.startswith(month_word)),
                 None)
    if month is None:
        return None
    try:
        if year:
            return date(int(year), month, int(day_s))
        found = date(today.year, month, int(day_s))
        return found if found >= today else date(today.year + 1, month, int(day_s))
    except ValueError:
        return None


def moment(text: str, tz: ZoneInfo, now: datetime) -> datetime | None:
    """The wall time ``text`` names in ``tz`` (``tomorrow at noon``, ``friday 9am``,
    ``at 18:30``, ``tonight``), or None when it is no such phrase. Not checked to be
    in the future: the caller says so."""
    t = _clean(text).replace(" , ", " ")
    here = now.astimezone(tz)
    today = here.date()
    if t == "tonight":
        return datetime(today.year, today.month, today.day, 20, 0, tzinfo=tz)
    for day_part, time_part in _splits(t):
        day = _date(day_part, today) if day_part else None
        if day_part and day is None:
            continue
        hm = _time_of_day(time_part) if time_part else DEFAULT_TIME
        if hm is None or (day is None and not time_part):
            continue
        if day is None:  # a time alone: the next time the clock shows it
            when = datetime(today.year, today.month, today.day, *hm, tzinfo=tz)
            return when if when > here else when + timedelta(days=1)
        when = datetime(day.year, day.month, day.day, *hm, tzinfo=tz)
        if when <= here and _weekday(day_part.removeprefix("on ").removeprefix("this ").strip()) is not None:
            when += timedelta(days=7)  # "thursday at 9" on a Thursday afternoon: next week's
        return when
    return None


def _splits(t: str) -> list[tuple[str, str]]:
    """Ways to read ``t`` as (day, time): "tomorrow at noon", "9am tomorrow", "friday", "at 9"."""
    out = [(t, ""), ("", t)]
    for sep in (" at ", " @ "):
        if sep in t:
            a, b = t.split(sep, 1)
            out.append((a, b))
            out.append((b, a))  # "at 9 tomorrow" reads as (tomorrow, 9) too
    words = t.split(" ")
    for k in range(1, len(words)):
        a, b = " ".join(words[:k]), " ".join(words[k:])
        out += [(a, b), (b, a)]
    return [(d.removeprefix("at ").strip(), h.removeprefix("at ").strip()) for d, h in out]


def recurrence(text: str) -> tuple[str, str] | None:
    """What follows "every": ``("every", "2h")`` for a duration, ``("cron", "0 9 * * mon-fri")``
    for days at a time; None when it is neither."""
    t = _clean(text).replace(" , ", " and ").removeprefix("every ").strip()
    if t in ("hour", "minute", "week", "second"):
        t = f"1 {t}"
    if t in ("hourly",):
        t = "1 hour"
    d = duration(t)
    if d is not None:
        secs = int(d.total_seconds())
        return "every", "".join(f"{n}{u}" for u, n in _split_seconds(secs))
    days_part, _, time_part = t.partition(" at ")
    if not time_part:
        words = days_part.split(" ")
        # "weekday 9am", "monday 18:30": the last word may be the time
        if len(words) > 1 and _time_of_day(words[-1]) is not None and _days(" ".join(words[:-1])) is not None:
            days_part, time_part = " ".join(words[:-1]), words[-1]
    if not time_part and days_part in ("morning", "afternoon", "evening", "night"):
        time_part = "20:00" if days_part == "night" else days_part  # "every morning": daily at 9
    days = _days(days_part)
    if days is None:
        return None
    hm = _time_of_day(time_part) if time_part else DEFAULT_TIME
    if hm is None:
        return None
    h, mi = hm
    return "cron", f"{mi} {h} * * {days}"


def _days(text: str) -> str | None:
    """The cron day-of-week field of "day", "weekday", "weekend", "monday and thursday"."""
    t = text.strip()
    if t in ("day", "days", "daily", "night", "morning", "evening", "afternoon"):
        return "*"
    if t in ("weekday", "weekdays", "working day", "work day", "workday", "business day"):
        return "mon-fri"
    if t in ("weekend", "weekends", "weekend day"):
        return "sat,sun"
    found = []
    for word in re.split(r"\s+and\s+|\s+", t):
        wd = _weekday(word.removesuffix("s") if word.endswith("days") else word)
        if wd is None:
            return None
        found.append(wd)
    return ",".join(_CRON_DAYS[i] for i in sorted(set(found))) if found else None


def _split_seconds(secs: int) -> list[tuple[str, int]]:
    out = []
    for unit in ("d", "h", "m", "s"):
        n, secs = divmod(secs, _SECONDS[unit])
        if n:
            out.append((unit, n))
    return out
