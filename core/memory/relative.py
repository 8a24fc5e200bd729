"""A consolidation's new times read on the day they were said (issue 32: "this week").

The consolidating model works out a fact's ``from`` / ``until`` from what the user said;
"this week", "tomorrow", "this weekend" are days relative to the *message's* date, which
a consolidation that runs days later (an idle session, a redo, a catch-up after a week
offline) easily reads against today instead. After the guard applied a reply
(:func:`memtray.core.memory.proposal.apply_reply`), :func:`anchor_times` moves each new
time whose receipt's quote says when only in such words onto the days they name on the
day of the message the quote is in (:func:`timing.anchored`, in the user's zone), and says
so in the consolidation's notes. A time a fact already had, and a quote that also names a
month, a year, a date or a weekday, are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from memtray.core.base.clock import parse_ts
from memtray.core.memory import factdiff, timing
from memtray.core.memory.dated import local_day
from memtray.core.memory.facts import Ledger
from memtray.core.memory.proposal import Applied


def message_days(messages: Sequence[Mapping[str, Any]], zone: str) -> list[date | None]:
    """The user's day of each message (as the prompt numbers them), from its ``ts``."""
    out: list[date | None] = []
    for m in messages:
        try:
            out.append(local_day(parse_ts(str(m["ts"])), zone) if m.get("ts") else None)
        except ValueError:
            out.append(None)
    return out


def anchor_times(a: Applied, before: Ledger, days: Sequence[date | None]) -> None:
    """Put ``a``'s new times on the days their quotes' relative words name (in place)."""
    text = a.memory
    for k, f in enumerate(a.ledger.facts):
        c = a.receipts.get(f.id)
        words, when = timing.split(f.text)
        if c is None or when is None or not c.quote or not c.messages or not 0 < c.messages[0] <= len(days):
            continue
        old = before.get(f.id)
        said = days[c.messages[0] - 1]
        if said is None or (old is not None and timing.split(old.text)[1] == when):
            continue  # the time it had: not this consolidation's to read again
        fixed = timing.anchored(when, c.quote, said)
        if fixed != when:
            text = factdiff.replace_fact(text, k, timing.with_when(words, fixed))
            a.notes.append(f"{f.id}: {timing.render(when)!r} read as {timing.render(fixed)!r}: "
                           f"{c.quote[:60]!r} was said on {said.isoformat()}")
    if text != a.memory:
        a.memory, a.ledger = text, Ledger.with_ids(text, a.ledger.ids, a.ledger.next)
