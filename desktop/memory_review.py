"""The memory browser's "Review" tab: what waits for the user, each choice named for its effect.

A held change shows its words, why it was held, and the messages it comes from
(the quote it cites highlighted in them), with **Add to memory** and **Keep out**
(an optional reason, which ``memory dropped`` shows). A merge conflict shows both
versions side by side, word-wrapped, each under the name of the device that had it
(its id in the tooltip), with **Keep this version** and **Keep the other**. After a
choice a bar says what it did, with **Undo**; what was kept out is listed below the
queue with its reason, one click from being reviewed again.

Every choice is the core call ``memtray memory review`` makes (``add_review``,
``keep_out``, ``keep_version``, ``undo_review``), on the worker; the tab renders the
``review_view()`` the browser loads with its revisions.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from memtray.core.base.clock import parse_ts
from memtray.core.sync.names import label as device_label
from memtray.core.sync.names import named

from .context import Context
from .forms import clear_column, error_text, label
from .memory_rows import local_time
from .qt import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
)

#: what each kind of held change is, in words
KIND_LABELS = {
    "unsupported": "Not found in what you said", "instruction": "Looks like an instruction",
    "silent-drop": "Dropped without a reason", "rebase": "The model's words, not written",
    "proposal": "Proposed by a small model", "merge-conflict": "Two devices disagree",
    "inferred": "Only memtray said this, not you", "not-remembered": "You said this; nothing kept it",
}

#: a message's text shown with its source, at most this many characters around the quote
SHOWN_CHARS = 600


def quote_pattern(quote: str) -> re.Pattern[str] | None:
    """A pattern that finds ``quote`` in a message whatever its case, spacing and punctuation."""
    words = re.findall(r"\w+", quote)
    if not words:
        return None
    return re.compile(r"\W+".join(re.escape(w) for w in words), re.IGNORECASE)


def highlight(content: str, quote: str | None, colour: str) -> tuple[str, bool]:
    """``content`` as HTML (escaped, cut to about :data:`SHOWN_CHARS` around the quote) with the
    quote's words highlighted; and whether they were found."""
    pat = quote_pattern(quote) if quote else None
    m = pat.search(content) if pat is not None else None
    if m is None:
        text = content if len(content) <= SHOWN_CHARS else content[:SHOWN_CHARS] + "…"
        return html.escape(text).replace("\n", "<br>"), False
    start = max(0, m.start() - SHOWN_CHARS // 2)
    end = min(len(content), m.end() + SHOWN_CHARS // 2)
    before, hit, after = content[start:m.start()], content[m.start():m.end()], content[m.end():end]
    out = ("…" if start else "") + html.escape(before) + \
        f'<span style="background: {colour}; font-weight: 600;">{html.escape(hit)}</span>' + \
        html.escape(after) + ("…" if end < len(content) else "")
    return out.replace("\n", "<br>"), True


def _wrapped(text: str, **props: Any) -> QLabel:
    """A plain-text label that wraps and never asks for more width than it is given."""
    lab = label(text, **props)
    lab.setTextFormat(Qt.TextFormat.PlainText)  # a model's words or a peer's device name are never markup
    lab.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    lab.setMinimumWidth(40)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return lab


def _when(ts: Any) -> str:
    """A log time in the user's local time ("03 Dec, 18:19"); "" when there is none."""
    try:
        return local_time(parse_ts(str(ts)))
    except ValueError:
        return ""


def _button(text: str, fn: Callable[[], None], *, primary: bool = False, tip: str = "") -> QPushButton:
    b = QPushButton(text)
    if primary:
        b.setProperty("primary", True)
    if tip:
        b.setToolTip(tip)
    b.clicked.connect(lambda _checked=False: fn())
    return b


class _Card(QFrame):
    def __init__(self, ctx: Context, item: dict[str, Any]) -> None:
        super().__init__()
        self.item = item
        self.setObjectName("reviewcard")
        self.setStyleSheet(f"QFrame#reviewcard {{ background: {ctx.theme.surface}; border-radius: 8px; }}")
        self.lay = QVBoxLayout(self)
        self.lay.setContentsMargins(12, 10, 12, 10)
        self.lay.setSpacing(6)
        self.buttons: dict[str, QPushButton] = {}


class HeldCard(_Card):
    """A held change: its words, why, its source messages with the quote, Add to memory / Keep out."""

    def __init__(self, ctx: Context, item: dict[str, Any], act: Callable[[dict[str, Any], str, str], None]) -> None:
        super().__init__(ctx, item)
        self.text = _wrapped(str(item.get("text", "")), subheading=True)
        self.lay.addWidget(self.text)
        kind = KIND_LABELS.get(str(item.get("kind")), str(item.get("kind", "")))
        where = f" · {item['section']}" if item.get("section") else ""
        self.meta = _wrapped(f"{kind}{where} · {item.get('reason', '')}", muted=True)
        self.lay.addWidget(self.meta)
        self.found_quote = False
        self.sources = _wrapped("")
        self.sources.setTextFormat(Qt.TextFormat.RichText)
        self.sources.setText(self._sources_html(ctx, item))
        self.lay.addWidget(self.sources)
        row = QHBoxLayout()
        row.setSpacing(8)
        self.why = QLineEdit()
        self.why.setPlaceholderText("Why keep it out? (optional)")
        self.why.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.why.setMinimumWidth(80)
        row.addWidget(self.why, 1)
        self.buttons["add"] = _button("Add to memory", lambda: act(item, "add", ""), primary=True,
                                      tip="Write it into memory (a new revision; Undo takes it out again)")
        self.buttons["keep-out"] = _button("Keep out", lambda: act(item, "keep-out", self.why.text()),
                                           tip="Leave it out of memory; it is listed as kept out, with your reason")
        row.addWidget(self.buttons["add"])
        row.addWidget(self.buttons["keep-out"])
        self.lay.addLayout(row)

    def _sources_html(self, ctx: Context, item: dict[str, Any]) -> str:
        msgs = item.get("sources") or []
        quote = item.get("quote")
        if not msgs:
            return f'<span style="color: {ctx.theme.muted};">No source message is recorded for this.</span>'
        parts = []
        title = "From what you said" if item.get("messages") else "What you said in that conversation, closest first"
        for m in msgs:
            who = "You" if m.get("role") == "user" else "memtray"
            body, hit = highlight(str(m.get("content") or ""), quote, ctx.theme.changed_bg)
            self.found_quote = self.found_quote or hit
            parts.append(f'<p style="margin: 2px 0;"><span style="color: {ctx.theme.muted};">#{m.get("seq")} · {who} · '
                         f'{_when(m.get("ts"))}</span><br>{body}</p>')
        head = f'<span style="color: {ctx.theme.muted};">{title}:</span>'
        if quote and not self.found_quote:
            head += f'<br><span style="color: {ctx.theme.muted};">Quoted: “{html.escape(str(quote))}”</span>'
        return head + "".join(parts)


class ConflictCard(_Card):
    """A merge conflict: the version memory holds now and the other one, side by side."""

    def __init__(self, ctx: Context, item: dict[str, Any], names: dict[str, str], here: str,
                 act: Callable[[dict[str, Any], str, str], None]) -> None:
        super().__init__(ctx, item)
        self.lay.addWidget(_wrapped("Two devices disagree about this fact", subheading=True))
        self.lay.addWidget(_wrapped(named(str(item.get("reason", "")), names), muted=True))
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(4)
        self.columns: dict[str, QLabel] = {}
        versions = item.get("versions") or {}
        for col, (key, title, action, button) in enumerate((
                ("this", "In memory now", "keep-this", "Keep this version"),
                ("other", "The other version", "keep-other", "Keep the other"))):
            v = versions.get(key) or {}
            dev = v.get("device")
            who = device_label(names, dev) + (" (this device)" if dev and dev == here else "")
            head = _wrapped(f"{title}" + (f" · from {who}" if who else ""), muted=True)
            head.setToolTip(f"device {dev}" if dev else "")
            words = v.get("text")
            body = _wrapped(words if words is not None else "(removed on that device)")
            if words is None:
                body.setStyleSheet(f"color: {ctx.theme.muted}; font-style: italic;")
            frame = QFrame()
            frame.setObjectName("version")
            frame.setStyleSheet(f"QFrame#version {{ background: {ctx.theme.bg}; border-radius: 6px; }}")
            box = QVBoxLayout(frame)
            box.setContentsMargins(8, 6, 8, 6)
            box.addWidget(head)
            box.addWidget(body)
            box.addStretch(1)
            grid.addWidget(frame, 0, col)
            grid.setColumnStretch(col, 1)
            b = _button(button, partial(act, item, action, ""), primary=key == "this")
            self.buttons[action] = b
            grid.addWidget(b, 1, col, Qt.AlignmentFlag.AlignLeft)
            self.columns[key] = body
        self.lay.addLayout(grid)


class KeptOutRow(QFrame):
    """A change kept out of memory, its reason, and "Review again" (the undo of keeping it out)."""

    def __init__(self, entry: dict[str, Any], undo: Callable[[str], None]) -> None:
        super().__init__()
        self.entry = entry
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 2, 4, 2)
        col = QVBoxLayout()
        col.setSpacing(0)
        self.text = _wrapped(str(entry.get("text", "")))
        col.addWidget(self.text)
        self.reason = _wrapped(f"Kept out: {entry.get('reason', '')} · {_when(entry.get('time'))}", muted=True)
        col.addWidget(self.reason)
        lay.addLayout(col, 1)
        self.button = _button("Review again", lambda: undo(str(entry["review"])),
                              tip="Undo keeping it out: it waits for review again")
        lay.addWidget(self.button, 0, Qt.AlignmentFlag.AlignTop)


def _column(outer: QVBoxLayout, spacing: int) -> QVBoxLayout:
    """A list column in ``outer`` (rows go before its closing stretch, see ``clear_column``)."""
    box = QWidget()
    col = QVBoxLayout(box)
    col.setContentsMargins(0, 0, 0, 0)
    col.setSpacing(spacing)
    col.addStretch(1)
    outer.addWidget(box)
    return col


class ReviewTab(QScrollArea):
    """The review queue, the last choice's Undo, and what was kept out."""

    #: a choice or its undo is done: the new Revision, or None (keep out writes none)
    changed = Signal(object)
    #: a line for the browser's status: (text, is an error)
    message = Signal(str, bool)

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        outer = QVBoxLayout(inner)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.setSpacing(8)
        self.undo_bar = QFrame()
        self.undo_bar.setProperty("banner", "info")
        bar = QHBoxLayout(self.undo_bar)
        bar.setContentsMargins(10, 6, 6, 6)
        self.undo_text = _wrapped("")
        bar.addWidget(self.undo_text, 1)
        self.undo_btn = _button("Undo", self.undo_last)
        bar.addWidget(self.undo_btn, 0, Qt.AlignmentFlag.AlignVCenter)
        self.undo_bar.hide()
        outer.addWidget(self.undo_bar)
        self.col = _column(outer, 8)
        self.kept_head = label("Kept out", subheading=True)
        outer.addWidget(self.kept_head)
        self.kept_col = _column(outer, 2)
        outer.addStretch(1)
        self.setWidget(inner)
        self.cards: list[_Card] = []
        self.kept: list[KeptOutRow] = []
        self.last: tuple[str, str] | None = None  # (item id, its words) of the last choice

    # --- showing ----------------------------------------------------------------------

    def fill(self, view: dict[str, Any]) -> None:
        clear_column(self.col)
        clear_column(self.kept_col)
        self.cards, self.kept = [], []
        names, here = dict(view.get("device_names") or {}), str(view.get("device") or "")
        if not view.get("items"):
            self.col.insertWidget(0, label("Nothing is waiting for review.", muted=True))
        for n, it in enumerate(view.get("items") or ()):
            card: _Card = ConflictCard(self.ctx, it, names, here, self.act) if it.get("kind") == "merge-conflict" \
                else HeldCard(self.ctx, it, self.act)
            self.cards.append(card)
            self.col.insertWidget(n, card)
        kept = sorted(view.get("kept_out") or (), key=lambda e: -int(e.get("event_seq", 0)))
        self.kept_head.setVisible(bool(kept))
        for n, entry in enumerate(kept):
            row = KeptOutRow(entry, self.undo)
            self.kept.append(row)
            self.kept_col.insertWidget(n, row)

    def card(self, text: str) -> _Card:
        """The card of the item with these words (tests, and the notification's link)."""
        return next(c for c in self.cards if text in str(c.item.get("text", "")) or text in str(
            (c.item.get("versions") or {}).get("this", {}).get("text") or ""))

    # --- choosing and undoing -------------------------------------------------------------

    def act(self, item: dict[str, Any], action: str, why: str) -> None:
        mem = self.ctx.app.memory
        ident, words = str(item["id"]), str(item.get("text", ""))
        calls: dict[str, Callable[[], Any]] = {
            "add": lambda: mem.add_review(ident),
            "keep-out": lambda: mem.keep_out(ident, why),
            "keep-this": lambda: mem.keep_version(ident, "this"),
            "keep-other": lambda: mem.keep_version(ident, "other"),
        }
        done = {"add": f"Added “{words}” to memory.", "keep-out": f"Kept “{words}” out of memory.",
                "keep-this": "Kept the version in memory now.", "keep-other": "Kept the other version."}[action]
        self._enable(False)

        def ok(rev: Any) -> None:
            self.last = (ident, words)
            self._said(done + (f" (revision {rev.short})" if rev is not None else ""), undo=True)
            self.changed.emit(rev)

        self.ctx.bridge.call(calls[action], name=f"memory-review-{action}", on_result=ok, on_error=self._failed)

    def undo_last(self) -> None:
        if self.last is not None:
            self.undo(self.last[0])

    def undo(self, ident: str) -> None:
        mem = self.ctx.app.memory
        self._enable(False)

        def ok(rev: Any) -> None:
            self.last = None
            self._said(f"Undone: it waits for review again (revision {rev.short}).", undo=False)
            self.changed.emit(rev)

        self.ctx.bridge.call(lambda: mem.undo_review(ident), name="memory-review-undo", on_result=ok,
                             on_error=self._failed)

    def _said(self, text: str, *, undo: bool) -> None:
        self._enable(True)
        self.undo_text.setText(text)
        self.undo_btn.setVisible(undo)
        self.undo_bar.show()

    def _failed(self, exc: BaseException) -> None:
        self._enable(True)
        self.message.emit(error_text(exc), True)

    def _enable(self, on: bool) -> None:
        for c in self.cards:
            for b in c.buttons.values():
                b.setEnabled(on)
        for r in self.kept:
            r.button.setEnabled(on)
        self.undo_btn.setEnabled(on)


__all__ = ["ConflictCard", "HeldCard", "KeptOutRow", "ReviewTab", "highlight", "quote_pattern"]
