"""Helpers for the fault tests: an app without a model, crashing it in-process, git views."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home


def open_app(home: Home, **cfg: Any) -> App:
    base: dict[str, Any] = {"idle_consolidate_minutes": 0}
    base.update(cfg)
    return App.open(home, config=Config(**base))


def crash(app: App) -> None:
    """Stop ``app`` the way a SIGKILL would, as far as the disk is concerned:
    no checkpoint, no clean close of the log; the lock goes (the kernel drops it)."""
    app.worker.stop()
    search = app.search
    if search is not None:
        search.close()
    mem = app.memory
    if mem is not None:
        mem.git.close()
    app.store.log.close()
    lock = app.store._lock
    if lock is not None:
        lock.release()
        app.store._lock = None


def write_memory(app: App, facts: list[str], **kw: Any) -> None:
    text = "# Facts\n\n" + "".join(f"- {f}\n" for f in facts)
    kw.setdefault("reason", "user-edit")
    kw.setdefault("source", "user")
    app.memory.write(text, **kw)


def git(repo: Path, *args: str) -> str:
    exe = shutil.which("git")
    assert exe is not None, "the git binary is needed for these tests"
    res = subprocess.run([exe, "-C", str(repo), *args], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def rev_list(repo: Path) -> list[str]:
    return git(repo, "rev-list", "--all").split()


def loose_object(repo: Path, sha: str) -> Path:
    return repo / ".git" / "objects" / sha[:2] / sha[2:]
