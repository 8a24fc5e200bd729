"""How one copy of a device stream relates to another: continuation, republication, stale copy.

A device republishes its stream after a purge as a new history with a higher
*epoch* (:meth:`memtray.core.sync.stream.LocalRepo.republish`). With more than one
remote, a remote the device has not synced with since still holds the stream at
an older epoch: that copy is *stale* (everything in it was published again, purged,
at the newer epoch), not hostile. Anything else that is not a continuation of
what was imported was rewritten by someone else. Also the small line helpers the
service uses to compare a stream with the log.
"""

from __future__ import annotations

import re
from typing import Any

from memtray.core.base.clock import parse_ts
from memtray.core.log.events import BadRecord, Record, decode_raw
from memtray.core.sync.gitcli import SyncError
from memtray.core.sync.plan import is_republication, stale_copy
from memtray.core.sync.stream import LocalRepo

#: what a purge puts in place of each occurrence (``admin.purge.MARKER``, a room above this one)
PURGED = "[PURGED]"


def republished(repo: LocalRepo, dev: str, seen: str, commit: str) -> bool:
    """Whether ``commit`` is ``dev``'s republication of the stream at ``seen`` (after a purge):
    a higher epoch that still reaches as far."""
    try:
        old, new = repo.head(seen, dev), repo.head(commit, dev)
    except SyncError:  # not even a stream of this device: plainly rewritten
        return False
    return is_republication(old, new)


def stale(repo: LocalRepo, dev: str, seen: str, commit: str, through: int) -> tuple[int, int] | None:
    """(its epoch, the epoch imported) when ``commit`` is an older copy of ``dev``'s stream than
    the one imported at ``seen``: a lower epoch that reaches no further than what was imported
    (``through``). None otherwise (a same or lower epoch reaching further was rewritten)."""
    try:
        old, new = repo.head(seen, dev), repo.head(commit, dev)
    except SyncError:
        return None
    return stale_copy(old, new, through)


def purged_to(line: bytes, rec: Record, payloads: dict[str, Any]) -> bool:
    """Whether the stream's ``line`` is ``rec`` as it was before a purge whose tombstone gave
    ``rec`` its payload: the same envelope, and the payload after the purge is the tombstone's
    (a session name the purge changed: the same around each ``[PURGED]``)."""
    if rec.id not in payloads or rec.data != payloads[rec.id]:
        return False
    try:
        old = decode_raw(line)
    except BadRecord:
        return False
    if old[:5] != rec[:5]:
        return False
    if old.session == rec.session:
        return True
    if old.session is None or rec.session is None or PURGED not in rec.session:
        return False
    return re.fullmatch(".+?".join(map(re.escape, rec.session.split(PURGED))), old.session) is not None


def git_date(ts: str, fallback: str) -> str:
    """A git date for a commit (only informative: nothing orders by it)."""
    try:
        return str(int(parse_ts(ts).timestamp())) + " +0000"
    except (ValueError, TypeError):
        return str(int(parse_ts(fallback).timestamp())) + " +0000"
