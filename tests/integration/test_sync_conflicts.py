"""A merge conflict reaches every device that has the merge, and a resolution on one reaches all.

Three real data homes sync through a bare git remote: a hand edit on one device and a
rewording on another of the same fact, and a removal against a rewording, meet in one
device's merge; a third device merges that with its own revision, and the first two
fast-forward to it. Each must list both conflicts in its review queue (not only the device
that made the merge), and an accept or a restore on any one device resolves them on all.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.base.home import Home
from memtray.core.memory.facts import Ledger

from tests.integration import sync_support
from tests.integration.sync_support import bare, homes, sync


def remember(app: App, fact: str) -> None:
    sync_support.remember(app, fact, "General")


def edit(app: App, old: str, new: str, *, by: str = "user") -> None:
    """A rewording in place under the fact's id: by hand (MEMORY.md edited), or by the model."""
    text = app.memory.store.state.memory
    assert old in text
    if by == "user":
        (app.home.memory / "MEMORY.md").write_text(text.replace(old, new), encoding="utf-8")
        assert app.memory.check_worktree()
    else:
        led = app.memory.ledger()
        fid = next(f.id for f in led.facts if f.text == old)
        app.memory.write(text.replace(old, new), reason="agent", source="model",
                         facts=Ledger.with_ids(text.replace(old, new), led.ids, led.next),
                         provenance={fid: {"source_seqs": [sync_support.source(app)], "text": new}})
    assert new in app.memory.store.state.memory


def conflicts(app: App) -> dict[str, tuple[str, str]]:
    """Review id -> (kind of conflict, fact id) of the merge conflicts waiting on ``app``."""
    return {str(i["id"]): (str(i.get("conflict")), str(i["fact_id"])) for i in app.memory.merge_conflicts()}


def diverge(url: Path, a: App, b: App, c: App) -> None:
    remember(a, "User lives in Lyon")
    remember(a, "User plays chess on Sundays")
    sync(url, a, b, c)
    edit(a, "User lives in Lyon", "User lives in Lyon, France, near the river Saone")
    edit(b, "User lives in Lyon", "User lives in Paris", by="model")
    edit(b, "User plays chess on Sundays", "User plays chess on Saturdays", by="model")
    a.memory.forget("F2", "user stopped playing chess", model=None)
    remember(a, "User drinks green tea")
    remember(c, "User has a cat named Rex")
    sync(url, a, b, c, a, b, c)


def _with_ids(tmp_path: Path, ids: tuple[str, ...]) -> None:
    """Give homes a, b, c these device ids: the merge orders sides by them, so every order is a
    different run (a random order made a failure show one run in three)."""
    for name, dev in zip("abc", ids, strict=True):
        home = Home(tmp_path / name)
        home.device_file.parent.mkdir(parents=True, exist_ok=True)
        home.device_file.write_text(json.dumps({"id": dev, "name": name}))


@pytest.mark.encrypted_once
@pytest.mark.parametrize("ids", list(itertools.permutations(["d000000000001", "d000000000002", "d000000000003"])))
@pytest.mark.parametrize("how", ["accept", "restore"])
def test_every_device_that_has_the_merge_lists_its_conflicts_and_one_resolution_reaches_all(
        tmp_path: Path, how: str, ids: tuple[str, ...]) -> None:
    url = bare(tmp_path / "remote.git")
    _with_ids(tmp_path, ids)
    with homes(tmp_path, "abc") as (a, b, c):
        diverge(url, a, b, c)
        assert a.memory.store.state.memory == b.memory.store.state.memory == c.memory.store.state.memory
        seen = [conflicts(x) for x in (a, b, c)]
        assert len(seen[0]) == 2, seen
        assert seen[0] == seen[1] == seen[2]
        assert sorted(k for k, _f in seen[0].values()) == ["removed-reworded", "reworded"]
        # one device resolves both; the others learn it from the next sync
        for rid in seen[0]:
            (a.memory.accept_review if how == "accept" else a.memory.restore_review)(rid)
        assert conflicts(a) == {}
        sync(url, a, b, c, a, b, c)
        assert [conflicts(x) for x in (a, b, c)] == [{}, {}, {}]
        texts = {x.memory.store.state.memory for x in (a, b, c)}
        assert len(texts) == 1
        memory = texts.pop()
        if how == "restore":  # the other wording, and the removal after all
            assert "User plays chess" not in memory
        else:  # the merge's choices stand
            assert "User plays chess on Saturdays" in memory
        # a later sync does not bring the resolved items back
        remember(b, "User reads crime novels")
        sync(url, b, c, a, b)
        assert [conflicts(x) for x in (a, b, c)] == [{}, {}, {}]
