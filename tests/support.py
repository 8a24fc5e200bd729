"""Helpers shared by tests: in-memory keyring, subprocess CLI runner, app factory."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keyring.backend import KeyringBackend
from keyring.compat import properties
from keyring.errors import PasswordDeleteError

if TYPE_CHECKING:
    from memtray.core.base.home import Home

    from tests.fixtures.llm_server import ScriptedLLMServer

ROOT = Path(__file__).resolve().parent.parent


class MemoryKeyring(KeyringBackend):
    """A secure-looking keyring that keeps secrets in memory (tests only)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}
        self.refuse = False

    def get_password(self, service: str, username: str) -> str | None:
        if self.refuse:
            from keyring.errors import KeyringLocked

            raise KeyringLocked("access refused by test")
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        if self.refuse:
            from keyring.errors import PasswordSetError

            raise PasswordSetError("access refused by test")
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.store:
            raise PasswordDeleteError("not found")
        del self.store[(service, username)]


class FileKeyring(KeyringBackend):
    """A secure-looking keyring kept in the JSON file ``$MEMTRAY_TEST_KEYRING`` (tests only): the
    keys of a device outlive its process, as the OS keyring does (the CLI, a process killed with
    -9). ``PYTHON_KEYRING_BACKEND=tests.support.FileKeyring``."""

    @properties.classproperty
    def priority(cls) -> float:
        # keyring offers every imported backend class: this one only where a test asked for it,
        # never to a test that imported tests.support for something else
        if "MEMTRAY_TEST_KEYRING" not in os.environ:
            raise RuntimeError("MEMTRAY_TEST_KEYRING is not set")
        return 1

    def _path(self) -> Path:
        return Path(os.environ["MEMTRAY_TEST_KEYRING"])

    def _all(self) -> dict[str, str]:
        import json

        try:
            body = json.loads(self._path().read_text(encoding="utf-8"))
            return body if isinstance(body, dict) else {}
        except (OSError, ValueError):
            return {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._all().get(f"{service}/{username}")

    def _write(self, body: dict[str, str]) -> None:
        import json

        tmp = self._path().with_suffix(".tmp")
        tmp.write_text(json.dumps(body), encoding="utf-8")
        os.replace(tmp, self._path())

    def set_password(self, service: str, username: str, password: str) -> None:
        body = self._all()
        body[f"{service}/{username}"] = password
        self._write(body)

    def delete_password(self, service: str, username: str) -> None:
        body = self._all()
        if body.pop(f"{service}/{username}", None) is None:
            raise PasswordDeleteError("not found")
        self._write(body)


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["MEMTRAY_HOME"] = str(home)
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    env["MEMTRAY_NO_DESKTOP"] = "1"
    env["MEMTRAY_NO_WARM"] = "1"  # a test that wants the background instance passes MEMTRAY_NO_WARM=""
    env.update(extra)
    return env


def run_cli(home: Path, *args: str, input: str | bytes | None = None, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[Any]:
    """Run ``memtray ARGS`` in a fresh interpreter, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "memtray.core.cli", *args],
        env=cli_env(home, **env),
        input=input,
        capture_output=True,
        text=not isinstance(input, bytes),
        timeout=timeout,
        cwd=str(ROOT),
    )


def cli_here(home: Path, *args: str, input: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``memtray ARGS`` through the CLI's ``main`` in this process, with what :func:`run_cli`
    gives the child (its environment, the null keyring, stdin, stdout and stderr) and its exit
    status (a ``PYTHON_KEYRING_BACKEND`` in ``env`` is loaded instead of the null keyring).
    For a test about what a command does and says, not about its process (a kill, a
    signal, an import, the instance a command starts): a fresh interpreter costs a second or
    more of CPU per command. Everything it changes for the command is put back after."""
    import contextlib
    import io

    import keyring
    import keyring.core
    from keyring.backends.null import Keyring as NullKeyring
    from memtray.core.base import holder
    from memtray.core.cli.main import main

    wanted = {k: v for k, v in cli_env(home, **env).items() if k != "PYTHON_KEYRING_BACKEND"}
    saved_env = dict(os.environ)
    saved_keyring, saved_role = keyring.get_keyring(), holder.role()
    out, err = io.StringIO(), io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8")
    umask = os.umask(0o022)
    os.umask(umask)
    os.environ.clear()
    os.environ.update(wanted)
    time.tzset()  # a TZ given to the command, as a child reads it at its start
    backend = env.get("PYTHON_KEYRING_BACKEND")  # one a test names (FileKeyring), as a child loads it
    keyring.set_keyring(keyring.core.load_keyring(backend) if backend else NullKeyring())
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _swapped_stdin(stdin):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors, as the child exits with them
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        time.tzset()
        keyring.set_keyring(saved_keyring)
        holder.set_role(saved_role.command, serves=saved_role.serves)
        os.umask(umask)
    return subprocess.CompletedProcess(["memtray", *args], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _swapped_stdin(stream: Any) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def configure(home: Home, server: ScriptedLLMServer, **settings: str) -> dict[str, str]:
    """Point ``home`` at the scripted server with `memtray config set`, as a user would
    (``settings`` set more keys); returns the environment (a test API key) to run the CLI with."""
    env = {"OPENAI_API_KEY": "sk-test"}
    values = {"model": "openai/test-model", "api_base": server.base_url, "llm_retries": "0", **settings}
    for key, value in values.items():  # the command itself, in this process: the set-up of a test
        out = cli_here(home.root, "config", "set", key, value, **env)
        assert out.returncode == 0, out.stderr
    return env


def user_messages(home: Home) -> list[str]:
    """What the user said, in log order, read from the event log itself."""
    from memtray.core.log.eventlog import EventLog

    elog = EventLog.open(home.events, readonly=True)
    try:
        return [r.data["content"] for r in elog.iter_records()
                if r.type == "message" and r.data.get("role") == "user"]
    finally:
        elog.close()


def small_tmpfs(tmp_path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted under ``tmp_path`` for real disk-full cases (a generator for
    a fixture to yield from); skips the test where mounting needs root or is not allowed."""
    import shutil

    import pytest

    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root (the fault-seam tests cover every write site)")
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mnt)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)


def short_dir(prefix: str) -> Iterator[Path]:
    """A private directory with a short path (AF_UNIX socket paths are limited to ~107 bytes,
    pytest's tmp paths are long), removed afterwards: a generator for a fixture to yield from."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def drain_consolidations(app: Any) -> None:
    """Wait until the background consolidations started on ``app``'s worker are done."""
    import asyncio

    async def wait() -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        while app.consolidation._tasks:
            await asyncio.wait(set(app.consolidation._tasks))

    app.run(wait(), timeout=60)
