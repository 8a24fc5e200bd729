"""Search in the main window: one field over messages, diary and memory, results to open.

The field sits above the navigation (Ctrl+K focuses it from anywhere in the
window); typing shows this page in place of the current one and Esc goes back.
A query runs through the same search as ``memtray history search`` (the App's
:class:`~memtray.core.search.service.SearchService`, hybrid: by words and, with
an embedding model, by meaning) on the worker, never on the GUI thread: typing
waits :data:`PAUSE_MS` after the last key, one search is in flight at a time,
and an answer to a query that is no longer the field's text is dropped (the
newer query is asked instead).

Each result says where it is (the conversation's title, or "Diary" / "Memory"),
who said it and when, and an excerpt with the matched words in bold. Opening a
message (click or Enter) shows its conversation in the Chats page scrolled to
it and marked for a moment; a diary entry or a memory change opens the Memory
page at its revision.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from datetime import datetime

from memtray.core.log import transcript
from memtray.core.search.text import CLOSE, OPEN, Hit

from .bridge import Task
from .chats_page import title_of
from .context import Context
from .forms import error_text, label
from .qt import (
    QHBoxLayout,
    QKeyEvent,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QResizeEvent,
    QSize,
    Qt,
    QTimer,
    QVBoxLayout,
    QWidget,
    Signal,
)

log = logging.getLogger(__name__)

#: results asked for per query
LIMIT = 30
#: how long typing pauses before the query runs
PAUSE_MS = 250
KIND_NAMES = {"history": "Diary", "memory": "Memory"}
ROLE_NAMES = {"user": "You", "assistant": "memtray"}


@dataclass(frozen=True)
class Found:
    """One answer from the worker: the query it answers, its hits, where each is."""

    query: str
    hits: list[Hit]
    titles: dict[str, str]
    notes: list[str]


def marked(snippet: str, colour: str) -> str:
    """The excerpt as rich text: escaped, its « » marks (the matched words) in bold."""
    out = html.escape(snippet, quote=False)
    out = out.replace(OPEN, f'<b style="background:{colour};">').replace(CLOSE, "</b>")
    if out.count("<b ") > out.count("</b>"):  # an excerpt cut inside a mark
        out += "</b>"
    return out.replace("\n", " ")


def when_text(ts: str) -> str:
    """"3 Nov 2025, 14:05" in local time (the raw text when it is not a time)."""
    try:
        t = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return ts
    return f"{t.day} {t.strftime('%b %Y, %H:%M')}"


def place_of(hit: Hit, titles: dict[str, str]) -> str:
    if hit.kind in KIND_NAMES:
        return KIND_NAMES[hit.kind]
    return titles.get(hit.session or "", hit.session or "")


class ResultItem(QWidget):
    """One result: where and who, when; then the excerpt with the matched words marked."""

    def __init__(self, ctx: Context, hit: Hit, titles: dict[str, str]) -> None:
        super().__init__()
        self.hit = hit
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.setSpacing(2)
        top = QHBoxLayout()
        top.setSpacing(6)
        self.place = QLabel(place_of(hit, titles))
        self.place.setTextFormat(Qt.TextFormat.PlainText)
        self.place.setStyleSheet("font-weight: 600;")
        self.place.setMinimumWidth(40)
        top.addWidget(self.place, 1)
        who = ROLE_NAMES.get(hit.role or "", "") if hit.kind == "message" else ""
        self.when = QLabel(" · ".join(p for p in (who, when_text(hit.ts)) if p))
        self.when.setProperty("muted", True)
        top.addWidget(self.when)
        lay.addLayout(top)
        self.snippet = QLabel(marked(hit.snippet, ctx.theme.changed_bg))
        self.snippet.setTextFormat(Qt.TextFormat.RichText)
        self.snippet.setWordWrap(True)
        self.snippet.setMinimumWidth(40)
        lay.addWidget(self.snippet)


class ResultList(QListWidget):
    """The results; Enter opens the current one, Up at the top goes back to the field."""

    back_to_field = Signal()

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.currentItem() is not None:
            self.itemActivated.emit(self.currentItem())
            return
        if e.key() == Qt.Key.Key_Up and self.currentRow() <= 0:
            self.back_to_field.emit()
            return
        super().keyPressEvent(e)


class SearchPage(QWidget):
    """The results of the main window's search field (module doc)."""

    #: a result to open: (kind, session, seq)
    open_hit = Signal(str, str, int)
    #: after results (or "no matches", or an error) were shown (tests wait on it)
    shown = Signal()

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        lay = QVBoxLayout(self)
        lay.setContentsMargins(16, 12, 16, 12)
        lay.setSpacing(8)
        self.heading = QLabel("Search")
        self.heading.setProperty("subheading", True)
        lay.addWidget(self.heading)
        self.status = label("", muted=True)
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.results = ResultList()
        self.results.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.results.itemActivated.connect(self._activated)
        self.results.itemClicked.connect(self._activated)
        lay.addWidget(self.results, 1)
        self.query = ""
        self.found: Found | None = None
        self._task: Task | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PAUSE_MS)
        self._timer.timeout.connect(self.run)

    # --- asking -------------------------------------------------------------------------

    def ask(self, query: str, *, now: bool = False) -> None:
        """Search for ``query`` after a pause in typing (``now``: at once)."""
        self.query = query.strip()
        if not self.query:
            self._timer.stop()
            self._show(Found("", [], {}, []))
            return
        if now:
            self._timer.stop()
            self.run()
        else:
            self._timer.start()

    def run(self) -> None:
        """Search for the current query on the worker (after the one in flight, if any)."""
        if not self.query or (self._task is not None and not self._task.is_done):
            return  # the answer in flight will see that the query changed and ask again
        query, app = self.query, self.ctx.app
        self.status.setText("Searching…")

        async def find() -> Found:  # on the worker
            result = await app.searcher().asearch(query, mode="hybrid", limit=LIMIT)
            infos = {i.key: i for i in transcript.sessions(app.store.state)}
            keys = {h.session for h in result.hits if h.session}
            return Found(query, result.hits, {k: title_of(infos.get(k), k) for k in keys}, result.notes)

        self._task = self.ctx.bridge.submit(find(), name="search", on_result=self._answer,
                                            on_error=self._failed)

    def _answer(self, found: Found) -> None:
        self._task = None
        if found.query != self.query:  # typed on meanwhile: ask for what the field says now
            self.run()
            return
        self._show(found)

    def _failed(self, exc: BaseException) -> None:
        self._task = None
        log.warning("search failed: %s", exc)
        self.results.clear()
        self.found = None
        self.status.setText(error_text(exc))
        self.shown.emit()

    # --- showing ------------------------------------------------------------------------

    def _show(self, found: Found) -> None:
        self.found = found
        self.results.clear()
        width = self.results.viewport().width()
        for hit in found.hits:
            item = QListWidgetItem()
            item.setData(Qt.ItemDataRole.UserRole, hit.seq)
            row = ResultItem(self.ctx, hit, found.titles)
            row.setFixedWidth(max(width - 4, 200))
            item.setSizeHint(QSize(width, row.sizeHint().height()))
            self.results.addItem(item)
            self.results.setItemWidget(item, row)
        if not found.query:
            self.status.setText("Type to search your conversations, diary and memory.")
        elif not found.hits:
            self.status.setText(f"No matches for “{found.query}”.")
        else:
            n = len(found.hits)
            more = " (the first 30)" if n >= LIMIT else ""
            self.status.setText(f"{n} result{'s' if n != 1 else ''}{more} for “{found.query}”.")
        self.shown.emit()

    def resizeEvent(self, e: QResizeEvent) -> None:
        """Rows wrap their excerpts to the list's width: laid out again when it changes."""
        super().resizeEvent(e)
        width = self.results.viewport().width()
        for i in range(self.results.count()):
            w, item = self.item_widget(i), self.results.item(i)
            if w is not None and item is not None:
                w.setFixedWidth(max(width - 4, 200))
                item.setSizeHint(QSize(width, w.sizeHint().height()))

    def item_widget(self, row: int) -> ResultItem | None:
        item = self.results.item(row)
        w = self.results.itemWidget(item) if item is not None else None
        return w if isinstance(w, ResultItem) else None

    def focus_results(self) -> None:
        if self.results.count():
            self.results.setFocus()
            if self.results.currentRow() < 0:
                self.results.setCurrentRow(0)

    def _activated(self, item: QListWidgetItem) -> None:
        row = self.results.row(item)
        w = self.item_widget(row)
        if w is not None:
            self.open_hit.emit(w.hit.kind, w.hit.session or "", w.hit.seq)

