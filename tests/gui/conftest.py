"""Fixtures for the desktop tests: a running Desktop on an isolated home, offscreen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import short_dir


@pytest.fixture(autouse=True)
def _delete_windows_left_open() -> Iterator[None]:
    """Delete the top-level widgets a test left behind (a Desktop's window, popup and dialogs:
    closing hides them, it does not delete them). Kept, they piled up in the QApplication the
    whole worker shares, thousands of widgets by the end of the GUI tests, and every later
    ``Desktop.start`` sent its palette and window icon to all of them: its set-up grew from
    0.2 s to 4 s of CPU over 27 tests of three modules (17-32 s in CI under load)."""
    import sys

    widgets = sys.modules.get("PySide6.QtWidgets")
    app = widgets.QApplication.instance() if widgets else None
    before = set(app.topLevelWidgets()) if app else set()
    yield
    from memtray.desktop.qt import QApplication, QEvent

    app = QApplication.instance()
    if app is None:
        return
    for w in app.topLevelWidgets():
        if w not in before:
            w.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # AF_UNIX paths are short (108 bytes): keep the socket out of pytest's long tmp paths
    for d in short_dir("mtrt"):
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))
        yield d


@pytest.fixture
def configured_home(home: Any, llm_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    from memtray.core.base import config

    config.set_value(home, "model", "openai/test-model")
    config.set_value(home, "api_base", llm_server.base_url)
    config.set_value(home, "llm_retries", 0)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MEMTRAY_HOTKEY_BACKEND", "none")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    return home


def make_desktop(qtbot: Any, home: Any, **kw: Any) -> Any:
    from memtray.core.app import App
    from memtray.core.cli.main import serve
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication

    app = App.open(home)
    qapp = QApplication.instance()
    kw.setdefault("tray_available", False)
    kw.setdefault("show_dialogs", False)
    kw.setdefault("warm_up", False)
    d = Desktop(app, qapp, serve, **kw)
    d.start()
    return d


def close_desktop(d: Any) -> None:
    d.shutdown()
    d.app.close()
    from memtray.desktop.qt import QApplication

    QApplication.processEvents()


@pytest.fixture
def desktop(qtbot: Any, configured_home: Any, runtime_dir: Path) -> Iterator[Any]:
    d = make_desktop(qtbot, configured_home)
    yield d
    close_desktop(d)


#: pydantic warns (UserWarning) about litellm's ReadOnly TypedDicts on some first
#: requests; third-party noise like the DeprecationWarnings pyproject.toml ignores.
LITELLM_NOISE = "ignore:Items .* are using the `ReadOnly` qualifier:UserWarning"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.filterwarnings(LITELLM_NOISE))
