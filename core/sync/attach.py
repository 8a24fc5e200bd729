"""Attachments across devices: the files a push carries, and storing the ones a pull brings.

A message travels with references to its attachments (hash, name, type, size,
:mod:`memtray.core.log.attachments`); the files travel beside the segments, in the
same commit, as ``attachments/ab/<sha256>`` (:func:`~memtray.core.sync.stream.attachment_path`).
What was stored is what travels: an attached text or PDF was stored as its redacted
text, so no secret rides along. An importing device stores a file only when its
bytes have the hash its message names; a file missing from a stream (a device whose
memtray did not carry attachments yet, a damaged blob) leaves the message with the
name only (``memtray doctor`` lists it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memtray.core.log.attachments import (
    MAX_IMAGE_BYTES,
    MAX_TEXT_CHARS,
    AttachmentStore,
    Prepared,
    Ref,
    is_hash,
    refs_of,
)
from memtray.core.log.events import Message, Record, SyncPurge
from memtray.core.sync.stream import LocalRepo

log = logging.getLogger(__name__)
#: the largest file a peer's stream may hand over: what memtray itself stores at most (an
#: image of MAX_IMAGE_BYTES, a text of MAX_TEXT_CHARS characters of up to 4 bytes)
MOST = max(MAX_IMAGE_BYTES, 4 * MAX_TEXT_CHARS)


def _shas(payloads: Iterable[Mapping[str, Any]]) -> list[str]:
    """The attachment hashes ``payloads`` name, once each (a string that is no hash left out)."""
    return list(dict.fromkeys(ref.sha256 for data in payloads for ref in refs_of(data) if is_hash(ref.sha256)))


def payloads(records: Iterable[Record]) -> list[Mapping[str, Any]]:
    """The payloads among ``records`` that may name attachments: messages, and the events a
    purge tombstone rewrote (a purge stores a rewritten file under a new hash)."""
    out: list[Mapping[str, Any]] = []
    for r in records:
        if r.type == Message.TYPE:
            out.append(r.data)  # a peer's, before it is imported: read as it came (refs_of checks it)
        elif r.type == SyncPurge.TYPE and isinstance(r.data.get("events"), Mapping):
            out.extend(e for e in r.data["events"].values() if isinstance(e, Mapping))
    return out


def files_to_push(store: AttachmentStore, payloads: Iterable[Mapping[str, Any]]) -> dict[str, Path]:
    """sha256 -> the file of every attachment ``payloads`` name that this home holds intact
    (a missing or damaged one is left out: the doctor says so; the message travels without it)."""
    return {sha: path for sha in _shas(payloads) if (path := store.intact(sha)) is not None}


def take(store: AttachmentStore, repo: LocalRepo, device: str, commit: str,
         payloads: Iterable[Mapping[str, Any]]) -> int:
    """Store the attachments ``payloads`` name that this home lacks, from ``device``'s stream at
    ``commit``, each only if its bytes have its hash. The number stored."""
    missing = [sha for sha in _shas(payloads) if store.intact(sha) is None]
    if not missing:
        return 0
    stored = 0
    for sha, data in repo.attachments(device, commit, missing, MOST):
        store.put(Prepared(Ref(sha, "", "", len(data), ""), data))
        stored += 1
    if stored < len(missing):
        log.info("%d attachment(s) not on the remote (stream %s)", len(missing) - stored, commit[:12])
    return stored
