"""The Reminders page: add one as you would say it, see when each fires next, snooze or
cancel it.

Every change goes to :class:`~memtray.core.reminders.service.ReminderService` on the
worker (the same calls as ``memtray remind add|snooze|cancel``). The list is pushed
state: a :class:`Follower` asks the worker for the active reminders after any
``reminder.*`` event, whichever door wrote it (a chat's tool call, the CLI, a firing),
and once a minute, so "next" and "in 5 min" stay true.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any

from .bridge import Follower
from .context import Context
from .forms import clear_column, error_text, label, set_state
from .qt import (
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QScrollArea,
    Qt,
    QTimer,
    QVBoxLayout,
    QWidget,
    Signal,
)

WHEN_HINT = "in 10 minutes · tomorrow at 9 · friday 18:30 · every weekday at 9"


def when_text(iso: str | None, now: datetime | None = None) -> str:
    """"Tue 1 Dec, 09:00 (in 2 h)" for a reminder's next time, in this computer's zone."""
    if not iso:
        return "not scheduled"
    t = datetime.fromisoformat(iso).astimezone()
    now = (now or datetime.now().astimezone()).astimezone(t.tzinfo)
    left = int((t - now).total_seconds())
    if left < 0:
        soon = "due now"
    elif left < 3600:
        soon = f"in {max(1, round(left / 60))} min"
    elif left < 86400:
        soon = f"in {round(left / 3600)} h"
    else:
        soon = f"in {round(left / 86400)} d"
    day = "today" if t.date() == now.date() else f"{t.strftime('%a')} {t.day} {t.strftime('%b')}"
    return f"{day}, {t.strftime('%H:%M')} ({soon})"


_DAY_WORDS = {"*": "day", "mon-fri": "weekday", "sat,sun": "weekend day"}


def repeat_text(row: dict[str, Any]) -> str:
    """How a reminder repeats, in words: "once", "every 2h", "every weekday at 09:00"; a cron
    that is no simple days-and-time one is shown as it is."""
    if row["kind"] == "at":
        return "once"
    if row["kind"] == "every":
        return f"every {row['spec']}"
    fields = str(row["spec"]).split()
    if len(fields) == 5 and fields[0].isdigit() and fields[1].isdigit() and fields[2:4] == ["*", "*"]:
        days = _DAY_WORDS.get(fields[4]) or " and ".join(d.capitalize() for d in fields[4].split(","))
        return f"every {days} at {int(fields[1]):02d}:{int(fields[0]):02d}"
    return str(row["describe"])


class ReminderRow(QFrame):
    """One reminder: its text, when it fires next and how it repeats, Snooze and Cancel."""

    def __init__(self, ctx: Context, row: dict[str, Any]) -> None:
        super().__init__()
        self.row = row
        self.setObjectName("reminder")
        self.setStyleSheet(f"QFrame#reminder {{ background: {ctx.theme.surface}; border: 1px solid "
                           f"{ctx.theme.border}; border-radius: 8px; }}")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 8, 8, 8)
        col = QVBoxLayout()
        col.setSpacing(2)
        self.text = label(" ".join(row["text"].split()))
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        col.addWidget(self.text)
        agent = " · the assistant answers" if row["mode"] == "agent" else ""
        self.when = label(f"Next: {when_text(row['next'])} · {repeat_text(row)}{agent}", muted=True)
        self.when.setToolTip(f"{row['describe']} ({row['tz']})")
        col.addWidget(self.when)
        lay.addLayout(col, 1)
        self.snooze_btn = QPushButton("Snooze 10 min")
        self.snooze_btn.setToolTip("Remind me of this again in 10 minutes" +
                                   ("" if row["kind"] == "at" else " (the schedule goes on)"))
        lay.addWidget(self.snooze_btn, 0, Qt.AlignmentFlag.AlignTop)
        self.cancel_btn = QPushButton("Cancel")
        lay.addWidget(self.cancel_btn, 0, Qt.AlignmentFlag.AlignTop)


class RemindersPage(QWidget):
    """Add, list (next time first), snooze and cancel reminders."""

    #: after a list was shown (tests wait on it)
    shown = Signal()

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.rows: list[ReminderRow] = []
        self.reminders: list[dict[str, Any]] = []
        self.highlight = ""
        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 20, 24, 20)
        lay.setSpacing(12)
        lay.addWidget(label("Reminders", heading=True))
        add = QHBoxLayout()
        self.new_text = QLineEdit()
        self.new_text.setPlaceholderText("Remind me to…")
        add.addWidget(self.new_text, 3)
        self.new_when = QLineEdit()
        self.new_when.setPlaceholderText(WHEN_HINT)
        self.new_when.setToolTip("When, as you would say it: " + WHEN_HINT)
        add.addWidget(self.new_when, 3)
        self.add_btn = QPushButton("Add")
        self.add_btn.setProperty("primary", True)
        self.add_btn.clicked.connect(self.add)
        self.new_when.returnPressed.connect(self.add)
        add.addWidget(self.add_btn)
        lay.addLayout(add)
        self.status = label("", muted=True)
        lay.addWidget(self.status)
        self.list_area = QScrollArea()
        self.list_area.setWidgetResizable(True)
        self.list_area.setFrameShape(QFrame.Shape.NoFrame)
        inner = QWidget()
        self.col = QVBoxLayout(inner)
        self.col.setContentsMargins(0, 0, 0, 0)
        self.col.setSpacing(8)
        self.col.addStretch(1)
        self.list_area.setWidget(inner)
        lay.addWidget(self.list_area, 1)
        self.feed = Follower(ctx.bridge, self._query, self._show, name="reminders", parent=self,
                             wants=lambda change: change.what.reminders,
                             on_error=lambda e: set_state(self.status, error_text(e), "error"))
        self.clock = QTimer(self)
        self.clock.setInterval(60_000)  # "in 5 min" and the next time of a repeating reminder move on
        self.clock.timeout.connect(self.feed.request)
        self.clock.start()
        self.feed.request()

    # --- the list -----------------------------------------------------------------------

    def _query(self) -> Any:
        svc = self.ctx.app.reminders

        def query() -> list[dict[str, Any]]:  # on the worker
            rows = [svc.as_json(r) | {"describe": svc.describe(r)} for r in svc.reminders()]
            return sorted(rows, key=lambda r: (r["next"] is None,
                                               datetime.fromisoformat(r["next"]).timestamp() if r["next"] else 0.0))

        return query

    def _show(self, reminders: list[dict[str, Any]]) -> None:
        self.reminders = reminders
        clear_column(self.col)
        self.rows = []
        if not reminders:
            self.col.insertWidget(0, label("No reminders. Add one above, or ask in a chat "
                                           "(“remind me tomorrow at noon to call mum”).", muted=True))
        for r in reminders:
            row = ReminderRow(self.ctx, r)
            row.snooze_btn.clicked.connect(partial(self.snooze, r["id"]))
            row.cancel_btn.clicked.connect(partial(self.cancel, r["id"]))
            if r["id"] == self.highlight:
                row.setStyleSheet(row.styleSheet().replace(self.ctx.theme.border, self.ctx.theme.accent))
            self.rows.append(row)
            self.col.insertWidget(self.col.count() - 1, row)
        self.shown.emit()

    def row(self, text: str) -> ReminderRow:
        return next(r for r in self.rows if r.row["text"] == text)

    def show_reminder(self, rid: str) -> None:
        """From a notification: that reminder is outlined (when it is still active)."""
        self.highlight = rid
        self.feed.request()

    # --- commands -------------------------------------------------------------------------

    def add(self) -> None:
        text, when = self.new_text.text().strip(), self.new_when.text().strip()
        if not text or not when:
            set_state(self.status, "Say what to remind you of, and when.", "error")
            return
        svc = self.ctx.app.reminders

        def added(r: Any) -> None:
            self.new_text.clear()
            self.new_when.clear()
            set_state(self.status, f"Added: {svc.describe(r)}.", "ok")

        self._run(lambda: svc.schedule(text, at=when), added, "reminder-add")

    def snooze(self, rid: str) -> None:
        svc = self.ctx.app.reminders
        self._run(lambda: svc.snooze(rid), lambda r: set_state(
            self.status, f"Snoozed: “{' '.join(r.text.split())}” again in 10 minutes.", "ok"), "reminder-snooze")

    def cancel(self, rid: str) -> None:
        svc = self.ctx.app.reminders
        self._run(lambda: svc.cancel(rid), lambda r: set_state(
            self.status, f"Cancelled “{' '.join(r.text.split())}”.", "ok"), "reminder-cancel")

    def _run(self, fn: Any, done: Any, name: str) -> None:
        def failed(exc: BaseException) -> None:
            set_state(self.status, error_text(exc), "error")

        self.ctx.bridge.call(fn, name=name, on_result=done, on_error=failed)
