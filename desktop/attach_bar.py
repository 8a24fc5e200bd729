"""Attachments of the next message in a chat pane: paste, drop, chips with a remove button.

An image pasted from the clipboard (a screenshot) or a file pasted or dropped on the
input becomes a :class:`~memtray.core.log.attachments.Prepared` held here until the
message is sent (the core stores it by hash when the message is logged). A chip per
attachment shows its name and an ✕ to remove it; a file that cannot be attached, or an
image for a model that cannot read images, is said on the bar's own line, and the text
and the other attachments stay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.log.attachments import Prepared, from_file, prepare

from .context import Context
from .qt import (
    QApplication,
    QBuffer,
    QByteArray,
    QEvent,
    QHBoxLayout,
    QImage,
    QIODevice,
    QKeySequence,
    QLabel,
    QObject,
    QToolButton,
    QVBoxLayout,
    QWidget,
)


def shown_text(text: str, names: list[str]) -> str:
    """A user message as the chat shows it: its text, then the names of its attachments."""
    return f"{text}\n\nattached: {', '.join(names)}" if names else text


def logged_text(m: dict[str, Any]) -> str:
    """:func:`shown_text` of a logged message (its attachment references)."""
    names = [str(r.get("name", "")) for r in m.get("attachments") or [] if isinstance(r, dict)]
    return shown_text(str(m.get("content") or ""), names)


def _png(image: QImage) -> bytes:
    buf = QByteArray()
    dev = QBuffer(buf)
    dev.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(dev, "PNG")  # type: ignore[call-overload]  # PySide6 wants str at run time, its stubs say bytes
    dev.close()
    return bytes(buf.data())


class AttachBar(QWidget):
    """Chips of the attachments of the next message, above the input it watches."""

    def __init__(self, ctx: Context, watch: Any) -> None:
        super().__init__()
        self.ctx = ctx
        self.items: list[Prepared] = []
        self._shots = 0
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.chips = QHBoxLayout()
        self.chips.setSpacing(4)
        self.chips.addStretch(1)
        lay.addLayout(self.chips)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setProperty("error", True)
        self.error.setStyleSheet(f"color: {ctx.theme.error_text};")
        self.error.hide()
        lay.addWidget(self.error)
        self.hide()
        self.watched = watch
        watch.setAcceptDrops(True)
        watch.installEventFilter(self)
        watch.viewport().installEventFilter(self)  # drops land on a text edit's viewport

    # --- adding -------------------------------------------------------------------------

    def add(self, item: Prepared) -> None:
        if any(i.ref.sha256 == item.ref.sha256 for i in self.items):
            return
        self.items.append(item)
        chip = QWidget()
        chip.setObjectName("attachChip")
        chip.setProperty("sha256", item.ref.sha256)
        cl = QHBoxLayout(chip)
        cl.setContentsMargins(6, 1, 1, 1)
        cl.setSpacing(2)
        kind = "image" if item.ref.kind == "image" else "file"
        label = QLabel(f"{kind}: {item.ref.name}")
        label.setToolTip(f"{item.ref.name} — {item.ref.mime}, {item.ref.size:,} bytes")
        cl.addWidget(label)
        remove = QToolButton()
        remove.setText("✕")
        remove.setToolTip(f"Remove {item.ref.name}")
        remove.clicked.connect(lambda _=False, sha=item.ref.sha256: self.remove(sha))
        cl.addWidget(remove)
        self.chips.insertWidget(self.chips.count() - 1, chip)
        self.error.hide()
        self.show()

    def remove(self, sha: str) -> None:
        self.items = [i for i in self.items if i.ref.sha256 != sha]
        for chip in self.findChildren(QWidget, "attachChip"):
            if chip.property("sha256") == sha:
                chip.setParent(None)
                chip.deleteLater()
        self.error.hide()
        self.setVisible(bool(self.items))

    def take(self) -> list[Prepared]:
        """The attachments of the message being sent; the bar empties."""
        items = list(self.items)
        for item in items:
            self.remove(item.ref.sha256)
        return items

    def say(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()
        self.show()

    def add_mime(self, mime: Any) -> bool:
        """Attach what ``mime`` (clipboard or drop) holds: files, else an image; False when
        it holds neither (plain text is left to the input)."""
        files = [u.toLocalFile() for u in mime.urls() if u.isLocalFile()] if mime.hasUrls() else []
        if files:
            for path in files:
                self._try(lambda p=path: from_file(p))
            return True
        if mime.hasImage():
            image = mime.imageData()
            if isinstance(image, QImage) and not image.isNull():
                self._shots += 1
                data = _png(image)
                self._try(lambda: prepare(data, f"screenshot-{self._shots}.png", "image/png"))
                return True
        return False

    def _try(self, make: Any) -> None:
        try:
            prepared = make()
            self.add(prepared)
            if prepared.note:  # a link was followed: say which file was attached
                self.say(prepared.note)
        except MemtrayError as exc:
            self.say(f"{exc}. {exc.hint}".strip())

    def refusal(self, model: str, reads_images: Callable[[str], bool]) -> str | None:
        """Why the attachments cannot go to ``model`` (images to a model that does not read
        them, by ``reads_images``: the agent's rule, the user's "Reads images" first)."""
        images = [i.ref.name for i in self.items if i.ref.kind == "image"]
        if images and not reads_images(model):
            return (f"The model {model} cannot read images ({', '.join(images)}). Remove the image, "
                    "choose a model that reads images (e.g. openai/gpt-4o), or mark this one "
                    "\"Reads images\" in Settings.")
        return None

    # --- paste and drop on the watched input --------------------------------------------

    def eventFilter(self, obj: QObject, e: Any) -> bool:
        t = e.type()
        if t == QEvent.Type.KeyPress and obj is self.watched and e.matches(QKeySequence.StandardKey.Paste):
            mime = QApplication.clipboard().mimeData()
            if mime is not None and self.add_mime(mime):
                return True
        elif t in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            mime = e.mimeData()
            if mime is not None and (mime.hasUrls() or mime.hasImage()):
                e.acceptProposedAction()
                return True
        elif t == QEvent.Type.Drop:
            mime = e.mimeData()
            if mime is not None and self.add_mime(mime):
                e.acceptProposedAction()
                return True
        return super().eventFilter(obj, e)
