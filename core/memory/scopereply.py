"""A consolidation in a scoped conversation (core/memory/scopes.py), pure.

The model is shown the global memory and the conversation's scope, never another scope's
(:func:`shown`); its reply is guarded on that part alone, then put back beside the scopes
it never saw (``scopes.merge_back``). Where facts go:

* a fact that was in memory stays in its scope (``MemoryService.write`` keeps it there);
* a new fact goes into the conversation's scope, unless the reply says ``scope: "global"``
  for it (an ``add`` edit's ``scope``, or its receipt's in the ``memory_update`` form):
  a fact about the user in general;
* ``{"op": "move", "id": "F3", "scope": "global", "reason": "..."}`` moves a fact between
  the global memory and the conversation's scope, by id, with the reason.

At the door, a scope the conversation may not write (another scope, a name that is none)
refuses the edit with a note saying why; nothing is written there, and what the user said
is then listed as not remembered, one click from memory (core/memory/unsaid.py). A move
without a reason, or of a fact the model was not shown, is refused the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memtray.core.memory import factdiff, facts, scopes
from memtray.core.memory.facts import Ledger
from memtray.core.memory.guard import Reply


@dataclass
class Plan:
    """What the reply asks of scopes, checked: the edits left for the guard, the moves,
    which new facts are global, and what was refused."""

    scope: str
    reply: Reply
    moves: dict[str, str] = field(default_factory=dict)  # fact id -> scope
    why: dict[str, str] = field(default_factory=dict)  # fact id -> the move's reason
    global_texts: set[str] = field(default_factory=set)  # normalised words of new facts said global
    notes: list[str] = field(default_factory=list)


def shown(scope: str) -> list[str]:
    """The scopes a conversation of ``scope`` sees (and its consolidation may write)."""
    return [scopes.GLOBAL] if scope == scopes.GLOBAL else [scopes.GLOBAL, scope]


def _target(value: Any, scope: str) -> str | None:
    """The scope a reply names, if this conversation may write it; None if not."""
    if value is None:
        return scope
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        name = scopes.check_name(value)
    except scopes.ScopeError:
        return None
    return name if name in shown(scope) else None


def plan(reply: Reply, scope: str, visible: Ledger) -> Plan:
    """Read the scope members of ``reply`` for a conversation of ``scope`` whose model was
    shown the facts of ``visible``."""
    out = Plan(scope, reply)
    edits: list[dict[str, Any]] = []
    for n, e in enumerate(reply.edits or [], 1):
        op = str(e.get("op") or e.get("action") or "").lower()
        if op == "move":
            fid = facts.id_key(str(e.get("id") or ""))
            to = _target(e.get("scope", ""), scope)
            why = " ".join(str(e.get("reason") or "").split())[:300]
            if fid is None or visible.get(fid) is None:
                out.notes.append(f"edit {n}: move of {e.get('id')!r}, no fact of this conversation's memory; refused")
            elif to is None:
                out.notes.append(f"edit {n}: move of {fid} to scope {str(e.get('scope'))[:40]!r} refused: this "
                                 f"conversation may write only {' or '.join(shown(scope))}")
            elif not why:
                out.notes.append(f"edit {n}: move of {fid} without a reason; refused")
            else:
                out.moves[fid], out.why[fid] = to, why
            continue
        if "scope" in e and op in ("add", "update", "merge"):
            to = _target(e["scope"], scope)
            if to is None:
                out.notes.append(f"edit {n}: scope {str(e['scope'])[:40]!r} refused: this conversation may write only "
                                 f"{' or '.join(shown(scope))}; the fact is not written")
                continue
            if to == scopes.GLOBAL and op == "add" and isinstance(e.get("text"), str):
                out.global_texts.add(factdiff.normalize(e["text"]))
        edits.append(e)
    refused_facts: list[str] = []
    for fact, value in reply.scoped:
        to = _target(value, scope)
        if to is None:
            refused_facts.append(fact)
            out.notes.append(f"receipt of {fact[:60]!r}: scope {str(value)[:40]!r} refused: this conversation may "
                             f"write only {' or '.join(shown(scope))}; the fact is not written")
        elif to == scopes.GLOBAL:
            out.global_texts.add(factdiff.normalize(fact))
    update = reply.memory_update
    if update is not None and refused_facts:
        update = _without_lines(update, refused_facts)
    out.reply = replace(reply, edits=edits if reply.edits is not None else None, memory_update=update,
                        notes=reply.notes + out.notes)
    return out


def _without_lines(update: str, refused: Sequence[str]) -> str:
    drop = {factdiff.normalize(f) for f in refused}
    kept = [line for line in update.split("\n")
            if factdiff.normalize(facts.read_markers(line).text.lstrip("-*+ ").strip()) not in drop]
    return "\n".join(kept)


def placed(p: Plan, before: Mapping[str, str], ledger: Ledger) -> dict[str, str]:
    """Where each fact of the reply's result goes: a new one into the conversation's scope
    (or global, as the reply said), a moved one where it moved; the others stay put."""
    out: dict[str, str] = {}
    for f in ledger.facts:
        if f.id in p.moves:
            out[f.id] = p.moves[f.id]
        elif f.id not in before:
            out[f.id] = scopes.GLOBAL if f.norm in p.global_texts else p.scope
    return out


def with_scope(items: Sequence[dict[str, Any]], p: Plan, before: Mapping[str, str]) -> list[dict[str, Any]]:
    """The review items a consolidation of a scoped conversation holds, each with the scope
    adding it from the review writes it into (``scope``): a fact held back where it was
    (``before``: fact id -> scope), a new one in the conversation's scope, or global when the
    reply said so (checked at the door, :func:`plan`; a scope refused there is the
    conversation's). A global conversation's items are left as they are (absent: global)."""
    if p.scope == scopes.GLOBAL:
        return list(items)
    out = []
    for item in items:
        fid = str(item.get("fact_id") or "")
        where = before.get(fid) if item.get("kind") == "silent-drop" else None
        if where is None:
            where = scopes.GLOBAL if factdiff.normalize(str(item.get("text", ""))) in p.global_texts else p.scope
        out.append({**item, "scope": where})
    return out


def patch_scopes(ledger: Ledger, was: Mapping[str, str], before: Ledger, after: Ledger,
                 main_before: Mapping[str, str], main_after: Mapping[str, str]) -> dict[str, str]:
    """Where the facts of ``ledger`` go when a change of another line of revisions (``before``
    -> ``after``, with the scope maps ``main_before`` / ``main_after``: main's, re-done on a
    rebuild branch) is replayed onto it: a fact the change added or moved goes where that
    line has it after; every other fact stays where it was (``was``: its scope before)."""
    out = {i: was[i] for i in ledger.ids if i in was}
    for f in after.facts:
        to = main_after.get(f.id, scopes.GLOBAL)
        here = ledger.get(f.id)
        if here is None:
            continue
        if before.get(f.id) is None:  # added: the branch's fact of that id, if it is this one
            if here.norm == f.norm:
                out[f.id] = to
        elif main_before.get(f.id, scopes.GLOBAL) != to:  # moved
            out[f.id] = to
    return out
