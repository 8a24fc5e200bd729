"""Memory writes an MCP client asks for: remember and forget, with ``Source: mcp``.

They run inside the instance that holds the data home (the CLI command
``memtray mcp remember``/``forget`` that :mod:`memtray.core.mcp.server` runs, locally or
forwarded), so they take the same path as every other write: one ``memory.written``
(source ``mcp``, the client's name in its ``client`` member) and an ``mcp.write`` naming
the client and the tool, appended in one write, then one commit with the trailers
``Source: mcp`` and ``Client: <name>``. A fact that reads like an instruction is refused,
never written: what a client sends is data.

A client may give the fact a time (``from``, ``until``, ``review_after``: ISO dates), read
by the same door as a consolidation's (:func:`memtray.core.memory.timing.read_members`) and
written at the end of the fact as consolidation writes it; a date that is not one, or an
end before the start, is refused with the reason. A client forgets a fact by its id
(``F12``, as ``read_memory`` with ``sources`` shows it) or by its words, and only a fact of
its scope: an id it cannot see is "no fact F12", as one that does not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import TYPE_CHECKING

from memtray.core.base.errors import MemtrayError
from memtray.core.log.integrations import McpWrite
from memtray.core.memory import factdiff, scopes, timing
from memtray.core.memory import facts as fact_ids
from memtray.core.memory.factdiff import Fact
from memtray.core.memory.facts import Ledger
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


def read_time(raw: Mapping[str, object], today: date | None) -> timing.When | None:
    """A client's ``from`` / ``until`` / ``review_after``, validated (:func:`timing.read_members`,
    the consolidation's door): the time, None when none was given, or :class:`McpWriteRefused`
    with the reason."""
    when, bad = timing.read_members(raw, today)
    if bad:
        raise McpWriteRefused(f"the fact's time: {bad}", hint="Give dates as YYYY-MM-DD, 'from' before 'until'.")
    return when


def remember(memory: MemoryService, fact: str, section: str | None, client: str | None, *, scope: str | None = None,
             when: timing.When | None = None) -> str:
    """Add ``fact`` to memory (under ``section``, in ``scope``: default global) for MCP client
    ``client``; ``when`` (from :func:`read_time`) is its time. A fact it can see with the same
    words gets that time instead (its id stays)."""
    where = scopes.check_name(scope or scopes.GLOBAL)
    fact = " ".join(fact.split())
    if not fact:
        raise McpWriteRefused("the fact is empty")
    if len(fact) > MAX_FACT:
        raise McpWriteRefused(f"a fact must be one short sentence (at most {MAX_FACT} characters)")
    if when is not None:
        fact = timing.with_when(fact, when)
    if looks_like_instruction(fact) or (section and looks_like_instruction(section)):
        raise McpWriteRefused(
            "refused: this reads like an instruction rather than a fact about the user, so it is not written",
            hint="Memory holds facts; `memtray memory review` lists what the guard held back.",
        )
    memory.check_worktree()
    current = memory.store.state.memory
    if when is not None and (done := _retime(memory, fact, client, scope)) is not None:
        return done
    sect = " ".join(section.split())[:MAX_FACT] if section else None
    if scope is None:  # a client that sees every scope: the same words anywhere are remembered
        new = factdiff.add_fact(current, fact, sect)
    else:  # a client limited to a scope: the same words in another are written into its own
        new = scopes.add_in(current, where, fact, sect)
    if new == current:
        return "already remembered"
    _led, d = memory.facts_for(new, "agent", None)
    _write(memory, new, "remember", client, None, {f.id: where for f in d.added})
    return f"remembered: {fact}"


def _visible(memory: MemoryService, scope: str | None) -> tuple[Ledger, list[tuple[int, Fact]]]:
    """The current ledger and the facts (index in it, fact) a client of ``scope`` may change:
    every fact for an unlimited client, else only its scope's."""
    led = memory.ledger()
    shown = None if scope is None else [scopes.check_name(scope)]
    return led, scopes.facts_in(led, memory.store.state.memory, shown)


def _retime(memory: MemoryService, fact: str, client: str | None, scope: str | None) -> str | None:
    """Give a visible fact with the same words as ``fact`` (without its time) ``fact``'s time:
    one revision under its id; None when there is no such fact."""
    led, visible = _visible(memory, scope)
    hit = timing.same_words([f.text for _k, f in visible], fact)
    if hit is None:
        return None
    k, found = visible[hit]
    if found.norm == factdiff.normalize(fact):
        return "already remembered"
    current = memory.store.state.memory
    new = factdiff.replace_fact(current, k, fact)
    _write(memory, new, "remember", client, {found.id: f"time set (via {client_name(client)})"},
           facts=Ledger.with_ids(new, led.ids, led.next))
    return f"remembered: {fact} ({found.id}: its time set)"


def forget(memory: MemoryService, fact: str, why: str, client: str | None, *, scope: str | None = None) -> str:
    """Remove the fact ``fact`` names (its id, ``F12``, or its words) for MCP client ``client``;
    with ``scope``, only a fact of that scope can match. An id names that fact or none: it is
    never read as words."""
    if len(fact) > MAX_FACT or len(why) > MAX_FACT:
        raise McpWriteRefused(f"the fact and the reason must each be at most {MAX_FACT} characters")
    memory.check_worktree()
    led = memory.ledger()
    where = " in memory" if scope is None else f" in the memory scope {scopes.check_name(scope)!r}"
    found = scopes.find(led, memory.store.state.memory, None if scope is None else [scopes.check_name(scope)], fact)
    key = fact_ids.id_key(fact)
    if found is None and key is not None and key.startswith("F"):
        raise McpWriteRefused(f"no fact {key}{where}",
                              hint="read_memory with sources=true lists the facts with their ids.")
    if found is None:
        raise McpWriteRefused(f"no fact{where} matches {fact!r}",
                              hint="Read memtray://memory/MEMORY.md for the facts.")
    current = memory.store.state.memory
    new = factdiff.remove_fact(current, factdiff.parse(current)[led.facts.index(found)])
    reason = " ".join(why.split()) or "asked to forget"
    _write(memory, new, "forget", client, {found.id: f"{reason} (via {client_name(client)})"},
           facts=Ledger(tuple(f for f in led.facts if f.id != found.id), led.next))
    return f"forgot: {found.text} ({reason})"


def _write(memory: MemoryService, new: str, tool: str, client: str | None, reasons: dict[str, str] | None,
           placed: dict[str, str] | None = None, facts: Ledger | None = None) -> None:
    seq = memory.store.state.memory_seq
    extra = [(McpWrite(client=client_name(client), tool=tool, memory_seq=seq + 1), None)]
    memory.write(new, reason="agent", source="mcp", model=None, dropped_reasons=reasons, extra=extra,
                 client=client_name(client), placed=placed, facts=facts)
