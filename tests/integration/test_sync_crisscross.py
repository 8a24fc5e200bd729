"""Three devices, criss-cross syncs: a new fact whose id another new fact took is never a rewording.

Fact ids are per-device counters. A third device's new fact that reaches two devices
separately is renumbered by each of their merges, differently; when those two merges
meet, the base is that third device's revision, whose id for the fact is now another,
brand-new fact on each side. The merge must see two new facts (and the renumbered one
unchanged), never one fact "reworded on both" held back for review (real sync, a real
bare remote, real git).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.base.home import Home

from tests.integration import sync_support
from tests.integration.sync_support import bare, digest, open_app, sync

LOW, MID, HIGH = "d000000000001", "d000000000007", "d00000000000f"


@pytest.fixture
def devices(tmp_path: Path) -> Iterator[tuple[App, App, App]]:
    """Homes C (lowest device id), B (middle) and S (highest)."""
    apps = []
    try:
        for name, dev in (("c", LOW), ("b", MID), ("s", HIGH)):
            home = Home(tmp_path / name)
            home.device_file.parent.mkdir(parents=True, exist_ok=True)
            home.device_file.write_text(json.dumps({"id": dev, "name": name}))
            apps.append(open_app(tmp_path / name))
        c, b, s = apps
        assert (c.memory.device, b.memory.device, s.memory.device) == (LOW, MID, HIGH)
        yield c, b, s
    finally:
        for app in apps:
            app.close()


def remember(app: App, *facts: str) -> None:
    for fact in facts:
        sync_support.remember(app, fact)


def shown(app: App) -> list[str]:
    return [line[2:] for line in app.store.state.memory.splitlines() if line.startswith("- ")]


def conflicts(app: App) -> list[dict[str, object]]:
    return [dict(i) for i in app.store.state.review.values() if i.get("kind") == "merge-conflict"]


def test_new_facts_sharing_an_id_after_a_renumbering_are_all_kept_on_every_device(tmp_path: Path,
                                                                                 devices: tuple[App, App, App]) -> None:
    c, b, s = devices
    remote = bare(tmp_path / "remote.git")
    remember(b, "User lives in Lyon")
    sync(remote, b, c, s)
    remember(s, "User said this on S")  # S's F2
    sync(remote, s)
    remember(b, "User bakes bread on Fridays")  # B's F2
    remember(c, "User owns a red bike", "User speaks Italian", "User likes jazz")  # C's F2..F4
    # B and C sync at the same moment: each merges S's revision without the other's merge
    # (a copy of the remote as it is now stands for what the other saw before the first push)
    before = tmp_path / "before.git"
    shutil.copytree(remote, before)
    sync(before, b)  # B: its F2 with S's F2 renumbered F3
    sync(remote, c)  # C: its F2..F4 with S's F2 renumbered F5
    sync(remote, b)  # B's merge reaches the remote: B now merges the two merges
    for _ in range(2):
        sync(remote, b, c, s)
    want = sorted(["User lives in Lyon", "User said this on S", "User bakes bread on Fridays",
                   "User owns a red bike", "User speaks Italian", "User likes jazz"])
    for app in (c, b, s):
        assert sorted(shown(app)) == want, (app.memory.device, shown(app))
        assert conflicts(app) == [], app.memory.device  # nobody reworded anything
    assert len({digest(app) for app in (c, b, s)}) == 1
    assert len({app.store.state.memory for app in (c, b, s)}) == 1
