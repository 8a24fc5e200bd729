"""Purges made on other devices: their ``sync.purge`` tombstones, checked, then applied here.

A tombstone names each shared event the purge changed with its payload after the
purge. It is applied only as far as it is a purge of what this home holds: each
payload must be this home's copy of the event with text spans replaced by the
purge marker and nothing else (:mod:`memtray.core.log.tombstone`); an entry that
is not is refused (quarantined, reported by the sync) and never written, so a
peer cannot rewrite this device's words by calling it a purge. Each tombstone
applied is recorded as a ``memory.purged`` event naming the device, which
``memtray memory log`` and the doctor show.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtray.core.admin.purge import PurgeError, plan_replace, rewrite_log
from memtray.core.log import attachments
from memtray.core.log.door import Refusal, Source
from memtray.core.log.events import MemoryPeerHead, MemoryPurged, Message, Record
from memtray.core.log.origin import EXPORTED, ORIGIN_KEY, origin_of, records_naming
from memtray.core.log.tombstone import (
    Applied,
    SameFile,
    purge_problem,
    purge_with,
    purged_bytes,
    purged_text,
    recover_pattern,
    text_pairs,
)

if TYPE_CHECKING:
    from memtray.core.app import App

log = logging.getLogger(__name__)


@dataclass
class Checked:
    """What of peers' tombstones this home takes (event id -> payload after the purge)."""

    #: for this device's own events and the copies it imported
    payloads: dict[str, Any] = field(default_factory=dict)
    #: for the peer memory heads it recorded (``memory.peer``, by the revision's event id)
    heads: dict[str, Any] = field(default_factory=dict)
    #: event id -> its session's name after the purge
    sessions: dict[str, str] = field(default_factory=dict)
    #: tombstone id -> the entries taken from it
    taken: dict[str, int] = field(default_factory=dict)
    refused: list[Refusal] = field(default_factory=list)


def check_tombstones(events_dir: Path, tombstones: list[Record], same_file: SameFile) -> Checked:
    """The entries of peers' ``sync.purge`` events that are purges of what this log holds.

    An entry is taken only if its payload is this log's copy of the event (this device's own,
    an imported copy without its mark, a recorded peer memory head) with text spans replaced
    by the marker and nothing else (:func:`memtray.core.log.tombstone.purge_problem`); a
    session name likewise. A copy that differs from the purging device's (a merge revision
    holds each device's own fact diff) is purged here with the pattern when the tombstone's
    hash names it (a literal purge). An entry naming an event this log does not hold
    changes nothing; any other is refused."""
    wanted = {str(k) for rec in tombstones for k in _entries(rec, "events")}
    wanted |= {str(k) for rec in tombstones for k in _entries(rec, "sessions")}
    events: dict[str, Any] = {}  # id -> payload of this device's or an imported copy (mark left out)
    heads: dict[str, Any] = {}  # id -> a recorded peer memory head's payload
    names: dict[str, str] = {}  # id -> session as its device names it
    for rec in records_naming(events_dir, wanted):
        if not isinstance(rec.data, dict) or not isinstance(rec.type, str):
            continue
        if rec.type == MemoryPeerHead.TYPE and str(rec.data.get("event_id")) in wanted:
            heads.setdefault(str(rec.data["event_id"]), rec.data.get("data"))
        elif rec.type in EXPORTED and isinstance(rec.id, str) and rec.id in wanted:
            origin = rec.data.get(ORIGIN_KEY)
            session = rec.session
            if isinstance(origin, dict) and isinstance(session, str):
                session = session.removesuffix(f"@{origin.get('device')}")
            events.setdefault(rec.id, {k: v for k, v in rec.data.items() if k != ORIGIN_KEY})
            if isinstance(session, str):
                names.setdefault(rec.id, session)
    out = Checked()
    for rec in tombstones:
        origin = origin_of(rec)
        source = Source("peer", origin.device if origin else "this device", f"purge {rec.id}")
        entries = _entries(rec, "events")
        pairs = [p for i, e in entries.items() for held in (events.get(i), heads.get(i)) if held is not None
                 for p in text_pairs(held, e)]
        pattern = recover_pattern(pairs, str(rec.data.get("salt", "")), str(rec.data.get("pattern_sha256", "")))
        n = 0
        for ident, payload in entries.items():
            took = False
            for held, into in ((events.get(ident), out.payloads), (heads.get(ident), out.heads)):
                if held is None:
                    continue
                problem = purge_problem(held, payload, "data", same_file)
                own = purge_with(pattern, held) if problem is not None and pattern is not None else held
                if problem is not None and own != held:
                    problem = None
                    into[ident] = own  # this copy purged here with the pattern
                elif problem is None:
                    into[ident] = payload
                if problem is not None:
                    out.refused.append(_refused(source, rec, ident, f"not a purge of event {ident}: {problem}"))
                else:
                    took = True
            n += took
        for ident, name in _entries(rec, "sessions").items():
            old = names.get(ident)
            if old is None:
                continue
            if not (isinstance(name, str) and purged_text(old, name)):
                out.refused.append(_refused(source, rec, ident, f"not a purge of the session name of event {ident}"))
                continue
            out.sessions[ident] = name
            n += ident not in out.payloads
        out.taken[rec.id] = n
    return out


def _entries(rec: Record, key: str) -> dict[str, Any]:
    found = rec.data.get(key) if isinstance(rec.data, dict) else None
    return {str(k): v for k, v in found.items()} if isinstance(found, dict) else {}


def _refused(source: Source, rec: Record, ident: str, reason: str) -> Refusal:
    raw = json.dumps({"tombstone": rec.id, "event": ident}).encode()
    return Refusal(source, reason, raw, len(raw), rec.seq, rec.id, rec.type)


def apply_tombstones(app: App, tombstones: list[Record]) -> Applied:
    """Apply peers' ``sync.purge`` events to this home, each entry only if it is a purge of
    what this home holds (:func:`check_tombstones`); each tombstone applied is recorded as a
    ``memory.purged`` naming the device (``memory log``, the doctor).

    Refused (:class:`PurgeError`, the sync keeps it pending) while a consolidation runs."""
    if not tombstones:
        return Applied()
    if app.consolidation.in_flight:
        raise PurgeError("a purge from another device waits: a consolidation is running",
                         hint="It is applied at the next sync.")
    store_ = attachments.AttachmentStore(app.home.root)

    def same_file(old: str, new: str) -> bool:
        a, b = store_.intact(old), store_.intact(new)
        return a is not None and b is not None and purged_bytes(a.read_bytes(), b.read_bytes())

    async def on_worker() -> Applied:
        with app.store.locked():
            got = check_tombstones(app.home.events, tombstones, same_file)
            done = Applied(refused=got.refused)
            if not got.payloads and not got.heads and not got.sessions:
                return done
            before = {r.id: r.data for r in app.store.log.records() if r.id in got.payloads and r.type == Message.TYPE}
            plan = plan_replace(app.home.events, got.payloads, got.sessions, got.heads)
            if plan.segments:
                rewrite_log(app, plan)
                app.store.checkpoint()
                # an attached file the purge rewrote was stored again under a new hash on the
                # purging device (it travels in its new stream); the copy here still holds the
                # text: deleted unless a message the tombstone does not name still uses it
                old = {r.sha256 for d in before.values() for r in attachments.refs_of(d)}
                used = {ref.sha256 for r in app.store.log.records() if r.type == Message.TYPE and old
                        for ref in attachments.refs_of(r.data)}
                attachments.remove(store_, old - used)
            done.events = plan.events
            for rec in tombstones:  # who purged, when, how much: for `memory log` and the doctor
                if not got.taken.get(rec.id):
                    continue
                origin = origin_of(rec)
                app.store.append(MemoryPurged(
                    pattern_sha256=str(rec.data.get("pattern_sha256", "")), salt=str(rec.data.get("salt", "")),
                    events=got.taken[rec.id], by=f"device {origin.device}" if origin else "another device",
                ), id=f"purged:{rec.id}")
                done.tombstones += 1
            return done

    done = app.run(on_worker())
    log.info("applied %d purge tombstone(s) from other devices: %d event(s) rewritten, %d entr(ies) refused",
             done.tombstones, done.events, len(done.refused))
    return done


def follow_tombstones(app: App) -> None:
    """Have ``app``'s sync apply the purge tombstones it imports (the CLI, daemon and desktop call this)."""
    if app.sync is not None:
        app.sync.on_tombstones = lambda recs: apply_tombstones(app, recs)
