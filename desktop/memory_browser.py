"""The memory browser: revisions, fact-level diffs, full text, "as of", restore,
roll back, redo a consolidation, review held facts, "why?" for a fact, and the facts
held now with who wrote them, to edit or forget one (memory_facts.py).

Every action calls the same core function as the CLI (``app.memory``
and ``["consolidation"]``), on the worker: git and the log are never touched on
the GUI thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from memtray.core.base.clock import parse_ts

from .bridge import Follower
from .context import Context
from .forms import ask, error_text
from .memory_facts import FactsTab
from .memory_review import ReviewTab
from .memory_rows import Blank, FactRow, WhyDialog, local_time, revision_label
from .qt import (
    QAbstractItemView,
    QComboBox,
    QDateTime,
    QDateTimeEdit,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    Qt,
    QTabWidget,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
    Signal,
)
from .rebuild_dialog import RebuildDialog
from .timeline import TimelineView, fact_counts

if TYPE_CHECKING:
    from memtray.core.memory.revisions import Revision
    from memtray.core.memory.service import MemoryService

log = logging.getLogger(__name__)

#: Revisions the browser loads at a time (newest first; "Show older revisions" loads the next page).
REVISION_PAGE = 200

#: the revision list's columns and their header tooltips
COLUMNS = (
    ("Time", "When the revision was written"),
    ("What", "What made the revision (the tooltip of a row has its commit message)"),
    ("Model", "The model that wrote it, if any"),
    ("Facts", "Facts added (+), removed (−) and reworded (~)"),
    ("⚑", "Facts held for review"),
)

Confirm = Callable[[QWidget, str, str], bool]

#: the list's data of a failed redo's row (revisions hold their sha)
FAILED_PREFIX = "failed:"


def failed_redos(state: Any, revisions: list[Any]) -> list[Any]:
    """Redos refused or failed after the newest revision, newest first (on the worker)."""
    after = revisions[0].event_seq if revisions else 0
    out = [c for c in state.consolidations.values() if c.redo_of and c.status == "failed" and c.started_seq > after]
    return sorted(out, key=lambda c: c.started_seq, reverse=True)


class MemoryBrowser(QWidget):
    #: after an action changed memory (for tests and the window title): the new Revision
    changed = Signal(object)
    loaded = Signal()
    #: after a revision's diff and text are shown
    shown = Signal(str)

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.confirm: Confirm = ask
        self.revisions: list[Revision] = []
        self.failed_redos: list[Any] = []
        self.current: Revision | None = None
        self.parent_rev: str | None = None
        self.rows: list[FactRow] = []
        #: the moves between scopes of the revision shown (read with its diff)
        self.moved: list[Any] = []
        self._pending_select: str | None = None
        self.why_dialog: WhyDialog | None = None  # the last "Why?" opened (tests read it)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(20, 16, 20, 16)
        lay.setSpacing(12)
        top = QHBoxLayout()
        title = QLabel("Memory")
        title.setProperty("heading", True)
        top.addWidget(title)
        top.addStretch(1)
        top.addWidget(QLabel("As of"))
        self.as_of = QDateTimeEdit(QDateTime.currentDateTime())
        self.as_of.setCalendarPopup(True)
        self.as_of.setDisplayFormat("yyyy-MM-dd HH:mm")
        top.addWidget(self.as_of)
        go = QPushButton("Show")
        go.clicked.connect(self.show_as_of)
        top.addWidget(go)
        self.review_btn = QPushButton("Review")
        self.review_btn.clicked.connect(self.show_review)
        top.addWidget(self.review_btn)
        self.rebuild_btn = QPushButton("Rebuild with model…")
        self.rebuild_btn.clicked.connect(self.open_rebuild)
        top.addWidget(self.rebuild_btn)
        refresh = QPushButton("Refresh")
        refresh.clicked.connect(self.refresh)
        top.addWidget(refresh)
        lay.addLayout(top)
        self.status = QLabel()
        self.status.setProperty("muted", True)
        self.status.setWordWrap(True)
        lay.addWidget(self.status)

        split = QSplitter(Qt.Orientation.Horizontal)
        self.list = QTreeWidget()
        self.list.setHeaderLabels([c for c, _tip in COLUMNS])
        for n, (_c, tip) in enumerate(COLUMNS):
            self.list.headerItem().setToolTip(n, tip)
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.setAlternatingRowColors(False)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        hdr = self.list.header()
        hdr.setStretchLastSection(False)
        # every column as wide as its contents except Model, which takes what is left and
        # elides in the middle (the full name is its tooltip); past that the list scrolls
        for n in range(len(COLUMNS)):
            hdr.setSectionResizeMode(n, QHeaderView.ResizeMode.ResizeToContents)
        hdr.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.list.currentItemChanged.connect(self._selected)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.setSpacing(4)
        ll.addWidget(self.list)
        self.more_btn = QPushButton("Show older revisions")
        self.more_btn.setToolTip(f"Load the next {REVISION_PAGE} revisions")
        self.more_btn.setVisible(False)
        self.more_btn.clicked.connect(self.load_older)
        ll.addWidget(self.more_btn)
        split.addWidget(left)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.setSpacing(8)
        self.head = QLabel("Select a revision")
        self.head.setProperty("subheading", True)
        self.head.setWordWrap(True)
        rl.addWidget(self.head)
        actions = QHBoxLayout()
        self.undo_btn = QPushButton("Undo this change")
        self.undo_btn.setProperty("primary", True)
        self.undo_btn.setToolTip("Put memory back as it was before this revision (it says what will change first)")
        self.undo_btn.clicked.connect(lambda: self.undo())
        actions.addWidget(self.undo_btn)
        self.rollback_btn = QPushButton("Roll back to this revision")
        self.rollback_btn.clicked.connect(self.rollback_current)
        actions.addWidget(self.rollback_btn)
        actions.addStretch(1)
        rl.addLayout(actions)
        # redo on a row of its own: one row of all the actions would not fit beside the
        # list at 1100 px (or 1280 px at 200 %) and squeezed the list's columns to "C…e"
        actions = QHBoxLayout()
        actions.addStretch(1)
        self.redo_model = QComboBox()
        self.redo_model.setEditable(True)
        self.redo_model.setMinimumWidth(160)
        if (edit := self.redo_model.lineEdit()) is not None:
            edit.setPlaceholderText("model (default: current)")
        actions.addWidget(self.redo_model)
        self.redo_btn = QPushButton("Redo consolidation")
        self.redo_btn.setToolTip("Run this consolidation again on the memory as it was before it")
        self.redo_btn.clicked.connect(self.redo_current)
        actions.addWidget(self.redo_btn)
        rl.addLayout(actions)
        self.tabs = QTabWidget()
        self.diff_area = QScrollArea()
        self.diff_area.setWidgetResizable(True)
        self.diff_inner = QWidget()
        self.diff_col = QVBoxLayout(self.diff_inner)
        self.diff_col.setContentsMargins(4, 4, 4, 4)
        self.diff_col.setSpacing(6)
        self.diff_col.addStretch(1)
        self.diff_area.setWidget(self.diff_inner)
        self.tabs.addTab(self.diff_area, "Changes")
        self.text = QTextBrowser()
        self.tabs.addTab(self.text, "Full text")
        self.review_tab = ReviewTab(ctx)
        self.review_tab.changed.connect(self._reviewed)
        self.review_tab.message.connect(lambda text, error: self._status(text, error=error))
        self.tabs.addTab(self.review_tab, "Review")
        self.facts_tab = FactsTab(ctx)
        self.facts_tab.changed.connect(self._changed)
        self.facts_tab.message.connect(lambda text, error: self._status(text, error=error))
        self.tabs.addTab(self.facts_tab, "Facts")
        self.timeline = TimelineView()
        self.timeline.revision_clicked.connect(self.select)
        self.tabs.addTab(self.timeline, "Timeline")
        rl.addWidget(self.tabs, 1)
        split.addWidget(right)
        split.setChildrenCollapsible(False)
        self.list_pane = left
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setSizes([500, 620])
        lay.addWidget(split, 1)
        self._set_actions_enabled(False)
        # the list, the review count and the timeline follow the log: a consolidation, an
        # edit or a review from any front end shows without a click
        self.feed = Follower(ctx.bridge, self._query, self._loaded, name="memory-revisions", parent=self,
                             wants=lambda change: change.what.memory or change.what.consolidation_failed,
                             on_error=self._failed)

    # --- services ---------------------------------------------------------------------

    @property
    def memory(self) -> MemoryService:
        return self.ctx.app.memory

    def _call(self, fn: Callable[[], Any], done: Callable[[Any], None], name: str) -> None:
        self.ctx.bridge.call(fn, name=name, on_result=done, on_error=self._failed)

    def _failed(self, exc: BaseException) -> None:
        self._status(error_text(exc, " — "), error=True)
        self._set_actions_enabled(self.current is not None)

    def _status(self, text: str, *, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setProperty("error", error)
        self.status.setProperty("muted", not error)
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)

    # --- loading ----------------------------------------------------------------------

    def refresh(self, select: str | None = None) -> None:
        """Load the revisions and the review list again, then select ``select`` (else keep the
        selection). Memory changes (from any front end) do this by themselves (see ``feed``)."""
        if select:
            self._pending_select = select
        self.feed.request()

    def _query(self) -> Callable[[], tuple[list[Any], dict[str, Any], list[Any]]]:
        mem = self.memory
        store = self.ctx.app.store

        def query() -> tuple[list[Any], dict[str, Any], list[Any]]:  # on the worker
            revisions = mem.revisions(limit=REVISION_PAGE)
            return revisions, mem.review_view(), failed_redos(store.state, revisions)

        return query

    def load_older(self) -> None:
        """Append the next page of revisions (the list shows the newest REVISION_PAGE first)."""
        mem = self.memory
        offset = len(self.revisions)
        self.more_btn.setEnabled(False)
        self._call(lambda: mem.revisions(limit=REVISION_PAGE, offset=offset), self._older_loaded,
                   "memory-revisions-older")

    def _older_loaded(self, older: list[Any]) -> None:
        self.revisions = [*self.revisions, *older]
        self._add_items(older)
        self.more_btn.setEnabled(True)
        self.more_btn.setVisible(len(older) == REVISION_PAGE)
        self._load_timeline(self.revisions)
        self._status(self._count_text())

    def _count_text(self) -> str:
        more = " (the newest; “Show older revisions” loads more)" if self.more_btn.isVisibleTo(self) else ""
        return f"{len(self.revisions)} revisions{more}. Removed facts are red, added green, reworded amber."

    def _loaded(self, result: tuple[list[Any], dict[str, Any], list[Any]]) -> None:
        revisions, review, failed = result
        self.revisions = revisions
        self.failed_redos = failed
        self.list.blockSignals(True)
        self.list.clear()
        self._add_failed(failed)
        self._add_items(revisions)
        self.list.blockSignals(False)
        self.more_btn.setVisible(len(revisions) == REVISION_PAGE)
        self.review_tab.fill(review)
        waiting = len(review["items"])
        self.review_btn.setText(f"Review ({waiting})" if waiting else "Review")
        self._load_timeline(revisions)
        if not revisions:
            self._status("No memory yet. Facts appear here as memtray learns them from your chats.")
            self.loaded.emit()
            return
        if not self.status.property("error"):  # a refresh from the log never hides an error just shown
            self._status(self._count_text())
        target = self._pending_select or (self.current.rev if self.current is not None else None)
        self._pending_select = None
        self.select(target or revisions[0].rev)
        self.list.setFocus()
        self.loaded.emit()

    def _add_items(self, revisions: list[Any]) -> None:
        for r in revisions:
            facts = f"+{r.added} −{r.removed} ~{r.changed}"
            model = (r.model or "-").split("/", 1)[-1] if r.model and r.model != "-" else "-"
            item = QTreeWidgetItem([local_time(r.time), revision_label(r), model,
                                    facts, str(r.flagged) if r.flagged else ""])
            item.setData(0, Qt.ItemDataRole.UserRole, r.rev)
            item.setToolTip(0, r.time.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z"))
            item.setToolTip(1, f"{r.subject}\n{r.rev}")
            item.setToolTip(2, r.model or "-")
            if r.removed:
                item.setForeground(3, self.palette().brush(self.foregroundRole()))
            self.list.addTopLevelItem(item)
        self._fit_list()

    def _add_failed(self, failed: list[Any]) -> None:
        """A redo refused or failed after the newest revision: a row of its own at the top, so
        the revision under it is not taken for the redo's result."""
        for c in failed:
            item = QTreeWidgetItem([local_time(parse_ts(c.ts)) if c.ts else "", "Redo failed",
                                    (c.model or "-").split("/", 1)[-1], "", ""])
            item.setData(0, Qt.ItemDataRole.UserRole, f"{FAILED_PREFIX}{c.id}")
            item.setToolTip(1, f"The redo of consolidation {c.redo_of[:8]} failed: {c.reason}\nMemory is unchanged.")
            self.list.addTopLevelItem(item)

    def _fit_list(self) -> None:
        """Keep the list pane wide enough that no column but Model is cut."""
        need = sum(max(self.list.sizeHintForColumn(n), self.list.header().sectionSizeHint(n))
                   for n in range(len(COLUMNS)) if n != 2)
        need += self.list.header().sectionSizeHint(2) + 2 * self.list.frameWidth()
        need += self.list.verticalScrollBar().sizeHint().width()
        self.list_pane.setMinimumWidth(need)

    def _load_timeline(self, revisions: list[Any]) -> None:
        mem = self.memory
        if not revisions:
            self.timeline.set_points([])
            return
        from memtray.core.memory import factdiff

        head = revisions[0].rev
        self._call(lambda: len(factdiff.parse(mem.show(head))),
                   lambda n: self.timeline.set_points(fact_counts(revisions, n)), "memory-timeline")

    def open_rebuild(self) -> None:
        dlg = RebuildDialog(self.ctx, self)
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dlg.adopted.connect(self._adopted)
        self.rebuild_dialog = dlg
        dlg.open()

    def _adopted(self, _rec: Any) -> None:
        self.current = None  # show the new head revision
        self._status("Adopted the rebuild: a new revision on main.")
        self.refresh()

    def select(self, rev: str) -> None:
        for i in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(i)
            if item is not None and str(item.data(0, Qt.ItemDataRole.UserRole)).startswith(rev):
                self.list.setCurrentItem(item)
                return

    def open_target(self, target: str) -> None:
        """``memory:<rev>`` or ``consolidation:<id>`` (from a notification)."""
        _kind, _, ident = target.partition(":")
        mem = self.memory
        if not ident:
            self.refresh()
            return
        self._call(lambda: mem.resolve(ident), lambda sha: self.refresh(select=sha), "memory-resolve")

    def _selected(self, item: QTreeWidgetItem | None, _prev: Any = None) -> None:
        if item is None:
            return
        rev = str(item.data(0, Qt.ItemDataRole.UserRole))
        if rev.startswith(FAILED_PREFIX):
            self._show_failed(rev.removeprefix(FAILED_PREFIX))
            return
        self.current = next((r for r in self.revisions if r.rev == rev), None)
        self.timeline.set_current(rev)
        mem = self.memory

        def load() -> tuple[Any, str, str | None, list[Any]]:
            parents = mem.git.info(rev).parents
            return mem.diff(None, rev), mem.show(rev), (parents[0] if parents else None), mem.moves(rev)

        self._set_actions_enabled(False)
        self._call(load, self._show_revision, "memory-diff")

    def _show_failed(self, cid: str) -> None:
        c = next((f for f in self.failed_redos if f.id == cid), None)
        if c is None:
            return
        self.current = None
        self._set_actions_enabled(False)
        self.head.setText(f"Redo failed · {local_time(parse_ts(c.ts)) if c.ts else ''} · consolidation {c.redo_of[:8]}")
        self.text.setMarkdown(f"The redo of consolidation `{c.redo_of[:8]}` with `{c.model}` failed:\n\n"
                              f"> {c.reason}\n\nMemory is unchanged. Select the consolidation's revision to "
                              "redo it again, perhaps with another model.")
        self._fill_diff(None)
        self._status(f"Redo of consolidation {c.redo_of[:8]} failed: {c.reason}. Memory is unchanged.", error=True)

    def _show_revision(self, result: tuple[Any, str, str | None, list[Any]]) -> None:
        diff, text, parent, self.moved = result
        r = self.current
        if r is None:
            return
        self.parent_rev = parent
        label = revision_label(r)
        cons = f" · consolidation {r.consolidation[:8]}" if r.consolidation else ""
        self.head.setText(f"{label} · {local_time(r.time)} · {r.short}{cons}")
        self.text.setMarkdown(text or "*(empty)*")
        self._fill_diff(diff)
        self._set_actions_enabled(True)
        self.shown.emit(r.rev)

    def _fill_diff(self, diff: Any) -> None:
        for row in self.rows:
            row.deleteLater()
        self.rows = []
        items: list[FactRow] = []
        for fact in diff.dropped if diff is not None else ():
            items.append(FactRow(self.ctx, "removed", fact, None,
                                 [("Restore", partial(self.restore_fact, fact))]))
        for old, new in diff.changed if diff is not None else ():
            items.append(FactRow(self.ctx, "changed", old, new,
                                 [("Restore old", partial(self.restore_fact, old)),
                                  ("Why?", partial(self.why, new))]))
        for fact in diff.added if diff is not None else ():
            items.append(FactRow(self.ctx, "added", None, fact, [("Why?", partial(self.why, fact))]))
        for m in self.moved if diff is not None else ():  # a move between scopes: same id, same words
            items.append(FactRow(self.ctx, "moved", None, Blank(m["text"], f"{m['id']} · moved from {m['source']} "
                                                                         f"to {m['target']}: {m['reason']}"), []))
        if not items and diff is not None:
            empty = QLabel("No fact changed in this revision (only wording outside facts, or HISTORY.md).")
            empty.setProperty("muted", True)
            empty.setWordWrap(True)
            row = FactRow(self.ctx, "none", None, Blank(), [])
            if (lay := row.layout()) is not None:
                lay.addWidget(empty)
            items.append(row)
        for w in items:
            self.diff_col.insertWidget(self.diff_col.count() - 1, w)
        self.rows = items

    def show_review(self) -> None:
        self.tabs.setCurrentWidget(self.review_tab)

    def _set_actions_enabled(self, on: bool) -> None:
        r = self.current
        head = bool(self.revisions) and r is not None and r.rev == self.revisions[0].rev
        self.undo_btn.setEnabled(on and r is not None and self.parent_rev is not None)
        self.rollback_btn.setEnabled(on and r is not None and not head)
        self.rollback_btn.setToolTip("This is the current memory" if head else "")
        has_cons = on and r is not None and bool(r.consolidation)
        self.redo_btn.setEnabled(has_cons)
        self.redo_model.setEnabled(has_cons)
        for row in self.rows:
            for b in row.buttons.values():
                b.setEnabled(on)

    # --- actions (the same core calls as `memtray memory ...`) ------------------------

    def _changed(self, rev: Any) -> None:
        self._status(f"Done: new revision {rev.short}.")
        self.changed.emit(rev)
        self.refresh(select=rev.rev)

    def restore_fact(self, fact: Any) -> None:
        mem = self.memory
        src = self.parent_rev
        if src is None and self.current is not None:
            src = self.current.rev
        if src is None:
            return
        self._set_actions_enabled(False)
        # by id: the fact that left, never another one with similar words
        self._call(lambda: mem.restore_fact(src, fact.id), self._changed, "memory-restore-fact")

    def undo(self, rev: str | None = None) -> None:
        """Undo ``rev`` (default: the selected revision), after a confirmation that lists
        every fact it changes (the browser's button and the notification's Undo)."""
        from . import undo

        mem = self.memory
        target = rev or (self.current.rev if self.current is not None else None)
        if target is None:
            return

        def confirmed(p: undo.Plan) -> None:
            if p.empty:
                self._status(p.describe())
                return
            if not self.confirm(self, "Undo this change", p.describe()):
                self._status("Nothing was changed.")
                return
            self._set_actions_enabled(False)
            self._call(lambda: undo.undo_revision(mem, p.rev), self._changed, "memory-undo")

        self._call(lambda: undo.plan(mem, target), confirmed, "memory-undo-plan")

    def rollback_current(self) -> None:
        r = self.current
        mem = self.memory
        if r is None:
            return
        if not self.confirm(self, "Roll back memory",
                            f"Make memory what it was at {r.short} ({local_time(r.time)})?\n\n"
                            "This adds a new revision; nothing is lost, and you can undo it the same way."):
            return
        self._set_actions_enabled(False)
        self._call(lambda: mem.rollback(r.rev), self._changed, "memory-rollback")

    def redo_current(self) -> None:
        r = self.current
        cons = self.ctx.app.consolidation
        if r is None or not r.consolidation:
            return
        cid = r.consolidation
        model = self.redo_model.currentText().strip() or None
        self._set_actions_enabled(False)
        self._status(f"Redoing consolidation {cid[:8]} with {model or 'the current model'}…")
        mem = self.memory

        async def run() -> Any:
            await cons.redo(cid, model=model)
            return mem.revision("HEAD")

        def failed(exc: BaseException) -> None:
            self._failed(exc)
            self.refresh()  # the failed redo's row (consolidation.failed is followed too; this is at once)

        self.ctx.bridge.submit(run(), name="memory-redo", on_result=self._changed, on_error=failed)

    def _reviewed(self, rev: Any) -> None:
        """A review choice or its undo is done (the tab says what it did; keep out writes no revision)."""
        self.changed.emit(rev)
        self.refresh(select=rev.rev if rev is not None else None)

    def why(self, fact: Any) -> None:
        mem = self.memory
        self._call(lambda: mem.why(fact.id), self._show_why, "memory-why")

    def _show_why(self, info: dict[str, Any]) -> None:
        dlg = WhyDialog(self.ctx, info, self)
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.why_dialog = dlg
        dlg.open()

    def show_as_of(self) -> None:
        mem = self.memory
        when: datetime = self.as_of.dateTime().toPython()  # type: ignore[assignment]
        if when.tzinfo is None:
            when = when.astimezone()
        when = when.astimezone(UTC)

        def done(rev: Any) -> None:
            if rev is None:
                self._status("There was no memory yet at that time.")
                return
            self.select(rev.rev)
            self.tabs.setCurrentWidget(self.text)
            self._status(f"Memory as of {self.as_of.dateTime().toString('yyyy-MM-dd HH:mm')}: revision {rev.short}.")

        self._call(lambda: mem.at(when), done, "memory-at")
