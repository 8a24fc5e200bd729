"""memtray as an MCP client: other servers' tools offered to the agent, namespaced, with consent.

The servers listed in ``mcp.toml`` (:mod:`.servers`) are started by the instance
on a thread of their own (one asyncio loop, the official SDK's client), so a
server that floods its output, answers garbage, hangs or exits costs that thread
and never the worker that runs turns. Once a server has answered ``initialize``
and ``tools/list`` its tools join the agent's :class:`~memtray.core.llm.tools.ToolRegistry`
as ``<server>__<tool>``.

A call is refused until the user allowed that server (``memtray mcp allow
NAME``, read from the file at the call, so no restart is needed): the model gets
a refusal naming that command and tells the user. An allowed call is
time-limited (the server's ``timeout``), cancellable with the turn, and its
result is cut to :data:`MAX_RESULT` characters and handed to the model as data.
Every call, refused or not, is one ``mcp.call`` event with redacted, cut
arguments and result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtray.core.base.home import Home
from memtray.core.base.redact import redact
from memtray.core.llm.tools import Tool, ToolContext, ToolError
from memtray.core.log.integrations import McpCall
from memtray.core.mcp import servers as serverlist
from memtray.core.mcp.servers import ServerSpec

if TYPE_CHECKING:
    from memtray.core.base.worker import Worker
    from memtray.core.llm.tools import ToolRegistry
    from memtray.core.log.store import Store

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 30.0
MAX_TOOLS = 64  # per server: a server listing thousands of tools would drown the prompt
MAX_RESULT = 20_000
MAX_LOGGED = 2_000
MAX_DESCRIPTION = 1_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """``<server>__<tool>``, in the characters and length every provider accepts."""
    return f"{server}__{_UNSAFE.sub('_', tool)}"[:64]


@dataclass
class ServerState:
    spec: ServerSpec
    status: str = "starting"  # starting | ready | failed | stopped
    reason: str = ""
    tools: list[Any] = field(default_factory=list)
    session: Any = None
    stop: asyncio.Event | None = None


class McpClients:
    """The connections to the configured servers, on their own thread and loop."""

    def __init__(self, home: Home, specs: list[ServerSpec], *, record: Callable[[McpCall, str | None], None],
                 errlog: Path) -> None:
        self.home = home
        self.states = {s.name: ServerState(s) for s in specs}
        self._record = record
        self._errlog_path = errlog
        self._errlog: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._pending = len(specs)
        self._lock = threading.Lock()

    # --- lifecycle --------------------------------------------------------------------------

    def start(self, on_tools: Callable[[list[Tool]], None]) -> None:
        """Connect to every server in the background; ``on_tools`` gets each server's tools."""
        self._on_tools = on_tools
        self._errlog_path.parent.mkdir(parents=True, exist_ok=True)
        self._errlog = self._errlog_path.open("a", encoding="utf-8", errors="replace")  # the servers' stderr
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="memtray-mcp", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        for st in self.states.values():
            self._loop.create_task(self._serve(st))
        if not self.states:
            self._ready.set()
        self._loop.run_forever()

    def wait_ready(self, timeout: float) -> bool:
        """True once every server has connected or failed (tests, `mcp servers --check`)."""
        return self._ready.wait(timeout)

    def close(self, timeout: float = 10.0) -> None:
        loop = self._loop
        if loop is None:
            return

        async def stop_all() -> None:
            for st in self.states.values():
                if st.stop is not None:
                    st.stop.set()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop_all(), loop).result(timeout + 1)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)
        self._loop = None
        if self._errlog is not None:
            self._errlog.close()

    def _settled(self) -> None:
        with self._lock:
            self._pending -= 1
            if self._pending <= 0:
                self._ready.set()

    async def _serve(self, st: ServerState) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp_types import Implementation
        from memtray.core import __version__

        st.stop = asyncio.Event()
        settled = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                if st.spec.url:
                    from mcp.client.streamable_http import streamable_http_client

                    streams = await stack.enter_async_context(streamable_http_client(st.spec.url))
                else:
                    params = StdioServerParameters(command=st.spec.command, args=list(st.spec.args),
                                                   env=st.spec.env or None)
                    streams = await stack.enter_async_context(stdio_client(params, errlog=self._errlog))
                session = await stack.enter_async_context(ClientSession(
                    streams[0], streams[1], client_info=Implementation(name="memtray", version=__version__)))
                await asyncio.wait_for(session.initialize(), CONNECT_TIMEOUT)
                listed = await asyncio.wait_for(session.list_tools(), CONNECT_TIMEOUT)
                st.tools = list(listed.tools)[:MAX_TOOLS]
                st.session = session
                st.status = "ready"
                self._on_tools([self._tool(st, t) for t in st.tools])
                settled = True
                self._settled()
                await st.stop.wait()
                st.status = "stopped"
        except Exception as exc:  # the server's fault, never the turn's: recorded in its state
            st.status = "failed"
            st.reason = _why(exc)
            log.warning("MCP server %s: %s", st.spec.name, st.reason)
        finally:
            st.session = None
            if not settled:
                self._settled()

    # --- tools ------------------------------------------------------------------------------

    def _tool(self, st: ServerState, mtool: Any) -> Tool:
        server, remote = st.spec.name, str(mtool.name)
        schema = mtool.input_schema if isinstance(getattr(mtool, "input_schema", None), dict) else {}
        schema = schema or {"type": "object", "properties": {}}
        desc = " ".join(str(mtool.description or remote).split())[:MAX_DESCRIPTION]

        async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
            return await self.call(server, remote, args, ctx.session)

        return Tool(tool_name(server, remote), f"[tool of the MCP server {server!r}] {desc}", schema, handler)

    async def call(self, server: str, tool: str, args: dict[str, Any], session: str | None) -> str:
        """Call ``tool`` of ``server`` from the worker's loop: refused, or time-limited and cancellable."""
        st = self.states[server]
        logged_args = redact(json.dumps(args, ensure_ascii=False))[:MAX_LOGGED]

        def record(status: str, result: str) -> None:
            ev = McpCall(server=server, tool=tool, status=status, arguments=logged_args,
                         result=redact(result)[:MAX_LOGGED])
            self._record(ev, session)

        if not (st.spec.allowed or serverlist.allowed_now(self.home, server)):
            msg = (f"refused: the user has not allowed tools from the MCP server {server!r} yet. "
                   f"Tell the user they can allow it with `memtray mcp allow {server}` (or in Settings).")
            record("refused", msg)
            raise ToolError(msg)
        loop = self._loop
        if st.session is None or loop is None:
            msg = f"the MCP server {server!r} is not available ({st.reason or st.status})"
            record("error", msg)
            raise ToolError(msg)
        fut = asyncio.run_coroutine_threadsafe(st.session.call_tool(tool, args), loop)
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(fut), st.spec.timeout)
        except TimeoutError:
            fut.cancel()
            msg = f"the MCP server {server!r} did not answer within {st.spec.timeout:g} s"
            record("timeout", msg)
            raise ToolError(msg) from None
        except asyncio.CancelledError:
            fut.cancel()
            record("cancelled", "")
            raise
        except Exception as exc:
            msg = f"the MCP server {server!r} failed: {_why(exc)}"
            record("error", msg)
            raise ToolError(msg) from None
        text = result_text(result)
        if len(text) > MAX_RESULT:
            text = text[:MAX_RESULT] + f"\n[... cut: {len(text) - MAX_RESULT:,} more characters]"
        status = "error" if getattr(result, "is_error", False) else "ok"
        record(status, text)
        if status == "error":
            raise ToolError(f"{server}: {text}")
        return text

    def describe(self) -> list[dict[str, Any]]:
        """Each server's state and tools (Settings, `memtray mcp servers`)."""
        return [{"name": st.spec.name, "target": st.spec.describe(), "allowed": st.spec.allowed
                 or serverlist.allowed_now(self.home, st.spec.name), "status": st.status, "reason": st.reason,
                 "tools": [str(t.name) for t in st.tools]} for st in self.states.values()]


def result_text(result: Any) -> str:
    """The text of a tool result: text parts, or the structured content as JSON; other parts named."""
    parts: list[str] = []
    for c in getattr(result, "content", None) or ():
        text = getattr(c, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            parts.append(f"[{getattr(c, 'type', 'content')} omitted]")
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _why(exc.exceptions[0])
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or exc})"
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


FIRST_TURN_WAIT = 10.0


class McpTools:
    """The App's door to the MCP servers: started at the first turn, so a one-shot command
    (``memory log``, ``remind list``) never starts a server process.

    :meth:`before_turn` runs on the worker before each turn (``Agent.before_turn``): the
    first time it starts the servers and waits up to ``wait`` seconds for them; tools of
    a server that becomes ready later join the registry before the next turn.
    """

    def __init__(self, home: Home, tools: ToolRegistry, store: Store, worker: Worker, *, wait: float = FIRST_TURN_WAIT) -> None:
        self.home, self.tools, self.store, self.worker, self.wait = home, tools, store, worker, wait
        self.clients: McpClients | None = None
        self._started = False
        self._found: list[Tool] = []
        self._lock = threading.Lock()

    def before_turn(self) -> None:
        if not self._started:
            self._started = True
            self.clients = attach(self.home, self.tools, self.store, self.worker, offer=self._offer)
            if self.clients is not None:
                self.clients.wait_ready(self.wait)
        self._drain()

    def _offer(self, found: list[Tool]) -> None:  # on the MCP thread
        with self._lock:
            self._found += found
        self.worker.call_soon(self._drain)

    def _drain(self) -> None:  # on the worker
        with self._lock:
            found, self._found = self._found, []
        for t in found:
            self.tools.add(t)

    def describe(self) -> list[dict[str, Any]]:
        return self.clients.describe() if self.clients is not None else []

    def close(self) -> None:
        if self.clients is not None:
            self.clients.close()


def attach(home: Home, tools: ToolRegistry, store: Store, worker: Worker, *,
           offer: Callable[[list[Tool]], None] | None = None) -> McpClients | None:
    """Start the servers of ``home``'s mcp.toml and offer their tools on ``tools`` (None: no servers).

    Tools are added and calls logged on the worker (the single writer). Nothing is
    imported from the MCP SDK when no server is configured.
    """
    try:
        specs = serverlist.load(home)
    except Exception as exc:
        log.warning("MCP servers not started: %s", exc)
        return None
    if not specs:
        return None

    def record(call: McpCall, session: str | None) -> None:
        store.append(call, session=session)

    clients = McpClients(home, specs, record=record, errlog=home.logs / "mcp-servers.log")

    def add_later(found: list[Tool]) -> None:
        def add() -> None:
            for t in found:
                tools.add(t)

        worker.call_soon(add)

    clients.start(offer or add_later)
    return clients
