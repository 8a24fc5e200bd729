"""The data home is 0700 and its files 0600 whatever the umask; links planted in it are not followed."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from memtray.core.admin import doctor
from memtray.core.base.errors import EnvironmentProblem, LogWriteError, UnsafePath
from memtray.core.base.home import Home, HomeLock
from memtray.core.log.events import Message
from memtray.core.log.store import CHECKPOINT_NAME, Store

from tests.faults.support import open_app, write_memory
from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call
from tests.support import ROOT, cli_env

SCRIPT = """
import os, sys
sys.path.insert(0, {root!r})
from memtray.core.cli import main as cli
codes = []
for argv in (["config", "set", "memory_window", "10"], ["ask", "hello"], ["ask", "I like green tea"],
             ["new"], ["history", "search", "tea"]):
    os.umask(0)  # the most permissive umask, before every command
    codes.append(cli.main(argv))
print("codes", codes)
"""


def _modes(root: Path) -> list[tuple[str, int, bool]]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(dirpath) / name
            st = p.lstat()
            out.append((str(p.relative_to(root)), stat.S_IMODE(st.st_mode), stat.S_ISDIR(st.st_mode)))
    return out


@pytest.mark.slow
def test_everything_is_private_under_umask_000(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    home = tmp_path / "home"
    llm_server.script(
        reply("Hello!"),
        tool_call("remember", {"fact": "Likes green tea", "section": "Preferences"}),
        reply("Noted."),
        tool_call("save_memory", {"history_entry": "[2026-01-01 10:00] Talked about tea.",
                                  "memory_update": "## Preferences\n\n- Likes green tea\n", "removed_facts": []}),
    )
    env = cli_env(home, MEMTRAY_MODEL="openai/test-model", MEMTRAY_API_BASE=llm_server.base_url,
                  OPENAI_API_KEY="sk-test")
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(root=str(ROOT))], env=env, capture_output=True,
                         text=True, timeout=300, cwd=str(ROOT))
    assert out.returncode == 0 and "codes [0, 0, 0, 0, 0]" in out.stdout, out.stdout + out.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    modes = _modes(home)
    names = {n for n, _, _ in modes}
    for must in ("config.toml", "events/000001.jsonl", "memory/.git/HEAD", "memory/MEMORY.md", "logs/memtray.log",
                 "state/search.sqlite", "memtray.lock"):
        assert must in names, must
    assert any(n.startswith("memory/.git/objects/") and not d for n, _, d in modes)
    loose = [(n, oct(m)) for n, m, d in modes if (d and m != 0o700) or (not d and m not in (0o600, 0o400))]
    assert loose == []


def test_start_tightens_what_is_too_open(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    write_memory(app, ["likes tea"])
    app.close()
    os.chmod(home.root, 0o755)
    os.chmod(home.events, 0o777)
    os.chmod(home.events / "000001.jsonl", 0o666)
    os.chmod(home.memory / "MEMORY.md", 0o644)
    assert [f.code for f in doctor.check(home) if not f.ok] == ["permissions"]
    Store.open(home).close()  # Home.create at start
    assert [(n, oct(m)) for n, m, d in _modes(home.root) if m & 0o077] == []
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o700


# --- planted links ------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    p = tmp_path / "elsewhere"
    p.write_bytes(b"outside memtray\n")
    return p


def test_planted_segment_link(tmp_path: Path, outside: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store = Store.open(home, segment_bytes=600)
    store.append(Message(role="user", content="one"), session="s")
    # the link holds records that would continue the log: they must not be read either
    seg1 = (home.events / "000001.jsonl").read_bytes()
    store.close()
    outside.write_bytes(seg1)
    (home.events / "000002.jsonl").symlink_to(outside)
    store = Store.open(home, segment_bytes=600)
    assert store.log.last_seq == 1
    with pytest.raises(LogWriteError) as err:
        for i in range(20):
            store.append(Message(role="user", content=f"message {i} " + "x" * 100), session="s")
    assert "symbolic link" in str(err.value) and "doctor --repair" in err.value.hint
    store.close()
    assert outside.read_bytes() == seg1
    assert [f.code for f in doctor.check(home) if not f.ok] == ["links"]
    next(f for f in doctor.check(home) if f.code == "links").fix()  # type: ignore[misc]
    assert outside.read_bytes() == seg1
    store = Store.open(home, segment_bytes=600)
    for i in range(10):
        store.append(Message(role="user", content=f"again {i} " + "x" * 100), session="s")
    assert not (home.events / "000002.jsonl").is_symlink()
    store.close()


def test_planted_memory_file_link(tmp_path: Path, outside: Path, caplog: pytest.LogCaptureFixture) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    write_memory(app, ["likes tea"])
    app.close()
    outside.write_text("# Facts\n\n- injected from outside\n")
    (home.memory / "MEMORY.md").unlink()
    (home.memory / "MEMORY.md").symlink_to(outside)
    assert any(f.code == "links" for f in doctor.check(home) if not f.ok)  # doctor sees it too
    # start-up removes the link (not its target) and writes the file from the log: the
    # work tree is memtray's own projection, so nothing the link points to is adopted
    with caplog.at_level(logging.WARNING):
        app = open_app(home)
    assert "removed a symbolic link planted at" in caplog.text
    assert any("Removed a symbolic link planted at" in p for p in app.memory.problems)  # shown
    assert not (home.memory / "MEMORY.md").is_symlink()
    assert "likes tea" in (home.memory / "MEMORY.md").read_text()
    try:
        assert "injected" not in app.store.state.memory
        write_memory(app, ["likes tea", "plays chess"])
    finally:
        app.close()
    assert outside.read_text() == "# Facts\n\n- injected from outside\n"
    assert not (home.memory / "MEMORY.md").is_symlink()
    log_bytes = b"".join(p.read_bytes() for p in home.events.glob("*.jsonl"))
    assert b"injected" not in log_bytes


def test_planted_checkpoint_and_log_links(tmp_path: Path, outside: Path) -> None:
    from memtray.core.base import logsetup

    home = Home.resolve(tmp_path / "h")
    store = Store.open(home)
    store.append(Message(role="user", content="one"), session="s")
    store.close()
    real = (home.state / CHECKPOINT_NAME).read_bytes()
    outside.write_bytes(real.replace(b'"one"', b'"forged"'))
    (home.state / CHECKPOINT_NAME).unlink()
    (home.state / CHECKPOINT_NAME).symlink_to(outside)
    (home.logs / "memtray.log").symlink_to(outside)
    before = outside.read_bytes()

    root = logging.getLogger()
    handlers = list(root.handlers)
    try:
        logsetup.setup(home)
        logging.getLogger("memtray.test").warning("a line for the application log")
        store = Store.open(home)
        assert not store.checkpoint_used  # the link was not read
        assert "forged" not in str(store.state.to_json())
        store.append(Message(role="user", content="two"), session="s")
        store.close()  # writes a checkpoint: in place of the link, not through it
    finally:
        for h in root.handlers[:]:
            if h not in handlers:
                root.removeHandler(h)
                h.close()
        logsetup.reset()
    assert outside.read_bytes() == before
    assert not (home.state / CHECKPOINT_NAME).is_symlink() and not (home.logs / "memtray.log").is_symlink()
    assert b"a line for the application log" in (home.logs / "memtray.log").read_bytes()


def test_planted_directory_and_lock_links(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    Store.open(home).close()
    elsewhere = tmp_path / "elsewhere-dir"
    elsewhere.mkdir()
    (home.root / "memory").symlink_to(elsewhere)
    with pytest.raises(UnsafePath):
        open_app(home)
    assert list(elsewhere.iterdir()) == []
    (home.root / "memory").unlink()

    target = tmp_path / "lock-target"
    target.write_text("keep")
    home.lockfile.unlink()
    home.lockfile.symlink_to(target)
    with pytest.raises(EnvironmentProblem):
        HomeLock(home).acquire()
    assert target.read_text() == "keep"
