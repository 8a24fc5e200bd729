"""A conversation's memory scope travels with it (issue 32): a device that imports another's
conversations files each under the scope it was chosen in there, so scoped search, recall and
an MCP client limited to one scope see the same conversations on every device."""

from __future__ import annotations

import json
from pathlib import Path

from memtray.core.log.origin import peer_session
from memtray.core.memory import scopes

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
