"""A conversation's memory scope travels with it (issue 32): a device that imports another's
conversations files each under the scope it was chosen in there, so scoped search, recall and
an MCP client limited to one scope see the same conversations on every device."""

from __future__ import annotations

import json
from pathlib import Path

from memtray.core.log.events import SessionScope
from memtray.core.log.origin import EXPORTED, peer_session
from memtray.core.memory import scopes
from memtray.core.sync import announce

from tests.integration.sync_support import bare, digest, homes, say, sync
from tests.support import run_cli


def test_a_conversations_scope_syncs_and_scoped_search_keeps_to_it(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        a.worker.call(lambda: scopes.choose(a.store, "w", "work"))
        a.worker.call(lambda: scopes.choose(a.store, "f", "family"))
        say(a, "The budget review is on Friday", "w")
        say(a, "Ada has a cello lesson on Friday", "f")
        say(a, "The weather on Friday looks fine", "g")
        # a conversation moved back to the global memory: the last choice is the one that holds
        a.worker.call(lambda: scopes.choose(a.store, "x", "work"))
        say(a, "Friday standup notes", "x")
        a.worker.call(lambda: scopes.choose(a.store, "x", "global"))
        sync(remote, a, b, a)
        dev = a.sync.device  # type: ignore[union-attr]
        state = b.store.state
        assert {k: scopes.of_session(state, peer_session(k, dev)) for k in "wfgx"} == {
            "w": "work", "f": "family", "g": "global", "x": "global"}
        assert scopes.known(state) == ["family", "work"]
        svc = b.search
        assert svc is not None
        found = {s: {h.session for h in b.run(svc.asearch("Friday", mode="keyword", scope=s)).hits}
                 for s in ("work", "family", "global")}
        assert found == {"work": {f"w@{dev}"}, "family": {f"f@{dev}"}, "global": {f"g@{dev}", f"x@{dev}"}}
        # the scope events are the same on both devices (the digest compares what travels)
        assert digest(a) == digest(b)
        b_root = b.home.root
    # the command line (what `memtray mcp --scope` runs) on the importing device
    for scope, want in (("work", {f"w@{dev}"}), ("family", {f"f@{dev}"}), ("global", {f"g@{dev}", f"x@{dev}"})):
        proc = run_cli(b_root, "history", "search", "--json", "--scope", scope, "Friday")
        assert proc.returncode == 0, proc.stderr
        assert {h["session"] for h in json.loads(proc.stdout)} == want
    chats = run_cli(b_root, "chats", "list", "--json")
    assert chats.returncode == 0, chats.stderr
    listed = {c["key"]: c["scope"] for c in json.loads(chats.stdout)}
    assert listed[f"w@{dev}"] == "work" and listed[f"f@{dev}"] == "family"


def test_scopes_chosen_before_the_upgrade_reach_devices_that_synced_already(tmp_path: Path) -> None:
    """Two homes that synced while ``session.scope`` stayed home (an older memtray): after the
    upgrade the scopes chosen back then are said once more and travel; once only."""
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        assert a.sync is not None and b.sync is not None
        for app in (a, b):
            app.sync.exported = announce.BEFORE  # the older version's stream
        a.worker.call(lambda: scopes.choose(a.store, "w", "work"))
        say(a, "The budget review is on Friday", "w")
        a.worker.call(lambda: scopes.choose(a.store, "f", "family"))
        a.worker.call(lambda: scopes.choose(a.store, "f", "global"))  # chosen, then back to global
        say(a, "Ada has a cello lesson on Friday", "f")
        sync(remote, a, b)
        dev = a.sync.device
        assert scopes.of_session(b.store.state, peer_session("w", dev)) == "global"  # as the tester saw
        for app in (a, b):  # an older version wrote no record of what it exported
            (app.sync.dir / announce.FILE).unlink(missing_ok=True)
            app.sync.exported = EXPORTED
        sync(remote, a, b)
        assert scopes.of_session(b.store.state, peer_session("w", dev)) == "work"
        assert scopes.of_session(b.store.state, peer_session("f", dev)) == "global"
        assert digest(a) == digest(b)
        # said once: later syncs append nothing more
        count = sum(1 for r in a.store.log.records() if r.type == SessionScope.TYPE)
        sync(remote, a, b, a)
        assert sum(1 for r in a.store.log.records() if r.type == SessionScope.TYPE) == count
        found = b.run(b.search.asearch("Friday", mode="keyword", scope="work")).hits  # type: ignore[union-attr]
        assert {h.session for h in found} == {f"w@{dev}"}


def test_a_home_that_never_synced_says_nothing_again(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        a.worker.call(lambda: scopes.choose(a.store, "w", "work"))
        say(a, "The budget review is on Friday", "w")
        before = a.store.log.last_seq
        sync(remote, a, b)
        assert a.store.log.last_seq == before  # its first push carries the scope as it was written
        assert scopes.of_session(b.store.state, peer_session("w", a.sync.device)) == "work"  # type: ignore[union-attr]
