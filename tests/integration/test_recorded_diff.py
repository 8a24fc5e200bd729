"""One notion of the same fact (issue 28): the diff a user sees of a revision is the one its
``memory.written`` recorded, by fact id, never one matched again by words from git blobs.

A fact reworded under its id is "changed" in `memtray memory diff` (text and ``--json``),
in the revision list's counts and in the memory browser; matching the two texts by words
would call it a removal plus an addition (the test checks that it would, so it can fail).
"""

from __future__ import annotations

import json
from typing import Any

from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.memory import factdiff

from tests.support import cli_here

OLD = "Likes green tea"
NEW = "Starts every morning with a pot of sencha"  # the same fact in other words


def open_app(home: Home) -> App:
    return App.open(home, config=Config(model="openai/x"), start_services=False)


def _without_reasons(recorded: dict[str, Any]) -> dict[str, Any]:
    """The recorded diff as `memory diff --json` shows it (the reasons stay in `memory dropped`)."""
    drop = {"reason"}
    return {
        "added": [{k: v for k, v in f.items() if k not in drop} for f in recorded["added"]],
        "dropped": [{k: v for k, v in f.items() if k not in drop} for f in recorded["dropped"]],
        "changed": [{k: v for k, v in c.items() if k not in drop} for c in recorded["changed"]],
        "unchanged": recorded["unchanged"],
    }


def _seed(home: Home) -> tuple[str, str]:
    """Two facts, then the first reworded under its id; (its id, MEMORY.md before the edit)."""
    app = open_app(home)
    try:
        app.memory.remember(OLD, "Me", model=None, source_seq=None)
        app.memory.remember("Lives in Paris", "Me", model=None, source_seq=None)
        before = app.store.state.memory
        (fid,) = [f.id for f in app.memory.ledger().facts if f.text == OLD]
        app.worker.call(lambda: app.memory.edit_fact(fid, NEW, "I drink sencha now"))
        return fid, before
    finally:
        app.close()


def test_a_fact_reworded_under_its_id_is_changed_as_recorded_not_dropped_and_added(home: Home) -> None:
    fid, before = _seed(home)
    app = open_app(home)
    try:
        after = app.store.state.memory
        by_words = factdiff.diff(before, after)
        assert by_words.counts == (1, 1, 0)  # words alone see a removal and an addition
        shown = app.memory.diff()
        assert shown.counts == (0, 0, 1)
        [(old, new)] = shown.changed
        assert (old.id, old.text, new.id, new.text) == (fid, OLD, fid, NEW)
        recorded = app.memory.memory_events()[-1].data["diff"]
        assert shown.to_json() == _without_reasons(recorded)
        assert recorded["changed"][0]["reason"] == "I drink sencha now"
        # the same pair named explicitly is the same recorded diff
        assert app.memory.diff("HEAD~1", "HEAD").to_json() == shown.to_json()
    finally:
        app.close()

    out = cli_here(home.root, "memory", "diff", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert (d["added"], d["dropped"]) == ([], [])
    assert [(c["old"]["id"], c["old"]["text"], c["new"]["text"]) for c in d["changed"]] == [(fid, OLD, NEW)]
    text = cli_here(home.root, "memory", "diff")
    assert text.stdout.splitlines() == [f"~ {fid} [Me] {OLD}", f"    → {NEW}"]
    log = json.loads(cli_here(home.root, "memory", "log", "--json").stdout)
    assert (log[0]["added"], log[0]["removed"], log[0]["changed"]) == (0, 0, 1)


def test_revisions_further_apart_are_diffed_by_id_between_them(home: Home) -> None:
    """No single event recorded a diff across several revisions: the ledgers' ids say it."""
    fid, _before = _seed(home)
    app = open_app(home)
    try:
        first = app.memory.revisions(limit=10)[-1].rev  # only OLD
        d = app.memory.diff(first, "HEAD")
        assert [(o.id, o.text, n.text) for o, n in d.changed] == [(fid, OLD, NEW)]
        assert [f.text for f in d.added] == ["Lives in Paris"] and d.dropped == []
    finally:
        app.close()
