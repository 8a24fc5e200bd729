"""Scopes: the global memory and named parts of it ("work", "family"), each its own file (pure).

A fact lives in exactly one scope. The memory of a ``memory.written`` event stays one text
(so fact ids, the guard, the diff, undo and rebuild keep working on one document): the
global facts first, then each named scope's block after a marker line
``<!-- scope: NAME -->``, the blocks in name order (the *canonical* form). A fact's scope
is the block it stands in, so an old memory without markers is all global, and a move
between scopes is a move of a bullet between blocks, which keeps the fact's id.

The git projection splits the text into files (:func:`files`): ``MEMORY.md`` holds the
global facts, ``scopes/NAME.md`` each scope's, all plain markdown; :func:`join` puts
them back together, exactly (``join(split(t)) == t`` for a canonical ``t``). What one
conversation may see is :func:`view`: the global facts and its own scope's, never another
scope's.

Scope names are short slugs (:func:`check_name`): they become file names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from memtray.core.base.errors import MemtrayError
from memtray.core.log.events import SessionScope
from memtray.core.log.payloads import SCOPE_NAME, SCOPE_NAME_RULE
from memtray.core.log.projections import State
from memtray.core.log.store import Store
from memtray.core.memory import factdiff
from memtray.core.memory import facts as fact_ids
from memtray.core.memory.factdiff import Fact
from memtray.core.memory.facts import Ledger

GLOBAL = "global"
#: where a named scope's facts live in the memory repository
FOLDER = "scopes"
MAX_SCOPES = 64
_NAME_RE = SCOPE_NAME
_MARKER_RE = re.compile(r"<!-- scope: ([a-z0-9][a-z0-9_-]{0,31}) -->[ \t]*\r?")
_HEADING_RE = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")


class ScopeError(MemtrayError):
    """A scope name that cannot be one, or a scope a door may not use."""


def check_name(name: str) -> str:
    """``name`` as a scope name (lower case), or :class:`ScopeError` saying why not. The rule
    is the log door's (:data:`SCOPE_NAME`), checked on ASCII only: lower-casing first would let
    a letter outside ASCII through (the Kelvin sign lower-cases to "k")."""
    n = name.strip()
    if n.lower() in (GLOBAL, ""):
        return GLOBAL
    if not n.isascii() or not _NAME_RE.fullmatch(n.lower()):
        raise ScopeError(f"{name!r} is not a scope name: use {SCOPE_NAME_RULE}",
                         hint="`memtray memory scopes` lists the scopes; 'global' is the global memory.")
    return n.lower()


def typed(name: str) -> str:
    """A scope name as the user typed it (``--scope NAME``): :func:`check_name`, and an empty
    one is said to be empty (an empty name is the global memory only inside memtray's events)."""
    if not name.strip():
        raise ScopeError("the scope name is empty",
                         hint=f"Give a scope name ({SCOPE_NAME_RULE}), or 'global' for the global memory; "
                              "`memtray memory scopes` lists them.")
    return check_name(name)


def is_file_name(name: str) -> bool:
    """``name`` is a scope's file name in :data:`FOLDER` (``work.md``; not ``Work.md``)."""
    try:
        return name.endswith(".md") and check_name(name[:-3]) == name[:-3]
    except ScopeError:
        return False


def marker(name: str) -> str:
    return f"<!-- scope: {name} -->"


def split(text: str) -> dict[str, str]:
    """The text of every scope in ``text``: ``{"global": ..., "work": ...}`` (a block named
    twice is one block; the global part is always there, maybe empty)."""
    parts: dict[str, list[str]] = {GLOBAL: []}
    current = GLOBAL
    for line in text.split("\n"):
        m = _MARKER_RE.fullmatch(line)
        if m is not None:
            current = m.group(1)
            parts.setdefault(current, [])
            continue
        parts[current].append(line)
    out = {}
    for name, lines in parts.items():
        body = "\n".join(lines).strip("\n")
        out[name] = body + "\n" if body.strip() else ""
    return out


def join(parts: Mapping[str, str]) -> str:
    """The canonical memory text of per-scope texts (global first, then by name); scopes
    without a fact are left out."""
    out = (parts.get(GLOBAL) or "").strip("\n")
    chunks = [out + "\n"] if out.strip() else []
    for name in sorted(n for n in parts if n != GLOBAL):
        body = (parts[name] or "").strip("\n")
        if factdiff.parse(body):
            chunks.append(f"{marker(name)}\n{body}\n")
    return "\n".join(chunks)


def canonical(text: str) -> str:
    """``text`` in the canonical form (no marker: the text itself, untouched)."""
    if "<!-- scope:" not in text:
        return text
    return join(split(text))


def names(text: str) -> list[str]:
    """The named scopes that hold facts in ``text``, sorted."""
    return sorted(n for n, body in split(text).items() if n != GLOBAL and factdiff.parse(body))


def of_facts(text: str) -> list[str]:
    """The scope of each fact of ``factdiff.parse(text)``, in that order."""
    spans = factdiff.spans(text)
    if "<!-- scope:" not in text:
        return [GLOBAL] * len(spans)
    starts: list[tuple[int, str]] = []
    for i, line in enumerate(text.split("\n")):
        m = _MARKER_RE.fullmatch(line)
        if m is not None:
            starts.append((i, m.group(1)))
    out = []
    for _fact, first, _end in spans:
        scope = GLOBAL
        for at, name in starts:
            if at < first:
                scope = name
        out.append(scope)
    return out


def scope_map(ledger: Ledger, text: str) -> dict[str, str]:
    """Fact id -> scope for every fact of ``ledger`` (the ledger of ``text``)."""
    if "<!-- scope:" not in text:
        return dict.fromkeys(ledger.ids, GLOBAL)  # no parse: a home without scopes pays nothing
    return dict(zip(ledger.ids, of_facts(text), strict=False))


def facts_in(ledger: Ledger, text: str, shown: Sequence[str] | None) -> list[tuple[int, Fact]]:
    """The facts of ``ledger`` (the ledger of ``text``) that stand in the scopes ``shown``,
    each with its index in the ledger; ``shown`` None: every fact."""
    if shown is None:
        return list(enumerate(ledger.facts))
    placed = scope_map(ledger, text)
    return [(k, f) for k, f in enumerate(ledger.facts) if placed.get(f.id, GLOBAL) in shown]


def find(ledger: Ledger, text: str, shown: Sequence[str] | None, fact: str) -> Fact | None:
    """The fact ``fact`` names among those of the scopes ``shown`` (:func:`facts_in`): by its
    id (``F12``), which names that fact or none and is never read as words, else by its words
    (or factdiff's older content-hash id). None when none of them matches: a fact of a scope
    not shown is not found, exactly as one that does not exist. Every door that changes a fact
    by what a caller names (the chat's ``forget``, an MCP client's) finds it here."""
    seen = facts_in(ledger, text, shown)
    key = fact_ids.id_key(fact)
    found = next((f for _k, f in seen if f.id == key), None) if key else None
    if found is not None or (key is not None and key.startswith("F")):
        return found
    parsed = factdiff.parse(text)
    hit = factdiff.match_fact([parsed[k] for k, _f in seen], fact)
    return next((f for k, f in seen if hit is not None and parsed[k] is hit), None)


def add_in(text: str, scope: str, fact: str, section: str | None) -> str:
    """``text`` with ``fact`` added into ``scope``'s part (under ``section``), or ``text`` as it
    is when what a conversation of ``scope`` sees (:func:`view`) has the same words already.
    The same words in another scope are not "already remembered" (that would tell the
    conversation what the scope holds, and leave its own scope without the fact)."""
    visible = view(text, scope)
    if factdiff.add_fact(visible, fact, section) == visible:
        return text
    if "<!-- scope:" not in text and scope == GLOBAL:
        return factdiff.add_fact(text, fact, section)  # a home without scopes: as before them
    parts = dict(split(text)) if "<!-- scope:" in text else {GLOBAL: text}
    parts[scope] = factdiff.add_fact(parts.get(scope, ""), fact, section)
    return join(parts)


def files(text: str) -> dict[str, str]:
    """The memory repository's files of one revision: ``MEMORY.md`` (global) and
    ``scopes/NAME.md`` for every scope with facts."""
    parts = split(text) if "<!-- scope:" in text else {GLOBAL: text}
    out = {"MEMORY.md": parts[GLOBAL] if "<!-- scope:" in text else text}
    for name in sorted(n for n in parts if n != GLOBAL):
        if factdiff.parse(parts[name]):
            out[f"{FOLDER}/{name}.md"] = parts[name]
    return out


def from_files(global_text: str, scoped: Mapping[str, str]) -> str:
    """The memory text of the repository's files (``scoped``: scope name -> its file's text):
    :func:`join`, except that markers the user typed inside a file are obeyed."""
    if not scoped and "<!-- scope:" not in global_text:
        return global_text
    parts: dict[str, list[str]] = {}
    for name, body in [(GLOBAL, global_text), *sorted(scoped.items())]:
        for inner, piece in split(f"{marker(name)}\n{body}" if name != GLOBAL else body).items():
            if piece.strip():
                parts.setdefault(inner, []).append(piece.strip("\n"))
    return join({n: "\n\n".join(p) + "\n" for n, p in parts.items()})


def view(text: str, scope: str | None) -> str:
    """What a conversation of ``scope`` (None: global) is shown: the global facts, then its
    scope's block with its marker. Another scope's facts never."""
    if "<!-- scope:" not in text:
        return text
    parts = split(text)
    want = {GLOBAL: parts[GLOBAL]}
    if scope and scope != GLOBAL and scope in parts:
        want[scope] = parts[scope]
    return join(want)


def only(text: str, scope: str) -> str:
    """The facts of one scope (its file's text)."""
    return split(text).get(scope, "") if "<!-- scope:" in text else (text if scope == GLOBAL else "")


def sub_ledger(ledger: Ledger, text: str, keep: Sequence[str]) -> Ledger:
    """The ledger of the scopes ``keep`` of ``text`` (its canonical restriction, as
    :func:`restrict` gives it), ids kept."""
    scopes = of_facts(text)
    ids = [f.id for f, s in zip(ledger.facts, scopes, strict=False) if s in keep]
    return Ledger.with_ids(restrict(text, keep), ids, ledger.next)


def restrict(text: str, keep: Sequence[str]) -> str:
    parts = split(text)
    return join({n: b for n, b in parts.items() if n in keep})


def merge_back(full: str, full_ledger: Ledger, shown: Sequence[str], new_text: str, new_ledger: Ledger) -> tuple[str, Ledger]:
    """A change made on the scopes ``shown`` of ``full`` (``new_text`` with ``new_ledger``,
    e.g. a consolidation of one conversation) put back beside the scopes it never saw.

    Facts of ``new_text`` stay in the block they stand in; a block the change names that it
    was not shown is not written (its facts go to the first shown named scope, else global)."""
    if "<!-- scope:" not in full and "<!-- scope:" not in new_text and GLOBAL in shown:
        return new_text, new_ledger  # a memory without scopes, all shown: the change as it is
    hidden_scopes = of_facts(full)
    hidden_ids: dict[str, list[str]] = {}
    for f, s in zip(full_ledger.facts, hidden_scopes, strict=False):
        if s not in shown:
            hidden_ids.setdefault(s, []).append(f.id)
    full_parts = split(full)
    new_parts = split(new_text)
    new_scopes = of_facts(new_text)
    fallback = next((s for s in shown if s != GLOBAL), GLOBAL)
    parts: dict[str, str] = {n: b for n, b in full_parts.items() if n not in shown}
    ids_of: dict[str, list[str]] = {n: list(i) for n, i in hidden_ids.items()}
    for name, body in new_parts.items():
        target = name if name in shown else fallback
        ids = [f.id for f, s in zip(new_ledger.facts, new_scopes, strict=False) if s == name]
        if target in parts and parts[target].strip():
            parts[target] = parts[target].rstrip("\n") + "\n\n" + body
        else:
            parts[target] = body
        ids_of.setdefault(target, []).extend(ids)
    text = join(parts)
    order = [GLOBAL, *sorted(n for n in parts if n != GLOBAL)]
    ids = [i for n in order if factdiff.parse(parts.get(n) or "") for i in ids_of.get(n, [])]
    return text, Ledger.with_ids(text, ids, max(full_ledger.next, new_ledger.next))


def place(text: str, ledger: Ledger, want: Mapping[str, str]) -> tuple[str, Ledger]:
    """``text`` with each fact of ``want`` (fact id -> scope) moved into that scope's block,
    under a heading of the same section; ids kept. Facts already there stay put."""
    scopes = of_facts(text)
    parts = split(text)
    block_ids: dict[str, list[str]] = {n: [] for n in parts}
    for f, s in zip(ledger.facts, scopes, strict=False):
        block_ids[s].append(f.id)
    moving: list[tuple[Fact, str, str]] = []
    for f, s in zip(ledger.facts, scopes, strict=False):
        to = want.get(f.id)
        if to is not None and to != s:
            moving.append((f, s, to))
    for f, src, _to in moving:
        idx = block_ids[src].index(f.id)
        body = parts[src]
        spans = factdiff.spans(body)
        _fact, first, end = spans[idx]
        lines = body.split("\n")
        del lines[first:end]
        parts[src] = _prune(lines, first)
        block_ids[src].pop(idx)
    for f, _src, to in moving:
        body = parts.get(to, "")
        before = [x.norm for x in factdiff.parse(body)]
        new_body = factdiff.add_fact(body, f.text, f.section or None)
        after = [x.norm for x in factdiff.parse(new_body)]
        if len(after) == len(before):
            continue  # the same words are there already: the fact is that one
        at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), len(before))
        parts[to] = new_body
        block_ids.setdefault(to, []).insert(at, f.id)
    new = join(parts)
    order = [GLOBAL, *sorted(n for n in parts if n != GLOBAL)]
    ids = [i for n in order if factdiff.parse(parts.get(n) or "") for i in block_ids.get(n, [])]
    return new, Ledger.with_ids(new, ids, ledger.next)


def settle(text: str, ledger: Ledger, want: Mapping[str, str]) -> tuple[str, Ledger]:
    """``text`` with every fact of ``want`` (fact id -> scope) in that scope (:func:`place`),
    or ``text`` as it is when each already is."""
    if want and any(want.get(i, s) != s for i, s in scope_map(ledger, text).items()):
        return place(text, ledger, want)
    return text, ledger


def _prune(lines: list[str], at: int) -> str:
    """``lines`` (a scope's part, a fact taken out at line ``at``) without the headings over
    ``at`` that have nothing left under them, innermost first. A heading with another
    section's facts under it stays, and so does the part's title (a ``#`` heading on its first
    line: MEMORY.md's ``# Memory``); headings elsewhere are the user's and stay as they are."""
    lines = list(lines)
    limit = 7  # the level a heading over ``at`` must be under: each found heading's parent next
    i = min(at, len(lines)) - 1
    while i >= 0:
        level = _level(lines[i])
        if level is None or level >= limit:
            i -= 1
            continue
        limit = level
        j = i + 1
        while j < len(lines) and not ((lv := _level(lines[j])) is not None and lv <= level):
            j += 1
        if any(line.strip() and _level(line) is None for line in lines[i + 1:j]):
            break  # something is still under it, so under each heading above it too
        if level == 1 and not any(line.strip() for line in lines[:i]):
            break  # the title
        del lines[i:j]
        i -= 1
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    return out + "\n" if out.strip() else ""


def _level(line: str) -> int | None:
    """The level of a markdown heading line (``## Work``: 2), None for any other line."""
    if _HEADING_RE.match(line) is None:
        return None
    mark = line.lstrip(" ")
    return len(mark) - len(mark.lstrip("#"))


# --- a conversation's scope ------------------------------------------------------------------


def of_session(state: State, key: str) -> str:
    """The scope conversation ``key`` belongs to ("global" when none was chosen)."""
    s = state.sessions.get(key)
    return s.scope if s is not None and s.scope else GLOBAL


def choose(store: Store, key: str, scope: str) -> str:
    """Make ``key`` a conversation of ``scope`` from now on (remembered: a ``session.scope``
    event). Nothing is appended when it is already so. Returns the scope name."""
    name = check_name(scope)
    if of_session(store.state, key) == name:
        return name
    store.append(SessionScope(scope=name), session=key)
    return name


def known(state: State) -> list[str]:
    """Every named scope: those holding facts and those a conversation chose, sorted."""
    found = set(names(state.memory))
    found |= {s.scope for s in state.sessions.values() if s.scope}
    return sorted(found)
