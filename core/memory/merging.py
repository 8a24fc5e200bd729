"""Taking in another device's memory: record its revisions, then fast-forward or merge.

:meth:`PeerMerging.merge_peer_heads` is what sync calls with the ``memory.written``
events a peer wrote (:class:`~memtray.core.memory.merge.PeerHead`). Each new one is
logged as a ``memory.peer`` event (its payload verbatim: the log stays the only
source, so a rebuild of ``memory/`` makes the same merges), never applied as it is.
Then, with this device's current revision and every recorded peer revision it does
not contain yet:

* nothing new (the peer's revisions are already in this memory's history): up to date;
* nothing happened here since (this revision is one the peer's follows): a
  fast-forward: the peer's revision is written here *under its own event id* with its
  text, ids and parents, so it is the same revision on both devices and the copy the
  peer later receives back is already known;
* else one merge revision (:func:`~memtray.core.memory.merge.merge_nodes`) whose
  parents are the heads and whose event id derives from them
  (:func:`~memtray.core.memory.merge.merge_id`): a device that merged the same heads
  wrote the same event. Conflicts go to the review queue (kind ``merge-conflict``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memtray.core.base.home import DeviceId
from memtray.core.base.redact import redact, redact_obj
from memtray.core.base.worker import WriterThread, on_writer
from memtray.core.log.events import (
    BadPayload,
    FactLedger,
    MemoryPeerHead,
    MemoryReviewed,
    MemoryWritten,
    Payload,
    ProvenanceOrigin,
    Record,
)
from memtray.core.log.store import Entry
from memtray.core.memory import factdiff
from memtray.core.memory.facts import Ledger
from memtray.core.memory.merge import (
    CONFLICT,
    Dag,
    MergeOutcome,
    Node,
    PeerHead,
    merge_id,
    merge_nodes,
    parents_first,
)
from memtray.core.memory.peerguard import guard_peer
from memtray.core.memory.peers import REVISIONS, Known

if TYPE_CHECKING:
    from memtray.core.log.segments import Position
    from memtray.core.log.store import Store
    from memtray.core.memory.projection import GitProjection

__all__ = ["PeerMerging", "SyncFields", "peer_record_id"]


@dataclass(frozen=True)
class SyncFields:
    """What a merge or fast-forward gives :meth:`MemoryService.write` besides the text."""

    event_id: str | None = None
    parents: Sequence[str] | None = None
    device: str | None = None
    renamed: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # per device: ids the merge renumbered
    relabeled: Mapping[str, str] = field(default_factory=dict)  # this device's ids renumbered since its last revision
    before: Sequence[Entry] = ()  # events logged first


def peer_record_id(event_id: str) -> str:
    """The event id of the ``memory.peer`` recording a peer's revision: one per revision."""
    return "P" + hashlib.sha256(event_id.encode()).hexdigest()[:25].upper()


class PeerMerging:
    """The merge part of :class:`~memtray.core.memory.service.MemoryService`."""

    store: Store
    projection: GitProjection
    write: Callable[..., list[Record]]
    ledger: Callable[[], Ledger]  # this device's current memory with its ids (MemoryService.ledger)
    _device: DeviceId | None = None
    _head_cache: tuple[int, str | None] = (-1, None)
    _known: Known | None = None  # the DAG as far as the log was read ...
    _known_at: Position | None = None  # ... up to here ...
    _known_id: str | None = None  # ... ending with this event

    @property
    def writer(self) -> WriterThread | None:
        return self.projection.writer

    @property
    def device(self) -> str:
        """This device's id (chosen at first use, see :func:`memtray.core.base.home.device_id`),
        read again when ``device.json`` changes (``memtray sync --new-device`` while this runs)."""
        if self._device is None:
            self._device = DeviceId(self.projection.home)
        return self._device.get()

    def head_id(self) -> str | None:
        """The event id of the current memory revision (None before the first)."""
        seq = self.store.state.memory_seq
        last = self.projection.last_written
        if last is not None and last[0] == seq:
            return last[1]
        if self._head_cache[0] != seq:  # not written since start: read it once
            rec = next((r for r in self.store.log.records(seq - 1) if r.seq == seq), None) if seq > 0 else None
            self._head_cache = (seq, rec.id if rec is not None else None)
        return self._head_cache[1]

    def memory_dag(self) -> Known:
        """The memory DAG, read on from where the last call stopped (a full read the first time,
        and whenever the log no longer ends a record there: a purge rewrote it)."""
        from memtray.core.log.store import record_ending_at

        known, pos = self._known, self._known_at
        if known is not None and pos is not None:
            ends = record_ending_at(self.store.log.dir, pos)
            if ends is None or ends.seq != known.seq or ends.id != self._known_id:
                known = None
        if known is None:
            known, pos = Known(), None
        device = self.device
        last_id = self._known_id
        for rec, at in self.store.log.read(pos):
            if rec.type in REVISIONS:
                known.add(rec, device)
            known.seq, pos, last_id = rec.seq, at, rec.id
        self._known, self._known_at, self._known_id = known, pos, last_id
        return known

    @on_writer
    def merge_peer_heads(self, heads: Sequence[PeerHead]) -> MergeOutcome:
        """Record the peer's revisions ``heads`` (oldest first) and merge them into memory:
        at most one new ``memory.written``. Idempotent: heads already known change nothing."""
        self.projection.adopt_worktree()  # a hand edit waiting in the work tree is recorded first
        try:
            return self._take(heads)
        except BaseException:
            self._known = None  # it holds the heads this call added; they were not logged
            raise

    def _take(self, heads: Sequence[PeerHead]) -> MergeOutcome:
        known = self.memory_dag()
        dag = known.dag
        records: list[Entry] = []
        new: list[str] = []
        for h in parents_first(heads):  # several peers' at once: a merge after what it names
            if h.event_id in dag:
                continue
            data = dict(h.data)
            if redact("\n".join(_strings(data))) != "\n".join(_strings(data)):
                data = redact_obj(data)  # secrets never reach this disk, whatever the peer sent
            altered = data != dict(h.data)
            try:  # the peer's revision is kept as it came (its ids are made of it); typed to read it
                peer = MemoryWritten.from_data(data)
            except BadPayload:
                continue  # not a revision (the validating door refuses these before they get here)
            parents = peer.parents if peer.parents is not None else \
                [known.last_peer[h.device]] if h.device in known.last_peer else []
            known.last_peer[h.device] = h.event_id
            dag.add(Node(h.event_id, peer.device or h.device, tuple(parents), h.ts, data,
                         known.seq + 1 + len(records), altered))
            records.append((MemoryPeerHead(device=h.device, event_id=h.event_id, ts=h.ts, data=data,
                                           redacted=altered or None), None, peer_record_id(h.event_id)))
            new.append(h.event_id)
        local = known.head
        mine = dag.ancestors(local) if local else set()
        outside = [i for i, n in dag.nodes.items() if i not in mine and i not in known.local]
        tips = dag.heads([*outside, *([local] if local else [])])
        if not tips or tips == [local]:
            if records:
                self.store.append_many(records)
            said = "memory is up to date" if not new else f"memory already holds {len(new)} revision(s) from {_devices(dag, new)}"
            return MergeOutcome(False, False, True, [], None, said)
        if len(tips) == 1:
            return self._fast_forward(dag, local, mine, dag.nodes[tips[0]], records)
        return self._merge(dag, local, tips, records)

    def _fast_forward(self, dag: Dag, local: str | None, mine: set[str], target: Node,
                      records: list[Entry]) -> MergeOutcome:
        ren = _renames_since(dag, dag.ancestors(target.id) - mine, self.device)
        if local is not None and local in dag:
            info = target.written.facts
            ren = _relabel(dag.nodes[local].ledger, target.ledger, ren, info.get("merged") if info is not None else None)
        own = [dict(i) for i in target.written.flagged or () if i["kind"] == CONFLICT]
        flagged, done = self._carried(dag, dag.ancestors(target.id), mine, target.ledger, own)
        info = target.written.facts or FactLedger(ids=[], next=1)
        new = dag.ancestors(target.id) - mine
        prov = _provenance(dag, new, target.ledger, self.device, {})
        g = guard_peer(self.store.state.memory, self.ledger(), target.text, target.ledger,
                       _oldest_first(dag, dag.ancestors(target.id)), set(prov), ren, target.device)
        if not g.flagged and not target.altered and redact(target.text) == target.text:
            sync = SyncFields(target.id, list(target.parents), target.device, info.get("renamed") or {}, ren, records)
        else:  # held facts, or this version redacts more than the writer's did: a revision of its own, after the peer's
            sync = SyncFields(None, [target.id], self.device, {}, ren, records)
        flagged += g.flagged
        live = set(g.ledger.ids)
        prov = {k: v for k, v in prov.items() if k in live}
        # the same revision as the peer's, the resolutions it names with it (its copy in this
        # device's stream may reach a third device first: without them the conflicts stayed there)
        reviewed = list(target.written.reviewed or ())
        self.write(g.text, reason="merge", facts=g.ledger, flagged=flagged or None,
                   merged=info.get("merged") or None, provenance=prov or None, sync=sync, extra=done or None,
                   reviewed=reviewed or None)
        sha = self.projection.git.head()
        conflicts = [i for i in flagged if i.get("kind") == CONFLICT]
        return MergeOutcome(False, True, False, self._conflicts(conflicts), sha,
                            f"memory fast-forwarded to {target.device}'s revision" + (
                                f" ({len(conflicts)} conflict(s) to review)" if conflicts else "") + _held(g.flagged))

    def _merge(self, dag: Dag, local: str | None, tips: list[str],
               records: list[Entry]) -> MergeOutcome:
        merged = merge_nodes(dag, tips)
        stored = redact(merged.text)
        if stored != merged.text and len(factdiff.parse(stored)) == len(merged.ledger.facts):
            # what is stored is what the id is made of (one device's rules may redact more)
            merged.text, merged.ledger = stored, Ledger.with_ids(stored, merged.ledger.ids, merged.ledger.next)
        ren = merged.renamed.get(self.device, {})
        new = set().union(*(dag.ancestors(t) for t in tips)) - (dag.ancestors(local) if local else set())
        found = _provenance(dag, new, merged.ledger, self.device, merged.renamed)
        others = _devices(dag, [t for t in tips if t != local])
        every = set().union(*(dag.ancestors(t) for t in tips))
        g = guard_peer(self.store.state.memory, self.ledger(), merged.text, merged.ledger, _oldest_first(dag, every),
                       set(found), ren, others)
        merged.text, merged.ledger = g.text, g.ledger  # what is held is not merged (nor part of the merge's id)
        mid = merge_id(tips, merged)
        live = set(g.ledger.ids)
        theirs = {fid for fid, dev in merged.origin.items() if dev != self.device and fid in live}
        prov = {fid: found.get(fid) or {"merged_from": merged.origin[fid]} for fid in theirs}
        flagged, done = self._carried(dag, every, dag.ancestors(local) if local else set(), merged.ledger,
                                      list(merged.conflicts))
        flagged += g.flagged
        self.write(merged.text, reason="merge", facts=merged.ledger, flagged=flagged or None,
                   dropped_reasons=merged.dropped, merged=merged.merged or None, provenance=prov or None,
                   sync=SyncFields(mid, tips, self.device, merged.renamed, ren, records), extra=done or None)
        sha = self.projection.git.head()
        n = len(merged.conflicts)
        return MergeOutcome(True, False, False, self._conflicts([i for i in flagged if i.get("kind") == CONFLICT]), sha,
                            f"memory merged with {others}" + (f"; {n} conflict(s) kept for review" if n else "")
                            + _held(g.flagged))

    def _carried(self, dag: Dag, every: set[str], mine: set[str], ledger: Ledger,
                 own: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[Payload, str | None]]]:
        """The merge conflicts a merge or fast-forward to ``ledger`` holds for review here: its own
        (``own``) and those the other devices' merges among ``every`` (the revisions it follows) but
        not in ``mine`` (this device's history) flagged and that are still open against ``ledger``,
        so every device that has a merge is told of its conflicts, not only the one that made it.
        An item a revision among ``every`` resolved (its ``reviewed``: an accept or a restore on any
        device) is not carried, and is resolved here too (the ``memory.reviewed`` events returned)."""
        from memtray.core.memory.factops import waiting

        nodes = sorted((dag.nodes[i] for i in every if i in dag), key=lambda n: (n.seq, n.ts, n.id))
        settled: dict[str, bool] = {}  # an undo of a choice (``reopened``) opens it again
        for n in nodes:
            settled.update({r: True for r in n.written.reviewed or ()})
            settled.update({r: False for r in n.written.reopened or ()})
        reviewed = {r for r, done in settled.items() if done}
        texts = {f.id: f for f in ledger.facts}
        by_norm = {f.norm: f.id for f in ledger.facts}
        out = {str(i.get("id")): i for i in own if str(i.get("id")) not in reviewed}
        for n in nodes:
            if n.id in mine:
                continue
            for raw in n.written.flagged or ():
                if raw["kind"] != CONFLICT or raw["id"] in reviewed:
                    continue
                item: dict[str, Any] = dict(raw)
                item.pop("seq", None)
                words = {factdiff.normalize(w) for w in [*raw.get("words", {}).values(), raw["text"]] if w}
                fid = raw["fact_id"]
                if fid not in texts or texts[fid].norm not in words:  # later merges renumber: the words decide
                    fid = next((by_norm[w] for w in sorted(words) if w in by_norm), fid)
                item["fact_id"] = fid
                if waiting([{**item, "seq": 0}], ledger):
                    out.setdefault(str(item.get("id")), item)
        done: list[tuple[Payload, str | None]] = [
            (MemoryReviewed(item=i, action="synced"), None)
            for i in sorted(reviewed) if i in self.store.state.review]
        return list(out.values()), done

    def _conflicts(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Review items as the sync shows them (``memtray sync --json``'s ``conflicts``, the
        shape docs/CLI.md gives: the review item itself), with this device's words and the
        other's beside them (``ours``, ``theirs``; None: removed there)."""
        out = []
        for i in items:
            words = dict(i.get("words") or {})
            ours = words.pop(self.device, i.get("text"))
            theirs = next(iter(words.values()), None) if words else None
            out.append({"id": i.get("id"), "kind": i.get("kind") or CONFLICT, "conflict": i.get("conflict"),
                        "fact_id": i.get("fact_id"), "text": i.get("text"), "section": i.get("section"),
                        "reason": i.get("reason"), "words": dict(i.get("words") or {}),
                        "ours": ours, "theirs": theirs, "review": i.get("id")})
        return out


def _provenance(dag: Dag, ids: set[str], ledger: Ledger, device: str,
                renames: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, Any]]:
    """Where the facts of ``ledger`` that another device wrote came from: the messages (their
    device and seqs there) its revisions among ``ids`` name, for ``memory why`` here."""
    live = {f.id: f for f in ledger.facts}
    by_norm = {f.norm: f.id for f in ledger.facts}

    def here(fid: str, text: Any) -> str | None:
        """The fact of ``ledger`` an older revision's ``fid`` is (ids are per device and later
        merges renumber them: the words decide when they disagree)."""
        if fid in live and (not text or live[fid].norm == factdiff.normalize(str(text))):
            return fid
        return by_norm.get(factdiff.normalize(str(text))) if text else None

    out: dict[str, dict[str, Any]] = {}
    for n in sorted((dag.nodes[i] for i in ids if i in dag), key=lambda n: (n.seq, n.ts, n.id)):
        if n.device == device:
            continue
        ren = renames.get(n.device) or {}
        w = n.written
        if w.reason in ("consolidation", "redo") and w.consolidation and w.diff:
            # what that consolidation wrote (its model may have named no sources): its messages there
            for item in [*w.diff["added"], *(c["new"] for c in w.diff["changed"])]:
                got = here(ren.get(item["id"], item["id"]), item["text"])
                if got is not None:
                    fid = got
                    there = ProvenanceOrigin(device=n.device, consolidation=w.consolidation, revision=n.id)
                    if w.messages is not None:
                        there["messages"] = w.messages
                    out[fid] = {"merged_from": n.device, "text": item["text"] or live[fid].text, "origin": there}
        for named, p in (w.provenance or {}).items():
            at = here(ren.get(named, named), p.get("text"))
            if at is None:
                continue
            fid = at
            if p.get("source_seqs"):
                origin = ProvenanceOrigin(device=n.device, seqs=p.get("source_seqs", []), revision=n.id)
                if w.consolidation:
                    origin["consolidation"] = w.consolidation
            elif "origin" in p:
                origin = p["origin"]
            else:
                continue
            out[fid] = {"merged_from": n.device, "origin": origin, "text": str(p.get("text") or live[fid].text)}
    return out


def _oldest_first(dag: Dag, ids: set[str]) -> list[Node]:
    return sorted((dag.nodes[i] for i in ids if i in dag), key=lambda n: (n.seq, n.ts, n.id))


def _held(items: Sequence[Mapping[str, Any]]) -> str:
    """What the summary line says of the facts the guards held (see :mod:`peerguard`)."""
    return f"; {len(items)} fact(s) held for review (`memtray memory review`)" if items else ""


def _strings(obj: Any) -> Iterator[str]:
    """Every string in ``obj`` (keys too): one redaction scan of a payload instead of thousands."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _strings(v)


def _devices(dag: Dag, ids: Sequence[str]) -> str:
    devs = sorted({dag.nodes[i].device for i in ids if i in dag})
    return ", ".join(devs) or "another device"


def _relabel(before: Ledger, after: Ledger, ren: Mapping[str, str], merged: Any) -> dict[str, str]:
    """The ids this device's facts (``before``) have in ``after``, where they moved (old -> new).

    The merges' ``renamed`` maps (``ren``) are keyed by the device whose revision was merged,
    and that is not always the device that wrote a fact: a third device's merge of another's
    merge renumbers this device's facts under that other device's key. So a fact is where its
    words are (unless those words are a merge's survivor of another fact: a restatement, not a
    renumbering); a fact reworded meanwhile takes the merges' renumbering, when no other took it."""
    now = {f.id: f.norm for f in after.facts}
    by_norm = {f.norm: f.id for f in after.facts}
    survivors = set(merged) if isinstance(merged, Mapping) else set()
    out: dict[str, str] = {}
    taken: set[str] = set()
    for f in before.facts:
        new = f.id if now.get(f.id) == f.norm else by_norm.get(f.norm)
        if new is None or (new != f.id and new in survivors):
            continue
        taken.add(new)
        if new != f.id:
            out[f.id] = new
    for f in before.facts:
        if f.id in out or now.get(f.id) == f.norm or f.norm in by_norm:
            continue
        new = ren.get(f.id)
        if new is not None and new in now and new not in taken:
            taken.add(new)
            out[f.id] = new
    return out


def _renames_since(dag: Dag, ids: set[str], device: str) -> dict[str, str]:
    """The ids of ``device``'s facts that the merges among ``ids`` renumbered (old -> new)."""
    out: dict[str, str] = {}
    for n in sorted((dag.nodes[i] for i in ids), key=lambda n: (n.ts, n.id)):
        info = n.written.facts
        ren = info.get("renamed", {}) if info is not None else {}
        for old, new in ren.get(device, {}).items():
            out = {k: (new if v == old else v) for k, v in out.items()}
            out.setdefault(old, new)
    return out
