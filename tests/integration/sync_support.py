"""Helpers of the sync tests: data homes, a real bare remote, a git daemon on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from memtray.core.app import App
from memtray.core.base.clock import Clock
from memtray.core.base.config import Config
from memtray.core.base.home import Home, device_id
from memtray.core.sync.digest import state_digest

GIT = shutil.which("git") or "git"


def bare(path: Path) -> Path:
    subprocess.run([GIT, "init", "--bare", "-q", str(path)], check=True)
    return path


def open_app(root: Path, clock: Clock | None = None, **cfg: object) -> App:
    home = Home(root)
    home.create()
    device_id(home)
    return App.open(home, config=Config(**cfg), clock=clock)  # type: ignore[arg-type]


def say(app: App, text: str, session: str = "quick") -> None:
    app.store.append_many([("message", {"role": "user", "content": text}, session, None),
                           ("message", {"role": "assistant", "content": f"noted: {text}"}, session, None)])


def digest(app: App) -> str:
    return app.write(lambda: state_digest(app.store))


def contents(app: App) -> set[str]:
    return {str(r.data.get("content")) for r in app.store.log.records() if r.type == "message"}


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run([GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving ``base`` on a free 127.0.0.1 port (push enabled); yields the URL prefix."""
    port = free_port()
    proc = subprocess.Popen(
        [GIT, "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1",
         f"--port={port}", f"--base-path={base}", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # wait until it accepts: a connection, not a sleep
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


def env_without_git_config() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env
