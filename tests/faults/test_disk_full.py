"""A full disk, for real: the data home on a small tmpfs filled to the last byte.

The fault seam (tests/faults/test_storage_faults.py) fails each write site on
purpose; here the kernel does it, with whatever short writes and ENOSPC a real
file system gives, through the real CLI entry (``ask``, ``consolidate``,
``memory rollback``, ``remind add``): the error names the full disk, no
traceback or ``--- Logging error ---`` reaches the user, the log, git and the
work tree are byte for byte as before, and once space is freed the same command
works and its message is logged once.

Mounting needs root (``mount -t tmpfs``); elsewhere the tests are skipped with
the reason, and the fault-seam tests still cover every write site.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.base.home import Home
from memtray.core.cli.main import main
from memtray.core.log.events import Message

from tests.faults.support import git, open_app, write_memory
from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call
from tests.support import small_tmpfs

SIZE = "6m"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    yield from small_tmpfs(tmp_path, SIZE)


class Filler:
    """Fills the file system to the last page; :meth:`free` gives pages back."""

    def __init__(self, mnt: Path) -> None:
        self.dir = mnt / "filler"
        self.dir.mkdir()
        self.n = 0

    def fill(self, *, reserve_pages: int = 0) -> None:
        """Fill everything; ``reserve_pages`` single-page files can be freed one by one."""
        for i in range(reserve_pages):
            (self.dir / f"reserve-{i}").write_bytes(b"r" * 4096)
        for chunk in (1 << 20, 1 << 16, 4096, 512, 1):
            while True:
                self.n += 1
                fd = os.open(self.dir / f"{self.n:06d}-{chunk}", os.O_WRONLY | os.O_CREAT)
                try:
                    n = os.write(fd, b"\0" * chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
                finally:
                    os.close(fd)
                if n < chunk:
                    break
        assert shutil.disk_usage(self.dir).free == 0

    def free(self, pages: int | None = None) -> None:
        """Give back ``pages`` reserved pages (None: everything)."""
        if pages is None:
            shutil.rmtree(self.dir)
            return
        for i in range(pages):
            (self.dir / f"reserve-{i}").unlink()


def _pad_to_page(home: Home, slack: int = 0) -> None:
    """Append one message so the last segment ends on a page boundary: on a full tmpfs the
    next append then needs a page it cannot get (else it may fit into the page's slack).
    With ``slack``, that many bytes of the last page stay free instead.

    The search index is removed first: on a full disk the search service takes SQLite's
    I/O error for damage and deletes the index to rebuild it, which frees pages the next
    append would then use (the disk is then not full any more for the command tested)."""
    from memtray.core.log.events import Record, encode
    from memtray.core.log.store import Store

    for p in home.state.glob("search.sqlite*"):
        p.unlink()

    store = Store.open(home)
    try:
        seg = max(home.events.glob("*.jsonl"))
        probe = encode(Record(store.log.last_seq + 1, "0" * 26, "2026-11-30T09:00:00.000Z", "message", 1, "pad",
                              {"role": "user", "content": ""}))
        need = -(seg.stat().st_size + len(probe) + slack) % 4096
        store.append(Message(role="user", content="p" * need), session="pad")
        assert -seg.stat().st_size % 4096 == slack
    finally:
        store.close(checkpoint=False)


def _snapshot(home: Home) -> dict[str, str]:
    """Digest of every file memtray keeps (log, git, work tree, checkpoint, reminders)."""
    out = {}
    for p in sorted(home.root.rglob("*")):
        rel = p.relative_to(home.root).as_posix()
        if p.is_file() and not rel.startswith(("logs/", "filler/")) and "search.sqlite" not in rel:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with contextlib.suppress(SystemExit):
        code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _user_texts(home: Home) -> list[str]:
    from memtray.core.log.eventlog import EventLog

    elog = EventLog.open(home.events, readonly=True)
    try:
        return [r.data["content"] for r in elog.records() if r.data.get("role") == "user"]
    finally:
        elog.close()


def _model(request: dict[str, object]) -> object:
    tools = request.get("tools") or []
    if any(t.get("function", {}).get("name") == "save_memory" for t in tools):  # type: ignore[union-attr]
        return tool_call("save_memory", {"history_entry": "[2026-11-30] basil.", "removed_facts": [],
                                         "memory_update": "# Facts\n\n- likes tea\n- plays chess\n- bought basil\n"})
    return reply("fine")


COMMANDS = {
    "ask": ("ask", "what is on my list today?"),
    "consolidate": ("consolidate",),
    "rollback": ("memory", "rollback", "HEAD~1"),
    "remind-add": ("remind", "add", "water the plants", "--at", "2030-01-01 09:00"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_full_disk_is_named_and_changes_nothing_then_the_retry_works(
    small_fs: Path, command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Home.resolve(small_fs / "home")
    with ScriptedLLMServer(responder=_model) as server:
        monkeypatch.setenv("MEMTRAY_HOME", str(home.root))
        monkeypatch.setenv("MEMTRAY_MODEL", "openai/test-model")
        monkeypatch.setenv("MEMTRAY_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
        app = open_app(home, model="openai/test-model", api_base=server.base_url)
        try:
            app.write(lambda: write_memory(app, ["likes tea"]))
            app.write(lambda: write_memory(app, ["likes tea", "plays chess"]))
        finally:
            app.close()
        assert _run(capsys, "ask", "I bought basil")[0] == 0
        _pad_to_page(home)
        filler = Filler(small_fs)
        filler.fill()
        before = _snapshot(home)
        texts = _user_texts(home)
        code, out, err = _run(capsys, *COMMANDS[command])
        assert code != 0, (out, err)
        assert "disk is full" in err or "No space left" in err, err
        assert "Traceback" not in err and "Logging error" not in err, err
        assert _snapshot(home) == before  # nothing half-written, nothing acknowledged
        assert _user_texts(home) == texts

        filler.free()
        code, out, err = _run(capsys, *COMMANDS[command])
        assert code == 0, err
        if command == "ask":
            assert _user_texts(home) == [*texts, COMMANDS["ask"][1]]  # logged once
    git(home.memory, "fsck", "--strict")


def test_a_short_write_on_a_nearly_full_disk_is_named_disk_full(
    small_fs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """2000 of 12 528 bytes written: the disk is full, not failing, and nothing is acknowledged."""
    home = Home.resolve(small_fs / "home")
    with ScriptedLLMServer() as server:
        monkeypatch.setenv("MEMTRAY_HOME", str(home.root))
        monkeypatch.setenv("MEMTRAY_MODEL", "openai/test-model")
        monkeypatch.setenv("MEMTRAY_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
        server.script(reply("noted"))
        assert _run(capsys, "ask", "hello")[0] == 0
        filler = Filler(small_fs)
        _pad_to_page(home, slack=2000)  # room for 2000 bytes in the log's last page, no page free
        filler.fill()
        before = _snapshot(home)
        texts = _user_texts(home)
        big = "please keep this long note: " + "word " * 2500
        server.script(reply("fine"))
        code, _out, err = _run(capsys, "ask", big)
        assert code != 0
        assert "the disk is full (2000 of " in err and "then taken back" in err and "I/O error" not in err, err
        assert "Traceback" not in err and "Logging error" not in err, err
        assert _snapshot(home) == before
        filler.free()
        server.script(reply("fine"))
        assert _run(capsys, "ask", big)[0] == 0
        assert _user_texts(home) == [*texts, big]
