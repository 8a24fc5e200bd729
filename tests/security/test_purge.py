"""`memtray purge PATTERN`: afterwards no byte of it remains anywhere in the data home.

The pattern is planted everywhere memtray keeps text: user and assistant
messages, a ``remember`` tool call and its result, consolidations (MEMORY.md,
HISTORY.md, fact diffs, flagged items), git objects (loose and packed), a
``.torn`` side file from a crash, a ``.damaged`` file from a doctor repair, a
``memory.damaged-*`` copy, a stale temporary file, the search index, the
checkpoint and logs/memtray.log. After the purge (and ``git gc --prune=now``)
``grep -r`` of the whole home, ``git cat-file --batch-all-objects`` and
decompressed loose objects find nothing; a ``memory.purged`` tombstone says
when and how much (a salted hash of the pattern, counts), never what; and the
home passes every crash-suite invariant.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from memtray.core.admin.purge import Matcher, PurgeError, find_traces, purge
from memtray.core.base import logsetup
from memtray.core.base.home import Home
from memtray.core.cli import console
from memtray.core.cli import main as cli
from memtray.core.cli.admin import cmd_purge
from memtray.core.log.events import Message

from tests.crash.harness import check_app
from tests.faults.support import crash, git, open_app, rev_list, write_memory
from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call
from tests.fixtures.receipting import with_receipts
from tests.security.purge_cli import with_purge
from tests.support import ROOT, cli_env

# litellm's streaming path warns once per process about a pydantic TypedDict (not ours)
pytestmark = pytest.mark.filterwarnings("ignore:.*on TypedDict class .* using the `ReadOnly` qualifier:UserWarning")

NAME = "Zebulon Quirkwright"
SHIM = ROOT / "tests" / "security" / "purge_cli.py"


def _responder(req: dict[str, Any]) -> Any:
    tools = {t["function"]["name"] for t in req.get("tools") or []}
    msgs = req.get("messages") or []
    if tools == {"save_memory"}:
        return tool_call("save_memory", {
            "history_entry": f"[2026-01-01 10:00] The user talked about {NAME} and the money.",
            "memory_update": f"## People\n\n- Neighbour {NAME} owes 40 euros\n- Likes tea\n",
            "removed_facts": [],
        })
    if msgs and msgs[-1].get("role") == "tool":
        return reply(f"Noted about {NAME}.")
    if "remember" in str(msgs[-1].get("content")):
        return tool_call("remember", {"fact": f"{NAME} lives next door", "section": "People"})
    return reply(f"I see, {NAME} again.")


def _seed(home: Home, server: ScriptedLLMServer) -> list[str]:
    """A home with NAME in every kind of place; returns the SHAs before the first mention."""
    server.responder = with_receipts(_responder)
    app = open_app(home, model="openai/test-model", api_base=server.base_url, llm_retries=0, memory_window=1000)
    try:
        write_memory(app, ["Likes tea"])
        write_memory(app, ["Likes tea", "Plays chess"])
        clean_shas = rev_list(home.memory)
        app.run(app.agent.turn("quick", f"My neighbour {NAME} owes me 40 euros", stream=True))
        app.run(app.agent.turn("quick", "please remember where he lives", stream=False))
        app.run(app.consolidation.consolidate("quick", trigger="manual"))
        app.run(app.agent.turn("quick", "ok, thanks", stream=False))
        app.search.sync()
        logging_line(home)
    finally:
        crash(app)  # leaves no fresh checkpoint; the next start replays
    # a torn record of a crash mid-write
    seg = home.events / "000001.jsonl"
    with open(seg, "ab") as fh:
        fh.write(b'{"seq":999,"id":"x","ts":"t","type":"message","v":1,"session":"quick","data":{"content":"'
                 + NAME.encode() + b" was here")
    # a doctor repair's side file, a stale temp file, a damaged copy of the repository
    (home.events / "000001.jsonl.damaged").write_bytes(b'{"damaged": "' + NAME.encode() + b'"}\n')
    (home.state / ".checkpoint.json.99999.tmp").write_bytes(f"half a checkpoint about {NAME}".encode())
    shutil.copytree(home.memory, home.root / "memory.damaged-20260101T000000")
    app = open_app(home)  # cuts the torn tail into .torn; writes a checkpoint on close
    app.close()
    assert (home.events / "000001.jsonl.torn").exists()
    git(home.memory, "gc", "--quiet")  # some objects packed
    return clean_shas


def logging_line(home: Home) -> None:
    import logging

    root = logging.getLogger()
    before = list(root.handlers)
    try:
        logsetup.setup(home)
        logging.getLogger("memtray.core.agent.loop").warning("the user mentioned %s", NAME)
    finally:
        for h in root.handlers[:]:
            if h not in before:
                root.removeHandler(h)
                h.close()
        logsetup.reset()


def _everywhere(home: Home, text: str) -> list[str]:
    """grep -r of the whole home, every git object, every decompressed loose object."""
    hits: list[str] = []
    forms = {text.encode(), json.dumps(text)[1:-1].encode()}
    grep = subprocess.run(["grep", "-r", "-l", "-F", text, str(home.root)], capture_output=True, text=True)
    assert grep.returncode in (0, 1), grep.stderr
    hits += grep.stdout.split()
    for repo in [home.memory, *home.root.glob("memory.damaged-*")]:
        if (repo / ".git").is_dir():
            blob = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                                  capture_output=True, check=True).stdout
            hits += [f"{repo.name}: git object" for f in forms if f in blob]
            for obj in (repo / ".git" / "objects").glob("??/*"):
                data = zlib.decompress(obj.read_bytes())
                hits += [str(obj) for f in forms if f in data]
    return hits


def _tombstone(home: Home) -> dict[str, Any]:
    lines = b"".join(p.read_bytes() for p in sorted(home.events.glob("*.jsonl"))).splitlines()
    recs = [json.loads(ln) for ln in lines]
    purged = [r for r in recs if r["type"] == "memory.purged"]
    assert len(purged) == 1
    return purged[0]  # type: ignore[no-any-return]


@pytest.mark.slow
def test_purge_leaves_no_byte_anywhere(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    home = Home.resolve(tmp_path / "home")
    clean_shas = _seed(home, llm_server)
    assert len(_everywhere(home, NAME)) >= 8, _everywhere(home, NAME)
    events_before = sum(1 for p in home.events.glob("*.jsonl") for _ in p.read_bytes().splitlines())

    out = subprocess.run([sys.executable, str(SHIM), "purge", NAME, "--yes"], env=cli_env(home.root),
                         capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "verified: no trace left" in out.stdout
    assert NAME not in out.stdout + out.stderr

    git(home.memory, "gc", "--prune=now", "--quiet")
    assert _everywhere(home, NAME) == []
    assert find_traces(home, Matcher(NAME)) == {}

    stone = _tombstone(home)
    d = stone["data"]
    assert d["pattern_sha256"] == hashlib.sha256((d["salt"] + NAME).encode()).hexdigest()
    assert d["events"] >= 6 and d["occurrences"] >= d["events"] and d["revisions"] >= 2 and d["files"] >= 4
    assert stone["ts"].endswith("Z") and NAME not in json.dumps(stone)
    events_after = sum(1 for p in home.events.glob("*.jsonl") for _ in p.read_bytes().splitlines())
    assert events_after == events_before + 1  # nothing dropped: rewritten in place, plus the tombstone

    checked = check_app(home.root, set(), fsck=True)
    assert rev_list(home.memory)[-len(clean_shas):] == clean_shas  # revisions before the name keep their SHAs
    assert checked.commits > len(clean_shas)
    app = open_app(home)
    try:
        assert "[PURGED] owes 40 euros" in app.store.state.memory
        hits = app.search.search("PURGED")
        assert hits and not app.search.search("Quirkwright")
        write_memory(app, ["Likes tea", "Plays chess", "Bakes bread"])
    finally:
        app.close()
    check_app(home.root, set(), fsck=True)


def _args(pattern: str, **kw: Any) -> Any:
    import argparse

    return argparse.Namespace(pattern=pattern, regex=kw.get("regex", False), yes=kw.get("yes", False),
                              dry_run=kw.get("dry_run", False))


def _small_home(tmp_path: Path) -> Home:
    home = Home.resolve(tmp_path / "home")
    app = open_app(home)
    write_memory(app, ["Likes tea"])
    app.store.append(Message(role="user", content=f"{NAME} called"), session="quick")
    write_memory(app, ["Likes tea", f"{NAME} is a neighbour"])
    app.close()
    return home


def _snapshot(home: Home) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in home.events.glob("*")}


@pytest.mark.parametrize(("answer", "code", "purged"), [("no", 1, False), ("", 1, False), ("purge", 0, True)])
def test_asks_for_a_clear_confirmation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                       answer: str, code: int, purged: bool) -> None:
    home = _small_home(tmp_path)
    before = _snapshot(home)
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or answer)
    monkeypatch.setattr(console, "con", lambda: console.Console(tty=False))
    assert cmd_purge(_args(NAME), home) == code
    assert asked == ['Type "purge" to confirm: ']
    text = capsys.readouterr().out
    assert "found 3 occurrence(s) in 2 event(s) (1 memory revision(s))" in text and "cannot be undone" in text
    assert (_snapshot(home) != before) == purged
    assert bool(find_traces(home, Matcher(NAME))) != purged


def test_dry_run_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home = _small_home(tmp_path)
    before = _snapshot(home)
    monkeypatch.setattr(console, "con", lambda: console.Console(tty=False))
    assert cmd_purge(_args(NAME, dry_run=True), home) == 0
    assert "found 3 occurrence(s)" in capsys.readouterr().out
    assert _snapshot(home) == before


@pytest.mark.parametrize(("pattern", "regex", "why"), [
    ("ab", False, "at least 3 characters"),
    ("memory.written", False, "part of the log's structure"),
    ('"seq"', False, "part of the log's structure"),
    ("(xy)*", True, "matches the empty text"),
    ("(unclosed", True, "not a valid regular expression"),
])
def test_refuses_patterns_it_cannot_purge_cleanly(tmp_path: Path, pattern: str, regex: bool, why: str) -> None:
    home = _small_home(tmp_path)
    before = _snapshot(home)
    app = open_app(home)
    try:
        with pytest.raises(PurgeError, match=why):
            purge(app, Matcher(pattern, regex=regex))
    finally:
        app.close()
    assert {k: v for k, v in _snapshot(home).items() if k.endswith(".jsonl")} == {
        k: v for k, v in before.items() if k.endswith(".jsonl")}


def test_regex_purge(tmp_path: Path) -> None:
    home = _small_home(tmp_path)
    app = open_app(home)
    try:
        rep = purge(app, Matcher(r"Zebulon\s+Q\w+", regex=True))
        assert rep.events == 2 and rep.left == {}
        assert "[PURGED] is a neighbour" in app.store.state.memory
    finally:
        app.close()
    check_app(home.root, set(), fsck=True)


def test_refused_while_a_consolidation_runs(tmp_path: Path) -> None:
    home = _small_home(tmp_path)
    app = open_app(home)
    try:
        app.consolidation.in_flight.add("quick")
        with pytest.raises(PurgeError, match="consolidation is running"):
            purge(app, Matcher(NAME))
    finally:
        app.consolidation.in_flight.clear()
        app.close()


def test_forwarded_to_the_running_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """memtray is running (it holds the lock): the CLI asks here, then the instance purges
    its live state -- log, checkpoint, search index, git -- and keeps working."""
    from memtray.core.base import ipc

    home = _small_home(tmp_path)
    monkeypatch.setattr(cli, "build_parser", with_purge(cli.build_parser))
    app = open_app(home)
    server = ipc.Server(home, lambda req, send: cli.serve(app, req, send))
    server.start()
    try:
        app.search.sync()
        # without --yes the instance cannot ask: refused there
        sent: list[dict[str, Any]] = []
        assert cli.serve(app, {"argv": ["purge", NAME]}, sent.append) == 1
        assert "needs --yes" in "".join(m.get("err", "") for m in sent)

        out = subprocess.run([sys.executable, str(SHIM), "purge", NAME], input="purge\n", env=cli_env(home.root),
                             capture_output=True, text=True, timeout=120, cwd=str(ROOT))
        assert out.returncode == 0, out.stdout + out.stderr
        assert 'Type "purge" to confirm' in out.stdout and "verified: no trace left" in out.stdout
        assert NAME not in app.store.state.memory and "[PURGED]" in app.store.state.memory
        assert not app.search.search("Zebulon")
        # the live app keeps working on the rewritten log
        app.store.append(Message(role="user", content="after the purge"), session="quick")
        write_memory(app, ["Likes tea", "Bakes bread"])
    finally:
        server.close()
        app.close()
    check_app(home.root, set(), fsck=True)
    assert _everywhere(home, NAME) == []


def test_tombstone_golden_record_reads_and_replays() -> None:
    """tests/golden/events/v1-c.jsonl: what a v1 memory.purged looks like, for ever."""
    from memtray.core.admin.purge import MemoryPurged
    from memtray.core.log.events import SCHEMA, decode_raw
    from memtray.core.log.projections import KNOWN_TYPES, replay

    line = (ROOT / "tests" / "golden" / "events" / "v1-c.jsonl").read_bytes().splitlines()[0]
    rec = decode_raw(line)
    assert rec.type == MemoryPurged.TYPE in KNOWN_TYPES
    payload = SCHEMA.payload(rec)
    assert isinstance(payload, MemoryPurged) and payload.occurrences == 7 and not payload.regex
    state = replay([rec])
    assert state.last_seq == 1 and state.unknown == {}
