"""The quick chat's check-in: a fact whose check date has come, asked about gently.

One line above the conversation ("Still training for the marathon?") with one-click
answers: **Yes** (the check is recorded and the next one moved), **No longer** (the fact
leaves memory with that reason) and **Edit** (say what is true now). "Later" hides it
for this run. Every answer is a revision on the worker
(:meth:`~memtray.core.memory.dated.DatedOps.check_fact`); the line follows memory's
changes through a :class:`~memtray.desktop.bridge.Follower`, so an answer given from the
CLI or a notification's button takes the question away here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memtray.core.memory import scopes
from memtray.core.memory.dated import local_day

from .bridge import Change, Follower
from .context import Context
from .forms import error_text
from .qt import QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget, Signal
from .texts import text


def _today(app: Any) -> Any:
    return local_day(app.clock.now(), app.agent.zone())


class CheckIn(QFrame):
    """The check-in line (hidden while no fact is due)."""

    #: (fact id, answer) after the answer's revision was written (tests wait on it)
    answered = Signal(str, str)

    def __init__(self, ctx: Context, session: Callable[[], str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.session = session  # the conversation whose memory scope it asks about
        self.setObjectName("checkin")
        t = ctx.theme
        self.setStyleSheet(f"QFrame#checkin {{ background: {t.surface}; border-bottom: 1px solid {t.border}; }}")
        self.due: list[dict[str, Any]] = []
        self.later: set[str] = set()
        self.current: dict[str, Any] | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 8, 12, 8)
        lay.setSpacing(4)
        self.question = QLabel()
        self.question.setStyleSheet("font-weight: 600;")
        self.question.setWordWrap(True)
        lay.addWidget(self.question)
        self.detail = QLabel()
        self.detail.setProperty("muted", True)
        self.detail.setWordWrap(True)
        lay.addWidget(self.detail)
        self.buttons = QWidget()
        row = QHBoxLayout(self.buttons)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        self.yes_btn = self._button(row, "Yes", lambda: self.answer("yes"), primary=True)
        self.no_btn = self._button(row, "No longer", lambda: self.answer("no-longer"))
        self.edit_btn = self._button(row, "Edit…", self._start_edit)
        row.addStretch(1)
        self.later_btn = self._button(row, "Later", self._later)
        lay.addWidget(self.buttons)
        self.edit_row = QWidget()
        er = QHBoxLayout(self.edit_row)
        er.setContentsMargins(0, 0, 0, 0)
        self.edit = QLineEdit()
        self.edit.setPlaceholderText(text("checkin.edit_hint"))
        self.edit.returnPressed.connect(self._save_edit)
        er.addWidget(self.edit, 1)
        self.save_btn = self._button(er, "Save", self._save_edit, primary=True)
        self.edit_row.hide()
        lay.addWidget(self.edit_row)
        self.status = QLabel()
        self.status.setProperty("muted", True)
        self.status.hide()
        lay.addWidget(self.status)
        self.hide()
        self.follower = Follower(ctx.bridge, self._query, self._show, wants=self._wants, name="checkin", parent=self)
        self.follower.request()

    def _button(self, row: QHBoxLayout, label: str, fn: Callable[[], None], *, primary: bool = False) -> QPushButton:
        b = QPushButton(label)
        if primary:
            b.setProperty("primary", True)
        b.clicked.connect(fn)
        row.addWidget(b)
        return b

    # --- what is due ----------------------------------------------------------------------

    def _wants(self, change: Change) -> bool:
        return change.what.memory or self.session() in change.sessions  # its scope may have changed

    def _query(self) -> Callable[[], Any]:
        app = self.ctx.app
        session = self.session
        return lambda: app.memory.review_due(_today(app), scopes.of_session(app.store.state, session()))

    def refresh(self) -> None:
        """Ask again what is due (the popup does when it opens: the day may have changed)."""
        self.follower.request()

    def _show(self, due: list[dict[str, Any]]) -> None:
        self.due = [d for d in due if d["id"] not in self.later]
        if not self.due:  # nothing left to ask: only what the last answer did stays said
            self.current = None
            for w in (self.question, self.detail, self.buttons, self.edit_row):
                w.hide()
            self.setVisible(self.status.isVisible())
            return
        for w in (self.question, self.detail, self.buttons):
            w.show()
        d = self.due[0]
        if self.current is None or self.current["id"] != d["id"]:
            self.edit_row.hide()  # the last answer's note stays: the next question comes after it
        self.current = d
        more = f"  (+{len(self.due) - 1} more)" if len(self.due) > 1 else ""
        self.question.setText(d["question"] + more)
        self.detail.setText(text("checkin.detail", fact=d["words"]))
        self.edit.setText(d["words"])
        self._enable(True)
        self.show()

    # --- answering ----------------------------------------------------------------------

    def answer(self, answer: str, new_text: str | None = None) -> None:
        if self.current is None:
            return
        fid = self.current["id"]
        app = self.ctx.app
        self._enable(False)

        def done(_rev: Any) -> None:
            key = {"yes": "checkin.done_yes", "no-longer": "checkin.done_no", "edit": "checkin.done_edit"}[answer]
            self.status.setText(text(key))
            self.status.show()
            self.edit_row.hide()
            self.answered.emit(fid, answer)
            self.follower.request()

        def failed(exc: BaseException) -> None:
            self._enable(True)
            self.status.setText(error_text(exc))
            self.status.show()

        self.ctx.bridge.call(lambda: app.memory.check_fact(fid, answer, _today(app), new_text),
                             name="check-in", on_result=done, on_error=failed)

    def _enable(self, on: bool) -> None:
        for b in (self.yes_btn, self.no_btn, self.edit_btn, self.later_btn, self.save_btn):
            b.setEnabled(on)

    def _start_edit(self) -> None:
        self.edit_row.show()
        self.edit.setFocus()
        self.edit.selectAll()

    def _save_edit(self) -> None:
        words = " ".join(self.edit.text().split())
        if words:
            self.answer("edit", words)

    def _later(self) -> None:
        if self.current is not None:
            self.later.add(self.current["id"])
        self.status.hide()
        self._show(self.due)
