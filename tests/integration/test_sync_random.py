"""Three devices do random things in a random order, syncing now and then; afterwards they agree."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.integration.sync_support import bare, contents, digest, open_app, say, sync


@pytest.mark.parametrize("seed", [1, 2])
def test_random_interleavings_of_three_devices_converge(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    remote = bare(tmp_path / "remote.git")
    apps = [open_app(tmp_path / f"d{i}") for i in range(3)]
    said: set[str] = set()
    try:
        for step in range(40):
            app = rng.choice(apps)
            assert app.sync is not None
            action = rng.choice(["say", "say", "sync", "remind", "cancel", "new"])
            if action == "say":
                text = f"step {step}"
                say(app, text, session=rng.choice(["quick", "work"]))
                said.add(text)
            elif action == "sync":
                app.sync.sync(str(remote))
            elif action == "remind":
                when = (datetime.now(UTC) + timedelta(days=1 + step)).isoformat()
                app.write(lambda app=app, when=when, step=step: app.reminders.schedule(f"r{step}", at=when))
            elif action == "cancel":
                live = [r for r in app.reminders.reminders() if r.active]
                if live:
                    app.write(lambda app=app, rid=rng.choice(live).id: app.reminders.cancel(rid))
            else:  # a /new (its archiving consolidation needs a model; the reset is what travels)
                app.store.append("session.reset", {"reason": "user"}, session="quick")
        for _ in range(2):
            sync(remote, *apps)
        assert len({digest(app) for app in apps}) == 1
        for app in apps:
            assert said <= contents(app)
    finally:
        for app in apps:
            app.close()
