"""Memory scopes on the command line: ``memory scopes``, ``memory move``, and what
``--scope`` does to ``memory show/log/diff/why/undo`` (core/memory/scopes.py).

``--json`` shapes only gain fields, and only once the home has scopes (or ``--scope`` is
given), so a home without scopes prints exactly what it always did: a revision row of
``memory log`` its ``scopes`` (the scopes whose facts it changed), a fact of ``memory diff``
its ``scope``; ``memory why`` the fact's ``scope`` always.
"""

from __future__ import annotations

import argparse
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli.console import app_scope, con, listing
from memtray.core.cli.console import dumps as _dumps
from memtray.core.cli.console import out as _out
from memtray.core.log.events import MemoryWritten
from memtray.core.memory import factdiff, facts, scopes
from memtray.core.memory.factdiff import FactDiff
from memtray.core.memory.projection import unread_said, unread_scope_files


def name_of(args: argparse.Namespace, app: Any) -> str | None:
    """``--scope`` of a command that reads a scope, as a scope name (None: not given): an
    empty or bad name, or one that is no scope (:func:`existing`), is said before anything runs."""
    return None if args.scope is None else existing(app, args.scope)


def existing(app: Any, name: str) -> str:
    """``name`` (as typed) as a scope there is to read: the global memory, a scope holding facts
    or chosen by a conversation, or one that held facts at some revision (``memory show REV
    --scope``, the log of a scope emptied since). Else :class:`~scopes.ScopeError` naming the
    scopes there are and how one is made, where a typo would otherwise show an empty memory."""
    n = scopes.typed(name)
    now = scopes.known(app.store.state)
    if n == scopes.GLOBAL or n in now:
        return n
    mark = scopes.marker(n)  # only on this rare path: every revision's text is read
    if any(mark in MemoryWritten.of(r).memory for r in app.memory.memory_events()):
        return n
    raise scopes.ScopeError(
        f"there is no memory scope {n!r}; the scopes are: {', '.join([scopes.GLOBAL, *now])}",
        hint="A scope is made by putting a conversation in it (`memtray ask --scope NAME ...`) or a fact "
             "(`memtray memory move ID --scope NAME --reason WHY`).")


def touched(app: Any, event_seq: int) -> list[str]:
    """The scopes whose facts the revision of ``event_seq`` added, removed, changed or moved."""
    rec = app.memory.ledgers.record(event_seq)
    if rec is None or rec.type != MemoryWritten.TYPE:
        return []
    w = MemoryWritten.of(rec)
    found: set[str] = set()
    if w.diff is not None:
        found |= {f.get("scope") or scopes.GLOBAL for f in [*w.diff["added"], *w.diff["dropped"]]}
        found |= {c["new"].get("scope") or scopes.GLOBAL for c in w.diff["changed"]}
    for m in w.moved or ():
        found |= {m["source"], m["target"]}
    return sorted(found)


def undo_json(app: Any, res: Any, scope: str | None) -> dict[str, Any]:
    """``memory undo --json`` with ``scopes``: the scopes whose facts the undone revision
    changed (:func:`touched`), once the home has scopes, as ``memory log`` rows have them.
    Through ``--scope`` only that scope, if it was one: an undo through a scope never says
    which other scope a change crossed into (``factops.undo_in_scope``)."""
    data: dict[str, Any] = dict(res.to_json())
    found = touched(app, res.target.event_seq)
    if scope is None and not scopes.known(app.store.state) and set(found) <= {scopes.GLOBAL}:
        return data  # a home without scopes: the shape as it always was
    data["scopes"] = found if scope is None else [s for s in found if s == scope]
    return data


def log_rows(app: Any, rows: list[dict[str, Any]], scope: str | None) -> list[dict[str, Any]]:
    """``memory log``'s rows with each revision's ``scopes``; with ``scope``, only the rows of
    that scope (its revisions, its conversations' failed consolidations)."""
    if scope is None and not scopes.known(app.store.state):
        return rows  # a home without scopes: the rows as they always were
    out = []
    for r in rows:
        if r["kind"] == "revision":
            r = {**r, "scopes": touched(app, int(r["event_seq"]))}
            keep = scope is None or scope in r["scopes"]
        elif r["kind"] == "failed":
            keep = scope is None or scopes.of_session(app.store.state, str(r["session"])) == scope
        else:
            keep = scope is None
        if keep:
            out.append(r)
    return out


def diff_json(app: Any, d: FactDiff, rev_a: str | None, rev_b: str | None, scope: str | None) -> dict[str, Any]:
    """``memory diff --json`` with each fact's ``scope`` (added and changed: in ``rev_b``;
    dropped: in ``rev_a``) and ``moved``: the facts whose words stayed while their scope
    changed (``memory move``: id, section, text, from, to); with ``scope``, only that scope's
    facts and the moves into or out of it."""
    mem = app.memory
    b = mem.resolve(rev_b or "HEAD")
    parents = mem.git.info(b).parents
    a = (parents[0] if parents else None) if rev_a is None else mem.resolve(rev_a)
    ledger = mem.ledger_at(b)
    after = scopes.scope_map(ledger, mem.git.read_memory(b))
    before = scopes.scope_map(mem.ledger_at(a), mem.git.read_memory(a)) if a else {}
    data = d.to_json()
    if scope is None and not (set(after.values()) | set(before.values())) - {scopes.GLOBAL}:
        return dict(data)  # revisions without scopes: the shape as it always was
    keep: dict[str, list[Any]] = {"added": [], "dropped": [], "changed": []}
    for f in data["added"]:
        f["scope"] = after.get(f["id"], scopes.GLOBAL)
        if scope is None or f["scope"] == scope:
            keep["added"].append(f)
    for f in data["dropped"]:
        f["scope"] = before.get(f["id"], scopes.GLOBAL)
        if scope is None or f["scope"] == scope:
            keep["dropped"].append(f)
    for c in data["changed"]:
        c["new"]["scope"] = after.get(c["new"]["id"], scopes.GLOBAL)
        c["old"]["scope"] = before.get(c["old"]["id"], scopes.GLOBAL)
        if scope is None or scope in (c["new"]["scope"], c["old"]["scope"]):
            keep["changed"].append(c)
    seen = {f["id"] for f in [*data["added"], *data["dropped"]]} | {c["new"]["id"] for c in data["changed"]}
    moved = [{"id": f.id, "section": f.section, "text": f.text, "from": before[f.id], "to": after[f.id]}
             for f in ledger.facts if f.id not in seen and f.id in before and f.id in after
             and before[f.id] != after[f.id]]
    keep["moved"] = [m for m in moved if scope is None or scope in (m["from"], m["to"])]
    if scope is not None:  # the count of the other scopes' facts would say how many they hold
        here = sum(1 for s in after.values() if s == scope)
        data["unchanged"] = max(0, here - len(keep["added"]) - sum(1 for c in keep["changed"]
                                                                     if c["new"]["scope"] == scope)
                                - sum(1 for m in keep["moved"] if m["to"] == scope))
    return {**data, **keep}


def moved_line(m: dict[str, Any], scope: str | None) -> str:
    """A moved fact as ``memory diff`` prints it; through ``--scope``, leaving it or entering it."""
    how = (f"moved out, to {m['to']}" if scope == m["from"] else f"moved in, from {m['from']}" if scope == m["to"]
           else f"moved from {m['from']} to {m['to']}")
    return f"> {m['id']} [{m['section']}] {m['text']} ({how})"


def why(app: Any, query: str, scope: str | None) -> dict[str, Any]:
    """``memory why``'s answer with the fact's ``scope``. With ``--scope`` the fact is looked
    for among that scope's facts only (by id or words), and one that is not there gets the same
    answer as a fact that does not exist: a script limited to one scope learns nothing of
    another's facts, not even that one matches."""
    led = app.memory.ledger()
    where = scopes.scope_map(led, app.store.state.memory)
    if scope is not None:
        mine = [f for f in led.facts if where.get(f.id, scopes.GLOBAL) == scope]
        key = facts.id_key(query)
        found = next((f for f in mine if f.id == key), None) if key else factdiff.match_fact(mine, query)
        if found is None:
            raise MemtrayError(f"no fact in current memory matches {query!r}",
                               hint="See `memtray memory show --scope NAME` for the facts and their words.")
        query = found.id
    info = app.memory.why(query)
    return {**info, "scope": where.get(info["fact"]["id"], scopes.GLOBAL)}


def warn_unread(home: Home) -> None:
    """Say on stderr each file in memory/scopes/ that is not read (``Work.md``): never a
    silent gap where the user put facts."""
    for name, to in unread_scope_files(home.memory):
        con().error(f"warning: {unread_said(name, to)}" + (" (`memtray doctor --repair` does)" if to else ""))


def cmd_scopes(args: argparse.Namespace, home: Home) -> int:
    warn_unread(home)
    with app_scope(home) as app:
        state = app.store.state
        where = list(scopes.scope_map(app.memory.ledger(), state.memory).values())
        rows = [{"scope": n, "facts": where.count(n),
                 "conversations": sum(1 for s in state.sessions.values() if (s.scope or scopes.GLOBAL) == n)}
                for n in [scopes.GLOBAL, *scopes.known(state)]]
        return listing(rows, args.json, "",
                       lambda r: f"{r['scope']:<20} {r['facts']:>4} facts  {r['conversations']:>3} conversations")


def cmd_move(args: argparse.Namespace, home: Home) -> int:
    target = scopes.typed(args.scope)
    with app_scope(home) as app:
        rev = app.memory.move_fact(args.id, target, args.reason or "")
        rec = app.memory.ledgers.record(rev.event_seq)
        move = (MemoryWritten.of(rec).moved or [])[0] if rec is not None else None
        if move is None:
            raise MemtrayError("the move was not recorded")  # cannot happen: move_fact refuses a no-op
        if args.json:
            _out(_dumps({"revision": rev.to_json(), "move": move}))
        else:
            _out(f"moved {move['id']} ({move['text']}) from {move['source']} to {move['target']}; "
                 f"new revision {rev.short}")
    return 0


def add_commands(_sub: Any, memory_sub: Any) -> None:
    """``memory scopes`` and ``memory move`` (``memory_sub``: the ``memory`` subparsers)."""
    ls = memory_sub.add_parser("scopes", help="the memory scopes, with their facts and conversations")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_scopes)
    mv = memory_sub.add_parser("move", help="move one fact, by id, to another scope (a new revision)")
    mv.add_argument("id", metavar="ID")
    mv.add_argument("--scope", required=True, metavar="NAME", help="the scope it moves to ('global': the global memory)")
    mv.add_argument("--reason", required=True, help="why (kept with the revision)")
    mv.add_argument("--json", action="store_true")
    mv.set_defaults(fn=cmd_move)


SCOPE_HELP = "only the facts of this memory scope ('global': the global memory)"
