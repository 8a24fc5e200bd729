"""What the provider calls cost, in Settings and the tray's tooltip (core/log/usage.py).

Both follow the log through the bridge: a reply, a consolidation or an embedding call
appended anywhere (this window, a forwarded CLI command, the background) updates them.
"Run now" is the user's click of core/memory/upkeep.py: background memory upkeep goes on
today past its budget, and conversations whose automatic consolidation stopped are tried
again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memtray.core.log.usage import line, summarize, zone_of

from .bridge import Bridge, Change, Follower
from .context import Context
from .qt import QHBoxLayout, QLabel, QPushButton, QSystemTrayIcon, QWidget

if TYPE_CHECKING:
    from memtray.core.app import App

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class UsageState:
    line: str  # today and this month (usage.line)
    paused: str | None  # why background upkeep waits today
    halted: dict[str, str]  # conversations whose automatic consolidation stopped, and why


def usage_query(app: App) -> Callable[[], UsageState]:
    """The worker's side: today's and this month's figures and the guard's state."""

    def run() -> UsageState:
        zone = zone_of(app.config.timezone or app.clock.local_zone_name())
        s = summarize(app.store.state.usage, app.clock.now(), zone, 1)
        guard = app.consolidation.upkeep
        return UsageState(line(s), guard.over(), dict(guard.halted))

    return run


def _wants(change: Change) -> bool:
    return change.what.spending


class UsageRow(QWidget):
    """Settings: one line of figures, why upkeep waits (if it does), and "Run now"."""

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.text = QLabel("…")
        self.text.setWordWrap(True)
        self.run_now = QPushButton("Run now")
        self.run_now.setToolTip("Let background memory upkeep go on today past its budget, and try stopped "
                                "conversations again (memtray usage --run-now)")
        self.run_now.clicked.connect(self._run_now)
        self.run_now.hide()
        row.addWidget(self.text, 1)
        row.addWidget(self.run_now)
        self.feed = Follower(ctx.bridge, lambda: usage_query(ctx.app), self._show, name="usage", parent=self,
                             wants=_wants)
        self.feed.request()

    def _show(self, state: UsageState) -> None:
        notes = [f"Memory upkeep paused today: {state.paused}."] if state.paused else []
        notes += [f"Consolidation of “{s}” stopped: {why}." for s, why in state.halted.items()]
        self.text.setText("\n".join([state.line, *notes]))
        self.run_now.setVisible(bool(notes))

    def _run_now(self) -> None:
        app = self.ctx.app
        self.run_now.setEnabled(False)

        def lift() -> None:
            app.consolidation.upkeep.run_now()

        def done(_: object = None) -> None:
            self.run_now.setEnabled(True)
            self.feed.request()
            self.ctx.bridge.submit(app.consolidation.sweep(), name="run-now-sweep")

        self.ctx.bridge.call(lift, name="run-now", on_result=done, on_error=lambda _exc: done())


class TrayUsage:
    """Keeps the tray icon's tooltip at "memtray" plus today's and this month's figures."""

    def __init__(self, bridge: Bridge, app: App, icon: QSystemTrayIcon) -> None:
        self.icon = icon
        self.feed = Follower(bridge, lambda: usage_query(app), self._show, name="tray-usage", wants=_wants)
        self.feed.request()

    def _show(self, state: UsageState) -> None:
        extra = "\nMemory upkeep paused today" if state.paused else ""
        self.icon.setToolTip(f"memtray\n{state.line}{extra}")
