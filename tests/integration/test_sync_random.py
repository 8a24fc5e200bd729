"""Three devices do random things in a random order, syncing now and then (some with a copy of the
remote as it was: two devices syncing at the same moment); afterwards they agree, and every fact
ever remembered is in memory on every device."""

from __future__ import annotations

import json
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from memtray.core.base.home import Home
from memtray.core.log.events import SessionReset

from tests.integration.sync_support import bare, contents, digest, open_app, remember, say, sync


# 24 and 33: criss-cross syncs (through a stale copy) where a new fact's id, renumbered by two
# merges differently, named another new fact on each side: the merge held one back as "reworded"
# 5 and 43: a cancel made on one device imported before the owner's schedule of the reminder
@pytest.mark.parametrize("seed", [1, 2, 5, 24, 33, 43])
def test_random_interleavings_of_three_devices_converge(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    remote = bare(tmp_path / "remote.git")
    apps = []
    for i in range(3):  # fixed device ids: the merge orders sides by them, and a run must be the same run
        home = Home(tmp_path / f"d{i}")
        home.device_file.parent.mkdir(parents=True, exist_ok=True)
        home.device_file.write_text(json.dumps({"id": f"d00000000000{i}", "name": f"d{i}"}))
        apps.append(open_app(tmp_path / f"d{i}"))
    said: set[str] = set()
    facts: set[str] = set()  # every fact remembered (none is ever removed)
    stale = remote  # a copy of the remote as it was: a device syncing there has not seen what came after
    try:
        for step in range(40):
            app = rng.choice(apps)
            assert app.sync is not None
            action = rng.choice(["say", "fact", "fact", "sync", "sync", "stale", "stale", "snap", "remind", "cancel",
                                 "new"])
            if action == "say":
                text = f"step {step}"
                say(app, text, session=rng.choice(["quick", "work"]))
                said.add(text)
            elif action == "fact":
                fact = f"User noted fact {step}"
                remember(app, fact)
                facts.add(fact)
            elif action == "sync":
                app.sync.sync(str(remote))
            elif action == "snap":  # what two devices syncing at the same moment each see
                stale = tmp_path / f"stale{step}.git"
                shutil.copytree(remote, stale)
            elif action == "stale":
                app.sync.sync(str(stale))
            elif action == "remind":
                when = (datetime.now(UTC) + timedelta(days=1 + step)).isoformat()
                app.write(lambda app=app, when=when, step=step: app.reminders.schedule(f"r{step}", at=when))
            elif action == "cancel":
                live = [r for r in app.reminders.reminders() if r.active]
                if live:
                    pick = rng.choice(sorted(live, key=lambda r: r.text))  # not by id: ids are made of the time
                    app.write(lambda app=app, rid=pick.id: app.reminders.cancel(rid))
            else:  # a /new (its archiving consolidation needs a model; the reset is what travels)
                app.store.append(SessionReset(reason="user"), session="quick")
        for _ in range(2):
            sync(remote, *apps)
        assert len({digest(app) for app in apps}) == 1
        for app in apps:
            assert said <= contents(app)
            # every fact ever added, never removed, is in memory (not only in a review item)
            shown = {line[2:] for line in app.store.state.memory.splitlines() if line.startswith("- ")}
            assert facts <= shown, (app.memory.device, sorted(facts - shown))
    finally:
        for app in apps:
            app.close()
