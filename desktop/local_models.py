"""A model on this computer, chosen in the first-run window: download one or use a server.

The catalogue (core's :func:`memtray.core.llm.offer.rows`: size, speed here, whether
it writes memory) in a list; "Download" fetches the chosen one on a thread of its
own (core's :func:`memtray.core.llm.download.fetch`: progress, resume, checksum),
with a progress bar and Cancel; "Use this model" once it is there. Below it, the
model servers found on this computer (core's :func:`memtray.core.llm.servers.detect`,
also on a thread). Choosing emits :attr:`LocalModels.chosen` (model, api_base); the
onboarding saves it like any other choice. Nothing here touches the network or
the disk on the GUI thread, nor the worker (a download takes minutes; the worker
is the single writer).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from memtray.core.base.errors import MemtrayError

from . import texts
from .context import Context
from .forms import error_text, label, section_form
from .qt import QComboBox, QHBoxLayout, QProgressBar, QPushButton, QWidget, Signal

log = logging.getLogger(__name__)


def _size(n: float) -> str:
    from memtray.core.llm.download import human_size

    return human_size(n)


def describe(row: dict[str, Any]) -> str:
    """One line of the list: name, size, speed here, and whether it writes memory."""
    tps = float(row["estimate"]["tokens_per_second"])
    speed = f"~{tps:.0f} tokens/s here" if tps >= 10 else f"~{tps:.1f} tokens/s here"
    state = " — downloaded" if row["downloaded"] else ""
    rec = " (recommended)" if row["recommended"] else ""
    return f"{row['name']}{rec}: {_size(row['size'])}, {speed}{state}"


class LocalModels(QWidget):
    chosen = Signal(str, str)  # model, api_base
    rows_read = Signal(object)  # list of offer rows, or an exception
    progressed = Signal(object)  # download.Progress
    ended = Signal(object)  # None, or the exception that ended the download
    servers_found = Signal(object)  # servers.Found

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.rows: list[dict[str, Any]] = []
        self.found: Any = None
        self._cancel: threading.Event | None = None
        f = section_form(self)
        f.addRow(label(texts.text("first_run.local_intro"), muted=True))
        self.models = QComboBox()
        self.models.addItem("Reading the list…", "")
        self.models.setEnabled(False)
        f.addRow("Model", self.models)
        self.about = label("", muted=True)
        f.addRow("", self.about)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.download_btn = QPushButton("Download")
        self.cancel_btn = QPushButton("Cancel")
        self.use_btn = QPushButton("Use this model")
        for b in (self.download_btn, self.cancel_btn, self.use_btn):
            b.setEnabled(False)
            row.addWidget(b)
        row.addStretch(1)
        box = QWidget()
        box.setLayout(row)
        f.addRow("", box)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.hide()
        f.addRow("", self.bar)
        self.status = label("", muted=True)
        f.addRow("", self.status)
        srow = QHBoxLayout()
        srow.setContentsMargins(0, 0, 0, 0)
        self.servers = QComboBox()
        self.servers.hide()
        srow.addWidget(self.servers, 1)
        self.use_server_btn = QPushButton("Use")
        self.use_server_btn.hide()
        srow.addWidget(self.use_server_btn)
        sbox = QWidget()
        sbox.setLayout(srow)
        self.servers_note = label(texts.text("first_run.local_servers_looking"), muted=True)
        f.addRow("Model servers", self.servers_note)
        f.addRow("", sbox)
        self.models.currentIndexChanged.connect(lambda _i: self._update())
        self.download_btn.clicked.connect(self.download)
        self.cancel_btn.clicked.connect(self.cancel)
        self.use_btn.clicked.connect(self._use)
        self.use_server_btn.clicked.connect(self._use_server)
        self.rows_read.connect(self._show_rows)
        self.progressed.connect(self._show_progress)
        self.ended.connect(self._ended)
        self.servers_found.connect(self._show_servers)
        self.refresh()
        self._detect()

    # --- reading (threads) ---------------------------------------------------------------

    def refresh(self) -> None:
        """Read the catalogue again (the first time, this measures the speed here: seconds)."""
        app = self.ctx.app
        home, cfg = app.home, app.config

        def read() -> None:
            from memtray.core.llm import offer

            try:
                result: Any = offer.rows(home, cfg)
            except Exception as exc:  # shown in the status line, never a traceback
                log.warning("could not read the model list: %s", exc)
                result = exc
            self._emit(self.rows_read, result)

        threading.Thread(target=read, name="memtray-models", daemon=True).start()

    def _detect(self) -> None:
        def run() -> None:
            from memtray.core.llm import servers

            self._emit(self.servers_found, servers.detect())

        threading.Thread(target=run, name="memtray-detect", daemon=True).start()

    def _emit(self, signal: Any, value: Any) -> None:
        try:
            signal.emit(value)
        except RuntimeError:  # the window closed meanwhile
            pass

    # --- showing ---------------------------------------------------------------------------

    def _show_rows(self, rows: Any) -> None:
        if isinstance(rows, BaseException):
            self.status.setText(f"The model list could not be read: {rows}")
            return
        keep = self.current_id()
        self.rows = list(rows)
        self.models.blockSignals(True)
        self.models.clear()
        for r in self.rows:
            self.models.addItem(describe(r), r["id"])
        self.models.setEnabled(True)
        at = self.models.findData(keep) if keep else 0
        self.models.setCurrentIndex(max(0, at))
        self.models.blockSignals(False)
        self._update()

    def current_id(self) -> str:
        return str(self.models.currentData() or "")

    def current(self) -> dict[str, Any] | None:
        return next((r for r in self.rows if r["id"] == self.current_id()), None)

    def select(self, model_id: str) -> None:
        self.models.setCurrentIndex(self.models.findData(model_id))

    @property
    def downloading(self) -> bool:
        return self._cancel is not None

    def _update(self) -> None:
        r = self.current()
        busy = self.downloading
        self.download_btn.setEnabled(r is not None and not r["downloaded"] and not busy)
        self.download_btn.setText("Continue download" if r is not None and r["partial"] else "Download")
        self.cancel_btn.setEnabled(busy)
        self.use_btn.setEnabled(r is not None and r["downloaded"] and not busy)
        self.models.setEnabled(bool(self.rows) and not busy)
        if r is None:
            self.about.setText("")
            return
        est = r["estimate"]
        memory = ("Writes memory on its own." if r["writes_memory"]
                  else f"What it would remember waits for your review: {r['memory_note']}.")
        ram = f" Needs about {_size(est['ram_needed'])} of memory" + (
            " — more than this computer has." if est["fits"] is False else ".")
        self.about.setText(f"{r['about']} {memory}{ram}")

    def _show_servers(self, found: Any) -> None:
        from memtray.core.llm import capability

        self.found = found
        self.servers.clear()
        for s in found.servers:
            for m in s.models:
                held = "" if capability.judge(m.model).unattended else " (memory held for review)"
                self.servers.addItem(f"{s.place.label}: {m.name}{held}", (m.model, s.place.api_base))
        any_models = self.servers.count() > 0
        self.servers.setVisible(any_models)
        self.use_server_btn.setVisible(any_models)
        if any_models:
            names = ", ".join(f"{s.place.label} ({len(s.models)} models)" for s in found.servers)
            self.servers_note.setText(f"Found {names}.")
        else:
            self.servers_note.setText(texts.text("first_run.local_servers_none"))

    # --- download ----------------------------------------------------------------------------

    def download(self) -> threading.Thread | None:
        r = self.current()
        if r is None or self.downloading or r["downloaded"]:
            return None
        from memtray.core.llm import catalogue
        from memtray.core.llm.download import fetch

        entry = catalogue.find(r["id"])
        dest = catalogue.models_dir(self.ctx.app.home.root) / entry.file
        url = r["url"]
        cancel = self._cancel = threading.Event()

        def run() -> None:
            outcome: BaseException | None = None
            try:
                fetch(url, dest, size=entry.size, sha256=entry.sha256, progress=lambda p: self._emit(self.progressed, p),
                      cancel=cancel)
            except MemtrayError as exc:
                outcome = exc
            except Exception as exc:  # never a traceback: the status line says it
                log.exception("download failed")
                outcome = exc
            self._emit(self.ended, outcome)

        self.bar.setValue(0)
        self.bar.show()
        self.status.setText(f"Downloading {r['name']}…")
        self._update()
        t = threading.Thread(target=run, name="memtray-download", daemon=True)
        t.start()
        return t

    def cancel(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
            self.status.setText("Stopping…")

    def _show_progress(self, p: Any) -> None:
        self.bar.setValue(int(p.fraction * 1000))
        left = f", about {p.eta / 60:.0f} min left" if p.eta is not None and p.eta > 90 else ""
        speed = f" at {_size(p.speed)}/s" if p.speed else ""
        self.status.setText(f"{_size(p.done)} of {_size(p.total)}{speed}{left}")

    def _ended(self, outcome: BaseException | None) -> None:
        self._cancel = None
        if outcome is None:
            self.bar.setValue(1000)
            self.status.setText("Downloaded and checked. Press “Use this model” to use it.")
        else:
            self.status.setText(error_text(outcome))
        self.refresh()
        self._update()

    # --- choosing ----------------------------------------------------------------------------

    def _use(self) -> None:
        r = self.current()
        if r is not None and r["downloaded"]:
            self.chosen.emit(str(r["model"]), "")

    def _use_server(self) -> None:
        data = self.servers.currentData()
        if data:
            model, api_base = data
            self.chosen.emit(str(model), str(api_base))


__all__ = ["LocalModels", "describe"]
