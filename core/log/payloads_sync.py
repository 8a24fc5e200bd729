"""Payloads of sync and of the log's own repairs: ``sync.purge``, ``sync.pulled``, ``device.named``, ``log.damaged``.

Registered in the one :data:`~memtray.core.log.schema.SCHEMA` (conventions: core/log/payloads.py).
See docs/SYNC.md for what travels between devices.
"""

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from memtray.core.log.payloads import OriginMark
from memtray.core.log.schema import SCHEMA, Payload


@SCHEMA.register
@dataclass(frozen=True)
class SyncPurge(Payload):
    """A purge's tombstone for the other devices: every shared event the purge changed, as it
    is after the purge (never the pattern), so each device gives its copy the same payload.

    ``events`` maps an event id to its payload after the purge: the payload of whatever type
    that event is (a ``memory.peer``'s entry is the peer revision's own payload), so an entry
    is a raw mapping, checked against the class of the event it replaces when it is applied.
    """

    TYPE: ClassVar[str] = "sync.purge"
    pattern_sha256: str  # sha256 of salt + pattern (utf-8), hex
    salt: str
    events: dict[str, dict[str, Any]]
    #: event id -> the session name after the purge, for events whose session name held the pattern
    sessions: dict[str, str] | None = None
    origin: OriginMark | None = None


@SCHEMA.register
@dataclass(frozen=True)
class SyncPulled(Payload):
    """How far a peer device's stream is imported, appended in the same write as the events it
    imported (so the cursor and the events agree after a crash)."""

    TYPE: ClassVar[str] = "sync.pulled"
    device: str
    commit: str  # the peer stream's commit everything up to ``through`` came from ("" : none yet)
    through: int  # the peer's last imported seq


@SCHEMA.register
@dataclass(frozen=True)
class LogDamaged(Payload):
    """A placeholder ``memtray doctor --repair`` writes for each record it moved out of a damaged
    segment, so the sequence stays gapless: where the damaged lines went and how many."""

    TYPE: ClassVar[str] = "log.damaged"
    side_file: str
    lines: int


#: a device id (core/base/home.py ``device_id``), and the longest name a device is given
DEVICE_ID = re.compile(r"d[0-9a-f]{12}")
DEVICE_NAME_MAX = 40


@SCHEMA.register
@dataclass(frozen=True)
class DeviceNamed(Payload):
    """The user named a device ("Laptop"): shown wherever the device is (merge conflicts, where a
    fact came from, sync status), its id only as detail. It travels, so every device shows the
    same name; the newest naming of a device in a log wins (an empty ``name`` clears it)."""

    TYPE: ClassVar[str] = "device.named"
    device: str
    name: str
    origin: OriginMark | None = None
