"""Recall in the desktop: the Settings section (``recall``, ``recall_limit``, the
embedding model) and, under a reply that was given past messages, the small
"recalled: N messages" link that shows them.

The past entries are read from the log on the worker
(:func:`memtray.core.log.transcript.recalled`), only when the link is clicked.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from memtray.core.base import config as cfgmod
from memtray.core.log import transcript
from memtray.core.search import embed

from .context import Context
from .forms import section_form
from .qt import (
    QCheckBox,
    QFrame,
    QLabel,
    QLineEdit,
    QSpinBox,
    Qt,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

log = logging.getLogger(__name__)

LIMIT_MAX = 10
#: characters of a recalled entry shown in the popup (the rest is in the log)
SHOWN_CHARS = 600
ROLE_NAMES = {"user": "you", "assistant": "memtray", "diary": "diary", "memory": "memory edit"}


def _muted(text: str) -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    lab.setProperty("muted", True)
    return lab


class RecallSection(QWidget):
    """The Recall card's fields; :meth:`values` are saved like every other setting."""

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.form = f = section_form(self)
        self.enabled = QCheckBox("Give the assistant relevant past messages (recall)")
        f.addRow("", self.enabled)
        self.limit = QSpinBox()
        self.limit.setRange(1, LIMIT_MAX)
        self.limit.setSuffix(" messages")
        f.addRow("At most", self.limit)
        self.model = QLineEdit()
        self.model.setPlaceholderText("e.g. openai/text-embedding-3-small, ollama/nomic-embed-text, local, "
                                      "none (empty: the offline model when installed)")
        f.addRow("Embedding model", self.model)
        self.api_base = QLineEdit()
        self.api_base.setPlaceholderText("https://… (empty: the chat model's, for the same provider)")
        f.addRow("Embedding API base", self.api_base)
        self.note = _muted("")
        f.addRow("", self.note)
        self.model.textChanged.connect(lambda _t: self._update_note())
        self.enabled.toggled.connect(lambda _on: self._update_note())
        self.load(ctx.app.config)

    def load(self, cfg: cfgmod.Config) -> None:
        self.enabled.setChecked(cfg.recall)
        # a larger limit set elsewhere (memtray config set) is kept, not cut to the spin box's range
        self.limit.setMaximum(max(LIMIT_MAX, cfg.recall_limit))
        self.limit.setValue(cfg.recall_limit)
        self.model.setText(cfg.embedding_model)
        self.api_base.setText(cfg.embedding_api_base)
        self._update_note()

    def values(self) -> dict[str, Any]:
        return {
            "recall": self.enabled.isChecked(),
            "recall_limit": self.limit.value(),
            "embedding_model": self.model.text().strip(),
            "embedding_api_base": self.api_base.text().strip(),
        }

    def _update_note(self) -> None:
        # the same sentence as `memtray history search` and doctor say (keyword only, offline, provider)
        self.note.setText(embed.describe(self.model.text()))


class RecalledLink(QWidget):
    """"recalled: N messages" under a reply; a click shows (or hides) those messages."""

    def __init__(self, ctx: Context, seqs: list[int], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.seqs = [int(s) for s in seqs]
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 2, 0, 0)
        lay.setSpacing(4)
        n = len(self.seqs)
        self.button = QToolButton()
        self.button.setAutoRaise(True)
        self.button.setText(f"recalled: {n} message{'s' if n != 1 else ''}")
        self.button.setToolTip("Past messages this reply was given (recall)")
        self.button.setStyleSheet(f"color: {ctx.theme.muted}; font-size: 9pt;")
        self.button.clicked.connect(self.toggle)
        lay.addWidget(self.button, 0, Qt.AlignmentFlag.AlignLeft)
        self.panel = QFrame()
        self.panel.setObjectName("recalled")
        self.panel.setStyleSheet(
            f"QFrame#recalled {{ border: 1px solid {ctx.theme.border}; border-radius: 8px; }}")
        self.items = QVBoxLayout(self.panel)
        self.items.setContentsMargins(10, 8, 10, 8)
        self.items.setSpacing(6)
        self.panel.hide()
        lay.addWidget(self.panel)
        self._loaded = False

    def toggle(self) -> None:
        # the panel's own state, not the window's: isVisible() is False while the popup is
        # hidden, and a click then showed the panel again instead of hiding it
        if not self.panel.isHidden():
            self.panel.hide()
            return
        self.panel.show()
        if not self._loaded:
            self._loaded = True
            self.items.addWidget(_muted("Loading…"))
            self.ctx.bridge.call(transcript.recalled, self.ctx.app.store.log, self.seqs, name="recalled",
                                 on_result=self._show, on_error=self._failed)

    def texts(self) -> list[str]:
        """What the panel shows, one string per entry (for tests and accessibility)."""
        out = []
        for i in range(self.items.count()):
            item = self.items.itemAt(i)
            w = item.widget() if item is not None else None
            if isinstance(w, QLabel):
                out.append(w.text())
        return out

    def _clear(self) -> None:
        while self.items.count():
            item = self.items.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None:
                w.deleteLater()

    def _show(self, entries: list[transcript.Recalled]) -> None:
        self._clear()
        for e in entries:
            if e.missing:
                self.items.addWidget(_muted(f"#{e.seq}: no longer in the history (purged)"))
                continue
            head = QLabel(f"{_date(e.ts)} · session {e.session or '-'} · {ROLE_NAMES.get(e.role, e.role)}")
            head.setProperty("muted", True)
            head.setStyleSheet("font-size: 9pt;")
            self.items.addWidget(head)
            body = e.text if len(e.text) <= SHOWN_CHARS else e.text[: SHOWN_CHARS - 1].rstrip() + "…"
            text = QLabel(body)
            text.setWordWrap(True)
            text.setTextFormat(Qt.TextFormat.PlainText)
            text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.items.addWidget(text)

    def _failed(self, exc: BaseException) -> None:
        self._clear()
        self._loaded = False  # a later click tries again
        self.items.addWidget(_muted(f"Could not read the recalled messages: {exc}"))


def _date(ts: str) -> str:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return ts


def attach(ctx: Context, view: QWidget, seqs: Any) -> None:
    """Add the link under ``view`` (a reply's MessageView) when it recalled messages; once."""
    if not seqs or not isinstance(seqs, list) or view.findChild(RecalledLink) is not None:
        return
    lay = view.layout()
    if lay is not None:
        lay.addWidget(RecalledLink(ctx, seqs, view))


__all__ = ["RecallSection", "RecalledLink", "attach"]
