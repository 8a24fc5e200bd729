"""What a sync did: its report (:class:`SyncReport`), the status files ``<home>/sync/status.json``
and one per other remote, and their shape.

``status.json`` is what the last sync with the configured remote (or, with none
configured, any remote) did; a one-off sync with another remote keeps its own,
``status-<key>.json`` beside it, so it never counts against the configured one.
Every file written, and every ``memtray sync --status --json``, has all the keys
of :data:`SHAPE` (null, 0 or [] for what is not known): docs/CLI.md documents it
as a contract.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memtray.core.base.home import Home

#: every key of a status and its value when nothing is known (docs/CLI.md)
SHAPE: dict[str, Any] = {
    "remote": None, "device": None, "last_attempt": None, "last_success": None, "last_error": None,
    "hint": None, "failures": 0, "imported": 0, "pushed": 0, "peers": [], "conflicts": [],
    "pending_heads": 0, "pending_purges": [], "notes": [], "refused": [], "refusals": 0,
    "encrypted": None, "devices": 0,
}


@dataclass
class SyncReport:
    """What one sync did (``memtray sync --json``; docs/CLI.md)."""

    remote: str
    device: str
    imported: int = 0
    pushed: int = 0
    peers: dict[str, int] = field(default_factory=dict)  # device -> events imported now
    merges: list[str] = field(default_factory=list)  # MergeOutcome summaries
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pending_heads: int = 0  # kept in the --json shape (docs/CLI.md); every memtray since 0.3 merges, so 0
    purges: int = 0  # purge tombstones of other devices applied now
    republished: bool = False  # this device's stream was published again as a new history (a purge)
    pending_purges: list[str] = field(default_factory=list)  # tombstone event ids not applied yet
    #: peers' memory revisions handed to the memory merge: they travel but are not imported as events
    merged_heads: int = 0
    new_device: str | None = None  # the id this home took now (``--new-device``)
    attachments: int = 0  # attachment files of other devices' messages stored here now
    #: what the door refused (an event of a peer, a whole stream for this sync), at most
    #: ``service.REPORTED_REFUSALS`` of them; ``refusals`` counts all. Each is in the quarantine too.
    refused: list[dict[str, Any]] = field(default_factory=list)
    refusals: int = 0
    #: what this device pushed is sealed (signed and encrypted): an encrypted remote
    encrypted: bool = False
    #: the paired devices (not removed) this device knows of; 0 on a clear remote
    devices: int = 0
    #: this sync made this device's sync keys (its first sync with a new remote: encrypted by default)
    keys_created: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def remote_key(url: str) -> str:
    return hashlib.sha1(url.encode("utf-8")).hexdigest()[:12]


def complete(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with every key of :data:`SHAPE` (missing ones at their empty value)."""
    return {**{k: (list(v) if isinstance(v, list) else v) for k, v in SHAPE.items()}, **body}


def status_file(home: Home, url: str | None, configured: str) -> Path:
    """The status file of a sync with ``url`` (None: the configured remote) when the
    ``sync_remote`` setting is ``configured``."""
    where = home.root / "sync"
    configured = configured.strip()
    if url is not None and configured and url != configured:
        return where / f"status-{remote_key(url)}.json"
    return where / "status.json"


def read_status(home: Home, path: Path | None = None) -> dict[str, Any]:
    """What the last sync recorded in ``path`` (default ``status.json``): ``{}`` before the
    first; never raises."""
    try:
        body = json.loads((path or home.root / "sync" / "status.json").read_text(encoding="utf-8"))
        return body if isinstance(body, dict) else {}
    except (OSError, ValueError):
        return {}
