"""Memory writes an MCP client asks for: remember and forget, with ``Source: mcp``.

They run inside the instance that holds the data home (the CLI command
``memtray mcp remember``/``forget`` that :mod:`memtray.core.mcp.server` runs, locally or
forwarded), so they take the same path as every other write: one ``memory.written``
(source ``mcp``, the client's name in its ``client`` member) and an ``mcp.write`` naming
the client and the tool, appended in one write, then one commit with the trailers
``Source: mcp`` and ``Client: <name>``. A fact that reads like an instruction is refused,
never written: what a client sends is data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtray.core.base.errors import MemtrayError
from memtray.core.log.integrations import McpWrite
from memtray.core.memory import factdiff, scopes
from memtray.core.memory.poison import looks_like_instruction

if TYPE_CHECKING:
    from memtray.core.memory.service import MemoryService

#: The longest fact or reason a client may send (the agent's own tools allow the same).
MAX_FACT = 500
MAX_CLIENT = 80


class McpWriteRefused(MemtrayError):
    """The client's write was refused (empty, too long, reads like an instruction)."""


def client_name(name: str | None) -> str:
    name = " ".join(str(name or "").split())[:MAX_CLIENT]
    return name or "unknown client"


def remember(memory: MemoryService, fact: str, section: str | None, client: str | None, *, scope: str | None = None) -> str:
    """Add ``fact`` to memory (under ``section``, in ``scope``: default global) for MCP client ``client``."""
    where = scopes.check_name(scope or scopes.GLOBAL)
    fact = " ".join(fact.split())
    if not fact:
        raise McpWriteRefused("the fact is empty")
    if len(fact) > MAX_FACT:
        raise McpWriteRefused(f"a fact must be one short sentence (at most {MAX_FACT} characters)")
    if looks_like_instruction(fact) or (section and looks_like_instruction(section)):
        raise McpWriteRefused(
            "refused: this reads like an instruction rather than a fact about the user, so it is not written",
            hint="Memory holds facts; `memtray memory review` lists what the guard held back.",
        )
    memory.check_worktree()
    current = memory.store.state.memory
    sect = " ".join(section.split())[:MAX_FACT] if section else None
    if scope is None:  # a client that sees every scope: the same words anywhere are remembered
        new = factdiff.add_fact(current, fact, sect)
    else:
        # a client limited to a scope sees the global memory and that scope: the same words in
        # another scope are not "already remembered" (that would tell it what the scope holds),
        # and they are written into its own scope, so its fact is there when it looks
        visible = scopes.view(current, where)
        if factdiff.add_fact(visible, fact, sect) == visible:
            return "already remembered"
        parts = dict(scopes.split(current)) if "<!-- scope:" in current else {scopes.GLOBAL: current}
        parts[where] = factdiff.add_fact(parts.get(where, ""), fact, sect)
        new = scopes.join(parts)
    if new == current:
        return "already remembered"
    _led, d = memory.facts_for(new, "agent", None)
    _write(memory, new, "remember", client, None, {f.id: where for f in d.added})
    return f"remembered: {fact}"


def forget(memory: MemoryService, fact: str, why: str, client: str | None, *, scope: str | None = None) -> str:
    """Remove the fact matching ``fact`` (its text or id) for MCP client ``client``; with
    ``scope``, only a fact of that scope can match."""
    if len(fact) > MAX_FACT or len(why) > MAX_FACT:
        raise McpWriteRefused(f"the fact and the reason must each be at most {MAX_FACT} characters")
    memory.check_worktree()
    current = memory.store.state.memory
    parsed = factdiff.parse(current)
    if scope is not None:
        where = scopes.check_name(scope)
        parsed = [f for f, s in zip(parsed, scopes.of_facts(current), strict=True) if s == where]
    found = factdiff.match_fact(parsed, fact)
    if found is None:
        raise McpWriteRefused(f"no fact in memory matches {fact!r}", hint="Read memtray://memory/MEMORY.md for the facts.")
    new = factdiff.remove_fact(current, found)
    reason = " ".join(why.split()) or "asked to forget"
    _write(memory, new, "forget", client, {found.id: f"{reason} (via {client_name(client)})"})
    return f"forgot: {found.text} ({reason})"


def _write(memory: MemoryService, new: str, tool: str, client: str | None, reasons: dict[str, str] | None,
           placed: dict[str, str] | None = None) -> None:
    seq = memory.store.state.memory_seq
    extra = [(McpWrite(client=client_name(client), tool=tool, memory_seq=seq + 1), None)]
    memory.write(new, reason="agent", source="mcp", model=None, dropped_reasons=reasons, extra=extra,
                 client=client_name(client), placed=placed)
