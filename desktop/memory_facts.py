"""The memory browser's "Facts" tab: what memory holds now, one fact at a time, with who
wrote it (a chat, you, another assistant through MCP by name, an import, another device),
and Edit and Forget.

An edit or a removal is :meth:`MemoryService.edit_fact` / :meth:`~MemoryService.forget_fact`
on the worker (the same calls as ``memtray memory edit|forget``): one revision each, with
the reason the user gives. The list is pushed state: a :class:`Follower` asks the worker
for ``current_facts()`` after any ``memory.*`` event while the tab is shown (and when it is
shown again after one).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from memtray.core.memory import scopes

from .bridge import Change, Follower
from .context import Context
from .forms import clear_column, error_text, label
from .memory_rows import Blank, FactRow
from .qt import (
    QDialog,
    QDialogButtonBox,
    QInputDialog,
    QLineEdit,
    QScrollArea,
    QShowEvent,
    QVBoxLayout,
    QWidget,
    Signal,
)


class FactDialog(QDialog):
    """Edit one fact (its new words and why) or forget it (why)."""

    def __init__(self, fact: dict[str, Any], mode: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fact = fact
        self.mode = mode
        self.setWindowTitle("Edit a fact" if mode == "edit" else "Forget a fact")
        self.setMinimumWidth(520)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(18, 16, 18, 14)
        lay.setSpacing(10)
        head = label(fact["text"] if mode == "forget" else f"{fact['id']} · {fact['section'] or 'no section'}",
                     subheading=True)
        lay.addWidget(head)
        self.text = QLineEdit(fact["text"])
        self.text.setVisible(mode == "edit")
        lay.addWidget(self.text)
        lay.addWidget(label("Memory keeps every revision: this change can be undone from the revision list."
                            if mode == "edit" else
                            "The fact leaves memory in a new revision; “Restore” on that revision brings it back.",
                            muted=True))
        self.reason = QLineEdit()
        self.reason.setPlaceholderText("Why (optional; kept with the revision)")
        lay.addWidget(self.reason)
        self.message = label("", error=True)
        self.message.hide()
        lay.addWidget(self.message)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok_btn = box.addButton("Save" if mode == "edit" else "Forget", QDialogButtonBox.ButtonRole.AcceptRole)
        self.ok_btn.setProperty("primary", True)
        box.accepted.connect(self._check)
        box.rejected.connect(self.reject)
        lay.addWidget(box)
        (self.text if mode == "edit" else self.reason).setFocus()

    def _check(self) -> None:
        if self.mode == "edit" and not " ".join(self.text.text().split()):
            self.message.setText("The fact needs some words; to remove it, use Forget.")
            self.message.show()
            return
        self.accept()

    def values(self) -> tuple[str, str]:
        return self.text.text().strip(), self.reason.text().strip()


class FactsTab(QScrollArea):
    """The current facts, grouped by section, each with who wrote it, Edit and Forget."""

    #: an edit or a removal made a revision (the new Revision)
    changed = Signal(object)
    #: a line for the browser's status: (text, is an error)
    message = Signal(str, bool)
    #: after a list of facts was shown (tests wait on it)
    shown = Signal()

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWidgetResizable(True)
        inner = QWidget()
        self.col = QVBoxLayout(inner)
        self.col.setContentsMargins(4, 4, 4, 4)
        self.col.setSpacing(6)
        self.col.addStretch(1)
        self.setWidget(inner)
        self.facts: list[dict[str, Any]] = []
        self.rows: list[FactRow] = []
        self.dialog: FactDialog | None = None
        #: asks where a fact moves and why (a dialog; tests give their own)
        self.ask_move: Callable[[dict[str, Any], list[str]], tuple[str, str] | None] = self._ask_move
        self._stale = True
        self.feed = Follower(ctx.bridge, self._query, self._show, wants=self._wants, name="memory-facts",
                             parent=self, on_error=lambda e: self.message.emit(error_text(e), True))

    # --- following memory -----------------------------------------------------------------

    def _wants(self, change: Change) -> bool:
        if not change.what.memory:
            return False
        if self.isVisible():
            return True
        self._stale = True  # read when the tab is shown again, not on every change while hidden
        return False

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._stale:
            self.refresh()

    def refresh(self) -> None:
        self._stale = False
        self.feed.request()

    def _query(self) -> Any:
        mem = self.ctx.app.memory
        return mem.current_facts  # on the worker: reads the log's memory events once

    def _show(self, facts: list[dict[str, Any]]) -> None:
        self.facts = facts
        clear_column(self.col)
        self.rows = []
        if not facts:
            self.col.insertWidget(0, label("Memory holds no facts yet.", muted=True))
        section: str | None = None
        scope: str | None = None
        scoped = any(f["scope"] != scopes.GLOBAL for f in facts)
        for fact in facts:
            if scoped and fact["scope"] != scope:  # the global memory, then each scope (its own file)
                scope, section = fact["scope"], None
                self.col.insertWidget(self.col.count() - 1, label(
                    "Global memory · MEMORY.md" if scope == scopes.GLOBAL else f"Scope: {scope} · scopes/{scope}.md",
                    heading=True))
            if fact["section"] != section:
                section = fact["section"]
                self.col.insertWidget(self.col.count() - 1, label(section or "No section", subheading=True))
            by = fact["by"] + (", edited" if fact["edited"] else "")
            receipt = fact.get("receipt")
            said = "" if receipt is None else " · you said it" if receipt["stated"] else " · inferred, not said by you"
            row = FactRow(self.ctx, "current", None, Blank(fact["text"], f"{fact['id']} · by {by}{said}"), [
                ("Edit", partial(self.edit, fact)), ("Move…", partial(self.move_fact, fact)),
                ("Forget", partial(self.forget, fact)),
            ])
            row.setToolTip(f"Fact {fact['id']}, written by {by}" + ("" if receipt is None else (
                f"\n{'You said' if receipt['stated'] else 'Only the assistant said'}: \u201c{receipt['quote']}\u201d")))
            self.rows.append(row)
            self.col.insertWidget(self.col.count() - 1, row)
        self.shown.emit()

    def row(self, text: str) -> FactRow:
        return next(r for r in self.rows if r.fact.text == text)

    # --- edit and forget ------------------------------------------------------------------

    def edit(self, fact: dict[str, Any]) -> None:
        self._ask(fact, "edit")

    def forget(self, fact: dict[str, Any]) -> None:
        self._ask(fact, "forget")

    def move_fact(self, fact: dict[str, Any]) -> None:
        """Move a fact to another scope, under its id, with the reason the user gives
        (:meth:`MemoryService.move_fact`, as ``memtray memory move``)."""
        here = sorted({f["scope"] for f in self.facts} | {scopes.GLOBAL})
        asked = self.ask_move(fact, [s for s in here if s != fact["scope"]])
        if asked is None:
            return
        target, why = asked
        self._enable(False)
        self.ctx.bridge.call(self.ctx.app.memory.move_fact, fact["id"], target, why or "moved by the user",
                             name="memory-move-fact", on_result=self._done, on_error=self._failed)

    def _ask_move(self, fact: dict[str, Any], others: list[str]) -> tuple[str, str] | None:
        target, ok = QInputDialog.getItem(self, "Move a fact", f"Move \u201c{fact['text']}\u201d to the scope "
                                          "(pick one, or type a new name):", others, 0, True)
        if not ok or not target.strip():
            return None
        why, ok = QInputDialog.getText(self, "Move a fact", "Why (kept with the revision):")
        return (target.strip(), why.strip()) if ok else None

    def _ask(self, fact: dict[str, Any], mode: str) -> None:
        if self.dialog is not None:
            self.dialog.close()
        dlg = FactDialog(fact, mode, self)
        dlg.accepted.connect(lambda: self._apply(dlg))
        self.dialog = dlg
        dlg.open()

    def _apply(self, dlg: FactDialog) -> None:
        mem = self.ctx.app.memory
        fid = dlg.fact["id"]
        text, why = dlg.values()
        self._enable(False)
        if dlg.mode == "edit":
            self.ctx.bridge.call(mem.edit_fact, fid, text, why, name="memory-edit-fact", on_result=self._done,
                                 on_error=self._failed)
        else:
            self.ctx.bridge.call(mem.forget_fact, fid, why, name="memory-forget-fact", on_result=self._done,
                                 on_error=self._failed)

    def _done(self, rev: Any) -> None:
        self._enable(True)
        self.changed.emit(rev)

    def _failed(self, exc: BaseException) -> None:
        self._enable(True)
        self.message.emit(error_text(exc), True)

    def _enable(self, on: bool) -> None:
        for row in self.rows:
            for b in row.buttons.values():
                b.setEnabled(on)


__all__ = ["FactDialog", "FactsTab"]
