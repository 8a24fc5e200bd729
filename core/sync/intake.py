"""What a sync takes from its peers' streams: each stream checked on its own, ids by owner.

Before anything is imported, each peer's stream is read through the one door
(:class:`~memtray.core.log.door.Door`, line by line: checksum, size, envelope,
payload, redaction) and checked against what was imported from it before:

* a continuation only adds segments; a republication (a higher epoch, a new
  history: the peer purged) is taken only as the purge it claims to be: every
  line imported before is there again, the same event, its texts the same or
  with spans replaced by the purge marker (:mod:`memtray.core.log.tombstone`);
* anything else (rewritten, damaged beyond a line, not a stream) refuses that
  peer's stream for this sync: :class:`PeerRefused`, reported, while this
  device's own push and every other peer's import go on.

Then **ownership**: an event id belongs to the device that created it. A peer's
event whose id this log already holds as this device's own event or another
device's, and an id that two peers' streams carry in one sync, are refused
(reported with both devices), never imported over the real one. The same device
sending an id again with the same payload is a harmless repeat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memtray.core.log.door import KEEP_BYTES, Door, Refusal, Source
from memtray.core.log.events import BadRecord, MemoryWritten, Record, decode_raw, legacy_line
from memtray.core.log.origin import ORIGIN_KEY, owners, records_naming
from memtray.core.log.tombstone import purge_problem, purged_bytes, purged_text
from memtray.core.sync.attach import MOST
from memtray.core.sync.gitcli import SyncError
from memtray.core.sync.history import republished, stale
from memtray.core.sync.stream import LocalRepo, PeerEvents

#: what repairs a stream rewritten on the remote, on the device it belongs to
REPUBLISH_HINT = "run `memtray sync --republish` there (it publishes its stream again from its own log)"


class PeerRefused(SyncError):
    """One peer's stream is refused for this sync (the others go on)."""


def check_peer(repo: LocalRepo, dev: str, commit: str | None, cursor: Mapping[str, Any], door: Door,
               notes: list[str]) -> PeerEvents | None:
    """The new events of ``dev``'s stream at ``commit`` after what ``cursor`` (its
    ``sync.pulled``) says was imported, read through ``door``; None when there is nothing
    new; :class:`SyncError` when the stream is refused for this sync (docs/SYNC.md)."""
    if commit is None:
        raise SyncError(f"the stream of {dev} was listed but could not be fetched")
    through = int(cursor.get("through", 0))
    seen = cursor.get("commit")
    if seen == commit:  # nothing new from this one (the common case with many devices)
        return None
    if isinstance(seen, str) and seen:
        repo.imported.add(seen)  # read again only to compare (a republication, sealed after a migration)
    if seen and repo.git.ancestry(commit, seen):  # a remote behind another one: nothing new here
        return None
    if seen and repo.git.ancestry(seen, commit) is False:
        if republished(repo, dev, seen, commit):
            problem = republication_problem(repo, dev, seen, commit, through)
            if problem is not None:
                raise PeerRefused(
                    f"the stream of device {dev} was republished with changes a purge cannot make: {problem}",
                    hint=f"Nothing was imported from {dev}. If {dev} did not do this, someone with push "
                    f"access rewrote its stream: {REPUBLISH_HINT}.")
        else:
            older = stale(repo, dev, seen, commit, through)
            if older is not None:  # a remote this device has not synced with since its purge
                notes.append(
                    f"the stream of {dev} here is an older copy (epoch {older[0]}; imported before: epoch "
                    f"{older[1]}): nothing imported from it; {dev} replaces it when it syncs with this remote")
                return None
            raise PeerRefused(
                f"the stream of device {dev} on the remote was rewritten by someone else (it no longer "
                f"contains {seen[:12]}, imported here)",
                hint=f"Nothing was imported from {dev}. Restore that ref on the remote, or {dev} can "
                f"{REPUBLISH_HINT}; memtray never overwrites a stream.")
    changed = repo.changed_files(seen, commit) if seen and repo.git.ancestry(seen, commit) else []
    if changed:  # a continuation only ever adds segments
        raise PeerRefused(
            f"the stream of device {dev} on the remote was rewritten: {changed[0]} changed after it was "
            "imported here", hint=f"Nothing was imported from {dev}. Device {dev} can repair it: "
            f"{REPUBLISH_HINT}; or restore that ref on the remote.")
    return repo.read_after(dev, commit, through, door)


def republication_problem(repo: LocalRepo, dev: str, seen: str, commit: str, through: int) -> str | None:
    """Why ``commit`` is not ``dev``'s stream at ``seen`` republished after a purge (None if it
    is): each line up to ``through`` that was there must be there again, the same event,
    purged at most; no line may appear among them that was not there."""
    old = {seq: line for seq, line in repo.lines_after(dev, seen, 0) if 0 < seq <= through}
    new = {seq: line for seq, line in repo.lines_after(dev, commit, 0) if seq <= through}
    if -1 in new:
        return "a line of the republished stream cannot be read"
    extra = sorted(set(new) - set(old))
    if extra:
        return f"the republished stream holds seq {extra[0]}, which the stream it replaces did not"
    for seq, line in sorted(old.items()):
        got = new.get(seq)
        if got is None:
            return f"the republished stream lacks seq {seq}"
        if got == line:
            continue
        try:
            a, b = decode_raw(line), decode_raw(got)
        except BadRecord:
            return f"seq {seq} of the republished stream is damaged"
        if tuple(a[:5]) != tuple(b[:5]):
            return f"seq {seq} is another event in the republished stream"
        problem = purge_problem(a.data, b.data, same_file=lambda x, y: _same_file(repo, dev, seen, x, commit, y))
        if problem is None and a.session != b.session and not (
                isinstance(a.session, str) and isinstance(b.session, str) and purged_text(a.session, b.session)):
            problem = "session: renamed, not purged"
        if problem is not None:
            return f"seq {seq} ({b.id}) was changed, not purged ({problem})"
    return None


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
