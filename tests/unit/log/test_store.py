"""Projections, checkpoints and replay: deleting state/ gives the same state."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.home import Home
from memtray.core.log.events import (
    ConsolidationCompleted,
    ConsolidationFailed,
    ConsolidationStarted,
    MemoryWritten,
    Message,
    SessionReset,
    Verbatim,
)
from memtray.core.log.projections import replay
from memtray.core.log.store import CHECKPOINT_NAME, Store


def _open(home: Home, **kw: object) -> Store:
    clock = FakeClock()
    return Store.open(home, clock=clock, ids=seeded_ids(clock), **kw)  # type: ignore[arg-type]


def _conversation(store: Store) -> None:
    for i in range(40):
        store.append(Message(role="user", content=f"q{i}"), session="quick")
        store.append(Message(role="assistant", content=f"a{i}"), session="quick")
        if i % 7 == 0:
            store.append(Message(role="user", content=f"cli {i}"), session="cli")
        if i == 20:
            store.append(SessionReset(reason="user"), session="cli")
    store.append(ConsolidationStarted(consolidation="c1", start=0, end=30, model="m"), session="quick")
    store.append(MemoryWritten(memory="# Facts\n- likes tea\n", reason="consolidation"))
    store.append(ConsolidationCompleted(consolidation="c1", end=30), session="quick")
    store.append(Verbatim("some.future.type", {"x": 1}))


def test_deleting_state_gives_identical_state(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store = _open(home)
    _conversation(store)
    live = store.state.to_json()
    store.close()
    assert (home.state / CHECKPOINT_NAME).exists()
    from_checkpoint = _open(home)
    assert from_checkpoint.checkpoint_used and from_checkpoint.replayed_on_open == 0
    assert from_checkpoint.state.to_json() == live
    from_checkpoint.close()
    shutil.rmtree(home.state)
    full = _open(home)
    assert not full.checkpoint_used and full.replayed_on_open == store.log.last_seq
    assert full.state.to_json() == live
    assert replay(full.log.records()).to_json() == live
    full.close()


def test_start_replays_only_the_tail_after_checkpoint(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store = _open(home)
    _conversation(store)
    store.checkpoint()
    for i in range(5):
        store.append(Message(role="user", content=f"late {i}"), session="quick")
    expected = store.state.to_json()
    store.close(checkpoint=False)
    again = _open(home)
    assert again.checkpoint_used and again.replayed_on_open == 5
    assert again.state.to_json() == expected
    again.close()


def test_stale_or_foreign_checkpoint_is_ignored(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store = _open(home)
    _conversation(store)
    store.close()
    ck = home.state / CHECKPOINT_NAME
    ck.write_text(ck.read_text().replace('"last_id":"', '"last_id":"X'))
    again = _open(home)
    assert not again.checkpoint_used
    assert again.state.to_json() == replay(again.log.records()).to_json()
    again.close()
    ck.write_bytes(b"\x00garbage")
    third = _open(home)
    assert not third.checkpoint_used
    third.close()


def test_consolidated_messages_leave_memory_but_stay_in_log(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store = _open(home)
    _conversation(store)
    s = store.state.sessions["quick"]
    assert s.last_consolidated == 30 and s.base == 30 and s.count == 80
    assert len(s.messages) == 50
    assert s.messages[0]["content"] == "q15"
    assert sum(1 for r in store.log.records() if r.session == "quick" and r.type == "message") == 80
    cli = store.state.sessions["cli"]
    assert cli.resets == 1 and all(int(m["content"].split()[1]) > 20 for m in cli.messages)
    assert store.state.unknown == {"some.future.type": 1}
    assert store.state.memory.startswith("# Facts")
    store.close()


# --- recovery after a checkpoint checks only what follows it ------------------------------


def _checkpointed(home: Home, tail: int = 3) -> tuple[Store, list[str]]:
    store = _open(home)
    _conversation(store)
    store.checkpoint()
    ids = [store.append(Message(role="user", content=f"after {i}"), session="quick").id
           for i in range(tail)]
    return store, ids


def test_recovery_after_a_checkpoint_reads_only_the_tail_but_checks_every_checksum(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store, _ = _checkpointed(home)
    expected, last = store.state.to_json(), store.log.last_seq
    store.close(checkpoint=False)
    again = _open(home)
    try:
        assert again.log.trusted_used and again.checkpoint_used and not again.readonly
        assert again.state.to_json() == expected and again.log.last_seq == last
    finally:
        again.close(checkpoint=False)
    seg = home.events / "000001.jsonl"
    raw = bytearray(seg.read_bytes())
    raw[raw.index(b"\n") + 30] ^= 0x01  # damage well before the checkpoint
    seg.write_bytes(bytes(raw))
    damaged = _open(home)
    try:  # found at open all the same: read-only, with where and what to run
        assert damaged.readonly and damaged.log.problem is not None
        assert "000001.jsonl, line 2" in damaged.log.problem.describe()
    finally:
        damaged.close(checkpoint=False)


def test_damage_after_the_checkpoint_is_still_found_at_open(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store, _ = _checkpointed(home, tail=3)
    store.close(checkpoint=False)
    seg = home.events / "000001.jsonl"
    raw = bytearray(seg.read_bytes())
    lines = raw.split(b"\n")
    second_last = len(raw) - len(lines[-2]) - len(lines[-3]) - 2
    raw[second_last + 30] ^= 0x01  # the second-to-last record: good records follow it
    seg.write_bytes(bytes(raw))
    again = _open(home)
    try:
        assert again.readonly and again.log.problem is not None  # judged as before: read-only
    finally:
        again.close(checkpoint=False)


def test_torn_tail_after_the_checkpoint_is_cut(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store, _ = _checkpointed(home, tail=2)
    last = store.log.last_seq
    store.close(checkpoint=False)
    seg = home.events / "000001.jsonl"
    with open(seg, "ab") as fh:
        fh.write(b'{"seq":999,"id":"torn')
    again = _open(home)
    try:
        assert not again.readonly and again.log.last_seq == last
        rec = again.append(Message(role="user", content="next"), session="quick")
        assert rec.seq == last + 1
    finally:
        again.close(checkpoint=False)
    assert (home.events / "000001.jsonl.torn").read_bytes() == b'{"seq":999,"id":"torn'


def test_a_retry_of_an_event_from_before_the_checkpoint_is_still_recognised(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store = _open(home)
    first = store.append(Verbatim("reminder.fired", {"reminder": "r1", "occurrence": "o1", "late": False,
                                            "delivered": True}), id="reminder.fired:r1:o1")
    _conversation(store)
    store.checkpoint()
    store.close(checkpoint=False)
    again = _open(home)
    try:
        assert again.log.trusted_used
        last = again.log.last_seq
        dup = again.append(Verbatim("reminder.fired", {"reminder": "r1", "occurrence": "o1", "late": False,
                                              "delivered": True}), id="reminder.fired:r1:o1")
        assert dup.seq == first.seq and again.log.last_seq == last  # not written twice
    finally:
        again.close(checkpoint=False)


def test_a_checkpoint_that_does_not_match_the_log_is_not_trusted(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store, _ = _checkpointed(home, tail=0)
    store.close(checkpoint=False)
    ck = home.state / CHECKPOINT_NAME
    good = ck.read_bytes()
    # another log of the same shape: the checkpoint's position and seq line up with it, its ids do not
    shutil.rmtree(home.events)
    other = Store.open(home, clock=FakeClock(), use_checkpoint=False)
    _conversation(other)
    other.append(Message(role="user", content="one more"), session="quick")
    last = other.log.last_seq
    other.close(checkpoint=False)
    ck.write_bytes(good)
    again = _open(home)
    try:
        assert not again.checkpoint_used and again.log.last_seq == last
        assert again.state.to_json() == replay(again.log.records()).to_json()
        assert again.append(Message(role="user", content="x"), session="quick").seq == last + 1
    finally:
        again.close(checkpoint=False)


def test_a_checkpoint_beyond_the_end_of_the_log_is_not_trusted(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store, _ = _checkpointed(home, tail=0)
    last = store.log.last_seq
    store.close(checkpoint=False)
    seg = home.events / "000001.jsonl"
    raw = seg.read_bytes()
    seg.write_bytes(raw[: raw.rstrip(b"\n").rindex(b"\n") + 1])  # the last record is gone (a restore)
    again = _open(home)
    try:
        assert not again.checkpoint_used and again.log.last_seq == last - 1
    finally:
        again.close(checkpoint=False)


def test_the_state_keeps_recent_consolidations_and_finds_older_ones_in_the_log(tmp_path: Path) -> None:
    from memtray.core.log.projections import KEEP_FINISHED

    home = Home.resolve(tmp_path / "h")
    store = _open(home)
    n = KEEP_FINISHED + 200
    for i in range(n):
        store.append(Message(role="user", content=f"m{i}"), session="quick")
        store.append(ConsolidationStarted(consolidation=f"c{i:04d}", start=i, end=i + 1, model="m", first_seq=1, last_seq=2), session="quick")
        if i % 10 == 3:
            store.append(ConsolidationFailed(consolidation=f"c{i:04d}", reason="boom", attempt=1, retry_after=60.0), session="quick")
        elif i != n - 1:  # the last one is still running
            store.append(ConsolidationCompleted(consolidation=f"c{i:04d}", end=i + 1), session="quick")
        if i == n // 2:
            store.checkpoint()
    live = store.state
    assert KEEP_FINISHED < len(live.consolidations) <= KEEP_FINISHED + 64 + 1
    assert live.consolidations[f"c{n - 1:04d}"].status == "started"  # running ones are never dropped
    assert "c0000" not in live.consolidations
    assert live.sessions["quick"].last_consolidated == n - 1  # the fold itself is unchanged
    expected = live.to_json()
    store.close(checkpoint=False)
    again = _open(home)  # checkpoint taken mid-way + the tail: trims exactly as the live state did
    try:
        assert again.checkpoint_used and again.state.to_json() == expected
        assert replay(again.log.records()).to_json() == expected
        old = again.consolidation("c0003")  # read back from the log
        assert old is not None and old.status == "failed" and old.reason == "boom" and old.retry_after == 60.0
        assert (old.start, old.end, old.first_seq, old.last_seq) == (3, 4, 1, 2)
        assert again.consolidation("c0001") is not None and again.consolidation("c0001").status == "completed"
        assert again.consolidation("c000", prefix=True) is None  # ten ids start so: not unique
        assert again.consolidation("c0002", prefix=True).id == "c0002"
        assert again.consolidation("nosuch") is None
    finally:
        again.close(checkpoint=False)


def test_a_checkpoint_at_the_end_with_a_wrong_seq_is_not_trusted(tmp_path: Path) -> None:
    import json

    home = Home.resolve(tmp_path / "h")
    store, _ = _checkpointed(home, tail=0)
    last = store.log.last_seq
    store.close(checkpoint=False)
    ck = home.state / CHECKPOINT_NAME
    body = json.loads(ck.read_bytes())
    body["last_seq"] = last + 1  # claims one record more than the log has
    ck.write_text(json.dumps(body))
    again = _open(home)
    try:
        assert not again.checkpoint_used
        assert again.append(Message(role="user", content="next"), session="quick").seq == last + 1
    finally:
        again.close(checkpoint=False)


@pytest.mark.parametrize("how", ["line removed", "line repeated"])
def test_a_seq_gap_before_the_checkpoint_is_found_at_open(tmp_path: Path, how: str) -> None:
    import json

    home = Home.resolve(tmp_path / "h")
    store, _ = _checkpointed(home, tail=2)
    store.close(checkpoint=False)
    seg = home.events / "000001.jsonl"
    lines = seg.read_bytes().split(b"\n")
    line = lines[3]
    lines[3:4] = [] if how == "line removed" else [line, line]  # each line keeps a valid checksum
    seg.write_bytes(b"\n".join(lines))
    ck = home.state / CHECKPOINT_NAME  # and the checkpoint still points at a record boundary
    body = json.loads(ck.read_bytes())
    body["position"][1] += (len(line) + 1) * (-1 if how == "line removed" else 1)
    ck.write_text(json.dumps(body))
    again = _open(home)
    try:  # judged as without a checkpoint: the seqs do not run from 1 to the checkpoint's
        assert not again.log.trusted_used and again.readonly and again.log.problem is not None
    finally:
        again.close(checkpoint=False)


def test_a_missing_previous_segment_is_found_at_open(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    clock = FakeClock()
    store = Store.open(home, clock=clock, ids=seeded_ids(clock), segment_bytes=2048)
    for i in range(60):
        store.append(Message(role="user", content=f"m{i}" * 5), session="q")
    store.checkpoint()
    store.close(checkpoint=False)
    segs = sorted(home.events.glob("*.jsonl"))
    assert len(segs) > 2
    segs[-2].unlink()
    clock = FakeClock()
    again = Store.open(home, clock=clock, ids=seeded_ids(clock), segment_bytes=2048)
    try:
        assert not again.log.trusted_used and again.readonly
    finally:
        again.close(checkpoint=False)


def test_a_checkpoint_with_an_infinite_number_is_ignored(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store, _ = _checkpointed(home, tail=0)
    store.close(checkpoint=False)
    ck = home.state / CHECKPOINT_NAME
    ck.write_text(ck.read_text().replace('"position":[1,', '"position":[Infinity,'))
    again = _open(home)  # the stdlib parser reads Infinity; the checkpoint is ignored, not fatal
    try:
        assert not again.checkpoint_used
    finally:
        again.close(checkpoint=False)
