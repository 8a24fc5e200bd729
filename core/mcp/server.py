"""``memtray mcp``: memtray's memory offered to other assistants over the Model Context Protocol.

Built on the official ``mcp`` SDK (imported only here, only when the server
starts). Every tool and resource runs a memtray **CLI command** through the
``run`` function it is given (``memtray history search --json ...``,
``memtray memory show REV``, ``memtray mcp remember ...``): in this process
against a freshly opened App when the data home is free, or forwarded to the
desktop app or daemon that holds it. So there is one writer, one code path and
one output format (the ``--json`` shapes of docs/CLI.md); nothing here touches
the store.

Resources: ``memtray://memory/MEMORY.md``, ``memtray://memory/HISTORY.md`` (not for a
client limited to a scope) and the template ``memtray://memory/{rev}/MEMORY.md`` (any revision). Tools:
``search_history``, ``read_memory``, ``memory_log``, ``memory_diff``,
``memory_why``, and unless read-only ``remember``, ``forget`` and (when the
installed memtray has ``memory undo``) ``undo_consolidation``.

Arguments are bounded (a client may send megabytes); a failing command becomes
an error *result* with memtray's one-line message, never a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations
from memtray.core import __version__
from memtray.core.mcp.writes import MAX_FACT, client_name
from pydantic import Field

MAX_QUERY = 1000
MAX_OUTPUT = 200_000  # characters of one answer (a huge MEMORY.md or search result is cut)
_REV = re.compile(r"^[A-Za-z0-9][A-Za-z0-9~^._/@{}-]{0,79}$")

INSTRUCTIONS = (
    "memtray is the user's long-term memory (MEMORY.md, versioned in git) and the searchable "
    "history of their past conversations. Read memtray://memory/MEMORY.md for what is known about "
    "the user; use search_history for past conversations; use remember/forget for durable facts "
    "only (every change is a revision the user can see and undo)."
)


@dataclass(frozen=True)
class Ran:
    """What one CLI command printed and returned."""

    code: int
    out: str
    err: str


#: Runs ``memtray ARGV`` (locally or in the running instance) and returns what it printed.
Runner = Callable[[list[str]], Ran]


class CommandFailed(Exception):
    """A command exited non-zero; the message is memtray's own error line(s)."""


def message_of(ran: Ran) -> str:
    text = "\n".join(line.removeprefix("memtray: error: ").strip() for line in ran.err.strip().splitlines())
    return text or ran.out.strip() or f"the command failed (exit status {ran.code})"


def _rev(rev: str) -> str:
    rev = rev.strip()
    if not _REV.match(rev):
        raise CommandFailed(f"not a revision: {rev[:80]!r} (a commit id, HEAD, HEAD~N)")
    return rev


def _cut(text: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    return text[:MAX_OUTPUT] + f"\n[... cut: {len(text) - MAX_OUTPUT:,} more characters]"


Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY, description="Words to find (all must match).")]
Fact = Annotated[str, Field(min_length=1, max_length=MAX_FACT)]
Reason = Annotated[str, Field(min_length=1, max_length=MAX_FACT)]
Rev = Annotated[str, Field(max_length=80, description="A revision: a commit id, HEAD or HEAD~N.")]
Limit = Annotated[int, Field(ge=1, le=100)]
LogLimit = Annotated[int, Field(ge=1, le=200)]
Session = Annotated[str | None, Field(max_length=200)]
Kind = Annotated[str | None, Field(pattern="^(history|message)$")]
When = Annotated[str | None, Field(max_length=40, description="ISO date/time: memory as it was then.")]
Section = Annotated[str | None, Field(max_length=120, description="Heading, e.g. 'Preferences'.")]
Day = Annotated[str | None, Field(max_length=40, description="A day, YYYY-MM-DD.")]
ConsolidationId = Annotated[str, Field(min_length=4, max_length=80, pattern="^[A-Za-z0-9_-]+$")]


def build(run: Runner, *, read_only: bool = False, undo: bool = False, scope: str | None = None) -> MCPServer:
    """The MCP server over ``run``; ``undo`` offers ``undo_consolidation`` (``memory undo``).

    ``scope`` (the user's ``memtray mcp --scope NAME``): the client sees and writes that memory
    scope only. Every command it runs carries ``--scope``, so the scope is applied by the same
    code a terminal runs; the diary (HISTORY.md), which spans every scope, is not offered
    (neither listed as a resource nor read by ``read_memory``), and search finds only that
    scope's conversations and never a diary entry (``history search --no-diary``)."""
    server: MCPServer = MCPServer("memtray", version=__version__, log_level="WARNING",
                                  instructions=INSTRUCTIONS if scope is None else INSTRUCTIONS + (
                                      f" This client is limited to the memory scope {scope!r}."))
    only = ["--scope", scope] if scope is not None else []

    def no_diary(error: type[Exception] = ToolError) -> None:
        if scope is not None:
            raise error(f"the diary spans every memory scope; this client is limited to {scope!r}")

    async def call(argv: list[str], error: type[Exception] = ToolError) -> str:
        ran = await anyio.to_thread.run_sync(run, argv)
        if ran.code != 0:
            raise error(message_of(ran))
        return _cut(ran.out)

    def who(ctx: Context) -> str:
        try:
            params = ctx.session.client_params
            return client_name(params.client_info.name if params is not None else None)
        except AttributeError:
            return client_name(None)

    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    # --- resources ----------------------------------------------------------------------

    @server.resource("memtray://memory/MEMORY.md", name="MEMORY.md", mime_type="text/markdown",
                     description="What memtray knows about the user, now.")
    async def memory_now() -> str:
        return await call(["memory", "show", *only], ResourceError)

    if scope is None:  # a client limited to a scope is not shown the diary at all (it spans every scope)
        @server.resource("memtray://memory/HISTORY.md", name="HISTORY.md", mime_type="text/markdown",
                         description="The diary of past conversations, one dated entry each.")
        async def history_now() -> str:
            return await call(["memory", "show", "--history"], ResourceError)

    @server.resource("memtray://memory/{rev}/MEMORY.md", name="MEMORY.md at a revision", mime_type="text/markdown",
                     description="MEMORY.md as it was at a revision (see memory_log).")
    async def memory_at(rev: str) -> str:
        try:
            return await call(["memory", "show", _rev(rev), *only], ResourceError)
        except CommandFailed as exc:
            raise ResourceError(str(exc)) from None

    # --- reading tools -------------------------------------------------------------------

    @server.tool(annotations=reading, structured_output=False)
    async def search_history(
        query: Query,
        limit: Limit = 10,
        session: Session = None,
        kind: Kind = None,
    ) -> str:
        """Search the user's past conversations and the history diary. Returns a JSON array of hits."""
        argv = ["history", "search", "--json", "--limit", str(limit), *only]
        if scope is not None:  # the diary's entries are of no scope: a scoped client finds none
            if kind == "history":
                no_diary()
            argv.append("--no-diary")
        if session:
            argv += ["--session", session]
        if kind:
            argv += ["--kind", kind]
        return await call([*argv, "--", query])

    @server.tool(annotations=reading, structured_output=False)
    async def read_memory(
        rev: Rev = "HEAD",
        at: When = None,
        history: bool = False,
        sources: bool = False,
    ) -> str:
        """MEMORY.md (or HISTORY.md) now, at a revision, or as it was at a date. ``sources`` (the
        current memory only): each fact's id and receipt after it, "stated" by the user with the
        quote, "inferred" (only the assistant said it) or "no receipt"."""
        argv = ["memory", "show", *only]
        if at:
            argv += ["--at", at]
        else:
            argv.append(_checked(rev))
        if history:
            no_diary()
            argv.append("--history")
        if sources:
            argv.append("--sources")
        return await call(argv)

    def _checked(rev: str) -> str:
        try:
            return _rev(rev)
        except CommandFailed as exc:
            raise ToolError(str(exc)) from None

    @server.tool(annotations=reading, structured_output=False)
    async def memory_log(limit: LogLimit = 20) -> str:
        """Recent memory revisions (and failed consolidations), newest first, as JSON."""
        return await call(["memory", "log", "--json", "--limit", str(limit), *only])

    @server.tool(annotations=reading, structured_output=False)
    async def memory_diff(rev_a: Rev | None = None, rev_b: Rev | None = None) -> str:
        """Facts added, dropped and changed between two revisions (default: the last change), as JSON."""
        argv = ["memory", "diff", "--json", *only]
        argv += [_checked(r) for r in (rev_a, rev_b) if r]
        return await call(argv)

    @server.tool(annotations=reading, structured_output=False)
    async def memory_why(fact: Fact) -> str:
        """Where a fact in memory came from: its revision, the messages behind it and its receipt
        (the quote, stated by the user or inferred; null for facts without one), as JSON."""
        return await call(["memory", "why", "--json", *only, "--", fact])

    if read_only:
        return server

    # --- writing tools (one event each, through the instance) -----------------------------

    writing = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

    @server.tool(annotations=writing, structured_output=False)
    async def remember(
        fact: Fact,
        ctx: Context,
        section: Section = None,
        from_date: Day = None,
        until: Day = None,
        review_after: Day = None,
    ) -> str:
        """Save one durable fact about the user to memory (a new revision the user can undo).
        A fact that holds only for a time gets ``from_date`` / ``until`` (YYYY-MM-DD; "in July"
        is from the 1st until the 31st); one that may stop being true without a date can get
        ``review_after``: the day to ask the user whether it still holds."""
        argv = ["mcp", "remember", "--client", who(ctx), *only]
        if section:
            argv += ["--section", section]
        for flag, day in (("--from", from_date), ("--until", until), ("--review-after", review_after)):
            if day:
                argv += [f"{flag}={day}"]  # one token: a day that starts with '-' is never read as a flag
        return (await call([*argv, "--", fact])).strip()

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
                 structured_output=False)
    async def forget(fact: Fact, reason: Reason, ctx: Context) -> str:
        """Remove a fact from memory, by its id (``F12``: read_memory with sources=true shows
        them) or its words, with the reason; the old revision stays."""
        return (await call(["mcp", "forget", "--client", who(ctx), "--reason", reason, *only, "--", fact])).strip()

    if undo:
        @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
                     structured_output=False)
        async def undo_consolidation(
            consolidation: ConsolidationId,
        ) -> str:
            """Undo one consolidation or revision (an id from memory_log): what it changed is taken
            back and later changes stay, as a new revision the user can see."""
            return (await call(["memory", "undo", consolidation, *only])).strip()

    return server

