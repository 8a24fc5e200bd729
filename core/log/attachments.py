"""Attachments of chat messages: a content-addressed store beside the log.

The bytes of an attachment live in ``<home>/attachments/ab/<sha256>`` (files 0600,
written atomically), never in the log: a user message carries only references
(:class:`Ref`: hash, mime, name, size, kind) and the prompt is rebuilt from them on
replay. An image is stored as it was given; a text or PDF file is stored as its
extracted text, redacted, so a secret in a pasted file reaches neither the disk nor
the model. :func:`prepare` turns a file's bytes into what is stored; :class:`AttachmentStore`
saves, loads (checking the hash) and checks them (the doctor).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import mimetypes
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.base.fsutil import atomic_write, ensure_dir
from memtray.core.base.infile import FileRefused, open_regular, read_capped
from memtray.core.base.redact import redact
from memtray.core.log.events import AttachmentRef, scrub_text

DIRNAME = "attachments"
IMAGE_MIMES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_TEXT_CHARS = 500_000
#: the largest file read at all (a PDF's text, an image, a text file: each has its own limit after)
MAX_FILE_BYTES = 50 * 1024 * 1024
_SHA = re.compile(r"[0-9a-f]{64}")


class AttachmentError(MemtrayError):
    hint = "Attach a PNG, JPEG, GIF or WebP image, a PDF, or a text file."


class AttachmentMissing(MemtrayError):
    hint = "Run `memtray doctor` to list the attachments that are missing or damaged."


@dataclass(frozen=True)
class Ref:
    """What a message event holds about one attachment."""

    sha256: str
    mime: str
    name: str
    size: int
    kind: str  # "image" (sent as an image part) or "text" (sent as extracted text)

    def to_data(self) -> AttachmentRef:
        return {"sha256": self.sha256, "mime": self.mime, "name": self.name, "size": self.size, "kind": self.kind}

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> Ref:
        """From a message's payload; a size that is no number (another device's bad data) is 0."""
        try:
            size = int(d.get("size", 0))
        except (TypeError, ValueError):
            size = 0
        return cls(str(d.get("sha256", "")), str(d.get("mime", "")), str(d.get("name", "")),
                   size, str(d.get("kind", "")))


@dataclass(frozen=True)
class Prepared:
    """An attachment ready to store: its reference and the exact bytes stored."""

    ref: Ref
    data: bytes
    note: str = ""  # said to the user (a symbolic link followed), never stored


def sniff_mime(data: bytes, name: str) -> str:
    """The mime type of ``data``: the magic bytes first, then the file name."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    guess, _ = mimetypes.guess_type(name)
    return guess or "application/octet-stream"


def pdf_text(data: bytes, name: str) -> str:
    """The text of a PDF's pages (a page break between pages)."""
    import pypdf  # imported on the first PDF only

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # pypdf raises many kinds on damaged files
        raise AttachmentError(f"could not read {name} as a PDF: {exc}") from exc
    return "\n\f\n".join(p.strip() for p in pages).strip()


def prepare(data: bytes, name: str, mime: str | None = None) -> Prepared:
    """What is stored for a file named ``name``; raises :class:`AttachmentError` for a
    kind memtray cannot send (a binary file that is not an image or a PDF)."""
    name = redact(scrub_text(Path(name).name or "attachment"))
    mime = mime if mime in IMAGE_MIMES else sniff_mime(data, name)
    if mime in IMAGE_MIMES:
        if len(data) > MAX_IMAGE_BYTES:
            raise AttachmentError(f"{name} is {len(data):,} bytes; images up to {MAX_IMAGE_BYTES:,} bytes are sent")
        return _prepared(data, mime, name, "image")
    if mime == "application/pdf":
        text = pdf_text(data, name)
        if not text:
            raise AttachmentError(f"{name} has no text to read (a scanned PDF?)",
                                  hint="Attach a screenshot of the page instead, for a model that reads images.")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise AttachmentError(f"{name} is neither text, a PDF nor an image ({mime})") from None
        if mime == "application/octet-stream":
            mime = "text/plain"
    if len(text) > MAX_TEXT_CHARS:
        raise AttachmentError(f"{name} has {len(text):,} characters of text; the limit is {MAX_TEXT_CHARS:,}",
                              hint="Attach the part that matters.")
    return _prepared(redact(scrub_text(text)).encode("utf-8"), mime, name, "text")


def _prepared(data: bytes, mime: str, name: str, kind: str) -> Prepared:
    return Prepared(Ref(hashlib.sha256(data).hexdigest(), mime, name, len(data), kind), data)


class AttachmentStore:
    """The content-addressed files under ``<home>/attachments``."""

    def __init__(self, home_root: Path) -> None:
        self.root = Path(home_root) / DIRNAME

    def path(self, sha: str) -> Path:
        if not _SHA.fullmatch(sha):
            raise AttachmentMissing(f"{sha!r} is not an attachment hash")
        return self.root / sha[:2] / sha

    def put(self, item: Prepared) -> Ref:
        """Store ``item`` (once: the same bytes share one file)."""
        path = self.path(item.ref.sha256)
        if not (path.is_file() and self.problem(item.ref) is None):
            ensure_dir(self.root)
            ensure_dir(path.parent)
            atomic_write(path, item.data)
        return item.ref

    def load(self, sha: str) -> bytes:
        """The stored bytes of ``sha``; raises :class:`AttachmentMissing` if absent or damaged."""
        path = self.path(sha)
        try:
            data = path.read_bytes()
        except OSError:
            raise AttachmentMissing(f"the attachment {sha[:12]} is missing from {self.root}") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise AttachmentMissing(f"the attachment {sha[:12]} in {self.root} is damaged (its hash differs)")
        return data

    def intact(self, sha: str) -> Path | None:
        """The file of ``sha`` if it is here with that hash (read in chunks: never whole in
        memory), else None; a string that is no hash names no file."""
        if not _SHA.fullmatch(sha):
            return None
        path = self.path(sha)
        digest = hashlib.sha256()
        try:
            with path.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
        except OSError:
            return None
        return path if digest.hexdigest() == sha else None

    def problem(self, ref: Ref) -> str | None:
        """Why ``ref`` cannot be sent (missing, wrong hash), or None when it is intact."""
        try:
            self.load(ref.sha256)
        except AttachmentMissing as exc:
            return str(exc)
        return None


def is_hash(sha: str) -> bool:
    return bool(_SHA.fullmatch(sha))


def refs_of(msg: Mapping[str, Any]) -> list[Ref]:
    """The attachment references of a stored message (none for old events)."""
    return [Ref.from_data(d) for d in msg.get("attachments") or [] if isinstance(d, Mapping)]


def remap_refs(data: Mapping[str, Any], remap: Mapping[str, tuple[str, int]]) -> dict[str, Any] | None:
    """``data`` with its attachment references pointed at rewritten files (purge), or None
    when none of them changed."""
    refs = data.get("attachments")
    if not remap or not isinstance(refs, list) or not any(
        isinstance(r, Mapping) and r.get("sha256") in remap for r in refs
    ):
        return None
    new = []
    for r in refs:
        if isinstance(r, Mapping) and r.get("sha256") in remap:
            sha, size = remap[str(r["sha256"])]
            r = {**r, "sha256": sha, "size": size}
        new.append(r)
    return {**data, "attachments": new}


def rewrite_all(store: AttachmentStore, sub: Callable[[bytes], tuple[bytes, int]]) -> dict[str, tuple[str, int]]:
    """Every stored file that ``sub`` changes, stored again under its new hash (purge);
    old sha256 -> (new sha256, size). The old files stay until :func:`remove`."""
    remap: dict[str, tuple[str, int]] = {}
    if not store.root.is_dir():
        return remap
    for path in sorted(store.root.glob("??/*")):
        if path.is_symlink() or not path.is_file() or not _SHA.fullmatch(path.name):
            continue
        new, n = sub(path.read_bytes())
        if n:
            sha = hashlib.sha256(new).hexdigest()
            store.put(Prepared(Ref(sha, "", "", len(new), ""), new))
            remap[path.name] = (sha, len(new))
    return remap


def remove(store: AttachmentStore, shas: Iterable[str]) -> None:
    """Delete the files of ``shas`` (after purge rewrote the log's references)."""
    for sha in shas:
        if _SHA.fullmatch(sha):  # anything else names no file here
            with contextlib.suppress(OSError):
                store.path(sha).unlink()


def from_file(path: Path | str) -> Prepared:
    """:func:`prepare` for a file on disk; a clear error when it cannot be read.

    Only a regular file is read (a FIFO, ``/dev/zero``, a directory or a socket is refused
    without reading or blocking), its size is checked before reading
    (:data:`MAX_FILE_BYTES`) and the read is capped; a symbolic link is followed and the
    file it resolves to is said (:attr:`Prepared.note`).
    """
    try:
        opened = open_regular(path, limit=MAX_FILE_BYTES, what="attachment")
        data = read_capped(opened, limit=MAX_FILE_BYTES, what="attachment")
    except FileRefused as exc:
        raise AttachmentError(str(exc), hint=exc.hint) from None
    except OSError as exc:
        raise AttachmentError(f"cannot read {path}: {exc.strerror or exc}", hint="Check the file name.") from None
    prepared = prepare(data, Path(path).name)
    return replace(prepared, note=redact(opened.note())) if opened.link is not None else prepared
