"""packaging/setup (the README's first command), in --dry-run: it installs what is missing with
apt-get on Debian/Ubuntu, names the exact command elsewhere, and installs the offline model
unless told not to."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "packaging" / "setup"
TOOLS = ("bash", "uname", "id", "sed", "sha256sum", "cut", "grep", "env", "dirname", "cat")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the script's Linux paths")


def _bin(tmp_path: Path, stubs: dict[str, str]) -> Path:
    """A PATH of the basic tools plus stubs (so the machine's own dpkg/apt-get are not seen)."""
    d = tmp_path / "bin"
    d.mkdir()
    for tool in TOOLS:
        real = shutil.which(tool)
        assert real, tool
        (d / tool).symlink_to(real)
    for name, body in stubs.items():
        (d / name).write_text("#!/bin/sh\n" + body + "\n")
        (d / name).chmod(0o755)
    return d


def _setup(tmp_path: Path, stubs: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(_bin(tmp_path, stubs)), "HOME": str(tmp_path), "PYTHON": sys.executable}
    return subprocess.run(["bash", str(SETUP), "--dry-run", *args], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=60)


def test_debian_installs_only_what_is_missing_with_apt(tmp_path: Path) -> None:
    out = _setup(tmp_path, {
        # installed: everything but two of Qt's xcb libraries
        "dpkg": 'case "$2" in libxcb-icccm4|libxcb-keysyms1) exit 1;; esac; exit 0',
        "apt-get": "exit 0", "sudo": 'exec "$@"',
    })
    assert out.returncode == 0, out.stderr
    install = next(line for line in out.stdout.splitlines() if "apt-get install" in line)
    assert install.split()[-2:] == ["libxcb-icccm4", "libxcb-keysyms1"]
    assert "requirements-local.lock" in out.stdout  # the offline model, by default
    assert "would run: .venv/bin/memtray" in out.stdout  # and then the app


def test_no_local_model_flag_skips_it(tmp_path: Path) -> None:
    out = _setup(tmp_path, {"dpkg": "exit 0", "apt-get": "exit 0"}, "--no-local-model", "--no-start")
    assert out.returncode == 0, out.stderr
    assert "requirements-local.lock" not in out.stdout and "would run: .venv/bin/memtray" not in out.stdout
    assert "requirements.lock" in out.stdout


def test_elsewhere_it_names_the_exact_command(tmp_path: Path) -> None:
    out = _setup(tmp_path, {"dnf": "exit 0", "ldconfig": "echo 'libEGL.so.1 (libc6,x86-64) => /usr/lib64/libEGL.so.1'"})
    assert "Qt's desktop plugin needs libraries this system lacks" in out.stderr
    assert "libxcb-cursor.so.0" in out.stderr and "libEGL.so.1" not in out.stderr.split("lacks:")[1].split("\n")[0]
    assert "sudo dnf install" in out.stderr and "xcb-util-cursor" in out.stderr


def test_unknown_option_is_refused(tmp_path: Path) -> None:
    out = _setup(tmp_path, {}, "--frobnicate")
    assert out.returncode == 2 and "unknown option --frobnicate" in out.stderr
    assert not os.path.exists(tmp_path / ".venv")
