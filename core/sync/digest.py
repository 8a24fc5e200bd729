"""A digest of what every synced device must agree on, to compare devices.

Two devices that have synced with each other and made nothing since hold the
same conversation events (each by its event id, wherever it was made), the same
memory text and the same reminders; the order and the seqs of their logs differ
(each device imports in its own order), so the digest leaves those out.
``memtray sync --status`` shows it and the tests compare it across homes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from memtray.core.log.events import SyncPurge
from memtray.core.log.origin import IMPORTED, ORIGIN_KEY
from memtray.core.log.store import Store

_SHARED = IMPORTED - {SyncPurge.TYPE}


def shared_events(store: Store) -> dict[str, Any]:
    """Event id -> (type, payload without the origin mark) of every event that travels."""
    out: dict[str, Any] = {}
    for rec in store.log.records():
        if rec.type in _SHARED:
            out[rec.id] = [rec.type, {k: v for k, v in rec.data.items() if k != ORIGIN_KEY}]
    return out


def state_digest(store: Store) -> str:
    """sha256 over the shared events (by id), the memory text and the reminders' states."""
    state = store.state
    reminders = {rid: [r.text, r.kind, r.spec, r.active, sorted(r.fired)] for rid, r in state.reminders.items()}
    body = {"events": shared_events(store), "memory": state.memory, "reminders": reminders}
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()
