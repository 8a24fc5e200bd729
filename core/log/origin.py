"""Where an event was made: the origin mark of events imported from another device.

Each device's log holds the events it made itself (no mark) and the events it
imported from its peers through sync (see docs/SYNC.md). An imported event keeps
its type, its payload and its original event id (so importing it twice is a
no-op), and its payload carries one extra member::

    "origin": {"device": "d1a2b3c4d5e6f", "seq": 42, "ts": "2026-11-30T09:15:02.123Z"}

(the device that made it, its seq and time *there*). The mark lives in the payload
rather than the envelope so that the codec, the checksums and every reader of
older versions are untouched; payload classes ignore members they do not know.

This module also says which events travel at all (:data:`EXPORTED`): a device's
own conversation, session (reset, memory scope), reminder and memory events and its purge tombstones;
device-local bookkeeping (consolidations, checkpoints of tools, ...) stays home.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memtray.core.log.events import (
    BadRecord,
    DeviceNamed,
    MemoryPeerHead,
    MemoryWritten,
    Message,
    Record,
    ReminderCancelled,
    ReminderFired,
    ReminderScheduled,
    SessionReset,
    SessionScope,
    SyncPurge,
    decode_raw,
    envelopes,
)
from memtray.core.log.projections import KNOWN_TYPES
from memtray.core.log.segments import list_segments

ORIGIN_KEY = "origin"
#: on a message imported from another assistant: when it was sent there (core/migrate)
SENT_AT_KEY = "sent_at"

#: events a device pushes in its own stream. ``memory.written`` travels but is not
#: imported as-is: its peers hand it to the memory merge (``memory.merge``).
EXPORTED = frozenset({
    Message.TYPE,
    SessionReset.TYPE,
    SessionScope.TYPE,  # a conversation keeps its memory scope on every device
    ReminderScheduled.TYPE,
    ReminderFired.TYPE,
    ReminderCancelled.TYPE,
    MemoryWritten.TYPE,
    SyncPurge.TYPE,
    DeviceNamed.TYPE,
})

#: exported events a peer appends to its own log (with the origin mark)
IMPORTED = EXPORTED - {MemoryWritten.TYPE}

#: the types this version knows that never travel: one in a peer's stream is refused (a
#: ``sync.pulled`` from a peer would move this device's cursors). A type this version does
#: not know travels: a newer device exports it, and it is kept verbatim here.
LOCAL_TYPES = KNOWN_TYPES - EXPORTED



@dataclass(frozen=True)
class Origin:
    """The device an imported event was made on, its seq and time there, and its id."""

    device: str
    seq: int
    ts: str
    id: str

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "seq": self.seq, "ts": self.ts}


def origin_of(record: Record) -> Origin | None:
    """The origin of an imported ``record``, or None for an event made on this device."""
    mark = record.data.get(ORIGIN_KEY) if isinstance(record.data, Mapping) else None
    if not isinstance(mark, Mapping):
        return None
    device, seq, ts = mark.get("device"), mark.get("seq"), mark.get("ts")
    if not isinstance(device, str) or not isinstance(seq, int) or not isinstance(ts, str):
        return None
    return Origin(device, seq, ts, record.id)


def said_at(record: Record) -> str:
    """When ``record`` was made: for an event imported from a peer the time on its device
    (the origin mark); for a message imported from another assistant (``memtray import``)
    the time it was sent there (``sent_at``); else its own ``ts``. Everything that shows or
    orders messages by time uses this.

    A peer's clock can be off. One that is ahead would date a message after it arrived
    here, which cannot be: such a time is capped at the import time (``record.ts``, this
    device's clock). One that is behind cannot be told from a message said long ago and
    is shown as the peer said it (docs/SYNC.md, "Clocks"). The same holds for ``sent_at``,
    which is given in this log's own form (milliseconds, ``Z``)."""
    data = record.data
    sent = data.get(SENT_AT_KEY) if record.type == Message.TYPE and isinstance(data, Mapping) else None
    if isinstance(sent, str):
        try:
            when = _parse(sent)
            if when <= _parse(record.ts):
                return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
        except ValueError:
            pass
    origin = origin_of(record)
    if origin is None:
        return record.ts
    try:
        if _parse(origin.ts) > _parse(record.ts):
            return record.ts
    except ValueError:
        return record.ts
    return origin.ts


def _parse(ts: str) -> datetime:
    when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def is_imported(data: Mapping[str, Any]) -> bool:
    """True if a payload carries an origin mark (the fold's fast check)."""
    return ORIGIN_KEY in data


def marked(record: Record, device: str) -> dict[str, Any]:
    """The payload of a peer's ``record`` as this device logs it: verbatim plus the mark."""
    data = dict(record.data)
    data[ORIGIN_KEY] = {"device": device, "seq": record.seq, "ts": record.ts}
    return data


def peer_session(session: str | None, device: str) -> str:
    """The session an imported conversation is filed under here: the peer's own name
    with its device, so two devices' "quick" chats never interleave in one session."""
    return f"{session or 'default'}@{device}"


def owners(events_dir: Path, ids: Iterable[str]) -> dict[str, str | None]:
    """For each of ``ids`` already in the log: the device it came from (its origin mark), or
    None for an event this device made. Ids not in the log are left out. One pass over the
    segments that parses only the lines holding one of ``ids``."""
    wanted = set(ids)
    out: dict[str, str | None] = {}
    if not wanted:
        return out
    for _number, path in list_segments(events_dir):
        try:
            lines = path.read_bytes().split(b"\n")
        except OSError:
            continue
        if lines and lines[-1] == b"":
            lines.pop()
        found = envelopes(lines)
        hits = ([i for i, ident in enumerate(found[1]) if ident in wanted] if found is not None
                else range(len(lines)))
        for i in hits:
            try:
                rec = decode_raw(lines[i])
            except BadRecord:
                continue
            if not isinstance(rec.id, str) or not isinstance(rec.type, str) or rec.id not in wanted:
                continue
            origin = origin_of(rec)
            if rec.type == MemoryPeerHead.TYPE or (rec.type not in EXPORTED and rec.type in KNOWN_TYPES):
                continue  # bookkeeping of this device, not an event that travels
            out.setdefault(rec.id, origin.device if origin is not None else None)
    return out


def records_naming(events_dir: Path, words: Iterable[str]) -> Iterator[Record]:
    """Every readable record of the log whose line holds one of ``words`` (event ids: a
    byte search first, so only those lines are parsed; a damaged line is left out)."""
    needles = [w.encode() for w in set(words)]
    if not needles:
        return
    for _number, path in list_segments(events_dir):
        for line in path.read_bytes().split(b"\n"):
            if not line or not any(n in line for n in needles):
                continue
            try:
                yield decode_raw(line)
            except BadRecord:
                continue
