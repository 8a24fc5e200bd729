"""What the calls cost, in the desktop: Settings' "Spent" line and the tray's tooltip follow
the log, and "Run now" lifts a paused background upkeep for the day."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import config
from memtray.core.log.events import UsageRecorded
from memtray.desktop.qt import QSystemTrayIcon, Qt
from memtray.desktop.usage_view import TrayUsage

from tests.fixtures.llm_server import reply
from tests.gui.conftest import close_desktop, make_desktop

pytestmark = pytest.mark.gui


@pytest.fixture
def budget_desktop(qtbot: Any, configured_home: Any, runtime_dir: Path) -> Iterator[Any]:
    config.set_value(configured_home, "upkeep_daily_tokens", 1000)
    d = make_desktop(qtbot, configured_home)
    yield d
    close_desktop(d)


def test_settings_shows_what_was_spent_and_run_now_lifts_the_pause(qtbot: Any, budget_desktop: Any,
                                                                   llm_server: Any) -> None:
    app = budget_desktop.app
    budget_desktop.open("settings")
    row = budget_desktop.window.settings.usage
    qtbot.waitUntil(lambda: row.text.text().startswith("Today 0 tokens"), timeout=10000)
    assert not row.run_now.isVisibleTo(row)

    llm_server.script(reply("Noted.", usage={"prompt_tokens": 400, "completion_tokens": 20}))
    app.run(app.agent.turn("quick", "I play chess", stream=False))
    qtbot.waitUntil(lambda: row.text.text().startswith("Today 420 tokens"), timeout=10000)
    assert not row.run_now.isVisibleTo(row)  # chat never pauses anything

    app.write(lambda: app.store.append(UsageRecorded(kind="embedding", model="openai/test-embedding",
                                                     usage={"prompt_tokens": 1200, "total_tokens": 1200})))
    qtbot.waitUntil(lambda: "Memory upkeep paused today" in row.text.text(), timeout=10000)
    assert "(memory upkeep 1,200)" in row.text.text() and row.run_now.isVisibleTo(row)
    qtbot.mouseClick(row.run_now, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "paused" not in row.text.text(), timeout=10000)
    assert not row.run_now.isVisibleTo(row) and app.consolidation.upkeep.over() is None


def test_the_tray_tooltip_follows_the_log(qtbot: Any, budget_desktop: Any) -> None:
    app = budget_desktop.app
    icon = QSystemTrayIcon()
    # held for the whole test, as the desktop holds its own: the follower and the view refer to
    # each other and to nothing else, so an unheld pair lives only until the next cyclic GC
    usage = TrayUsage(budget_desktop.bridge, app, icon)
    qtbot.waitUntil(lambda: icon.toolTip().startswith("memtray\nToday 0 tokens"), timeout=10000)
    app.write(lambda: app.store.append(UsageRecorded(kind="embedding", model="openai/test-embedding",
                                                     usage={"prompt_tokens": 2000, "total_tokens": 2000})))
    qtbot.waitUntil(lambda: "Memory upkeep paused today" in icon.toolTip(), timeout=10000)
    assert "Today 2,000 tokens" in icon.toolTip() and usage.icon is icon


def test_the_daily_limit_is_a_setting_that_holds_at_once(qtbot: Any, budget_desktop: Any) -> None:
    app = budget_desktop.app
    budget_desktop.open("settings")
    page = budget_desktop.window.settings
    assert page.upkeep_usd.value() == 0 and page.upkeep_usd.text() == "no limit"
    page.upkeep_usd.setValue(0.35)
    assert page.revert_btn.isEnabled()  # an edit the footer knows of
    with qtbot.waitSignal(page.saved, timeout=10000):
        qtbot.mouseClick(page.save_btn, Qt.MouseButton.LeftButton)
    assert config.load(app.home).upkeep_daily_usd == 0.35 and app.config.upkeep_daily_usd == 0.35
