"""Memory revisions of other devices: the DAG read from the log, their side line in git.

Every ``memory.written`` of this log and every ``memory.peer`` (a revision another
device wrote, recorded by :meth:`~memtray.core.memory.service.MemoryService.merge_peer_heads`)
is a node of the DAG :mod:`memtray.core.memory.merge` works on. The log is the only
source: :func:`memory_dag` reads it, and :class:`PeerLine` gives the git projection the
parents of a merge revision: this device's previous commit first, then a commit of its
own for each other revision it follows, on a side line (``refs/memtray/peers/<device>``)
made from the recorded peer revisions. Those commits are deterministic (the event's
text, time and ids; parents only among what the log held before it), so a rebuild of
``memory/`` from the log makes the same graph, SHA for SHA, and ``git log --graph``
shows where each device's memory went and where they met.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memtray.core.base.clock import parse_ts
from memtray.core.log.events import (
    BadPayload,
    MemoryPeerHead,
    MemoryWritten,
    Message,
    ProvenanceOrigin,
    Record,
)
from memtray.core.memory.merge import Dag, Node
from memtray.core.memory.revisions import apply_history, merge_history

if TYPE_CHECKING:
    from memtray.core.log.store import Store
    from memtray.core.memory.gitrepo import GitRepo

#: the events that are revisions of the DAG
REVISIONS = (MemoryWritten.TYPE, MemoryPeerHead.TYPE)
SIDE_REF = "refs/memtray/peers/"


@dataclass
class Known:
    """The memory DAG as far as the log goes."""

    dag: Dag = field(default_factory=Dag)
    head: str | None = None  # this device's current revision (the last memory.written)
    last_peer: dict[str, str] = field(default_factory=dict)  # stream device -> its last recorded revision
    local: dict[str, int] = field(default_factory=dict)  # event id -> seq of this log's memory.written
    seq: int = 0  # read through this seq

    def add(self, rec: Record, device: str) -> None:
        if rec.type == MemoryWritten.TYPE:
            d = MemoryWritten.of(rec)
            # older events name no parents: the previous one of this log
            parents = d.parents if d.parents is not None else [self.head] if self.head else []
            self.dag.nodes[rec.id] = Node(rec.id, d.device or device, tuple(parents), rec.ts, rec.data, rec.seq)
            self.head = rec.id
            self.local[rec.id] = rec.seq
        elif rec.type == MemoryPeerHead.TYPE:
            p = MemoryPeerHead.of(rec)
            try:  # the peer's revision as it came: the one payload read raw, so checked here
                peer = MemoryWritten.from_data(p.data)
            except BadPayload:
                peer = None
            parents = peer.parents if peer is not None and peer.parents is not None else \
                [self.last_peer[p.device]] if p.device in self.last_peer else []
            self.last_peer[p.device] = p.event_id
            if peer is not None and p.event_id:
                self.dag.add(Node(p.event_id, peer.device or p.device, tuple(parents), p.ts, p.data, rec.seq,
                                  bool(p.redacted)))
        self.seq = rec.seq


def memory_dag(records: Iterable[Record], device: str) -> Known:
    """The memory DAG of a log (``device``: this log's device, for events that do not say)."""
    known = Known()
    for rec in records:
        if rec.type in REVISIONS:
            known.add(rec, device)
    return known


def imported_seqs(records: Iterable[Record], origin: ProvenanceOrigin) -> list[int]:
    """The seqs in this log of the events imported from ``origin["device"]`` whose seqs there
    were ``origin["seqs"]`` (the messages another device consolidated a fact from)."""
    from memtray.core.log.origin import origin_of

    device, wanted = origin.get("device"), set(origin.get("seqs", ()))
    out = []
    for rec in records:
        o = origin_of(rec) if rec.type == Message.TYPE else None
        if o is not None and o.device == device and o.seq in wanted:
            out.append(rec.seq)
    return out


def side_message(node: Node) -> str:
    """The commit message of another device's revision (no Event-Seq: it is not this log's)."""
    d = node.written
    a, r, c = (len(d.diff["added"]), len(d.diff["dropped"]), len(d.diff["changed"])) if d.diff else (0, 0, 0)
    reason = d.reason
    return (f"{node.device}: {reason}: +{a} -{r} ~{c}\n\n"
            f"Device: {node.device}\nEvent-Id: {node.id}\nReason: {reason}\nFacts: +{a} -{r} ~{c}\n")


class PeerLine:
    """The git parents of merge revisions, and the side-line commits they need."""

    def __init__(self, store: Store, device: Any) -> None:
        self.store = store
        self._device = device  # () -> this device's id
        self.known = Known()
        self.shas: dict[str, str] = {}  # event id -> commit

    def reset(self) -> None:
        self.known = Known()
        self.shas.clear()

    def _read_to(self, seq: int) -> None:
        if seq < self.known.seq:
            self.reset()
        if seq == self.known.seq:
            return
        dev = self._device()
        for rec in self.store.log.records(self.known.seq):
            if rec.seq >= seq:
                break
            if rec.type in REVISIONS:
                self.known.add(rec, dev)
            self.known.seq = rec.seq
        self.known.seq = max(self.known.seq, seq - 1)

    def commit_parents(self, rec: Record, git: GitRepo, head: str | None) -> list[str] | None:
        """The parents of ``rec``'s commit when it follows more than this device's previous
        revision (a merge), else None (the usual single parent)."""
        parents = MemoryWritten.of(rec).parents
        if MemoryWritten.of(rec).reason != "merge" or parents is None:
            return None
        self._read_to(rec.seq)
        prev = self.known.head
        out = [head] if head else []
        for p in parents:
            if p == prev or p not in self.known.dag:
                continue
            sha = self._sha(p, git)
            if sha and sha not in out:
                out.append(sha)
        return out

    def history(self, rec: Record, git: GitRepo, head: str | None) -> str:
        """HISTORY.md of ``rec``'s commit: this device's previous diary and the entry the
        revision adds; for a merge or a fast-forward, the diaries of the revisions it follows
        merged (:func:`~memtray.core.memory.revisions.merge_history`) and, for a fast-forward,
        the entry the peer's revision added, dated as the peer dated it. The same on every
        device that holds the revision, and on every rebuild: made of the log alone."""
        d = MemoryWritten.of(rec)
        if d.reason != "merge" or d.parents is None:
            return apply_history(git.read(head, "HISTORY.md") if head else "", rec)
        self._read_to(rec.seq)
        peer = self.known.dag.nodes.get(rec.id)  # a fast-forward: the peer's revision, recorded
        about = rec if peer is None else Record(0, peer.id, peer.ts, MemoryWritten.TYPE, 1, None, peer.data)
        parents = [p for p in d.parents if p in self.known.dag]
        return apply_history(self._diary(parents, rec.seq, git), about)

    def _diary(self, parents: list[str], seq: int, git: GitRepo) -> str:
        """The diaries of revisions ``parents`` as one (their own commits' HISTORY.md), against
        those of their lowest common ancestors among what the log held before ``seq``."""
        texts = [git.read(sha, "HISTORY.md") for p in parents if (sha := self._sha(p, git))]
        if len(texts) < 2:
            return texts[0] if texts else ""
        dag = self.known.dag

        def upto(ident: str) -> set[str]:
            out, todo = set(), [ident]
            while todo:
                i = todo.pop()
                if i not in out and i in dag and dag.nodes[i].seq < seq:
                    out.add(i)
                    todo.extend(dag.nodes[i].parents)
            return out

        common = set.intersection(*(upto(p) for p in parents))
        bases = [git.read(sha, "HISTORY.md") for b in dag.heads(common) if (sha := self._sha(b, git))]
        return merge_history(bases, texts)

    def committed(self, rec: Record, sha: str) -> None:
        self.shas[rec.id] = sha

    def _sha(self, ident: str, git: GitRepo) -> str | None:
        """The commit of revision ``ident``: this log's (on the main line) or one made on the
        side line, its own parents first (iteratively: a peer's line may be long)."""
        if ident in self.shas:
            return self.shas[ident]
        if ident in self.known.local:
            return self._main_sha(ident, git)
        todo = [ident]
        while todo:
            cur = todo[-1]
            node = self.known.dag.nodes[cur]
            # only what the log held before this revision was recorded: the same on every rebuild
            before = [p for p in node.parents if p in self.known.dag and self.known.dag.nodes[p].seq < node.seq]
            missing = [p for p in before if p not in self.shas and p not in self.known.local]
            if missing:
                todo.extend(missing)
                continue
            todo.pop()
            if cur in self.shas:
                continue
            pshas = [s for p in before if (s := self.shas.get(p) or self._main_sha(p, git))]
            fake = Record(0, cur, node.ts, MemoryWritten.TYPE, 1, None, node.data)
            files = {"MEMORY.md": node.text, "HISTORY.md": apply_history(self._diary(before, node.seq, git), fake)}
            branch = (SIDE_REF + node.device).encode()
            self.shas[cur] = git.commit(files, side_message(node), parse_ts(node.ts), branch=branch,
                                        update_worktree=False, parents=pshas)
        return self.shas[ident]

    def _main_sha(self, ident: str, git: GitRepo) -> str | None:
        seq = self.known.local.get(ident)
        if seq is None:
            return None
        if ident not in self.shas:
            want = str(seq)
            for info in git.walk():
                if info.trailers.get("Event-Seq") == want:
                    self.shas[ident] = info.sha
                    break
        return self.shas.get(ident)
