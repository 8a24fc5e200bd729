"""Helpers shared by tests: in-memory keyring, subprocess CLI runner, app factory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError

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
