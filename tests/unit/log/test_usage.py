"""The usage ledger as a fold: golden events sum as written, old hours are trimmed by content
(a checkpoint trims as the live state does), and odd numbers an old log may hold never raise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memtray.core.log.events import Record, UsageRecorded, decode_raw
from memtray.core.log.projections import State, replay
from memtray.core.log.usage import KEEP_DAYS, UsageBook, as_usage, money, summarize

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "events" / "v1-usage.jsonl"


def test_the_golden_calls_fold_into_the_ledger_by_kind_and_model() -> None:
    recs = [decode_raw(line) for line in GOLDEN.read_bytes().split(b"\n") if line]
    state = replay(recs)
    s = summarize(state.usage, datetime(2026, 12, 3, 20, 0, tzinfo=UTC), UTC, 1)
    assert {k: t.calls for k, t in s.by_kind.items()} == {"chat": 1, "recall": 1, "consolidation": 2, "embedding": 1}
    assert s.by_kind["consolidation"].prompt_tokens == 640 + 650
    assert s.by_kind["consolidation"].unpriced == 1  # the completed one has no price in the fixture
    assert s.by_group["chat"].calls == 2 and s.by_group["upkeep"].calls == 3
    assert set(s.by_model) == {"openai/gpt-4o-mini", "openai/text-embedding-3-small", "ollama/nomic-embed-text"}
    assert abs(s.today.cost - (0.0001272 + 0.0001032 + 0.00004096)) < 1e-12
    assert State.from_json(state.to_json()).usage == state.usage


def _rec(seq: int, ts: datetime, tokens: int) -> Record:
    data = UsageRecorded(kind="embedding", model="m", usage={"prompt_tokens": tokens, "cost": 0.001}).to_data()
    return Record(seq, f"id{seq}", ts.strftime("%Y-%m-%dT%H:%M:%S.000Z"), UsageRecorded.TYPE, 1, None, data)


def test_old_hours_are_trimmed_by_the_newest_event_and_a_checkpoint_trims_alike() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    recs = [_rec(i + 1, start + timedelta(hours=i), 10) for i in range(3000)]  # 125 days, a call an hour
    live = replay(recs)
    half = replay(recs[:1700])
    resumed = replay(recs[1700:], State.from_json(half.to_json()))
    assert resumed.usage == live.usage
    hours = sorted(live.usage.hours)
    newest = datetime.fromisoformat(hours[-1] + ":00:00")
    # trimmed in batches (once past two days more than it keeps): the state stays bounded
    assert datetime.fromisoformat(hours[0] + ":00:00") >= newest - timedelta(days=KEEP_DAYS, hours=50)
    assert len(hours) <= KEEP_DAYS * 24 + 49
    now = datetime.fromisoformat(recs[-1].ts.replace("Z", "+00:00"))
    s = summarize(live.usage, now, UTC, KEEP_DAYS)
    assert s.period.calls == (KEEP_DAYS - 1) * 24 + now.hour + 1  # whole days before today, and today's hours


def test_odd_usage_counts_what_it_can_and_never_raises() -> None:
    book = UsageBook()
    book.add("2026-12-03T10:00:00.000Z", "chat", "m", {"prompt_tokens": -5, "completion_tokens": True, "cost": "1"})
    book.add("2026-12-03T10:00:00.000Z", "chat", None, [1, 2])  # type: ignore[arg-type]
    book.add(7, "chat", "m", {"prompt_tokens": 3})  # type: ignore[arg-type]
    assert book.hours == {"2026-12-03T10": {"chat\tm": [1, 0, 0, 0.0, 1]}}
    s = summarize(book, datetime(2026, 12, 3, 11, tzinfo=UTC), UTC, 1)
    assert money(s.today) == "price unknown"
    assert as_usage({"prompt_tokens": 3, "completion_tokens": -1, "total_tokens": True, "cost": 0.5, "x": 1}) == {
        "prompt_tokens": 3, "cost": 0.5}
    assert as_usage({"cost": float("nan")}) is None and as_usage(None) is None
