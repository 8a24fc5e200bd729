"""The wheel: every resource is package data, and an installed wheel runs outside the source tree.

The wheel is built without build isolation (the project venv's setuptools, no
index needed) from a copy of the tree, then installed with ``--no-deps`` into a
fresh venv. That venv sees the project venv's third-party packages through a
``.pth`` line — a plain path line, so the project venv's own ``.pth`` files
(the editable memtray finder among them) are never executed there — and the
test checks that ``memtray`` really resolves to the new venv's site-packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from memtray.core.admin import desktop_entry

from tests.fixtures.llm_server import ScriptedLLMServer, reply
from tests.support import run_cli

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "core", "desktop", "resources")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")



def _resources() -> list[str]:
    base = ROOT / "resources"
    return sorted(
        p.relative_to(base).as_posix()
        for p in base.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        s = ROOT / name
        if s.is_dir():
            shutil.copytree(s, src / name, ignore=IGNORE)
        else:
            shutil.copy2(s, src / name)
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-q", "-w", str(out), str(src)],
        capture_output=True, text=True, timeout=300, cwd=str(src),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list(out.glob("memtray-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@dataclass
class Installed:
    root: Path
    python: Path
    script: Path
    site: Path


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("venv") / "v"
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(root)
    bindir = root / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip())
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # Third-party dependencies come from this interpreter's site dirs as plain path lines: the
    # .pth files there (the editable memtray finder among them) are not run from the new venv.
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()] or [
        sysconfig.get_paths()["purelib"]]
    (site / "_memtray_test_deps.pth").write_text("".join(f"{p}\n" for p in deps))
    yield Installed(root, python, bindir / ("memtray.exe" if os.name == "nt" else "memtray"), site)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MEMTRAY_", "VIRTUAL_ENV"))}
    env.update({
        "MEMTRAY_HOME": str(tmp / "home"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "MEMTRAY_NO_DESKTOP": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    })
    env.update(extra)
    return env


@pytest.mark.slow  # builds a wheel (~10 s)
def test_wheel_carries_every_resource_and_the_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = zf.read(f"{dist}/entry_points.txt").decode()
    missing = [r for r in _resources() if f"memtray/resources/{r}" not in names]
    assert not missing, f"resources not in the wheel: {missing}"
    modules = [
        f"memtray/{p.relative_to(ROOT).as_posix()}"
        for folder in ("core", "desktop") for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts
    ]
    missing = [m for m in modules if m not in names]
    assert not missing, f"modules not in the wheel (a subpackage missing from pyproject's packages?): {missing}"
    for needed in ("memtray/resources/memtray.desktop", "memtray/resources/icons/memtray.svg",
                   "memtray/resources/prompts/consolidation.md", "memtray/core/cli/main.py", "memtray/desktop/main.py"):
        assert needed in names
    assert not any(n.startswith(("core/", "desktop/", "resources/", "tests/")) for n in names), "bare top-level package"
    assert "memtray = memtray.core.cli.main:main" in entry_points
    assert "desktop = memtray.desktop.launcher:FRONTEND" in entry_points


@pytest.mark.slow
def test_installed_wheel_resolves_outside_the_source_tree(installed: Installed, tmp_path: Path) -> None:
    code = (
        "import memtray.core, memtray.resources as r, memtray.desktop;"
        "print(memtray.core.__file__); print(memtray.desktop.__file__);"
        "print(r.path('memtray.desktop')); print(r.path('icons/memtray.svg')); print(len(r.text('prompts/identity.md')))"
    )
    out = subprocess.run([str(installed.python), "-c", code], capture_output=True, text=True,
                         env=_env(tmp_path), cwd=str(tmp_path), timeout=120)
    assert out.returncode == 0, out.stderr
    core, desktop, entry, icon, identity = out.stdout.splitlines()
    for p in (core, desktop, entry, icon):
        assert Path(p).resolve().is_relative_to(installed.site.resolve()), f"{p} is not from the installed wheel"
        assert Path(p).exists()
    assert int(identity) > 0


@pytest.mark.slow
def test_installed_script_version_and_ask(installed: Installed, tmp_path: Path) -> None:
    from memtray.core import __version__

    out = subprocess.run([str(installed.script), "--version"], capture_output=True, text=True,
                         env=_env(tmp_path), cwd=str(tmp_path), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"memtray {__version__}"

    with ScriptedLLMServer() as server:
        server.script(reply("Packaged and working."))
        env = _env(tmp_path, MEMTRAY_MODEL="openai/test-model", MEMTRAY_API_BASE=server.base_url,
                   OPENAI_API_KEY="sk-test")
        out = subprocess.run([str(installed.script), "ask", "are you installed?"], capture_output=True,
                             text=True, env=env, cwd=str(tmp_path), timeout=180)
        assert out.returncode == 0, out.stderr
        assert out.stdout == "Packaged and working.\n"
        assert server.requests and server.requests[0].headers["authorization"] == "Bearer sk-test"
        assert "are you installed?" in str(server.requests[0]["messages"][-1]["content"])
    assert any((tmp_path / "home" / "events").glob("*.jsonl"))


# --- install-desktop ---------------------------------------------------------------------


def _entry(path: Path) -> dict[str, dict[str, str]]:
    groups: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            current = groups.setdefault(line.strip("[]"), {})
        elif "=" in line:
            k, v = line.split("=", 1)
            current[k] = v
    return groups


def test_install_desktop_writes_entry_and_icon(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "PATH": ""}
    paths = desktop_entry.install(env, cmd=["/opt/memtray/bin/memtray"])
    assert paths.desktop == tmp_path / "data" / "applications" / "memtray.desktop"
    assert paths.icon == tmp_path / "data" / "icons" / "hicolor" / "scalable" / "apps" / "memtray.svg"
    assert paths.icon.read_bytes() == (ROOT / "resources" / "icons" / "memtray.svg").read_bytes()
    groups = _entry(paths.desktop)
    main = groups["Desktop Entry"]
    assert main["Exec"] == "/opt/memtray/bin/memtray" and main["TryExec"] == "/opt/memtray/bin/memtray"
    assert main["Icon"] == "memtray" and main["Type"] == "Application"
    assert groups["Desktop Action QuickChat"]["Exec"] == "/opt/memtray/bin/memtray toggle"
    assert groups["Desktop Action Quit"]["Exec"] == "/opt/memtray/bin/memtray quit"
    assert oct(paths.desktop.stat().st_mode & 0o777) == "0o644"
    # idempotent, then removable
    desktop_entry.install(env, cmd=["/opt/memtray/bin/memtray"])
    assert sorted(desktop_entry.uninstall(env)) == sorted([paths.desktop, paths.icon])
    assert not paths.desktop.exists() and not paths.icon.exists()
    assert desktop_entry.uninstall(env) == []


def test_install_desktop_default_data_home(tmp_path: Path) -> None:
    paths = desktop_entry.Paths.for_env({"HOME": str(tmp_path)})
    assert paths.desktop == tmp_path / ".local" / "share" / "applications" / "memtray.desktop"


def test_launch_command_is_appimage_aware(tmp_path: Path) -> None:
    image = "/home/ada/Apps/memtray x86_64.AppImage"
    assert desktop_entry.launch_command({"APPIMAGE": image}) == [image]
    text = desktop_entry.render_entry((ROOT / "resources" / "memtray.desktop").read_text(), [image])
    assert f'Exec="{image}"' in text and f'Exec="{image}" toggle' in text
    assert desktop_entry.launch_command({"PATH": ""}, executable="/app/memtray", frozen=True) == ["/app/memtray"]
    script = tmp_path / "memtray"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert desktop_entry.launch_command({"PATH": str(tmp_path)}, frozen=False) == [str(script)]
    cmd = desktop_entry.launch_command({"PATH": ""}, executable="/py thon/bin/python3", frozen=False)
    assert cmd == ["/py thon/bin/python3", "-m", "memtray.core.cli"]
    text = desktop_entry.render_entry("[Desktop Entry]\nExec=memtray\nTryExec=memtray\n", cmd)
    assert text == '[Desktop Entry]\nExec="/py thon/bin/python3" -m memtray.core.cli\n'  # no TryExec for a command line


def test_install_desktop_cli_with_appimage(tmp_path: Path) -> None:
    image = str(tmp_path / "memtray.AppImage")
    out = run_cli(tmp_path / "home", "install-desktop", XDG_DATA_HOME=str(tmp_path / "data"), APPIMAGE=image)
    assert out.returncode == 0, out.stderr
    entry = _entry(tmp_path / "data" / "applications" / "memtray.desktop")
    assert entry["Desktop Entry"]["Exec"] == image
    assert entry["Desktop Action QuickChat"]["Exec"] == f"{image} toggle"
    assert (tmp_path / "data" / "icons" / "hicolor" / "scalable" / "apps" / "memtray.svg").is_file()
    assert "installed" in out.stdout and image in out.stdout
    out = run_cli(tmp_path / "home", "install-desktop", "--uninstall", XDG_DATA_HOME=str(tmp_path / "data"))
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / "data" / "applications" / "memtray.desktop").exists()
