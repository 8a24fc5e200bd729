"""Rebuild with model…: re-consolidate the log onto ``rebuild/NAME``, compare, adopt.

The same core calls as ``memtray memory rebuild|compare|adopt``
(:func:`memtray.core.audit.rebuild.run`, :func:`memtray.core.audit.adopt.compare`,
:func:`memtray.core.audit.adopt.adopt`), run on the worker through the bridge.
Progress comes from core's ``on_progress`` callback (worker thread) as a
queued signal. Cancel cancels the worker task; core records the rebuild as
interrupted and keeps finished steps (run it again to resume).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from .bridge import Task
from .context import Context
from .forms import error_text
from .qt import (
    QCheckBox,
    QDateTime,
    QDateTimeEdit,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
    Signal,
)


def compare_text(r: dict[str, Any]) -> str:
    """The compare result as plain text (the same lines as ``memtray memory compare``)."""
    d = r["diff"]
    lines = [f"{r['branch']} ({r['model']}, {r['state']}) vs current memory",
             f"facts: main {r['facts']['main']}, rebuild {r['facts']['rebuild']} · "
             f"+{len(d['added'])} −{len(d['dropped'])} ~{len(d['changed'])}"]
    if r.get("steps_pending"):
        lines.append(f"note: {r['steps_pending']} memory change(s) on main are not in the rebuild yet")
    lines.append("")
    lines += [f"+ [{f['section']}] {f['text']}" for f in d["added"]]
    lines += [f"- [{f['section']}] {f['text']}" for f in d["dropped"]]
    lines += [f"~ [{c['new']['section']}] {c['old']['text']} → {c['new']['text']}" for c in d["changed"]]
    if not (d["added"] or d["dropped"] or d["changed"]):
        lines.append("no fact differences")
    return "\n".join(lines)


class RebuildDialog(QDialog):
    #: (done, total, text), emitted on the worker and delivered on the GUI thread
    progress = Signal(int, int, str)
    #: the compare dict, once the rebuild finished
    compared = Signal(object)
    #: the adopt's memory.written record
    adopted = Signal(object)
    failed = Signal(str)

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.task: Task | None = None
        self.comparison: dict[str, Any] | None = None
        self.setWindowTitle("Rebuild memory with another model")
        self.setMinimumSize(560, 440)
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.model = QLineEdit()
        self.model.setPlaceholderText("litellm model, e.g. openai/gpt-4o-mini")
        form.addRow("Model", self.model)
        self.name = QLineEdit()
        self.name.setPlaceholderText("optional (default from the model)")
        form.addRow("Name", self.name)
        since_row = QHBoxLayout()
        self.since_on = QCheckBox("Only events since")
        self.since = QDateTimeEdit(QDateTime.currentDateTime().addDays(-30))
        self.since.setCalendarPopup(True)
        self.since.setDisplayFormat("yyyy-MM-dd HH:mm")
        self.since.setEnabled(False)
        self.since_on.toggled.connect(self.since.setEnabled)
        since_row.addWidget(self.since_on)
        since_row.addWidget(self.since, 1)
        form.addRow("Since", since_row)
        self.exclude = QLineEdit()
        self.exclude.setPlaceholderText("optional: sessions or event ranges, e.g. prank 120-180")
        self.exclude.setToolTip("Left out of the rebuild, as `memtray memory rebuild --exclude`: a session key "
                                "or a range of event seqs (see `memtray events tail`), separated by spaces")
        form.addRow("Exclude", self.exclude)
        lay.addLayout(form)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        lay.addWidget(self.bar)
        self.status = QLabel("Main is untouched until you adopt.")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.details = QTextBrowser()
        lay.addWidget(self.details, 1)
        row = QHBoxLayout()
        row.addStretch(1)
        self.start_btn = QPushButton("Start")
        self.start_btn.clicked.connect(self.start)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setEnabled(False)
        self.cancel_btn.clicked.connect(self.cancel)
        self.adopt_btn = QPushButton("Adopt")
        self.adopt_btn.setEnabled(False)
        self.adopt_btn.clicked.connect(self.adopt)
        close = QPushButton("Close")
        close.clicked.connect(self.reject)
        for b in (self.start_btn, self.cancel_btn, self.adopt_btn, close):
            row.addWidget(b)
        lay.addLayout(row)
        self.progress.connect(self._on_progress)

    # --- rebuild ----------------------------------------------------------------------

    def _report(self, done: int, total: int, text: str) -> None:
        # core's on_progress: called on the worker thread; the signal is queued to the GUI
        self.progress.emit(done, total, text)

    def _on_progress(self, done: int, total: int, text: str) -> None:
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        self.status.setText(text)

    def start(self) -> None:
        from memtray.core.audit import adopt, rebuild

        model = self.model.text().strip()
        if not model:
            self._fail("Enter a model.")
            return
        name = self.name.text().strip() or None
        picked: datetime = self.since.dateTime().toPython()  # type: ignore[assignment]
        since = picked.astimezone(UTC) if self.since_on.isChecked() else None
        exclude = self.exclude.text().replace(",", " ").split()
        app = self.ctx.app
        report = self._report

        async def run() -> dict[str, Any]:
            out = await rebuild.run(app, model=model, name=name, since=since, exclude=exclude, on_progress=report)
            cmp: dict[str, Any] = adopt.compare(app, out.info.branch)
            return cmp

        self.comparison = None
        self.details.clear()
        self.bar.setRange(0, 0)  # busy until the first progress report
        self.status.setText(f"Rebuilding with {model}…")
        self._busy(True)
        self.task = self.ctx.bridge.submit(run(), name="memory-rebuild", on_result=self._compared,
                                           on_error=self._error)
        self.task.cancelled.connect(self._cancelled)

    def cancel(self) -> None:
        if self.task is not None and not self.task.is_done:
            self.task.cancel()

    def _cancelled(self) -> None:
        self._busy(False)
        self.task = None
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.status.setText("Cancelled. Main is untouched; finished steps are kept (Start again to resume).")

    def _compared(self, r: dict[str, Any]) -> None:
        self.task = None
        self.comparison = r
        self._busy(False)
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        self.status.setText(f"Rebuilt {r['branch']}. Compare below; Adopt makes it the current memory.")
        self.details.setPlainText(compare_text(r))
        self.adopt_btn.setEnabled(r["status"] == "completed")
        self.compared.emit(r)

    # --- adopt ------------------------------------------------------------------------

    def adopt(self) -> None:
        from memtray.core.audit import adopt

        r = self.comparison
        if r is None:
            return
        app = self.ctx.app
        self._busy(True)
        self.cancel_btn.setEnabled(False)
        self.status.setText(f"Adopting {r['branch']}…")
        self.task = self.ctx.bridge.call(adopt.adopt, app, r["branch"], name="memory-adopt",
                                         on_result=self._adopted, on_error=self._error)

    def _adopted(self, rec: Any) -> None:
        from memtray.core.log.events import MemoryWritten

        self.task = None
        self._busy(False)
        self.adopt_btn.setEnabled(False)
        d = MemoryWritten.of(rec).diff
        a, r, c = (len(d["added"]), len(d["dropped"]), len(d["changed"])) if d else (0, 0, 0)
        self.status.setText(f"Adopted: new revision on main (+{a} −{r} ~{c}).")
        self.adopted.emit(rec)

    # --- helpers ----------------------------------------------------------------------

    def _busy(self, on: bool) -> None:
        self.start_btn.setEnabled(not on)
        for w in (self.model, self.name, self.since_on, self.exclude):
            w.setEnabled(not on)
        self.since.setEnabled(not on and self.since_on.isChecked())
        self.cancel_btn.setEnabled(on)
        if on:
            self.adopt_btn.setEnabled(False)

    def _error(self, exc: BaseException) -> None:
        self.task = None
        self._busy(False)
        self.bar.setRange(0, 1)
        self._fail(error_text(exc, " — "))

    def _fail(self, text: str) -> None:
        self.status.setText(text)
        self.failed.emit(text)

    def reject(self) -> None:
        self.cancel()
        super().reject()


__all__ = ["RebuildDialog", "compare_text"]
