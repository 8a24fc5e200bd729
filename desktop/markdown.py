"""Markdown for chat messages: prose through QTextDocument's markdown reader,
fenced code blocks as highlighted, copyable boxes.

:func:`split` is pure (fence parsing); :func:`render` builds a QTextDocument and
returns the code blocks so the view can copy one by index (anchor
``memtray:copy-code/<n>``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import highlight
from .qt import (
    QBrush,
    QColor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFrameFormat,
    QTextLength,
    QTextTableFormat,
)
from .theme import Theme, mono_font

COPY_CODE = "memtray:copy-code/"
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Block:
    kind: str  # "text" | "code"
    text: str
    lang: str = ""


def split(text: str) -> list[Block]:
    """Prose and fenced code blocks, in order. An unclosed fence runs to the end."""
    out: list[Block] = []
    prose: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        fence = m.group("fence")
        lang = (m.group("info").split() or [""])[0]
        j = i + 1
        body: list[str] = []
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                break
            body.append(lines[j])
            j += 1
        if prose and "".join(prose).strip():
            out.append(Block("text", "\n".join(prose)))
        prose = []
        out.append(Block("code", "\n".join(body), lang))
        i = j + 1
    if prose and "".join(prose).strip():
        out.append(Block("text", "\n".join(prose)))
    return out


def render(doc: QTextDocument, text: str, theme: Theme) -> list[str]:
    """Fill ``doc`` with ``text`` rendered; return the code blocks' texts."""
    doc.clear()
    doc.setDocumentMargin(2)
    cursor = QTextCursor(doc)
    codes: list[str] = []
    first = True
    for block in split(text):
        if not first:
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        first = False
        if block.kind == "text":
            tmp = QTextDocument()
            tmp.setMarkdown(block.text, QTextDocument.MarkdownFeature.MarkdownDialectGitHub)
            _style_inline_code(tmp, theme)
            cursor.insertFragment(QTextDocumentFragment(tmp))
        else:
            _insert_code(cursor, block, len(codes), theme)
            codes.append(block.text)
    return codes


def _style_inline_code(doc: QTextDocument, theme: Theme) -> None:
    """Give `inline code` the theme's code background (markdown sets only the font)."""
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            frag = it.fragment()
            if frag.isValid() and frag.charFormat().fontFixedPitch():
                c = QTextCursor(doc)
                c.setPosition(frag.position())
                c.setPosition(frag.position() + frag.length(), QTextCursor.MoveMode.KeepAnchor)
                fmt = QTextCharFormat()
                fmt.setBackground(QBrush(QColor(theme.code_bg if not theme.dark else theme.surface2)))
                fmt.setFont(mono_font(-0.5))
                c.mergeCharFormat(fmt)
            it += 1
        block = block.next()


def _insert_code(cursor: QTextCursor, block: Block, index: int, theme: Theme) -> None:
    tf = QTextTableFormat()
    tf.setBorder(1)
    tf.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
    tf.setBorderBrush(QBrush(QColor(theme.border)))
    tf.setCellPadding(8)
    tf.setCellSpacing(0)
    tf.setWidth(QTextLength(QTextLength.Type.PercentageLength, 100))
    tf.setBackground(QBrush(QColor(theme.code_bg)))
    tf.setTopMargin(4)
    tf.setBottomMargin(4)
    table = cursor.insertTable(2, 1, tf)
    # header row: language + copy link
    head = table.cellAt(0, 0)
    hfmt = head.format()
    hfmt.setBackground(QBrush(QColor(theme.surface2)))
    head.setFormat(hfmt)
    hc = head.firstCursorPosition()
    muted = QTextCharFormat()
    muted.setForeground(QBrush(QColor(theme.muted)))
    hc.insertText(highlight.language(block.lang) or "code", muted)
    hc.insertText("    ", muted)
    link = QTextCharFormat()
    link.setAnchor(True)
    link.setAnchorHref(f"{COPY_CODE}{index}")
    link.setForeground(QBrush(QColor(theme.accent)))
    link.setFontWeight(QFont.Weight.DemiBold)
    hc.insertText("Copy code", link)
    # body row
    body = table.cellAt(1, 0).firstCursorPosition()
    base = QTextCharFormat()
    base.setFont(mono_font(-0.5))
    base.setForeground(QBrush(QColor(theme.text)))
    colours = {
        "keyword": theme.syn_keyword, "string": theme.syn_string, "comment": theme.syn_comment,
        "number": theme.syn_number, "func": theme.syn_func,
    }
    bf = QTextBlockFormat()
    bf.setNonBreakableLines(True)
    body.setBlockFormat(bf)
    for text, kind in highlight.tokens(block.text, block.lang):
        fmt = QTextCharFormat(base)
        if kind in colours:
            fmt.setForeground(QBrush(QColor(colours[kind])))
        if kind == "comment":
            fmt.setFontItalic(True)
        if kind == "keyword":
            fmt.setFontWeight(QFont.Weight.DemiBold)
        # keep line breaks as paragraph breaks inside the cell (plain "\n" is a soft break)
        parts = text.split("\n")
        for n, part in enumerate(parts):
            if n:
                body.insertBlock(bf, base)
            if part:
                body.insertText(part, fmt)
    cursor.movePosition(QTextCursor.MoveOperation.End)
