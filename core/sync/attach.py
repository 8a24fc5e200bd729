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
import re
from collections.abc import Iterable, Mapping
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.log.attachments import AttachmentStore, Prepared, Ref, refs_of
from memtray.core.log.events import Record
from memtray.core.log.origin import SYNC_PURGE
from memtray.core.sync.stream import LocalRepo

log = logging.getLogger(__name__)
_SHA = re.compile(r"[0-9a-f]{64}")


def _shas(payloads: Iterable[Mapping[str, Any]]) -> list[str]:
    out: list[str] = []
    for data in payloads:
        for ref in refs_of(data):
            if _SHA.fullmatch(ref.sha256) and ref.sha256 not in out:
                out.append(ref.sha256)
    return out


def payloads(records: Iterable[Record]) -> list[Mapping[str, Any]]:
    """The payloads among ``records`` that may name attachments: messages, and the events a
    purge tombstone rewrote (a purge stores a rewritten file under a new hash)."""
    out: list[Mapping[str, Any]] = []
    for r in records:
        if r.type == "message":
            out.append(r.data)
        elif r.type == SYNC_PURGE and isinstance(r.data.get("events"), Mapping):
            out.extend(e for e in r.data["events"].values() if isinstance(e, Mapping))
    return out


def files_to_push(store: AttachmentStore, payloads: Iterable[Mapping[str, Any]]) -> dict[str, bytes]:
    """sha256 -> bytes of every attachment ``payloads`` name that this home holds intact."""
    out: dict[str, bytes] = {}
    for sha in _shas(payloads):
        try:
            out[sha] = store.load(sha)
        except MemtrayError:
            continue  # missing or damaged here: the doctor says so; the message travels without it
    return out


def take(store: AttachmentStore, repo: LocalRepo, commit: str, payloads: Iterable[Mapping[str, Any]]) -> int:
    """Store the attachments ``payloads`` name that this home lacks, from the stream at
    ``commit``, each only if its bytes have its hash. The number stored."""
    missing = [sha for sha in _shas(payloads) if store.problem(Ref(sha, "", "", 0, "")) is not None]
    if not missing:
        return 0
    got = repo.attachments(commit, missing)
    for sha, data in got.items():
        store.put(Prepared(Ref(sha, "", "", len(data), ""), data))
    if len(got) < len(missing):
        log.info("%d attachment(s) not on the remote yet (stream %s)", len(missing) - len(got), commit[:12])
    return len(got)
