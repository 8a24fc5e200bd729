"""`memtray memory review` with the choices named for their effect, `memory dropped` listing what
was kept out, the undo of each, the older names still working, and `memtray device name`.

Each command runs through the CLI's own entry point against a real data home (in this process:
tests/support.cli_here, with the environment and streams a fresh interpreter would have).
"""

from __future__ import annotations

import json
from pathlib import Path

from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.memory.items import review_item

from tests.support import cli_here

MEM0 = "# Memory\n\n## About\n- Lives in Graz\n"


def seed(home: Home, *texts: str) -> None:
    clock = FakeClock()
    app = App.open(home, config=Config(), clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        app.memory.write(MEM0, reason="user-edit", source="user")
        seq = app.store.append_many([(Message(role="user", content="I play the cello, and I keep bees."), "s", None)])[0].seq
        items = [review_item("unsupported", t, "About", None, "no consolidated message says this", messages=[seq],
                             quote="I play the cello") for t in texts]
        app.memory.write(MEM0, reason="consolidation", source="model", flagged=items)
    finally:
        app.close()


def cli(home: Home, *args: str) -> str:
    out = cli_here(home.root, *args)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout


def listed(home: Home) -> list[dict]:  # type: ignore[type-arg]
    return json.loads(cli(home, "memory", "review", "--json"))


def test_add_keep_out_and_undo_from_the_terminal(home: Home) -> None:
    seed(home, "Is a cellist", "Keeps bees")
    text = cli(home, "memory", "review")
    assert "add to memory: memtray memory review add" in text and "keep out:" in text
    assert 'quote: "I play the cello" (message #' in text
    rows = {r["text"]: r for r in listed(home)}
    assert rows["Is a cellist"]["actions"] == ["add", "keep-out"] and rows["Is a cellist"]["quote"] == "I play the cello"
    cellist, bees = rows["Is a cellist"]["id"], rows["Keeps bees"]["id"]

    done = json.loads(cli(home, "memory", "review", "add", cellist, "--json"))
    assert done["action"] == "add" and done["revision"]["reason"] == "review"
    assert "Is a cellist" in (home.memory / "MEMORY.md").read_text(encoding="utf-8")
    assert "kept out" in cli(home, "memory", "review", "keep-out", bees, "--reason", "I gave the hives away")
    gone = [d for d in json.loads(cli(home, "memory", "dropped", "--json")) if d.get("review") == bees]
    assert [(d["text"], d["reason"], d["by"]) for d in gone] == [("Keeps bees", "I gave the hives away", "review")]
    assert "removed by a review: I gave the hives away" in cli(home, "memory", "dropped")
    assert listed(home) == []

    assert "waiting for review again" in cli(home, "memory", "review", "undo", cellist)
    assert "Is a cellist" not in (home.memory / "MEMORY.md").read_text(encoding="utf-8")
    cli(home, "memory", "review", "undo", bees[:6])
    assert sorted(r["text"] for r in listed(home)) == ["Is a cellist", "Keeps bees"]
    assert not [d for d in json.loads(cli(home, "memory", "dropped", "--json")) if d.get("review")]


def test_old_names_and_bad_input(home: Home) -> None:
    seed(home, "Is a cellist")
    [row] = listed(home)
    out = cli_here(home.root, "memory", "review", "keep", row["id"], "--version", "this")
    assert out.returncode != 0 and "not a merge conflict" in out.stderr and "Traceback" not in out.stderr
    out = cli_here(home.root, "memory", "review", "add")
    assert out.returncode != 0 and "needs the item's id" in out.stderr
    out = cli_here(home.root, "memory", "review", "undo", row["id"])
    assert out.returncode != 0 and "no review choice" in out.stderr
    assert "accepted" in cli(home, "memory", "review", "accept", row["id"])  # = keep out
    cli(home, "memory", "review", "undo", row["id"])
    assert "restored" in cli(home, "memory", "review", "restore", row["id"])  # = add
    assert "Is a cellist" in (home.memory / "MEMORY.md").read_text(encoding="utf-8")


def test_naming_devices(home: Home, tmp_path: Path) -> None:
    seed(home)
    [me] = json.loads(cli(home, "device", "--json"))
    assert me["this"] and me["name"] is None
    cli(home, "device", "name", "Laptop")
    other = "d0123456789ab"
    cli(home, "device", "name", other, "Desktop")
    rows = json.loads(cli(home, "device", "--json"))
    assert [(r["device"], r["name"], r["this"]) for r in rows] == [(me["device"], "Laptop", True), (other, "Desktop", False)]
    cli(home, "device", "name", "Desktop", "Office PC")  # by its name
    assert "Office PC" in cli(home, "device")
    out = cli_here(home.root, "device", "name", me["device"], "d0123456789ab")
    assert out.returncode != 0 and "cannot look like a device id" in out.stderr
    out = cli_here(home.root, "device", "name", "Nobody", "x")
    assert out.returncode != 0 and "no device 'Nobody'" in out.stderr


def test_sync_says_the_devices_names(tmp_path: Path) -> None:
    from tests.integration.sync_support import bare

    remote = bare(tmp_path / "main.git")
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli_here(a, "device", "name", "Laptop").returncode == 0
    assert cli_here(a, "remind", "add", "water the plants", "--at", "in 5h").returncode == 0
    assert cli_here(a, "sync", "--clear", str(remote)).returncode == 0
    first = cli_here(b, "sync", str(remote))
    assert first.returncode == 0, first.stderr
    [row_a] = [r for r in json.loads(cli_here(a, "device", "--json").stdout) if r["this"]]
    assert f"Laptop ({row_a['device']}):" in first.stdout  # the name imported by this very sync
    status = cli_here(b, "sync", str(remote), "--status")
    assert f"other devices: Laptop ({row_a['device']})" in status.stdout
    body = json.loads(cli_here(b, "sync", str(remote), "--status", "--json").stdout)
    assert body["device_names"] == {row_a["device"]: "Laptop"}
    assert [(r["name"], r["this"]) for r in json.loads(cli_here(b, "device", "--json").stdout)] == [
        (None, True), ("Laptop", False)]


def test_a_merge_conflict_in_the_terminal(home: Home) -> None:
    from memtray.core.sync.names import name_device

    peer, other = "d0123456789ab", "Lives in Paris"
    clock = FakeClock()
    app = App.open(home, config=Config(), clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        app.memory.write(MEM0, reason="user-edit", source="user")
        here, fact = app.memory.device, app.memory.ledger().facts[0]
        conflict = {"id": "c0ffee0001", "kind": "merge-conflict", "text": other, "section": "About",
                    "fact_id": fact.id, "conflict": "reworded",
                    "reason": f"reworded on {here} and on {peer}; {here}'s words kept, these are {peer}'s",
                    "words": {here: fact.text, peer: other}}
        app.memory.write(MEM0, reason="merge", source="memtray", flagged=[conflict])
        name_device(app.store, peer, "Desktop")
    finally:
        app.close()
    text = cli(home, "memory", "review")
    assert f"this version (in memory now) from {here}: Lives in Graz" in text  # this one has no name: its id
    assert "the other version from Desktop: Lives in Paris" in text
    assert f"reworded on {here} and on Desktop" in text
    assert "keep the other:    memtray memory review keep c0ffee0001 --version other" in text
    [row] = listed(home)
    assert row["actions"] == ["keep-this", "keep-other"] and row["device_names"] == {peer: "Desktop"}
    assert row["versions"] == {"this": {"text": "Lives in Graz", "device": here}, "other": {"text": other, "device": peer}}
    out = cli_here(home.root, "memory", "review", "keep", "c0ffee0001")
    assert out.returncode != 0 and "--version this or --version other" in out.stderr
    assert "memory now says 'Lives in Paris'" in cli(home, "memory", "review", "keep", "c0ffee", "--version", "other")
    assert "- Lives in Paris" in (home.memory / "MEMORY.md").read_text(encoding="utf-8") and listed(home) == []
    cli(home, "memory", "review", "undo", "c0ffee0001")
    assert "- Lives in Graz" in (home.memory / "MEMORY.md").read_text(encoding="utf-8")
    assert [r["id"] for r in listed(home)] == ["c0ffee0001"]
    assert "memory is unchanged" in cli(home, "memory", "review", "keep", "c0ffee0001", "--version", "this")
    assert listed(home) == []
