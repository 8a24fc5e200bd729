"""The per-chat memory scope switch: which part of memory this conversation sees and writes.

A combo box in the quick chat's header: "Global memory" first, then every named scope
(those holding facts and those a conversation chose), then "New scope…", which asks for a
name. Choosing appends ``session.scope`` (core/memory/scopes.py) on the worker; the
conversation's prompt then carries the global memory and that scope's facts, and its
consolidations write there. The switch follows the log, so a choice made elsewhere
(``memtray ask --scope``) shows at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memtray.core.memory import scopes

from .bridge import Follower
from .context import Context
from .forms import error_text
from .qt import QComboBox, QInputDialog, QWidget, Signal

NEW = "\x00new"


class ScopeSwitch(QComboBox):
    #: a choice was stored (the scope's name, "global" for none)
    chosen = Signal(str)
    #: choosing failed: the words to show
    failed = Signal(str)

    def __init__(self, ctx: Context, session: Callable[[], str], parent: QWidget | None = None,
                 ask_name: Callable[[], str | None] | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.session = session
        #: asks the user for a new scope's name (a dialog; tests give their own)
        self.ask_name = ask_name or self._dialog
        self.setToolTip("The memory this conversation sees and writes: the global memory, or the global memory "
                        "and one scope (work, family, a project)")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.current = scopes.GLOBAL
        self.known: list[str] = []
        self.activated.connect(self._activated)
        self.feed = Follower(ctx.bridge, self._query, self._show, name="session-scope", parent=self,
                             wants=lambda change: self.session() in change.sessions or change.what.memory)
        self._fill()
        self.feed.request()

    def refresh(self) -> None:
        """Ask again which scope the session belongs to (after the session shown changed)."""
        self.feed.request()

    def _query(self) -> Callable[[], tuple[str, list[str]]]:
        store, session = self.ctx.app.store, self.session()
        return lambda: (scopes.of_session(store.state, session), scopes.known(store.state))  # on the worker

    def _show(self, got: tuple[str, list[str]]) -> None:
        self.current, self.known = got
        self._fill()

    def scopes(self) -> list[str]:
        """What the list offers ("global" first; without the "New scope…" entry)."""
        return [str(self.itemData(i)) for i in range(self.count()) if self.itemData(i) != NEW]

    def _fill(self) -> None:
        names = sorted(set(self.known) | ({self.current} - {scopes.GLOBAL}))
        self.blockSignals(True)
        try:
            self.clear()
            self.addItem("Global memory", scopes.GLOBAL)
            for name in names:
                self.addItem(f"Scope: {name}", name)
            self.addItem("New scope…", NEW)
            self.setCurrentIndex(max(self.findData(self.current), 0))
        finally:
            self.blockSignals(False)

    def _dialog(self) -> str | None:
        name, ok = QInputDialog.getText(self, "New memory scope",
                                        "Name (letters, digits, '-' or '_', e.g. work, family, thesis):")
        return name if ok else None

    def _activated(self, index: int) -> None:
        data = str(self.itemData(index) or "")
        if data == NEW:
            typed = self.ask_name()
            if not typed:
                self.setCurrentIndex(max(self.findData(self.current), 0))
                return
            data = typed
        if data == self.current:
            return
        store, session = self.ctx.app.store, self.session()

        def stored(name: Any) -> None:
            self.current = str(name)
            if self.current not in self.known and self.current != scopes.GLOBAL:
                self.known.append(self.current)
            self._fill()
            self.chosen.emit(self.current)

        def refused(exc: BaseException) -> None:
            self.setCurrentIndex(max(self.findData(self.current), 0))
            self.failed.emit(error_text(exc))

        self.ctx.bridge.call(scopes.choose, store, session, data, name="choose-scope",
                             on_result=stored, on_error=refused)
