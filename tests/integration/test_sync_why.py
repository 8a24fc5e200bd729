"""``memory why`` after sync, on three real data homes and a bare git remote.

Fact ids are per device, and merges renumber a higher device's new facts; a device that
fast-forwards to another device's merge must still trace its own facts to its own messages
(not "from device <itself>" with none), and a peer's fact names that device and its
revision (``device_revision``, and a ``from device:`` line), as docs/CLI.md says.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.base.home import Home
from memtray.core.cli.main import main
from memtray.core.log.events import Message
from memtray.core.log.origin import origin_of

from tests.integration.sync_support import bare, open_app, sync

# ids decide which side a merge renumbers: C < B < A
A_ID, B_ID, C_ID = "d00000000000f", "d000000000008", "d000000000001"


@pytest.fixture
def three(tmp_path: Path) -> Iterator[tuple[Path, App, App, App]]:
    apps = []
    for name, dev in (("a", A_ID), ("b", B_ID), ("c", C_ID)):
        home = Home(tmp_path / name)
        home.create()
        home.device_file.parent.mkdir(parents=True, exist_ok=True)
        home.device_file.write_text(json.dumps({"id": dev, "name": name}))
        apps.append(open_app(tmp_path / name))
    try:
        yield (bare(tmp_path / "remote.git"), *apps)  # type: ignore[misc]
    finally:
        for app in apps:
            with contextlib.suppress(Exception):  # one a test closed to run the CLI on its home
                app.close()


def tell(app: App, fact: str) -> int:
    """The user states ``fact``; the agent remembers it from that message. Its seq."""
    [rec] = app.store.append_many([(Message(role="user", content=f"Remember this: {fact}."), "quick", None)])
    app.memory.remember(fact, "General", model=None, source_seq=rec.seq)
    return rec.seq


def cli(app: App, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``memtray --home HOME ARGS`` once ``app`` is closed (the command opens the home itself)."""
    with contextlib.suppress(Exception):  # closed already by an earlier call
        app.close()
    capsys.readouterr()
    assert main(["--home", str(app.home.root), *args]) == 0
    return capsys.readouterr().out


def fact_id(app: App, words: str) -> str:
    return next(f.id for f in app.memory.ledger().facts if words in f.text)


def test_own_fact_renumbered_by_other_merges_keeps_its_messages_after_a_fast_forward(
        three: tuple[Path, App, App, App], capsys: pytest.CaptureFixture[str]) -> None:
    url, a, b, c = three
    seq = tell(a, "User drinks green tea")  # F1 on A
    tell(b, "User has a cat named Rex")  # F1 on B
    tell(c, "User speaks Italian")  # F1 and F2 on C
    tell(c, "User owns a red bike")
    sync(url, a, b)  # B merges: A's F1 becomes F2 there
    sync(url, c)  # C merges B's merge: B's side F1, F2 become F3, F4
    sync(url, a, b, c)  # A and B fast-forward to C's merge
    texts = {x.memory.store.state.memory for x in (a, b, c)}
    assert len(texts) == 1
    tea = fact_id(a, "green tea")
    assert tea != "F1"  # renumbered by the merges
    info = a.memory.why(tea)
    assert info["device"] == A_ID
    assert "device_revision" not in info  # its own: no other device's revision to name
    assert [m["seq"] for m in info["messages"]] == [seq], info
    # the fast-forward renumbered it: the same fact, not one the merge brought in
    assert all("green tea" not in i["text"] for i in a.memory.diff().to_json()["added"])
    out = cli(a, capsys, "memory", "why", tea)
    assert "from device" not in out
    assert "Remember this: User drinks green tea." in out


def test_a_peers_fact_names_its_device_and_revision(three: tuple[Path, App, App, App],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    url, a, b, c = three
    tell(b, "User has a cat named Rex")
    tell(a, "User drinks green tea")
    sync(url, a, b, a)  # B merges, A fast-forwards
    wrote = next(r.id for r in b.store.log.records() if r.type == "memory.written" and origin_of(r) is None
                 and "Rex" in r.data["memory"])
    for app in (a, c):
        if app is c:
            sync(url, c)
        rex = fact_id(app, "Rex")
        info = app.memory.why(rex)
        assert info["device"] == B_ID, info
        assert info["device_revision"] == wrote, info
        assert [m["content"] for m in info["messages"]] == ["Remember this: User has a cat named Rex."], info
        got = json.loads(cli(app, capsys, "memory", "why", rex, "--json"))
        assert (got["device"], got["device_revision"]) == (B_ID, wrote)
        out = cli(app, capsys, "memory", "why", rex)
        assert f"from device: {B_ID} (its revision {wrote[:12]})" in out, out
