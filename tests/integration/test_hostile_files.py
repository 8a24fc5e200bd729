"""Hostile files at the doors that read files: `ask --attach`, `import chatgpt`, `import nanobot`
(issue 26, items 8 and 9).

Each case runs the real CLI in a subprocess whose address space is capped (RLIMIT_AS), so
reading /dev/zero or a 1 GiB file whole would end in a MemoryError, and under
pytest-timeout, so a FIFO that blocks would fail the test: each must end in a clear error
(or, among a workspace's files, a note) and never a traceback.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from memtray.core.log.attachments import AttachmentError, from_file
from memtray.core.migrate.jsonstream import MAX_DEPTH

from tests.support import ROOT, cli_env

pytestmark = [pytest.mark.timeout(180), pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero")]

#: the address space each CLI run may use: enough to start and import, far below a file read whole
MEMORY_CAP = 768 << 20


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memtray.core.cli", *args], env=cli_env(home), cwd=str(ROOT),
                          capture_output=True, text=True, preexec_fn=_cap, stdin=subprocess.DEVNULL)


def _refused(out: subprocess.CompletedProcess[str], *said: str) -> None:
    assert out.returncode != 0, out.stdout
    assert "Traceback" not in out.stderr and "MemoryError" not in out.stderr, out.stderr
    for s in said:
        assert s in out.stderr, out.stderr


def _events(home: Path) -> list[dict[str, Any]]:
    if not (home / "events").exists():
        return []
    return [json.loads(line) for p in sorted((home / "events").glob("*.jsonl")) for line in p.read_text().splitlines()]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.txt"
    os.mkfifo(path)
    return path


def _sparse(path: Path, size: int = 1 << 30) -> Path:
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


# --- ask --attach --------------------------------------------------------------------------


def test_attach_dev_zero_is_refused_without_reading(tmp_path: Path) -> None:
    _refused(_cli(tmp_path / "home", "ask", "--attach", "/dev/zero", "what is this?"),
             "/dev/zero is a character device, not a regular file")
    assert _events(tmp_path / "home") == []


def test_attach_a_fifo_is_refused_without_blocking(tmp_path: Path, fifo: Path) -> None:
    _refused(_cli(tmp_path / "home", "ask", "--attach", str(fifo), "hi"), f"{fifo} is a named pipe (FIFO)")


def test_attach_a_1_gib_sparse_file_is_refused_by_its_size(tmp_path: Path) -> None:
    big = _sparse(tmp_path / "big.txt")
    _refused(_cli(tmp_path / "home", "ask", "--attach", str(big), "hi"), "is 1,073,741,824 bytes; the limit is")


def test_attach_a_directory_or_a_link_to_dev_zero_is_refused(tmp_path: Path) -> None:
    _refused(_cli(tmp_path / "home", "ask", "--attach", str(tmp_path), "hi"), "is a directory")
    link = tmp_path / "notes.txt"
    link.symlink_to("/dev/zero")
    _refused(_cli(tmp_path / "home", "ask", "--attach", str(link), "hi"), f"{link} (a link to /dev/zero)")


def test_a_symlink_is_followed_and_the_file_it_names_is_said(tmp_path: Path) -> None:
    real = tmp_path / "real" / "notes.txt"
    real.parent.mkdir()
    real.write_text("the plan: ship on Friday")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    got = from_file(link)
    assert got.data == b"the plan: ship on Friday" and got.ref.name == "link.txt"
    assert got.note == f"{link} is a link to {real}; read {real}"
    assert from_file(real).note == ""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(AttachmentError, match="a loop of symbolic links"):
        from_file(loop)


# --- import chatgpt ------------------------------------------------------------------------


def _conv(cid: str, text: str, t: float) -> dict[str, Any]:
    msg = {"id": "u", "author": {"role": "user"}, "create_time": t, "content": {"content_type": "text", "parts": [text]}}
    return {"id": cid, "title": text[:10], "current_node": "u",
            "mapping": {"u": {"id": "u", "parent": None, "children": [], "message": msg}}}


def test_a_conversations_json_nested_500_000_deep_is_a_clear_error(tmp_path: Path) -> None:
    deep = tmp_path / "conversations.json"
    deep.write_bytes(b"[" + b'{"a":' * 500_000 + b"1" + b"}" * 500_000 + b"]")
    _refused(_cli(tmp_path / "home", "import", "chatgpt", str(deep)), f"is nested more than {MAX_DEPTH} deep")
    assert not any(e["type"] == "message" for e in _events(tmp_path / "home"))


def test_an_export_that_is_a_fifo_dev_zero_or_a_1_gib_hole_is_refused(tmp_path: Path, fifo: Path) -> None:
    _refused(_cli(tmp_path / "home", "import", "chatgpt", str(fifo)), "is a named pipe (FIFO)")
    link = tmp_path / "export" / "conversations.json"
    link.parent.mkdir()
    link.symlink_to("/dev/zero")
    _refused(_cli(tmp_path / "home", "import", "chatgpt", str(link.parent)), "a character device")
    # a 1 GiB hole of NUL bytes is streamed (never read whole) and refused as no JSON array
    _refused(_cli(tmp_path / "home", "import", "chatgpt", str(_sparse(tmp_path / "c.json"))),
             "does not start with a JSON array")


def test_three_conversations_with_one_id_stay_three_sessions(tmp_path: Path) -> None:
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([_conv("same", "first talk about trains", 1_700_000_000),
                                  _conv("same", "second talk about boats", 1_700_000_100),
                                  _conv("same", "third talk about planes", 1_700_000_200)]))
    home = tmp_path / "home"
    out = _cli(home, "import", "chatgpt", str(export), "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["items"] == 3 and summary["messages"] == 3
    sessions = {e["session"]: e["data"]["content"] for e in _events(home) if e["type"] == "message"}
    assert sessions == {"chatgpt:same": "first talk about trains", "chatgpt:same#2": "second talk about boats",
                        "chatgpt:same#3": "third talk about planes"}
    again = _cli(home, "import", "chatgpt", str(export), "--json")  # a rerun finds each under its key
    assert json.loads(again.stdout)["already_imported"] == 3


# --- import nanobot ------------------------------------------------------------------------


def test_a_fifo_among_nanobots_session_files_does_not_hang_the_import(tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    (ws / "sessions").mkdir(parents=True)
    os.mkfifo(ws / "sessions" / "a_blocked.jsonl")
    (ws / "sessions" / "b_zero.jsonl").symlink_to("/dev/zero")
    _sparse(ws / "sessions" / "c_huge.jsonl", 1 << 30)
    lines = [{"_type": "metadata", "key": "cli:direct"}, {"role": "user", "content": "I moved to Lyon"}]
    (ws / "sessions" / "d_ok.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (ws / "memory").mkdir()
    os.mkfifo(ws / "memory" / "MEMORY.md")
    home = tmp_path / "home"
    out = _cli(home, "import", "nanobot", str(ws), "--json")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    summary = json.loads(out.stdout)
    assert summary["messages"] == 1
    notes = "\n".join(summary["notes"])
    for name, said in (("a_blocked.jsonl", "named pipe"), ("b_zero.jsonl", "character device"),
                       ("c_huge.jsonl", "1,073,741,824 bytes"), ("MEMORY.md", "named pipe")):
        assert f"{name}: " in notes and said in notes, notes
    assert [e["data"]["content"] for e in _events(home) if e["type"] == "message"] == ["I moved to Lyon"]
