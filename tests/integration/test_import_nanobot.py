"""`memtray import nanobot` on a workspace written by nanobot-ai's own code (its venv built from
packaging/peers/nanobot.lock by tests/peers.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.peers import peer_python

WRITER = textwrap.dedent('''
    import sys
    from pathlib import Path
    from nanobot.agent.memory import MemoryStore
    from nanobot.session.manager import SessionManager
    ws = Path(sys.argv[1]); ws.mkdir(parents=True, exist_ok=True)
    m = SessionManager(ws, sessions_root=Path(sys.argv[2]))
    s = m.get_or_create("cli:direct")
    s.add_message("user", "I moved to Lyon last spring")
    s.add_message("assistant", "Noted: you live in Lyon.")
    m.save(s)
    s2 = m.get_or_create("telegram:42")
    s2.add_message("user", "my cat is called Miso")
    s2.add_message("assistant", "Miso is a lovely name.")
    m.save(s2)
    ms = MemoryStore(ws)
    ms.write_memory("# Long-term Memory\\n\\n## User\\n- Lives in Lyon\\n- Has a cat called Miso\\n")
    ms.append_history("[2026-03-01 10:00] User said they moved to Lyon.")
    ms.append_history("User named their cat Miso.")
    print(m.sessions_dir)
''')


def _memtray(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMTRAY_HOME=str(home), MEMTRAY_NO_DESKTOP="1")
    return subprocess.run([sys.executable, "-m", "memtray.core.cli", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def _events(home: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((home / "events").glob("*.jsonl")) for line in p.read_text().splitlines()]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    py = peer_python("nanobot")
    root = tmp_path_factory.mktemp("nanobot")
    ws, sessions_root = root / "workspace", root / "sessions"
    made = subprocess.run([str(py), "-c", WRITER, str(ws), str(sessions_root)], capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stderr
    return ws, Path(made.stdout.strip().splitlines()[-1])


def test_nanobot_workspace_imports_once(workspace: tuple[Path, Path], tmp_path: Path) -> None:
    ws, sessions = workspace
    home = tmp_path / "home"
    dry = _memtray(home, "import", "nanobot", str(ws), "--sessions", str(sessions), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would import 4 items: 4 messages, 2 facts, 2 history entries" in dry.stdout
    r = _memtray(home, "import", "nanobot", str(ws), "--sessions", str(sessions), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["messages"] == 4
    shown = _memtray(home, "memory", "show").stdout
    assert "- Lives in Lyon" in shown and "- Has a cat called Miso" in shown
    diary = _memtray(home, "memory", "show", "--history").stdout
    assert "[2026-03-01 10:00] User said they moved to Lyon." in diary
    log = subprocess.run(["git", "-C", str(home / "memory"), "log", "--format=%B"], capture_output=True, text=True).stdout
    assert "Source: import" in log and "Reason: import" in log
    sessions_seen = {e["session"] for e in _events(home) if e["type"] == "message"}
    assert sessions_seen == {"nanobot:cli:direct", "nanobot:telegram:42"}
    first = next(e for e in _events(home) if e["type"] == "message")["data"]
    assert first["content"] == "I moved to Lyon last spring" and first["sent_at"].startswith("20")
    before = len(_events(home))
    again = _memtray(home, "import", "nanobot", str(ws), "--sessions", str(sessions), "--json")
    assert json.loads(again.stdout)["already_imported"] == 4
    assert len(_events(home)) == before  # nothing new: not even an import.started


def test_a_torn_session_file_imports_what_is_whole(workspace: tuple[Path, Path], tmp_path: Path) -> None:
    ws, sessions = workspace
    torn = tmp_path / "sessions"
    shutil.copytree(sessions, torn)
    f = sorted(torn.glob("*.jsonl"))[0]
    f.write_bytes(f.read_bytes() + b'{"role": "user", "content": "half a li')
    home = tmp_path / "home"
    r = _memtray(home, "import", "nanobot", str(ws), "--sessions", str(torn))
    assert r.returncode == 0, r.stderr
    assert "damaged" in r.stdout and "4 messages" in r.stdout


def test_not_a_workspace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "somewhere").mkdir()
    r = _memtray(tmp_path / "home", "import", "nanobot", str(tmp_path / "somewhere"))
    assert r.returncode != 0 and "does not look like a nanobot workspace" in r.stderr


SECRET = "sk-proj-" + "Qx7" * 14 + "Zt"

SECRET_WRITER = textwrap.dedent('''
    import sys
    from pathlib import Path
    from nanobot.session.manager import SessionManager
    ws = Path(sys.argv[1]); ws.mkdir(parents=True, exist_ok=True)
    m = SessionManager(ws, sessions_root=Path(sys.argv[2]))
    s = m.get_or_create("cli:" + sys.argv[3])
    s.add_message("user", "my sister lives in Porto")
    m.save(s)
    print(m.sessions_dir)
''')


def test_a_secret_in_a_session_key_never_reaches_the_disk(tmp_path: Path) -> None:
    """nanobot names sessions by channel and chat id; a token pasted as one is redacted in the
    import record's key as in the session name, and a rerun still finds the item imported."""
    py = peer_python("nanobot")
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    made = subprocess.run([str(py), "-c", SECRET_WRITER, str(ws), str(root), SECRET], capture_output=True,
                          text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    sessions = Path(made.stdout.strip().splitlines()[-1])
    home = tmp_path / "home"
    r = _memtray(home, "import", "nanobot", str(ws), "--sessions", str(sessions), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["messages"] == 1
    items = [e for e in _events(home) if e["type"] == "import.item"]
    assert items and all(SECRET not in json.dumps(e) for e in items)
    leaked = [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaked == []
    again = _memtray(home, "import", "nanobot", str(ws), "--sessions", str(sessions), "--json")
    assert json.loads(again.stdout)["already_imported"] == 1
