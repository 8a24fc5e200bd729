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

from memtray.core.log.events import Message, SessionScope, SyncPurge
from memtray.core.log.origin import IMPORTED, ORIGIN_KEY
from memtray.core.log.store import Store

#: a conversation's scope counts by what it makes of its messages (below), not by its events: a
#: device that chose scopes before they travelled holds choices no peer ever got (core/sync/announce.py)
_SHARED = IMPORTED - {SyncPurge.TYPE, SessionScope.TYPE}


def shared_events(store: Store) -> dict[str, Any]:
    """Event id -> (type, payload without the origin mark) of every event that travels."""
    out: dict[str, Any] = {}
    for rec in store.log.records():
        if rec.type in _SHARED:
            out[rec.id] = [rec.type, {k: v for k, v in rec.data.items() if k != ORIGIN_KEY}]
    return out


def message_scopes(store: Store) -> dict[str, str]:
    """Message id -> the memory scope of its conversation, for the messages of scoped ones
    (the same on every device: a conversation is filed as ``name@device`` on the others)."""
    sessions = store.state.sessions
    out: dict[str, str] = {}
    for rec in store.log.records():
        s = sessions.get(rec.session) if rec.type == Message.TYPE and rec.session else None
        if s is not None and s.scope:
            out[rec.id] = s.scope
    return out


def state_digest(store: Store) -> str:
    """sha256 over the shared events (by id), the scopes of scoped conversations' messages, the
    memory text and the reminders' states."""
    state = store.state
    reminders = {rid: [r.text, r.kind, r.spec, r.active, sorted(r.fired)] for rid, r in state.reminders.items()}
    body = {"events": shared_events(store), "memory": state.memory, "reminders": reminders}
    scoped = message_scopes(store)
    if scoped:  # a home without scoped conversations digests as it always did
        body["scopes"] = scoped
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()
