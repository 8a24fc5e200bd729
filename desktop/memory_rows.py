"""The memory browser's pieces: a fact's row (removed, added, reworded, held, current),
"Why?" (where a fact came from), the reason labels, the confirmation box, dates."""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .context import Context
from .qt import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    Qt,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

REASON_LABELS = {
    "consolidation": "Consolidation", "agent": "From a chat", "user-edit": "Edited by you",
    "restore": "Fact restored", "rollback": "Rolled back", "redo": "Consolidation redone",
    "review": "Review", "adopt": "Adopted", "rebuild": "Rebuilt", "import": "Imported", "undo": "Undone",
    "merge": "Merged from another device", "expired": "Past its end", "move": "Moved between scopes",
}


def revision_label(r: Any) -> str:
    """What made a revision, in words: another assistant through MCP is named, not "a chat"."""
    if r.client:
        return f"From {r.client} (MCP)"
    if r.source == "mcp":
        return "From an MCP client"
    return str(REASON_LABELS.get(r.reason, r.reason))


def local_time(dt: datetime) -> str:
    local = dt.astimezone()
    if local.year == datetime.now().year:
        return local.strftime("%d %b, %H:%M")
    return local.strftime("%d %b %Y, %H:%M")


class FactRow(QFrame):
    """One fact in the diff: removed (red), added (green) or changed (old | new)."""

    def __init__(self, ctx: Context, kind: str, old: Any, new: Any,
                 actions: list[tuple[str, Callable[[], None]]]) -> None:
        super().__init__()
        t = ctx.theme
        bg = {"removed": t.removed_bg, "added": t.added_bg, "changed": t.changed_bg}.get(kind, t.surface)
        mark = {"removed": "−", "added": "+", "changed": "~", "flagged": "⚑"}.get(kind, "")
        colour = {"removed": t.error_text, "added": t.ok_text}.get(kind, t.muted)
        self.setObjectName("fact")
        self.setStyleSheet(f"QFrame#fact {{ background: {bg}; border-radius: 8px; }}")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 8, 6)
        lay.setSpacing(10)
        sign = QLabel(mark)
        sign.setFixedWidth(14)
        sign.setStyleSheet(f"color: {colour}; font-weight: 700; font-size: 13pt;")
        lay.addWidget(sign, 0, Qt.AlignmentFlag.AlignTop)
        if kind == "changed":
            for fact, label in ((old, "before"), (new, "after")):
                box = QVBoxLayout()
                cap = QLabel(label)
                cap.setProperty("muted", True)
                box.addWidget(cap)
                text = QLabel(fact.text)
                text.setWordWrap(True)
                text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                if label == "before":
                    text.setStyleSheet(f"color: {t.muted};")
                box.addWidget(text)
                box.addStretch(1)
                lay.addLayout(box, 1)
        else:
            fact = new if new is not None else old
            col = QVBoxLayout()
            col.setSpacing(1)
            text = QLabel(fact.text)
            text.setWordWrap(True)
            text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            if kind == "removed":
                text.setStyleSheet("text-decoration: line-through;")
            col.addWidget(text)
            if fact.section:
                sec = QLabel(fact.section)
                sec.setProperty("muted", True)
                col.addWidget(sec)
            lay.addLayout(col, 1)
        self.buttons: dict[str, QPushButton] = {}
        for label, fn in actions:
            b = QPushButton(label)
            b.clicked.connect(lambda _checked=False, fn=fn: fn())
            self.buttons[label] = b
            lay.addWidget(b, 0, Qt.AlignmentFlag.AlignTop)
        self.kind = kind
        self.fact = new if new is not None else old


class WhyDialog(QDialog):
    def __init__(self, ctx: Context, info: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Where this fact came from")
        self.setMinimumSize(560, 420)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(18, 16, 18, 14)
        fact = info.get("fact", {})
        title = QLabel(fact.get("text", ""))
        title.setWordWrap(True)
        title.setProperty("subheading", True)
        lay.addWidget(title)
        rev = info.get("revision", {})
        src = "written by you" if info.get("source") == "user" else REASON_LABELS.get(rev.get("reason", ""), "")
        meta = QLabel(f"Added in revision {str(rev.get('rev', ''))[:8]} · {rev.get('time', '')[:16].replace('T', ' ')}"
                      f" · {src} · model {rev.get('model', '-')}")
        meta.setProperty("muted", True)
        meta.setWordWrap(True)
        lay.addWidget(meta)
        if info.get("device_revision") and info.get("device"):  # written on another device: its name, the id as detail
            dev = QLabel(f"From the device {info.get('device_name') or info['device']}")
            dev.setTextFormat(Qt.TextFormat.PlainText)
            dev.setProperty("muted", True)
            dev.setToolTip(f"device {info['device']}, its revision {info['device_revision']}")
            lay.addWidget(dev)
            self.device_line: QLabel | None = dev
        else:
            self.device_line = None
        receipt = info.get("receipt")
        self.receipt: QLabel | None = None
        if receipt:
            said = ("You said it" if receipt.get("stated") else
                    "Inferred: only memtray said this, you did not")
            self.receipt = QLabel(f"{said}: \u201c{receipt.get('quote', '')}\u201d")
            self.receipt.setTextFormat(Qt.TextFormat.PlainText)  # the model's words, never markup
            self.receipt.setWordWrap(True)
            self.receipt.setStyleSheet(f"color: {ctx.theme.ok_text if receipt.get('stated') else ctx.theme.error_text};")
            lay.addWidget(self.receipt)
        body = QTextBrowser()
        msgs = info.get("messages") or []
        if not msgs:
            body.setPlainText("No source messages are recorded for this fact "
                              "(it was written by hand, restored, or predates provenance).")
        else:
            parts = []
            quoted = set(receipt.get("source_seqs", [])) if receipt else set()
            for m in msgs:
                who = "You" if m.get("role") == "user" else "memtray"
                content = html.escape(str(m.get("content") or ""))
                if m.get("seq") in quoted and receipt:
                    content = mark_quote(content, html.escape(str(receipt.get("quote", ""))))
                parts.append(f"<p><b>{who}</b> · #{m.get('seq')} · {str(m.get('ts', ''))[:16].replace('T', ' ')}</p>"
                             f"<p>{content}</p>")
            body.setHtml("<hr>".join(parts))
        self.body = body
        lay.addWidget(body, 1)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        box.rejected.connect(self.reject)
        box.accepted.connect(self.accept)
        lay.addWidget(box)
        self.info = info


def mark_quote(text: str, quote: str) -> str:
    """``text`` (HTML) with ``quote`` highlighted where it is, case and spacing aside."""
    q = " ".join(quote.split())
    at = text.casefold().find(q.casefold()) if q else -1
    if at < 0:
        return text
    end = at + len(q)
    return f"{text[:at]}<span style=\"background: #fff3a3; color: #000;\">{text[at:end]}</span>{text[end:]}"


class Blank:
    def __init__(self, text: str = "", section: str = "") -> None:
        self.text = text
        self.section = section


