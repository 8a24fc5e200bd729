"""Provenance coverage: every fact in MEMORY.md traced to the events it came from.

:func:`trace` folds the ``memory.written`` events of the log (each records
its fact diff) and gives every fact of the current memory an origin:

* added by a consolidation (or redo): the consolidation and its message range;
* added by the agent's ``remember``: the user message it answered;
* written by the user (hand edit, review): that event;
* imported (``memtray import``): the import item (its source and key) that carried it;
* written by an MCP client (``remember`` through ``memtray mcp``): that client;
* brought back by a restore or rollback: the origin it had before it was
  dropped (the restore / rollback event is kept in ``via``);
* brought in by adopting a rebuild: the rebuild step and its messages;
* reworded: the old wording's origin plus the rewording event;
* brought in by a merge or fast-forward from another device (sync): the device, its
  revision and consolidation, and its messages here once they are imported (a fact of
  another device whose messages are not imported yet is "from device X", not a problem).
  A fact of this device that a merge only renumbered (``relabeled``) keeps its origin.

A model-written fact whose sources are unknown has *no provenance*;
:func:`check_provenance` reports those for ``memtray doctor``. Read-only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memtray.core.log.events import (
    ConsolidationStarted,
    DiffFact,
    MemoryWritten,
    Message,
    Provenance,
    ProvenanceOrigin,
    Record,
)
from memtray.core.log.integrations import ImportItem
from memtray.core.log.origin import origin_of
from memtray.core.memory import factdiff
from memtray.core.memory.facts import Ledger

if TYPE_CHECKING:
    from memtray.core.base.findings import Finding
    from memtray.core.base.home import Home

USER_REASONS = ("user-edit", "review")
#: who wrote a fact, by the reason of the revision that gave it its words (Origin.written_by)
WRITERS = {
    "consolidation": "a chat (consolidation)", "redo": "a chat (consolidation redone)", "agent": "a chat",
    "user-edit": "you", "review": "you (review)", "import": "an import", "adopt": "a rebuild",
    "rebuild": "a rebuild",
}
RETURN_REASONS = ("restore", "rollback", "adopt", "rebuild")


@dataclass
class Origin:
    fact_id: str
    text: str
    event_seq: int  # the memory.written that introduced the fact
    reason: str
    source: str
    consolidation: str | None = None
    message_seqs: list[int] = field(default_factory=list)
    first_seq: int | None = None  # message range of a consolidation
    last_seq: int | None = None
    session: str | None = None
    rebuild: str | None = None
    via: list[int] = field(default_factory=list)  # later events that changed or brought it back
    imported: dict[str, Any] = field(default_factory=dict)  # the import item (source, key, import id)
    client: str | None = None  # the MCP client that wrote it
    device: str | None = None  # another device that introduced it (sync), else None: this one
    revision: str | None = None  # that device's revision (event id) that introduced it
    candidate_seqs: list[int] = field(default_factory=list)  # messages it read (imported from that device)
    peer_origin: ProvenanceOrigin = field(default_factory=lambda: ProvenanceOrigin())  # as the merge recorded it
    problem: str | None = None  # why it has no provenance

    def written_by(self) -> str:
        """Who wrote the fact, in words: a chat, the user, an MCP client by name, an import,
        another device."""
        if self.device:
            return f"device {self.device}"
        if self.client:
            return f"{self.client} (MCP)"
        return WRITERS.get(self.reason, "you" if self.source == "user" else self.reason)

    @property
    def ok(self) -> bool:
        return self.problem is None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def trace(records: Iterable[Record]) -> tuple[str, dict[str, Origin]]:
    """(current memory, origin of each of its facts by fact id)."""
    cons: dict[str, tuple[str, int | None, int | None]] = {}
    current: dict[str, Origin] = {}
    gone: dict[str, Origin] = {}
    memory = ""
    imported: dict[tuple[str, int], int] = {}  # (device, seq there) -> seq here of an imported message
    items: dict[int, dict[str, Any]] = {}  # seq of an import's memory.written -> its import.item
    for rec in records:
        if rec.type == ConsolidationStarted.TYPE:
            c = ConsolidationStarted.of(rec)
            cons[c.consolidation] = (rec.session or "default", c.first_seq, c.last_seq)
            continue
        if rec.type == Message.TYPE and (org := origin_of(rec)) is not None:
            imported[(org.device, org.seq)] = rec.seq
            continue
        if rec.type == ImportItem.TYPE:
            it = ImportItem.of(rec)
            if it.memory_seq is not None:
                items[it.memory_seq] = {"import_id": it.import_id, "source": it.source, "key": it.key, "kind": it.kind}
            continue
        if rec.type != MemoryWritten.TYPE:
            continue
        d = MemoryWritten.of(rec)
        if d.relabeled:  # a merge renumbered this device's ids: same facts
            moved = {was: current.pop(was) for was in d.relabeled if was in current}
            for was, kept in moved.items():
                kept.fact_id = d.relabeled[was]
                current[kept.fact_id] = kept
        diff = d.diff
        for item in diff["dropped"] if diff else []:
            o = current.pop(item["id"], None)
            if o is not None:
                gone[o.fact_id] = o
        for ch in diff["changed"] if diff else []:
            old = current.pop(ch["old"]["id"], None)
            new = _origin(rec, d, ch["new"], cons, gone)
            if old is not None:
                gone[old.fact_id] = old
                if d.source == "model" and new.ok:
                    new.via = [*old.via, old.event_seq]  # the model rewrote an older fact from new messages
                else:  # a rewording by the user (or a restore) keeps where the fact came from
                    new = Origin(**{**old.to_json(), "fact_id": new.fact_id, "text": new.text,
                                    "via": [*old.via, rec.seq]})
            current[new.fact_id] = new
        for item in diff["added"] if diff else []:
            current[item["id"]] = _origin(rec, d, item, cons, gone)
        memory = d.memory
        facts = Ledger.of(memory, d.facts).facts  # the event's fact ids (content ids for old events)
        ids = {f.id for f in facts}
        for f in facts:  # a fact the recorded diff does not explain (should not happen)
            if f.id not in current:
                current[f.id] = _origin(rec, d, DiffFact(id=f.id, section=f.section, text=f.text), cons, gone)
        for fid in [k for k in current if k not in ids]:
            gone[fid] = current.pop(fid)
    for o in current.values():  # another device's messages, as far as they are imported now
        _resolve(o, imported)
        if o.reason == "import" and o.problem is None:  # the import.item follows its memory.written
            o.imported = items.get(o.event_seq, {})
            if not o.imported:
                o.problem = f"import event {o.event_seq} names no import item"
    return memory, current


def _resolve(o: Origin, imported: dict[tuple[str, int], int]) -> None:
    peer, org = o.device, o.peer_origin
    if peer is None:
        return
    seqs = [imported[(peer, s)] for s in org.get("seqs", ()) if (peer, s) in imported]
    if seqs:
        o.message_seqs = sorted(seqs)
    span = org.get("messages")
    if span is not None and span["last_seq"] is not None:
        lo, hi = span["first_seq"], span["last_seq"]
        o.candidate_seqs = sorted(v for (dev, s), v in imported.items() if dev == peer and lo <= s <= hi)


def _origin(rec: Record, d: MemoryWritten, item: DiffFact, cons: dict[str, tuple[str, int | None, int | None]],
            gone: dict[str, Origin]) -> Origin:
    reason, source = d.reason, d.source
    prov = d.provenance.get(item["id"], Provenance()) if d.provenance else Provenance()
    o = Origin(item["id"], item["text"], rec.seq, reason, source, consolidation=d.consolidation,
               client=d.client or None)
    seqs = [s for s in prov.get("source_seqs", []) if s]
    if reason in ("consolidation", "redo"):
        c = cons.get(o.consolidation or "")
        if c is None or c[1] is None or c[2] is None:
            o.problem = f"consolidation {o.consolidation} has no recorded message range"
        else:
            o.session, o.first_seq, o.last_seq = c
        return o
    if reason in RETURN_REASONS:
        earlier = gone.get(item["id"])
        if earlier is not None:
            return Origin(**{**earlier.to_json(), "via": [*earlier.via, rec.seq]})
        o.rebuild = prov.get("rebuild")
        if seqs:
            o.message_seqs = seqs
        elif source != "user" or (reason in ("adopt", "rebuild") and not prov):
            o.problem = f"{reason} event {rec.seq} does not say where the fact came from"
        return o
    if reason == "merge":  # another device's fact (or a fast-forward to its revision)
        org = prov.get("origin", ProvenanceOrigin())
        o.device = org.get("device") or prov.get("merged_from") or d.device or None
        o.revision, o.consolidation = org.get("revision"), org.get("consolidation")
        o.peer_origin = org
        return o
    if seqs:
        o.message_seqs = seqs
        return o
    if source == "user" or reason in USER_REASONS:
        return o
    if reason == "import" and source == "import":  # its import item is found once the log is read
        return o
    if source == "mcp" and d.client:  # the user's other tool, named by the write
        o.client = d.client
        return o
    o.problem = f"{reason} by the {source} at event {rec.seq} without a source message"
    return o


def check_provenance(home: Home) -> list[Finding]:
    """Doctor: every fact in MEMORY.md maps to the event(s) it came from or the user edit that wrote it."""
    from memtray.core.base.errors import MemtrayError
    from memtray.core.base.findings import Finding
    from memtray.core.log.eventlog import EventLog

    if not home.events.exists():
        return []
    elog = EventLog.open(home.events, readonly=True)
    try:
        memory, origins = trace(elog.records())
    except MemtrayError:
        return []  # the log check reports the damage
    finally:
        elog.close()
    facts = factdiff.parse(memory)
    if not facts:
        return []
    missing = [o for o in origins.values() if not o.ok]
    if not missing:
        return [Finding(True, f"provenance: all {len(facts)} facts in MEMORY.md trace to the events they came from",
                        code="provenance")]
    shown = "; ".join(f"{o.text[:60]!r} ({o.problem})" for o in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return [Finding(
        False, f"{len(missing)} of {len(facts)} facts in MEMORY.md have no provenance", shown + more,
        code="provenance",
    )]
