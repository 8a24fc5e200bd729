"""Projections, checkpoints and replay: deleting state/ gives the same state."""

from __future__ import annotations

import shutil
from pathlib import Path

from memtray.core.clock import FakeClock, seeded_ids
from memtray.core.home import Home
from memtray.core.projections import replay
from memtray.core.store import CHECKPOINT_NAME, Store


def _open(home: Home, **kw: object) -> Store:
    clock = FakeClock()
    return Store.open(home, clock=clock, ids=seeded_ids(clock), **kw)  # type: ignore[arg-type]


def _conversation(store: Store) -> None:
    for i in range(40):
        store.append("message", {"role": "user", "content": f"q{i}"}, session="quick")
        store.append("message", {"role": "assistant", "content": f"a{i}"}, session="quick")
        if i % 7 == 0:
            store.append("message", {"role": "user", "content": f"cli {i}"}, session="cli")
        if i == 20:
            store.append("session.reset", {"reason": "user"}, session="cli")
    store.append("consolidation.started", {"consolidation": "c1", "start": 0, "end": 30, "model": "m"}, session="quick")
    store.append("memory.written", {"memory": "# Facts\n- likes tea\n", "reason": "consolidation"})
    store.append("consolidation.completed", {"consolidation": "c1", "end": 30}, session="quick")
    store.append("some.future.type", {"x": 1})


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
        store.append("message", {"role": "user", "content": f"late {i}"}, session="quick")
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
