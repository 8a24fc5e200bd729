"""Two versions on one remote: a newer device writes an event type and a field the older one
does not know. Both keep working and agree on what both understand (the digest); the older
keeps the newer's events verbatim and its fold skips what it cannot read."""

from __future__ import annotations

from pathlib import Path

from memtray.core.admin.doctor import check
from memtray.core.base.home import Home
from memtray.core.log.events import Verbatim
from memtray.core.log.origin import EXPORTED
from memtray.core.sync.service import SyncService

from tests.integration.sync_support import bare, contents, digest, homes, say, sync


def test_a_newer_device_and_an_older_one_keep_working_and_converge(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "on") as (old, new):
        # the newer version exports one more type (its own EXPORTED is longer)
        new.sync = SyncService(new.home, new.store, new.memory, new.settings, new.clock,
                               exported=EXPORTED | {"poll.created"})
        say(old, "from the older one")
        # what the newer version writes with payload classes this one does not have
        new.store.append_many([
            (Verbatim("message", {"role": "user", "content": "from the newer one", "mood": "sunny"}), "quick", None),
            (Verbatim("poll.created", {"question": "tea or coffee?", "options": ["tea", "coffee"]}), "quick", None),
            (Verbatim("message", {"role": "user", "text": "a v2 message shape"}, 2), "quick", None),
        ])
        reps = sync(remote, new, old, new)
        assert not any(r.refused for r in reps), [r.refused for r in reps]
        # the older one has everything, verbatim: the unknown field, the unknown type, the newer version
        got = {r.type: r for r in old.store.log.records() if "origin" in r.data}
        assert "from the newer one" in contents(old)
        mood = [r for r in old.store.log.records() if r.data.get("mood") == "sunny"]
        assert len(mood) == 1 and mood[0].session == f"quick@{new.sync.device}"  # type: ignore[union-attr]
        assert got["poll.created"].data["options"] == ["tea", "coffee"]
        v2 = [r for r in old.store.log.records() if r.type == "message" and r.v == 2]
        assert len(v2) == 1 and v2[0].data["text"] == "a v2 message shape"
        # its fold counted and skipped what it cannot read; nothing is unfoldable
        assert old.store.state.unknown == {"poll.created": 1, "message v2": 1}
        assert old.store.state.unfoldable_count == 0
        # both agree on what both understand, and both keep working
        assert digest(old) == digest(new)
        say(old, "still talking")
        say(new, "me too")
        sync(remote, old, new, old)
        assert digest(old) == digest(new) and {"still talking", "me too"} <= contents(old) & contents(new)
        for app in (old, new):
            bad = [f for f in check(Home(app.home.root)) if not f.ok and f.code != "lock"]
            assert not bad, [(f.title, f.detail) for f in bad]
