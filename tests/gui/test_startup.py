"""Start-up: the window (no tray here) shows before litellm is imported; no-tray start shows the window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import ipc

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]


def test_no_tray_start_shows_the_main_window(qtbot: Any, desktop: Any) -> None:
    assert desktop.tray is None
    assert desktop.window is not None and desktop.window.isVisible()
    assert desktop.window.quit_on_close


def test_window_is_shown_before_litellm_is_imported(configured_home: Any, runtime_dir: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.jsonl"
    env = dict(os.environ, MEMTRAY_HOME=str(configured_home.root), MEMTRAY_STARTUP_REPORT=str(report),
               QT_QPA_PLATFORM="offscreen")
    env.pop("MEMTRAY_NO_DESKTOP", None)
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli"], env=env, cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while "\n" not in (report.read_text() if report.exists() else "") and time.monotonic() < deadline \
                and proc.poll() is None:
            time.sleep(0.05)
        assert report.exists(), proc.stderr.read() if proc.poll() is not None else "no report"
        ready = json.loads(report.read_text().splitlines()[0])
        assert ready["event"] == "ready"
        assert ready["litellm"] is False and ready["apscheduler"] is False
        assert ready["tray"] is False  # offscreen: no tray, so the window was shown
        # the running app answers once it listens (the window shows first), then quits on request
        from memtray.core.cli.instance import wait_while_starting

        assert wait_while_starting(configured_home, timeout=120)
        code = ipc.request(configured_home, {"argv": ["quit"]}, lambda _m: None, timeout=30)
        assert code == 0
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    assert not ipc.socket_path(configured_home).exists()


@pytest.mark.timeout(1200)
def test_the_model_client_is_warm_soon_after_start_without_opening_the_popup(
    configured_home: Any, runtime_dir: Path, tmp_path: Path
) -> None:
    """With no tray the window is on screen: litellm is imported once start-up is idle, not at the first message."""
    report = tmp_path / "report.jsonl"
    env = dict(os.environ, MEMTRAY_HOME=str(configured_home.root), MEMTRAY_STARTUP_REPORT=str(report),
               QT_QPA_PLATFORM="offscreen")
    env.pop("MEMTRAY_NO_DESKTOP", None)
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli"], env=env, cwd=str(ROOT),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def events() -> list[dict[str, Any]]:  # complete lines only
            return [json.loads(x) for x in report.read_text().split("\n")[:-1]] if report.exists() else []

        deadline = time.monotonic() + 900  # litellm's import: seconds idle, minutes on a loaded machine
        while not any(e["event"] == "client_warm" for e in events()) and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        seen = events()
        names = [e["event"] for e in seen]
        assert "client_warm" in names, names
        assert "popup_shown" not in names  # nobody opened the popup: the warm-up did not wait for it
        assert seen[0]["event"] == "ready" and seen[0]["litellm"] is False  # and it was not on the way to ready
        assert ipc.request(configured_home, {"argv": ["quit"]}, lambda _m: None, timeout=30) == 0
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_first_run_without_a_model_opens_onboarding(
    qtbot: Any, home: Any, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.gui.conftest import close_desktop, make_desktop

    monkeypatch.setenv("MEMTRAY_HOTKEY_BACKEND", "none")
    d = make_desktop(qtbot, home)
    try:
        qtbot.waitUntil(lambda: d.onboarding is not None and d.onboarding.isVisible(), timeout=5000)
    finally:
        close_desktop(d)


def test_the_popup_is_prepared_while_idle_before_its_first_show(qtbot: Any, desktop: Any) -> None:
    from memtray.desktop.qt import Qt

    popup = desktop.popup
    qtbot.waitUntil(lambda: popup.testAttribute(Qt.WidgetAttribute.WA_WState_Created), timeout=5000)
    assert not popup.isVisible()  # prepared, not shown


@pytest.fixture
def tray_loads(qtbot: Any, configured_home: Any, runtime_dir: Path,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[str]]]:
    """A tray desktop with its warm-up on, idle after start, and the list of litellm loads."""
    from memtray.core.llm import client

    from tests.gui.conftest import close_desktop, make_desktop

    loads: list[str] = []
    monkeypatch.setattr(client, "load_litellm", lambda: loads.append("litellm"))
    d = make_desktop(qtbot, configured_home, tray_available=True, warm_up=True)
    try:
        assert d.tray is not None
        qtbot.waitUntil(lambda: d._after_shown_done, timeout=20000)
        # past the idle steps that follow the tray's showing (the popup prepared at 300 ms,
        # where the warm-up used to follow at 600 ms)
        qtbot.wait(1500)
        assert loads == []
        yield d, loads
    finally:
        close_desktop(d)


def test_a_tray_app_idles_without_the_model_client_until_the_user_opens_the_popup(
    qtbot: Any, tray_loads: tuple[Any, list[str]]
) -> None:
    """In the tray nothing is typed yet: litellm (~230 MiB) loads at the popup's first show, not at start."""
    d, loads = tray_loads
    d.toggle_popup()
    qtbot.waitUntil(lambda: loads == ["litellm"], timeout=20000)
    d.toggle_popup()
    d.main_window().present()  # the window too is an intent, but the client is warm already
    qtbot.wait(200)
    assert loads == ["litellm"]


def test_a_tray_app_warms_the_model_client_when_the_window_is_opened(
    qtbot: Any, tray_loads: tuple[Any, list[str]]
) -> None:
    d, loads = tray_loads
    d.open("memory")
    qtbot.waitUntil(lambda: loads == ["litellm"], timeout=20000)
