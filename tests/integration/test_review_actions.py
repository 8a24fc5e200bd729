"""The review's choices say what they do, are recorded, and each is undone by one undo.

A held fact: "add" writes it (a revision, reason review); "keep out" leaves it out with the
user's reason, listed by `memory dropped`; undoing either puts it back in the review queue
(and takes an added fact out again). A sync merge conflict between two real homes: "keep this
version" and "keep the other" are revisions that reach the other device, and their undo opens
the conflict again, here and, after the next sync, there too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import MemoryReviewed, Message
from memtray.core.memory.browse import MemoryError_
from memtray.core.memory.facts import Ledger
from memtray.core.memory.items import review_item
from memtray.core.memory.review import versions

from tests.integration import sync_support
from tests.integration.sync_support import bare, homes, sync

MEM0 = "# Memory\n\n## About\n- Lives in Graz\n"
HELD = "Is a cellist"


@pytest.fixture
def app(home: Home) -> Iterator[App]:
    clock = FakeClock()
    a = App.open(home, config=Config(), clock=clock, ids=seeded_ids(clock), start_services=False)
    a.memory.write(MEM0, reason="user-edit", source="user")
    seq = a.store.append_many([(Message(role="user", content="I play the cello in a quartet."), "s", None)])[0].seq
    item = review_item("unsupported", HELD, "About", None, "no consolidated message says this",
                       messages=[seq], quote="I play the cello")
    a.memory.write(MEM0, reason="consolidation", source="model", flagged=[item])
    yield a
    a.close()


def pending(app: App) -> list[str]:
    return [str(i["text"]) for i in app.memory.pending_review()]


def test_add_writes_the_fact_and_its_undo_holds_it_again(app: App) -> None:
    item = app.memory.pending_review()[0]
    assert item["messages"] and item["quote"] == "I play the cello"  # the item carries its receipt
    rev = app.memory.add_review(item["id"][:6])  # a prefix, as the CLI accepts
    assert rev.reason == "review" and HELD in app.store.state.memory and pending(app) == []
    last = [r for r in app.store.log.records() if r.type == MemoryReviewed.TYPE][-1]
    assert MemoryReviewed.of(last).action == "add" and MemoryReviewed.of(last).entry is not None
    undone = app.memory.undo_review(item["id"])
    assert undone.reason == "undo"
    assert HELD not in app.store.state.memory and pending(app) == [HELD]
    with pytest.raises(MemoryError_, match="waiting for review already"):
        app.memory.undo_review(item["id"])


def test_keep_out_is_listed_with_its_reason_and_undone(app: App) -> None:
    item = app.memory.pending_review()[0]
    head = app.memory.revision("HEAD").rev
    app.memory.keep_out(item["id"], "  never said\nthat ")
    assert app.memory.revision("HEAD").rev == head  # nothing written
    assert pending(app) == [] and HELD not in app.store.state.memory
    out = [d for d in app.memory.dropped() if d.get("review") == item["id"]]
    assert len(out) == 1 and out[0]["reason"] == "never said that" and out[0]["by"] == "review"
    assert out[0]["text"] == HELD and out[0]["present_now"] is False
    app.memory.undo_review(item["id"])
    assert pending(app) == [HELD] and HELD not in app.store.state.memory
    assert not [d for d in app.memory.dropped() if d.get("review") == item["id"]]
    # kept out again, without a reason: the default words, and one entry, not two
    app.memory.keep_out(item["id"])
    out = [d for d in app.memory.dropped() if d.get("review") == item["id"]]
    assert [d["reason"] for d in out] == ["kept out in review"]


def test_the_old_names_still_work_and_wrong_choices_are_refused(app: App) -> None:
    item = app.memory.pending_review()[0]
    with pytest.raises(MemoryError_, match="not a merge conflict"):
        app.memory.keep_version(item["id"], "this")
    with pytest.raises(MemoryError_, match="unknown version"):
        app.memory.keep_version(item["id"], "mine")
    app.memory.accept_review(item["id"])  # = keep out
    assert [d["reason"] for d in app.memory.dropped() if d.get("review") == item["id"]] == ["kept out in review"]
    app.memory.undo_review(item["id"])
    app.memory.restore_review(item["id"])  # = add
    assert HELD in app.store.state.memory
    with pytest.raises(MemoryError_, match="no review choice"):
        app.memory.undo_review("zzzz")


def test_undo_of_an_added_diary_entry_takes_it_out_of_history(app: App) -> None:
    entry = "[2026-12-03 10:00] Talked about the quartet."
    app.memory.write(app.store.state.memory, reason="consolidation", source="model",
                     flagged=[review_item("proposal", entry, "History", None, "a small model's diary entry")])
    item = next(i for i in app.memory.pending_review() if i["kind"] == "proposal")
    app.memory.add_review(item["id"])
    history = app.home.memory / "HISTORY.md"
    assert entry in history.read_text(encoding="utf-8")
    app.memory.undo_review(item["id"])
    assert entry not in history.read_text(encoding="utf-8")
    assert entry in pending(app)


def _reword(app: App, old: str, new: str) -> None:
    text = app.memory.store.state.memory
    led = app.memory.ledger()
    fid = next(f.id for f in led.facts if f.text == old)
    app.memory.write(text.replace(old, new), reason="agent", source="model",
                     facts=Ledger.with_ids(text.replace(old, new), led.ids, led.next),
                     provenance={fid: {"source_seqs": [sync_support.source(app)], "text": new}})


@pytest.mark.parametrize("which", ["this", "other"])
def test_a_merge_conflict_kept_either_way_reaches_the_other_device_and_its_undo_opens_it_again(
        tmp_path: Path, which: str) -> None:
    url = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        sync_support.remember(a, "User lives in Lyon", "General")
        sync(url, a, b)
        _reword(a, "User lives in Lyon", "User lives in Lyon, near the river")
        _reword(b, "User lives in Lyon", "User lives in Paris")
        sync(url, a, b, a)
        [item] = a.memory.merge_conflicts()
        now = a.memory.ledger().get(str(item["fact_id"]))
        assert now is not None
        v = versions(item, now.text)
        assert {v["this"]["device"], v["other"]["device"]} == {a.memory.device, b.memory.device}
        kept, other = v["this"]["text"], v["other"]["text"]
        assert kept == now.text and other != kept
        rev = a.memory.keep_version(item["id"], which)
        want = kept if which == "this" else other
        assert want in a.store.state.memory and rev.reason == "review"
        sync(url, a, b, a)
        assert a.memory.merge_conflicts() == b.memory.merge_conflicts() == []
        assert want in b.store.state.memory
        # undo here: memory as before the choice, the conflict open again, on both devices
        a.memory.undo_review(item["id"])
        assert kept in a.store.state.memory
        assert [i["id"] for i in a.memory.merge_conflicts()] == [item["id"]]
        sync(url, a, b, a)
        assert [i["id"] for i in a.memory.merge_conflicts()] == [item["id"]], "a later sync settled it again"
        assert [i["id"] for i in b.memory.merge_conflicts()] == [item["id"]]


def test_a_device_name_travels_and_shows_where_a_fact_came_from(tmp_path: Path) -> None:
    from memtray.core.sync.names import name_device

    url = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        a.write(lambda: name_device(a.store, a.memory.device, "Laptop"))
        sync_support.remember(a, "User keeps bees", "General")
        sync(url, a, b)
        assert b.store.state.device_names == {a.memory.device: "Laptop"}
        info = b.memory.why("User keeps bees")
        assert info["device"] == a.memory.device and info["device_name"] == "Laptop"
        [fact] = [f for f in b.memory.current_facts() if f["text"] == "User keeps bees"]
        assert fact["by"] == "Laptop" and fact["device_name"] == "Laptop" and fact["device"] == a.memory.device
        # renamed on the other device: the newest name reaches the first one too
        b.write(lambda: name_device(b.store, a.memory.device, "Old laptop"))
        sync(url, b, a)
        assert a.store.state.device_names[a.memory.device] == "Old laptop"
