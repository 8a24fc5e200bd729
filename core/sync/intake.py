"""What a sync takes from its peers' streams: each stream checked on its own, ids by owner.

Before anything is imported, each peer's stream is read through the one door
(:class:`~memtray.core.log.door.Door`, line by line: checksum, size, envelope,
payload, redaction) and checked against what was imported from it before:

* a continuation only adds segments; a republication (a higher epoch, a new
  history: the peer purged) is taken only as the purge it claims to be: every
  line imported before is there again, the same event, its texts the same or
  with spans replaced by the purge marker (:mod:`memtray.core.log.tombstone`);
* anything else (rewritten, damaged beyond a line, not a stream) refuses that
  peer's stream for this sync: :class:`~memtray.core.sync.plan.PeerRefused`, reported, while this
  device's own push and every other peer's import go on.

Then **ownership**: an event id belongs to the device that created it. A peer's
event whose id this log already holds as this device's own event or another
device's, and an id that two peers' streams carry in one sync, are refused
(reported with both devices), never imported over the real one. The same device
sending an id again with the same payload is a harmless repeat.

What each relation means is decided by :mod:`~memtray.core.sync.plan`; this module reads
the streams it asks about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memtray.core.log.door import KEEP_BYTES, Door, Refusal, Source
from memtray.core.log.events import MemoryWritten, Record, legacy_line
from memtray.core.log.origin import ORIGIN_KEY, owners, records_naming
from memtray.core.log.tombstone import purged_bytes
from memtray.core.sync import plan
from memtray.core.sync.attach import MOST
from memtray.core.sync.history import republished, stale
from memtray.core.sync.stream import LocalRepo, PeerEvents


def check_peer(repo: LocalRepo, dev: str, commit: str | None, cursor: Mapping[str, Any], door: Door,
               notes: list[str]) -> PeerEvents | None:
    """The new events of ``dev``'s stream at ``commit`` after what ``cursor`` (its
    ``sync.pulled``) says was imported, read through ``door``; None when there is nothing
    new; :class:`SyncError` when the stream is refused for this sync (docs/SYNC.md)."""
    through = int(cursor.get("through", 0))
    seen: str = cursor.get("commit") or ""  # "": nothing imported from it yet
    fetched = plan.news(dev, commit, seen)
    if fetched is None:
        return None
    if isinstance(seen, str) and seen:
        repo.imported.add(seen)  # read again only to compare (a republication, sealed after a migration)
    step = plan.peer(dev, seen, fetched, ancestry=repo.git.ancestry,
                     republishes=lambda old, new: republished(repo, dev, old, new),
                     problem=lambda: republication_problem(repo, dev, seen, fetched, through),
                     stale=lambda: stale(repo, dev, seen, fetched, through))
    if step.note is not None:
        notes.append(step.note)
    if not step.read:
        return None
    if step.continuation:
        plan.check_continuation(dev, repo.changed_files(seen, fetched))
    return repo.read_after(dev, fetched, through, door)


def republication_problem(repo: LocalRepo, dev: str, seen: str, commit: str, through: int) -> str | None:
    """Why ``commit`` is not ``dev``'s stream at ``seen`` republished after a purge (None if it
    is): :func:`plan.republication_problem` on the lines of both."""
    return plan.republication_problem(repo.lines_after(dev, seen, 0), repo.lines_after(dev, commit, 0), through,
                                      lambda old, new: _same_file(repo, dev, seen, old, commit, new))


def _same_file(repo: LocalRepo, dev: str, seen: str, old: str, commit: str, new: str) -> bool:
    """Whether the attachment ``new`` of the stream at ``commit`` is ``old`` of the stream at
    ``seen`` purged (a purge stores a rewritten file under its new hash)."""
    before = dict(repo.attachments(dev, seen, [old], MOST))
    after = dict(repo.attachments(dev, commit, [new], MOST))
    return old in before and new in after and purged_bytes(before[old], after[new])


def claim_ids(peers: Sequence[PeerEvents], events_dir: Path) -> list[PeerEvents]:
    """``peers`` with every event whose id is not the peer's own moved to its ``refused``
    (see the module docstring). Memory revisions are left to the memory merge: a
    fast-forward writes another device's revision under its id on purpose."""
    claimed: dict[str, set[str]] = {}
    for p in peers:
        for r in p.records:
            if r.type != MemoryWritten.TYPE:
                claimed.setdefault(r.id, set()).add(p.device)
    held = owners(events_dir, claimed)
    held_data = _held_payloads(events_dir, {i for i, dev in held.items() if dev is not None})
    out: list[PeerEvents] = []
    for p in peers:
        keep: list[Record] = []
        refused = list(p.refused)
        for r in p.records:
            if r.type == MemoryWritten.TYPE:
                keep.append(r)
                continue
            devices = claimed.get(r.id, set())
            why: str | None = None
            if len(devices) > 1:
                others = ", ".join(sorted(devices - {p.device}))
                why = f"its event id is also in the stream of device {others}: neither copy is imported"
            elif r.id in held and held[r.id] is None:
                why = "its event id is an event of this device (a peer cannot speak for it)"
            elif r.id in held and held[r.id] != p.device:
                why = f"its event id is an event of device {held[r.id]}, imported before"
            elif r.id in held:
                if held_data.get(r.id) == _plain(r.data):
                    continue  # the same event again: already here
                why = "it changes an event this device imported from it before"
            if why is None:
                keep.append(r)
            else:
                raw = legacy_line(r)
                refused.append(Refusal(Source("peer", p.device, f"seq {r.seq}"), why, raw[:KEEP_BYTES], len(raw),
                                       r.seq, r.id, r.type))
        out.append(PeerEvents(p.device, p.commit, keep, p.last_seq, refused))
    return out


def _plain(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != ORIGIN_KEY}


def _held_payloads(events_dir: Path, ids: set[str]) -> dict[str, dict[str, Any]]:
    """The payloads (origin mark left out) of the imported events ``ids``."""
    if not ids:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for rec in records_naming(events_dir, ids):
        if isinstance(rec.id, str) and rec.id in ids and isinstance(rec.data, Mapping):
            out.setdefault(rec.id, _plain(rec.data))
    return out
