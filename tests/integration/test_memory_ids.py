"""Fact ids in the memory service: old events replay, hand edits keep ids, review is derived, why by id."""

from __future__ import annotations

import shutil

from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import MemoryWritten
from memtray.core.memory import factdiff

OLD = "## Me\n- Lives in Paris\n- Likes green tea\n"


def open_app(home: Home, **kw: object) -> App:
    return App.open(home, config=Config(model="openai/x", **kw), start_services=False)  # type: ignore[arg-type]


def test_events_without_ids_replay_with_content_ids_and_new_writes_carry_them(home: Home) -> None:
    app = open_app(home)
    try:
        # a memory.written as memtray wrote it before ids existed: no "facts" member
        app.store.append(MemoryWritten(memory=OLD, reason="user-edit", source="user"))
        legacy = [f.id for f in factdiff.parse(OLD)]
        assert app.memory.ledger().ids == legacy
        app.memory.remember("Has a cat named Pixel", "Me", model=None, source_seq=None)
        led = app.memory.ledger()
        assert led.ids == [*legacy, "F1"]
        rec = app.memory.memory_events()[-1]
        assert rec.data["facts"] == {"ids": [*legacy, "F1"], "next": 2}
        assert [d["id"] for d in rec.data["diff"]["added"]] == ["F1"]
    finally:
        app.close()
    shutil.rmtree(home.root / "state", ignore_errors=True)  # derived: the same ids come back
    app = open_app(home)
    try:
        assert app.memory.ledger().ids == [*legacy, "F1"]
    finally:
        app.close()


def test_a_hand_edit_of_a_facts_words_keeps_its_id_and_a_hand_added_fact_gets_one(home: Home) -> None:
    app = open_app(home)
    try:
        app.memory.remember("Lives in Paris", "Me", model=None, source_seq=None)
        app.memory.remember("Likes green tea", "Me", model=None, source_seq=None)
        assert app.memory.ledger().ids == ["F1", "F2"]
        text = (home.memory / "MEMORY.md").read_text()
        edited = text.replace("Lives in Paris", "Has a flat in central Paris since May") + "- Plays chess\n"
        (home.memory / "MEMORY.md").write_text(edited)
        assert app.memory.check_worktree()
        assert [(f.id, f.text) for f in app.memory.ledger().facts] == [
            ("F1", "Has a flat in central Paris since May"), ("F2", "Likes green tea"), ("F3", "Plays chess")]
        d = app.memory.memory_events()[-1].data["diff"]
        assert [(c["old"]["id"], c["new"]["id"]) for c in d["changed"]] == [("F1", "F1")]
        # another place is another fact written where the old one stood: the old one is removed
        # by the edit (and restorable), the new one gets a new id
        (home.memory / "MEMORY.md").write_text(edited.replace("Has a flat in central Paris since May", "Lives in Lyon"))
        assert app.memory.check_worktree()
        assert [(f.id, f.text) for f in app.memory.ledger().facts] == [
            ("F4", "Lives in Lyon"), ("F2", "Likes green tea"), ("F3", "Plays chess")]
        d = app.memory.memory_events()[-1].data["diff"]
        assert [f["id"] for f in d["dropped"]] == ["F1"] and [f["id"] for f in d["added"]] == ["F4"]
        app.memory.restore_fact(None, "F1")
        assert app.memory.ledger().get("F1").text == "Has a flat in central Paris since May"
        # forget by id; the id is not reused
        app.memory.forget("F2", "asked to", model=None)
        app.memory.remember("Owns a kayak", "Me", model=None, source_seq=None)
        assert app.memory.ledger().ids == ["F4", "F3", "F1", "F5"]
        # restore-fact by id alone brings it back with its id
        app.memory.restore_fact(None, "F2")
        assert app.memory.ledger().get("F2") is not None
    finally:
        app.close()


def test_review_is_derived_from_memory(home: Home) -> None:
    app = open_app(home, drop_policy="review")
    try:
        app.memory.remember("Lives in Paris", "Me", model=None, source_seq=None)
        item = {"id": "abc123", "kind": "silent-drop", "text": "Likes green tea", "section": "Me",
                "fact_id": "F9", "reason": "dropped without a reason"}
        app.memory.write(app.store.state.memory, reason="consolidation", source="model", flagged=[item])
        assert [i["text"] for i in app.memory.pending_review()] == ["Likes green tea"]
        # the fact comes back by another way (a hand edit): the review no longer lists it
        (home.memory / "MEMORY.md").write_text(app.store.state.memory + "- Likes green tea\n")
        app.memory.check_worktree()
        assert app.memory.pending_review() == []
    finally:
        app.close()
