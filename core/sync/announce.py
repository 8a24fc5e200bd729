"""What a device says again when it starts exporting a type it kept home before.

A device's stream carries its events from where it last pushed (core/sync/service.py). An
event type this version exports that an older one did not (``session.scope``: a
conversation's memory scope) would reach peers only for what is written from now on: a
conversation whose scope was chosen before the upgrade, behind the push cursor, would stay
global on every other device. So, once, when the exported types grow, the device appends
its conversations' current scopes again (the same value: nothing changes here) and they go
out with the next push. ``<home>/sync/exported.json`` remembers the types exported at the
last push; a home that pushed before without it was written by a version that did not
export ``session.scope``.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from memtray.core.base.errors import MemtrayError
from memtray.core.base.fsutil import atomic_write
from memtray.core.log.events import SessionScope
from memtray.core.log.origin import EXPORTED, ORIGIN_KEY
from memtray.core.log.store import Store

FILE = "exported.json"
#: what a version without this file exported (it kept a conversation's scope home)
BEFORE = EXPORTED - {SessionScope.TYPE}


def catch_up(store: Store, folder: Path, exported: Collection[str], pushed_through: int | None) -> int:
    """Append again this device's conversations' scopes chosen at or before ``pushed_through``
    (the last seq its stream holds; None: it never pushed, everything will go) when
    ``session.scope`` was not exported then; remember what is exported now. The count appended."""
    path = folder / FILE
    try:
        before = set(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        before = set(BEFORE) if pushed_through is not None else set(exported)
    appended = 0
    if SessionScope.TYPE in exported and SessionScope.TYPE not in before and pushed_through is not None:
        last: dict[str, int] = {}  # session -> seq of this device's newest scope choice
        for rec in store.log.records():
            if rec.type == SessionScope.TYPE and rec.session and ORIGIN_KEY not in rec.data:
                last[rec.session] = rec.seq
        sessions = store.state.sessions
        for key, seq in sorted(last.items()):
            if seq <= pushed_through and key in sessions:
                store.append(SessionScope(scope=sessions[key].scope or "global"), session=key)
                appended += 1
    if before != set(exported) or not path.exists():
        try:
            atomic_write(path, json.dumps(sorted(exported)) + "\n")
        except (OSError, MemtrayError):
            pass  # asked again at the next push: appending again is harmless (the same scopes)
    return appended
