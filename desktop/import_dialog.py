"""Import from nanobot… / Import a ChatGPT export…: a dry run, then the import with progress.

The same core calls as ``memtray import nanobot|chatgpt``: the source's reader
(:mod:`memtray.core.migrate.nanobot`, :mod:`memtray.core.migrate.chatgpt`) feeds
an :class:`~memtray.core.migrate.common.Importer`. The Importer reads the source
off the worker and runs each write on it (``Worker.call_here``), so the task is
submitted to the worker and awaits the reading in a thread: a 1 GB export never
holds up a chat turn, and the GUI only renders what comes back. A dry run
writes nothing; the import adds only what the log does not have yet, so
pressing Import twice adds nothing. A damaged or foreign file comes back as the
core's message, shown in the dialog.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtray.core.base.errors import MemtrayError
from memtray.core.migrate.common import Summary

from . import texts
from .context import Context
from .forms import error_text
from .qt import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
)

if TYPE_CHECKING:
    from memtray.core.app import App

SOURCES = ("nanobot", "chatgpt")


def default_path(source: str) -> str:
    if source == "nanobot":
        from memtray.core.migrate import nanobot

        return str(nanobot.DEFAULT_WORKSPACE.expanduser())
    return ""


def run_import(app: App, source: str, path: Path, *, dry_run: bool, progress: Any = None) -> Summary:
    """What ``memtray import SOURCE PATH [--dry-run]`` does, against this App; call it off the
    worker (its writes go to the worker one item at a time)."""
    from memtray.core.base.clock import IdGenerator
    from memtray.core.log.door import Quarantine
    from memtray.core.migrate import chatgpt, nanobot
    from memtray.core.migrate.common import Importer

    if app.store.readonly:
        raise MemtrayError("the data home is open read-only; nothing can be imported", hint="Run `memtray doctor`.")
    if source == "nanobot":
        nanobot.check(path)
        items = nanobot.items(path, None)
    else:
        items = chatgpt.items(path)
    imp = Importer(app.store, app.memory, source, str(path), dry_run=dry_run, new_id=IdGenerator(app.clock).new,
                   quarantine=Quarantine(app.home.root, app.clock),
                   progress=progress, call=app.worker.call_here)
    return imp.run(items)


def summary_text(s: Summary, *, dry_run: bool) -> str:
    """The same counts as the CLI prints."""
    verb = "Would import" if dry_run else "Imported"
    text = (f"{verb} {s.items} items: {s.messages} messages, {s.facts} facts, {s.entries} history entries"
            + (f"; {s.skipped_items} already imported" if s.skipped_items else "") + ".")
    if dry_run and not s.items:
        text += " Nothing new to import."
    return text


class ImportDialog(QDialog):
    """Choose the source, see what a dry run would add, import it with progress."""

    #: (items done, items expected, text): emitted on the worker, delivered on the GUI thread
    progress = Signal(int, int, str)
    #: (dry_run, Summary) once a run finished
    finished_run = Signal(bool, object)
    #: the error text of a run that failed
    failed = Signal(str)

    def __init__(self, ctx: Context, source: str, parent: QWidget | None = None, *, path: str | None = None) -> None:
        super().__init__(parent)
        if source not in SOURCES:
            raise ValueError(source)
        self.ctx = ctx
        self.source = source
        self.busy = False
        self.checked: Summary | None = None  # the dry run of the path as it is in the field
        self._done = 0
        self.setWindowTitle(texts.text(f"import.{source}_title"))
        self.setMinimumWidth(560)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(20, 16, 20, 16)
        lay.setSpacing(10)
        intro = QLabel(texts.text(f"import.{source}_intro"))
        intro.setWordWrap(True)
        intro.setProperty("muted", True)
        lay.addWidget(intro)
        row = QHBoxLayout()
        self.path = QLineEdit(path if path is not None else default_path(source))
        self.path.setPlaceholderText("~/.nanobot/workspace" if source == "nanobot" else "export.zip or conversations.json")
        self.path.textChanged.connect(self._path_changed)
        row.addWidget(self.path, 1)
        self.browse_btn = QPushButton("Choose…")
        self.browse_btn.clicked.connect(self.browse)
        row.addWidget(self.browse_btn)
        lay.addLayout(row)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.hide()
        lay.addWidget(self.details, 1)
        self.bar = QProgressBar()
        self.bar.hide()
        lay.addWidget(self.bar)
        buttons = QHBoxLayout()
        self.close_btn = QPushButton("Close")
        self.close_btn.clicked.connect(self.reject)
        buttons.addWidget(self.close_btn)
        buttons.addStretch(1)
        self.check_btn = QPushButton("Check what would be added")
        self.check_btn.clicked.connect(self.dry_run)
        buttons.addWidget(self.check_btn)
        self.import_btn = QPushButton("Import")
        self.import_btn.setProperty("primary", True)
        self.import_btn.setEnabled(False)
        self.import_btn.clicked.connect(self.start_import)
        buttons.addWidget(self.import_btn)
        lay.addLayout(buttons)
        self.progress.connect(self._progressed)

    # --- choosing ----------------------------------------------------------------------

    def browse(self) -> None:
        start = self.path.text().strip() or str(Path.home())
        if self.source == "nanobot":
            chosen = QFileDialog.getExistingDirectory(self, "nanobot workspace", start)
        else:
            chosen, _ = QFileDialog.getOpenFileName(self, "ChatGPT export", start,
                                                    "ChatGPT export (*.zip conversations.json *.json);;All files (*)")
        if chosen:
            self.path.setText(chosen)
            self.dry_run()

    def _path_changed(self) -> None:
        self.checked = None
        self.import_btn.setEnabled(False)

    def chosen(self) -> Path:
        return Path(self.path.text().strip()).expanduser()

    # --- running (on the worker) ---------------------------------------------------------

    def dry_run(self) -> None:
        self._run(dry_run=True)

    def start_import(self) -> None:
        self._run(dry_run=False)

    def _run(self, *, dry_run: bool) -> None:
        if self.busy:
            return
        if not self.path.text().strip():
            self._show_error("Choose a folder first." if self.source == "nanobot" else "Choose a file first.")
            return
        app, source, path = self.ctx.app, self.source, self.chosen()
        expected = self.checked.items if self.checked is not None else 0
        self._done = 0

        def progress(text: str) -> None:  # on the worker, for each item written
            self._done += 1
            self.progress.emit(self._done, expected, text)

        async def run() -> Summary:
            return await asyncio.to_thread(run_import, app, source, path, dry_run=dry_run,
                                           progress=None if dry_run else progress)

        self._set_busy(True)
        self.status.setProperty("error", False)
        self._repolish()
        self.status.setText("Reading…" if dry_run else "Importing…")
        if not dry_run:
            self.bar.setRange(0, max(expected, 0))
            self.bar.setValue(0)
            self.bar.show()
        self.ctx.bridge.submit(run(), name=f"import-{source}", on_result=lambda s: self._finished(dry_run, s),
                               on_error=self._failed)

    def _progressed(self, done: int, total: int, text: str) -> None:
        if total:
            self.bar.setValue(min(done, total))
        self.status.setText(text)

    def _finished(self, dry_run: bool, s: Summary) -> None:
        self._set_busy(False)
        self.bar.hide()
        lines = list(s.lines) + [f"note: {n}" for n in s.notes]
        self.details.setPlainText("\n".join(lines))
        self.details.setVisible(bool(lines))
        text = summary_text(s, dry_run=dry_run)
        if dry_run:
            self.checked = s
            self.import_btn.setEnabled(s.items > 0)
            if s.items:
                text += " Press Import to add it."
        else:
            self.checked = None
            self.import_btn.setEnabled(False)
            text += " They are in your history now (search them, or let memtray learn from them)."
        self.status.setText(text)
        self.finished_run.emit(dry_run, s)

    def _failed(self, exc: BaseException) -> None:
        self._set_busy(False)
        self.bar.hide()
        self._show_error(error_text(exc))
        self.failed.emit(str(exc))

    def _show_error(self, text: str) -> None:
        self.status.setText(text)
        self.status.setProperty("error", True)
        self._repolish()

    def _repolish(self) -> None:
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        for w in (self.check_btn, self.browse_btn, self.path, self.close_btn):
            w.setEnabled(not busy)
        if busy:
            self.import_btn.setEnabled(False)

    def done(self, result: int) -> None:
        if self.busy:
            return  # the import goes on: every finished item is durable, but wait for the result
        super().done(result)


def import_buttons(ctx: Context, parent: QWidget) -> tuple[QWidget, dict[str, QPushButton]]:
    """The two buttons Settings and the onboarding offer, each opening an :class:`ImportDialog`."""
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    buttons: dict[str, QPushButton] = {}
    for source, text in (("nanobot", "Import from nanobot…"), ("chatgpt", "Import a ChatGPT export…")):
        btn = QPushButton(text)
        btn.clicked.connect(lambda _c=False, s=source: open_import(ctx, s, parent))
        row.addWidget(btn)
        buttons[source] = btn
    row.addStretch(1)
    return box, buttons


def open_import(ctx: Context, source: str, parent: QWidget) -> ImportDialog:
    dlg = ImportDialog(ctx, source, parent)
    dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dlg.setModal(True)
    dlg.show()
    return dlg
