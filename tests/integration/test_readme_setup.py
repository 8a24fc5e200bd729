"""The README's set-up command, exactly as written, on a clean clone with the oldest Python the
README supports: it must install everything and reach the start of the app.

A newer upstream release once broke this step on every fresh machine while the developers' venvs
kept working; only a run from a clean clone shows that class of failure. Slow (a whole venv from
the lock; llama.cpp's wheel comes from the cache .ci/test filled), so it runs once, in CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux set-up path"),
    pytest.mark.timeout(1800),
]


def _readme_setup_command() -> str:
    """The first shell block under '## Set up' in the README: the newcomer's command."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Set up", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README: no sh block under '## Set up'"
    lines = [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) == 1, f"README: the set-up is one command, found {lines}"
    return lines[0].strip()


def _oldest_python() -> str:
    """The oldest Python the README names (``Python 3.X+``), found on this machine."""
    m = re.search(r"Python (3\.\d+)\+", README.read_text(encoding="utf-8"))
    assert m, "README names no minimum Python"
    exe = shutil.which(f"python{m.group(1)}")
    assert exe, f"python{m.group(1)} (the README's minimum) is not on this machine"
    return exe


def test_readme_setup_on_a_clean_clone(tmp_path: Path) -> None:
    command = _readme_setup_command()
    assert command == "packaging/setup"
    clone = tmp_path / "memtray"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "VIRTUAL_ENV", "QT_QPA_PLATFORM", "PYTHONPATH")
           and not k.startswith("PIP_")}
    env["PYTHON"] = _oldest_python()
    env["MEMTRAY_HOME"] = str(tmp_path / "home")
    out = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True,
                         timeout=1700)
    log = f"--- stdout\n{out.stdout[-4000:]}\n--- stderr\n{out.stderr[-4000:]}"
    vpy = clone / ".venv" / "bin" / "python"
    # every step up to the start of the app ran
    assert "== starting memtray" in out.stdout, log
    assert "dependency install failed" not in out.stderr and "Traceback" not in out.stderr, log
    # the app itself ran: with no display it says what is missing in one line, without a traceback
    assert "display" in (out.stdout + out.stderr).lower(), log
    # the installed set is the lock's, with the pinned installer
    pip = subprocess.run([str(vpy), "-m", "pip", "--version"], capture_output=True, text=True, check=True)
    pinned = re.search(r"^pip==(\S+)", (ROOT / "packaging" / "requirements-bootstrap.lock").read_text(),
                       re.M).group(1)  # type: ignore[union-attr]
    assert pip.stdout.split()[1] == pinned
    for line in (ROOT / "packaging" / "requirements.lock").read_text().splitlines():
        if line.startswith("httpx=="):
            want = line.split("==")[1].split()[0]
            got = subprocess.run([str(vpy), "-c", "import httpx; print(httpx.__version__)"],
                                 capture_output=True, text=True, check=True).stdout.strip()
            assert got == want
    # and the offline model's runtime is importable, as the README promises
    subprocess.run([str(vpy), "-c", "import llama_cpp, memtray.core"], check=True, timeout=120)
