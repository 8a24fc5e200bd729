"""Merging memory across devices: a three-way merge of two memory revisions by fact id (pure).

Every ``memory.written`` is a node of a DAG: its event id, the device that wrote it
(``device``) and the revisions it follows (``parents``; absent in events written
before sync existed = the previous ``memory.written`` of the same log). Two devices
that both consolidated hold two heads; :func:`merge_nodes` merges them against their
lowest common ancestor (no common ancestor = an empty memory; several = those merged
first, as git's recursive strategy does), fact by fact on ids:

* a fact changed on one side only takes that change (reworded, moved, removed);
* reworded on both sides: the wording that says everything the other says is kept,
  else the wording of the lower device id, and the other is held for review;
* removed on one side and reworded on the other: kept with its new words, and held
  for review (``memory review restore`` removes it after all). Never a silent loss;
* ids are per-device counters, so two devices both hand out ``F12``: a new fact of the
  higher device whose id the lower device used for something else gets a new number
  (after both devices' counters), the same way on every device. So a base fact can have
  another id on a side (a merge there renumbered it): where it went is read from the merges
  between (their ``renamed`` and ``merged``) or found by its words, and the id it had in the
  base then names a new fact on that side, never a rewording of it;
* a new fact restating one the other side has (:func:`facts.pair`, the precise
  matcher: the same words, a rewording that keeps every name and number, a
  translation) is one fact, not two.

The merge is symmetric and deterministic: the sides are ordered by device id, never
"ours" and "theirs", so ``merge(a, b) == merge(b, a)`` and two devices merging the same
heads write the same text, the same ids and the same event id (:func:`merge_id`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memtray.core.log.events import MemoryWritten
from memtray.core.memory import factdiff, scopes
from memtray.core.memory import facts as fact_ids
from memtray.core.memory.factdiff import Fact
from memtray.core.memory.facts import Ledger

__all__ = ["Dag", "MergeOutcome", "Merged", "Node", "PeerHead", "merge3", "merge_id", "merge_nodes", "renamed"]

#: the kind of review item a merge conflict becomes
CONFLICT = "merge-conflict"


@dataclass(frozen=True)
class PeerHead:
    """A ``memory.written`` another device wrote, as the sync hands it over."""

    device: str  # origin device id
    event_id: str  # the origin memory.written's event id
    ts: str  # its origin timestamp
    data: Mapping[str, Any]  # its payload, verbatim (memory, facts, parents, reason, ...)


@dataclass(frozen=True)
class MergeOutcome:
    """What :meth:`MemoryService.merge_peer_heads` did."""

    merged: bool  # a merge revision was written
    fast_forward: bool  # local memory simply became the peer's (nothing local since)
    up_to_date: bool  # nothing to do (already contains it)
    conflicts: list[dict[str, Any]]  # each kept for review: the review item, with "ours" and "theirs"
    revision: str | None  # the git sha of the new revision, if any
    summary: str  # one line for the CLI / tray

    def to_json(self) -> dict[str, Any]:
        return {"merged": self.merged, "fast_forward": self.fast_forward, "up_to_date": self.up_to_date,
                "conflicts": self.conflicts, "revision": self.revision, "summary": self.summary}


@dataclass(frozen=True)
class Node:
    """One memory revision of the DAG."""

    id: str
    device: str
    parents: tuple[str, ...]
    ts: str
    data: Mapping[str, Any]
    seq: int = 0  # where this device's log recorded it (what was known when it was)
    altered: bool = False  # its payload was redacted here: not the same text as the writer's

    @functools.cached_property
    def written(self) -> MemoryWritten:
        """``data`` typed. A peer's revision is kept as it came (``data``, what its ids and
        checksums are made of); the DAG holds only revisions whose payload fits the class
        (core/memory/peers.py checks a peer's before it becomes a node)."""
        return MemoryWritten.from_data(self.data)

    @property
    def text(self) -> str:
        return self.written.memory

    @functools.cached_property
    def ledger(self) -> Ledger:
        return Ledger.of(self.text, self.written.facts)

    def ids(self) -> list[str]:
        """The ids it names (without reading its text when the event lists them)."""
        info = self.written.facts
        return list(info["ids"]) if info is not None else self.ledger.ids

    def dropped_reasons(self) -> dict[str, str]:
        """Why this revision removed each fact it removed (its fact diff)."""
        diff = self.written.diff
        return {i["id"]: i.get("reason", "") for i in diff["dropped"]} if diff else {}


class Dag:
    """The memory revisions one device knows, by event id."""

    def __init__(self, nodes: Iterable[Node] = ()) -> None:
        self.nodes: dict[str, Node] = {}
        for n in nodes:
            self.add(n)

    def add(self, node: Node) -> None:
        self.nodes.setdefault(node.id, node)

    def __contains__(self, ident: object) -> bool:
        return ident in self.nodes

    def ancestors(self, ident: str) -> set[str]:
        """``ident`` and every revision it follows (parents this device does not know are skipped)."""
        return self._reach([ident])

    def _reach(self, start: Iterable[str]) -> set[str]:
        """``start`` and everything it follows, in one walk (a shared visited set)."""
        out: set[str] = set()
        todo = list(start)
        while todo:
            i = todo.pop()
            if i in out or i not in self.nodes:
                continue
            out.add(i)
            todo.extend(self.nodes[i].parents)
        return out

    def heads(self, idents: Iterable[str]) -> list[str]:
        """Of ``idents``, those no other one follows, ordered by (device, id)."""
        ids = {i for i in idents if i in self.nodes}
        # one walk over what any of them follows: linear, where an ancestor set per ident made
        # a merge quadratic in the length of the history
        below = self._reach(p for i in ids for p in self.nodes[i].parents)
        return sorted(ids - below, key=lambda i: (self.nodes[i].device, i))

    def common_bases(self, a: set[str], b: set[str]) -> list[str]:
        """The lowest common ancestors of two ancestor sets, ordered by (device, id)."""
        return self.heads(a & b)


@dataclass
class Merged:
    """The result of a merge: the text and its ledger, and how it came about."""

    text: str
    ledger: Ledger
    conflicts: list[dict[str, Any]] = field(default_factory=list)  # review items (kind merge-conflict)
    dropped: dict[str, str] = field(default_factory=dict)  # id -> why (removed on one side)
    renamed: dict[str, dict[str, str]] = field(default_factory=dict)  # device -> {old id: new id}
    merged: dict[str, list[str]] = field(default_factory=dict)  # survivor -> ids merged into it
    origin: dict[str, str] = field(default_factory=dict)  # fact id -> device whose words it has


def merge_id(parents: Sequence[str], merged: Merged) -> str:
    """The merge revision's event id: from its sorted parent ids and what it holds, so two
    devices merging the same heads write the same event (the other's copy imports as a no-op),
    and two that (knowing different ancestors) merged them differently do not look the same."""
    body = json.dumps([sorted(parents), merged.text, merged.ledger.ids], ensure_ascii=False)
    return "M" + hashlib.sha256(body.encode()).hexdigest()[:25].upper()


def renamed(ledger: Ledger, ids: Mapping[str, str]) -> Ledger:
    """``ledger`` with some ids renamed (to diff it with a merge that renumbered them)."""
    return Ledger(tuple(Fact(ids.get(f.id, f.id), f.section, f.text, f.norm) for f in ledger.facts), ledger.next)


# --- the three-way merge ------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    device: str
    text: str
    ledger: Ledger
    dropped: Mapping[str, str]  # why this side removed a fact since the base
    used: frozenset[str]  # every id this side had since the base (dropped ones too)
    moved: Mapping[str, str] = field(default_factory=dict)  # base id -> its id here, where merges renumbered it


def _pick(o: Fact, a: Fact, b: Fact) -> tuple[Fact, Fact | None]:
    """The wording of a fact both sides have: the changed one, or (both changed) the one
    that covers the other, else ``a``'s with ``b``'s to review."""
    if a.norm == b.norm:
        return (b if a.section == o.section and b.section != o.section else a), None
    if a.norm == o.norm:
        return b, None
    if b.norm == o.norm:
        return a, None
    if fact_ids.covers(a.text, b.text):
        return a, None
    if fact_ids.covers(b.text, a.text):
        return b, None
    return a, b


def _item(fact_id: str, text: str, section: str, conflict: str, reason: str,
          words: Mapping[str, str | None]) -> dict[str, Any]:
    """A review item for a conflict: ``text`` is the other choice (``reworded``: the words not
    kept; ``removed-reworded``: the fact kept, which ``restore`` removes), ``words`` what each
    device had (None: removed)."""
    ident = hashlib.sha1(f"{CONFLICT}:{fact_id}:{conflict}:{factdiff.normalize(text)}".encode()).hexdigest()[:10]
    return {"id": ident, "kind": CONFLICT, "text": text, "section": section, "fact_id": fact_id,
            "reason": reason, "conflict": conflict, "words": dict(words)}


def merge3(base: Ledger, x: Side, y: Side) -> Merged:
    """Merge two sides against ``base``; see the module docstring. ``x`` and ``y`` may be
    given in any order (they are ordered by device id here)."""
    a, b = sorted((x, y), key=lambda s: s.device)
    la = {f.id: f for f in a.ledger.facts}
    nxt = max(base.next, a.ledger.next, b.ledger.next, _next_after([*(f.id for f in base.facts), *la, *b.used, *a.used]))
    # a side's earlier merge may have renumbered a base fact (it was new there, and its id was
    # taken): the base is read in a's ids, and b's base facts take a's ids for them
    moved_a, moved_b = _moved(base, a), _moved(base, b)
    o = {moved_a.get(f.id, f.id): Fact(moved_a.get(f.id, f.id), f.section, f.text, f.norm) for f in base.facts}
    in_b = {moved_b.get(f.id, f.id): moved_a.get(f.id, f.id) for f in base.facts}  # b's id of a base fact -> its id here
    # b's new ids that a used for something else (or that name a base fact here) get new numbers
    renamed: dict[str, str] = {}
    b_facts: list[Fact] = []
    for f in b.ledger.facts:
        if f.id in in_b:
            if in_b[f.id] != f.id:
                renamed[f.id] = in_b[f.id]
                f = Fact(renamed[f.id], f.section, f.text, f.norm)
        elif f.id in o or ((f.id in a.used or f.id in la) and not (f.id in la and la[f.id].norm == f.norm)):
            renamed[f.id] = fact_ids.new_id(nxt)
            nxt += 1
            f = Fact(renamed[f.id], f.section, f.text, f.norm)
        b_facts.append(f)
    b_dropped = {in_b.get(k, k): v for k, v in b.dropped.items()}
    lb = {f.id: f for f in b_facts}
    out = Merged("", Ledger(()), renamed={b.device: renamed} if renamed else {})
    # what each id becomes: a Fact (its words), or None (removed)
    final: dict[str, Fact | None] = {}
    from_b: set[str] = set()  # ids whose words are b's
    # a new fact restating one the other side has is that fact
    cand_a = [f for f in a.ledger.facts if f.id not in lb]
    cand_b = [f for f in b_facts if f.id not in la]
    for j, i in fact_ids.pair(cand_a, cand_b).items():
        fa, fb = cand_a[i], cand_b[j]
        if fa.id in o and fb.id in o:
            continue  # two old facts, each removed on the other side: not a restatement
        keep_b = fb.id in o and fa.id not in o
        survivor, other = (fb, fa) if keep_b else (fa, fb)
        words = fb if fact_ids.covers(fb.text, fa.text) and not fact_ids.covers(fa.text, fb.text) else fa
        if survivor.id in o and o[survivor.id].norm == survivor.norm:
            words = other  # the old fact was restated in new words on the other side: a rewording
        final[survivor.id] = Fact(survivor.id, words.section, words.text, words.norm)
        if words is fb:
            from_b.add(survivor.id)
        final[other.id] = None
        out.merged.setdefault(survivor.id, []).append(other.id)
    for fid, of in o.items():
        if fid in final:
            continue
        fa_, fb_ = la.get(fid), lb.get(fid)
        if fa_ is not None and fb_ is not None:
            kept, alt = _pick(of, fa_, fb_)
            final[fid] = kept
            if kept is fb_:
                from_b.add(fid)
            if alt is not None:
                out.conflicts.append(_item(fid, alt.text, alt.section, "reworded",
                                           f"reworded on {a.device} and on {b.device}; {a.device}'s words kept, "
                                           f"these are {b.device}'s", {a.device: fa_.text, b.device: fb_.text}))
        elif fa_ is not None or fb_ is not None:
            here, gone = (a, b) if fa_ is not None else (b, a)
            one = fa_ if fa_ is not None else fb_
            assert one is not None
            why = (b_dropped if gone is b else gone.dropped).get(fid) or ""
            if one.norm == of.norm:
                final[fid] = None
                out.dropped[fid] = f"removed on {gone.device}: {why}" if why else f"removed on {gone.device}"
            else:
                final[fid] = one
                if here is b:
                    from_b.add(fid)
                out.conflicts.append(_item(fid, one.text, one.section, "removed-reworded",
                                           f"removed on {gone.device} ({why or 'no reason given'}) but reworded on {here.device}; "
                                           "kept with the new words", {here.device: one.text, gone.device: None}))
        else:
            final[fid] = None
    # the text is built from the side with more facts (then the fewest are added one by one);
    # which side that is does not depend on who merges, so the result does not either
    if len(b_facts) > len(a.ledger.facts):
        text, led = _build(b.text, b_facts, a.ledger.facts, final, nxt, _scopes(a.text, a.ledger.facts))
    else:
        text, led = _build(a.text, a.ledger.facts, b_facts, final, nxt, _scopes(b.text, b_facts))
    out.text, out.ledger = text, led
    out.origin = {f.id: (b.device if f.id in from_b or (f.id in lb and f.id not in la) else a.device)
                  for f in led.facts}
    return out


def _moved(base: Ledger, side: Side) -> dict[str, str]:
    """The base's facts that ``side`` holds under another id: those a merge there renumbered
    (new in that merge, their id taken), as its revisions say (``side.moved``) or, else, found in
    the same words under an id the base does not have. Its id in the base then names another
    fact on that side (a new one), never a rewording of it."""
    have = {f.id: f.norm for f in side.ledger.facts}
    old = {f.id for f in base.facts}
    out = {i: j for i, j in side.moved.items() if i in old and j not in old}  # j may be gone: removed there
    claimed: set[str] = set(out.values())
    for f in base.facts:
        if f.id in out or have.get(f.id) == f.norm:
            continue
        j = next((g.id for g in side.ledger.facts if g.norm == f.norm and g.id not in old and g.id not in claimed),
                 None)
        if j is not None:
            claimed.add(j)
            out[f.id] = j
    return out


def _scopes(text: str, facts: Sequence[Fact]) -> dict[str, str]:
    """The memory scope of each of ``facts`` (the facts of ``text``, in its order)."""
    where = scopes.of_facts(text)
    return {f.id: s for f, s in zip(facts, where, strict=False)} if len(where) == len(facts) else {}


def _add(text: str, fact: Fact, scope: str) -> str:
    """``fact`` added to ``text`` in its scope's block (the global part for a global one)."""
    if scope == scopes.GLOBAL:
        return factdiff.add_fact(text, fact.text, fact.section or None)
    if any(f.norm == fact.norm for f in factdiff.parse(text)):
        return text
    parts = scopes.split(text)
    parts[scope] = factdiff.add_fact(parts.get(scope, ""), fact.text, fact.section or None)
    return scopes.join(parts)


def _build(text: str, mine: Sequence[Fact], others: Sequence[Fact], final: Mapping[str, Fact | None],
           nxt: int, where: Mapping[str, str] | None = None) -> tuple[str, Ledger]:
    """The merged MEMORY.md: ``text`` (whose facts are ``mine``) with the decisions ``final``
    applied and the ``others`` it lacks added, each into the memory scope it has on its side
    (``where``), and its ledger."""
    ids = [f.id for f in mine]
    la = set(ids)
    # rewordings in place first (they keep every index), then removals from the last
    # (earlier facts keep theirs), then additions: one parse per step, not three
    for k, f in enumerate(mine):
        target = final.get(f.id, f)
        if target is not None and target.norm != f.norm:
            text = factdiff.replace_fact(text, k, target.text)
    if any(final.get(f.id, f) is None for f in mine):
        cur = factdiff.parse(text)
        for k in reversed(range(len(mine))):
            if final.get(mine[k].id, mine[k]) is None:
                text = factdiff.remove_fact(text, cur[k])
                del ids[k]
    norms = [g.norm for g in factdiff.parse(text)]
    for f in others:
        target = final.get(f.id, f)
        if f.id in la or target is None or f.id in ids:
            continue
        new = _add(text, target, (where or {}).get(f.id, scopes.GLOBAL))
        if new == text:
            continue  # the same words are already there (under another id)
        after = [g.norm for g in factdiff.parse(new)]
        # add_fact appends at the end of its section: find the one fact that is new
        at = next((k for k, g in enumerate(after) if k >= len(norms) or g != norms[k]), len(after) - 1)
        ids.insert(at, f.id)
        text, norms = new, after
    parsed = factdiff.parse(text)
    if len(parsed) != len(ids):  # cannot happen for well-formed texts; never lose the text
        known = {f.id: f for f in (*others, *mine, *(f for f in final.values() if f is not None))}
        return text, fact_ids.attach(Ledger(tuple(known.values()), nxt), text)
    seen: set[str] = set()
    out: list[str] = []
    for i in ids:
        if i in seen:
            i = fact_ids.new_id(nxt)
            nxt += 1
        seen.add(i)
        out.append(i)
    return text, Ledger.with_ids(text, out, nxt)


def _next_after(ids: Iterable[str]) -> int:
    nums = [int(i[1:]) for i in ids if i.startswith("F") and i[1:].isdigit()]
    return max(nums, default=0) + 1


# --- merging DAG nodes -----------------------------------------------------------------

def _since(dag: Dag, device: str, text: str, ledger: Ledger, anc: set[str], base_anc: set[str],
           moved: Mapping[str, str] | None = None) -> Side:
    """One side of a merge: its text and ids, what it removed since the base and why (the
    fact diffs of the revisions between the base and it), and every id it had meanwhile."""
    dropped: dict[str, str] = {}
    used: set[str] = set(ledger.ids)
    for n in sorted((dag.nodes[i] for i in anc - base_anc), key=lambda n: (n.ts, n.id)):
        dropped.update(n.dropped_reasons())
        used.update(n.ids())
    return Side(device, text, ledger, dropped, frozenset(used), dict(moved or {}))


def _renumbered(dag: Dag, base: str, head: str) -> dict[str, str]:
    """The ids the facts of revision ``base`` have in ``head``, where merges between them
    renumbered them (their ``renamed``, keyed by the device of the parent renumbered, and
    ``merged``), following the lowest device's parent that comes from ``base``."""
    if base not in dag or head not in dag:
        return {}
    below = dag.ancestors(base) - {base}
    cur: dict[str, dict[str, str] | None] = {base: {i: i for i in dag.nodes[base].ids()}}  # None: not from base
    todo = [head]
    while todo:  # parents first, without recursion (a long history)
        i = todo[-1]
        if i in cur:
            todo.pop()
            continue
        node = dag.nodes[i]
        parents = [p for p in node.parents if p in dag and p not in below]
        waiting = [p for p in parents if p not in cur]
        if waiting:
            todo.extend(waiting)
            continue
        todo.pop()
        via = sorted((p for p in parents if cur[p] is not None), key=lambda p: (dag.nodes[p].device, p))
        if not via:
            cur[i] = None
            continue
        t = dict(cur[via[0]] or {})
        info = node.written.facts
        ren = info.get("renamed", {}).get(dag.nodes[via[0]].device) if info is not None else None
        if ren is not None and len(node.parents) > 1:
            t = {k: ren.get(v, v) for k, v in t.items()}
        merged = info.get("merged") if info is not None else None
        if merged is not None:
            into = {o: s for s, others in merged.items() for o in others}
            t = {k: into.get(v, v) for k, v in t.items()}
        cur[i] = t
    return {k: v for k, v in (cur.get(head) or {}).items() if k != v}


def merge_nodes(dag: Dag, heads: Sequence[str]) -> Merged:
    """Merge the revisions ``heads`` (two or more, none following another) of ``dag``.

    Folded in (device, id) order; each step merges against the lowest common ancestor
    (several: merged first, recursively; none: an empty memory)."""
    order = sorted(heads, key=lambda i: (dag.nodes[i].device, i))
    first = dag.nodes[order[0]]
    acc = Merged(first.text, first.ledger)
    acc_anc = dag.ancestors(order[0])
    for h in order[1:]:
        node = dag.nodes[h]
        anc = dag.ancestors(h)
        bases = dag.common_bases(acc_anc, anc)
        moved_l: dict[str, str] = {}
        moved_r: dict[str, str] = {}
        if not bases:
            base, base_anc = Ledger(()), set()
        elif len(bases) == 1:
            base, base_anc = dag.nodes[bases[0]].ledger, dag.ancestors(bases[0])
            moved_l, moved_r = _renumbered(dag, bases[0], order[0]), _renumbered(dag, bases[0], h)
        else:
            base = merge_nodes(dag, bases).ledger
            base_anc = set().union(*(dag.ancestors(x) for x in bases))
        left = _since(dag, first.device, acc.text, acc.ledger, acc_anc, base_anc, moved_l)
        right = _since(dag, node.device, node.text, node.ledger, anc, base_anc, moved_r)
        step = merge3(base, left, right)
        step.conflicts = acc.conflicts + step.conflicts
        step.dropped = {**acc.dropped, **step.dropped}
        for dev, ren in acc.renamed.items():
            step.renamed.setdefault(dev, {}).update(ren)
        for k, v in acc.merged.items():
            step.merged.setdefault(k, []).extend(v)
        step.origin = {k: acc.origin.get(k, v) if v == first.device else v for k, v in step.origin.items()}
        acc, acc_anc = step, acc_anc | anc
    return acc


def parents_first(heads: Sequence[PeerHead]) -> list[PeerHead]:
    """``heads`` in the order given, except that each comes after every one of ``heads`` it
    follows: one peer's merge names revisions of a third device, handed over in the same call."""
    by_id = {h.event_id: h for h in heads}
    out: list[PeerHead] = []
    done: set[str] = set()
    for first in heads:
        stack, opened = [first.event_id], {first.event_id}
        while stack:
            cur = stack[-1]
            if cur in done:
                stack.pop()
                continue
            parents = by_id[cur].data.get("parents")
            todo = [str(p) for p in parents if p in by_id and p not in done and p not in opened] \
                if isinstance(parents, list) else []
            if todo:
                stack.append(todo[0])
                opened.add(todo[0])
                continue
            stack.pop()
            done.add(cur)
            out.append(by_id[cur])
    return out
