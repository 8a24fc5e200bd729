"""The usage ledger: tokens and cost of every provider call, folded from the events it wrote.

No second store: a turn's reply (``message`` with ``usage``), a consolidation or redo
(``consolidation.completed|failed`` with ``usage``) and the calls that write nothing else
(``usage``: embedding, a recall's or search's query, a rebuild) carry their counts, and the
fold (core/log/projections.py) adds them into :class:`UsageBook`: per UTC hour, per kind of
call and model, ``[calls, prompt tokens, completion tokens, cost in USD, calls without a
price]``. Hours are kept for :data:`KEEP_DAYS` days before the newest one (the state stays
the same size however long the log grows), so "today" and "this month" can be summed in
the user's own time zone.

Only this device's calls count: another device's messages arrive with the usage they had
there, but what that device spent is its own ledger's (its consolidations never travel).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memtray.core.log.payloads import Usage

#: days of hourly buckets the state keeps before the newest event's hour
KEEP_DAYS = 62
#: kinds of call the user asked for; the rest is memory upkeep
CHAT_KINDS = frozenset({"chat", "recall", "search"})
#: every kind of call the ledger names, in display order
KINDS = ("chat", "recall", "search", "consolidation", "redo", "embedding", "rebuild")
_SEP = "\t"


@dataclass
class Totals:
    """Calls, tokens in and out, and the cost of the calls whose price litellm knows."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    #: calls without a known price (their tokens count; their cost is not in ``cost``)
    unpriced: int = 0

    def add(self, row: list[Any]) -> None:
        self.calls += int(row[0])
        self.prompt_tokens += int(row[1])
        self.completion_tokens += int(row[2])
        self.cost += float(row[3])
        self.unpriced += int(row[4])

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": round(self.cost, 6),
                "unpriced_calls": self.unpriced}


def group_of(kind: str) -> str:
    """``chat`` for what the user asked for directly, ``upkeep`` for memory's own work."""
    return "chat" if kind in CHAT_KINDS else "upkeep"


@dataclass
class UsageBook:
    """Hour (``YYYY-MM-DDTHH``, UTC) -> ``kind<TAB>model`` -> ``[calls, in, out, cost, unpriced]``."""

    hours: dict[str, dict[str, list[Any]]] = field(default_factory=dict)

    def add(self, ts: str, kind: str, model: str | None, usage: Mapping[str, Any] | None, calls: int = 1) -> None:
        """Fold one call's usage in (a record's ``ts`` gives the hour). Never raises on odd
        numbers: a member of the wrong type counts as absent (old logs never checked them)."""
        if not usage or not isinstance(usage, Mapping) or not isinstance(ts, str):
            return
        hour = ts[:13]
        bucket = self.hours.get(hour)
        if bucket is None:
            bucket = self.hours[hour] = {}
            if len(self.hours) > KEEP_DAYS * 24 + 48:
                self._trim()
        key = f"{kind}{_SEP}{model if isinstance(model, str) and model else '?'}"
        row = bucket.get(key)
        if row is None:
            row = bucket[key] = [0, 0, 0, 0.0, 0]
        p, c, cost = usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("cost")
        row[0] += calls
        row[1] += p if type(p) is int and p >= 0 else 0
        row[2] += c if type(c) is int and c >= 0 else 0
        if type(cost) is float and cost >= 0 and cost == cost and cost != float("inf"):
            row[3] += cost
        else:
            row[4] += calls

    def _trim(self) -> None:
        """Drop hours older than KEEP_DAYS before the newest one (by content, never the clock,
        so a state rebuilt from a checkpoint trims as the live one did)."""
        newest = max(self.hours)
        try:
            cut = (datetime.fromisoformat(newest + ":00:00") - timedelta(days=KEEP_DAYS)).strftime("%Y-%m-%dT%H")
        except ValueError:
            return
        for hour in [h for h in self.hours if h < cut]:
            del self.hours[hour]

    def to_json(self) -> dict[str, Any]:
        return {h: {k: list(v) for k, v in sorted(b.items())} for h, b in sorted(self.hours.items())}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> UsageBook:
        return cls({h: {k: list(v) for k, v in b.items()} for h, b in obj.items()})

    def rows(self, since: datetime, until: datetime) -> Iterable[tuple[datetime, str, str, list[Any]]]:
        """(hour as an aware UTC time, kind, model, row) of the hours in ``[since, until)``."""
        lo = since.astimezone(UTC).strftime("%Y-%m-%dT%H")
        hi = until.astimezone(UTC).strftime("%Y-%m-%dT%H")
        for hour, bucket in self.hours.items():
            if not lo <= hour <= hi:
                continue
            try:
                at = datetime.fromisoformat(hour + ":00:00").replace(tzinfo=UTC)
            except ValueError:
                continue
            if not since - timedelta(hours=1) < at < until:
                continue
            for key, row in bucket.items():
                kind, _, model = key.partition(_SEP)
                yield at, kind, model, row


@dataclass
class UsageSummary:
    """What ``memtray usage``, Settings and the tray show: today, this month and the last
    ``days`` days in the user's zone; the last ``days`` days by kind, group and model."""

    days: int
    today: Totals
    month: Totals
    period: Totals
    by_kind: dict[str, Totals]
    by_group: dict[str, Totals]
    by_model: dict[str, Totals]
    #: today's memory upkeep (what the background budget counts)
    upkeep_today: Totals

    def to_json(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "today": self.today.to_json(),
            "month": self.month.to_json(),
            "period": self.period.to_json(),
            "by_group": {k: v.to_json() for k, v in self.by_group.items()},
            "by_kind": {k: v.to_json() for k, v in self.by_kind.items()},
            "by_model": {k: v.to_json() for k, v in sorted(self.by_model.items())},
        }


def summarize(book: UsageBook, now: datetime, zone: tzinfo, days: int = 30) -> UsageSummary:
    """Sum ``book`` for the day and month of ``now`` in ``zone`` and the ``days`` local days
    ending today. ``days`` is 1..KEEP_DAYS (the door of the CLI says so)."""
    local = now.astimezone(zone)
    day_start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    month_start = day_start.replace(day=1)
    period_start = day_start - timedelta(days=days - 1)
    end = now + timedelta(hours=1)
    today, month, period, upkeep = Totals(), Totals(), Totals(), Totals()
    by_kind: dict[str, Totals] = {}
    by_group: dict[str, Totals] = {"chat": Totals(), "upkeep": Totals()}
    by_model: dict[str, Totals] = {}
    for at, kind, model, row in book.rows(min(month_start, period_start), end):
        when = at.astimezone(zone)
        if when >= day_start:
            today.add(row)
            if group_of(kind) == "upkeep":
                upkeep.add(row)
        if when >= month_start:
            month.add(row)
        if when >= period_start:
            period.add(row)
            by_kind.setdefault(kind, Totals()).add(row)
            by_group[group_of(kind)].add(row)
            by_model.setdefault(model, Totals()).add(row)
    order = {k: i for i, k in enumerate(KINDS)}
    by_kind = dict(sorted(by_kind.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    return UsageSummary(days, today, month, period, by_kind, by_group, by_model, upkeep)


def money(t: Totals) -> str:
    """``$0.0123`` (and "+ N unpriced" when some calls have no known price), or ``no price``."""
    if t.calls and t.unpriced == t.calls:
        return "price unknown"
    text = f"${t.cost:.4f}" if t.cost < 1 else f"${t.cost:,.2f}"
    return text + (f" (+{t.unpriced} call(s) without a price)" if t.unpriced else "")


def tokens(n: int) -> str:
    """``1.2 M``, ``34 k``, ``512``."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} M"
    if n >= 10_000:
        return f"{n / 1000:.0f} k"
    return f"{n:,}"


def line(s: UsageSummary) -> str:
    """One line for the tray's tooltip and Settings."""
    return (f"Today {tokens(s.today.tokens)} tokens, {money(s.today)} "
            f"(memory upkeep {tokens(s.upkeep_today.tokens)}); this month {tokens(s.month.tokens)}, {money(s.month)}")



def as_usage(raw: Mapping[str, Any] | None) -> Usage | None:
    """The members of a provider's usage the ledger keeps, checked (ints that are counts, a
    finite non-negative cost), as the event's ``Usage``; None when nothing is left."""
    if not raw:
        return None
    out: Usage = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        v = raw.get(key)
        if type(v) is int and v >= 0:
            out[key] = v
    cost = raw.get("cost")
    if type(cost) is float and 0 <= cost < float("inf"):
        out["cost"] = cost
    return out or None


def zone_of(name: str) -> tzinfo:
    """The user's zone by name (``timezone`` setting or the system's); UTC for a name
    this system does not know."""
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC
