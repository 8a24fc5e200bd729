"""memtray as an MCP client: a scripted model calls real MCP servers' tools through the agent.

Peers: the reference servers `mcp-server-time` (PyPI) and `@modelcontextprotocol/server-everything`
(npm), built from their locks under packaging/peers/ by tests/peers.py, and a hostile server
(tests/fixtures/mcp_hostile.py) that hangs, floods, answers with instructions or exits.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.mcp import client as mcpclient
from memtray.core.mcp import servers

from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call
from tests.peers import npm_peer, peer_python
from tests.support import cli_here

HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_hostile.py"


def _time_server() -> Path:
    return peer_python("mcp-server-time").parent / "mcp-server-time"


def _app(home: Home, server: ScriptedLLMServer) -> App:
    cfg = Config(model="openai/test-model", api_base=server.base_url, llm_retries=0, llm_timeout=5.0,
                 memory_window=1000)
    return App.open(home, config=cfg)


def _write_servers(home: Home, body: str) -> None:
    home.root.mkdir(parents=True, exist_ok=True)
    servers.path(home).write_text(body, encoding="utf-8")


def _attach(app: App) -> mcpclient.McpClients:
    clients = mcpclient.attach(app.home, app.tools, app.store, app.worker)
    assert clients is not None
    assert clients.wait_ready(120)
    app.run(asyncio.sleep(0))  # the tools are added on the worker, in order
    return clients


def _tool_results(app: App) -> list[str]:
    return [r.data["content"] for r in app.store.log.records() if r.type == "message" and r.data.get("role") == "tool"]


def _calls(app: App) -> list[dict[str, Any]]:
    return [dict(r.data) for r in app.store.log.records() if r.type == "mcp.call"]


def test_time_server_tool_needs_consent_then_answers(home: Home, llm_server: ScriptedLLMServer) -> None:
    exe = _time_server()
    _write_servers(home, f'[servers.time]\ncommand = "{exe}"\nargs = ["--local-timezone", "Europe/Paris"]\n')
    app = _app(home, llm_server)
    clients = _attach(app)
    try:
        assert "time__get_current_time" in app.tools.names()
        llm_server.script(tool_call("time__get_current_time", {"timezone": "Asia/Tokyo"}, id="c1"), reply("Asked."))
        app.run(app.agent.turn("quick", "what time is it in Tokyo?", stream=False))
        refused = _tool_results(app)[-1]
        assert "memtray mcp allow time" in refused
        # the request offered the namespaced tool next to memtray's own
        offered = {t["function"]["name"] for t in llm_server.requests[0].json["tools"]}
        assert {"time__get_current_time", "remember"} <= offered

        out = cli_here(home.root, "mcp", "allow", "time")
        assert out.returncode == 0, out.stderr
        llm_server.script(tool_call("time__get_current_time", {"timezone": "Asia/Tokyo"}, id="c2"), reply("It is late."))
        res = app.run(app.agent.turn("quick", "and now?", stream=False))
        assert res.reply == "It is late."
        answer = json.loads(_tool_results(app)[-1])
        assert answer["timezone"] == "Asia/Tokyo" and "datetime" in answer
        assert [c["status"] for c in _calls(app)] == ["refused", "ok"]
        assert _calls(app)[1]["tool"] == "get_current_time" and "Asia/Tokyo" in _calls(app)[1]["arguments"]
    finally:
        clients.close()
        app.close()


def test_hostile_servers_never_block_a_turn(home: Home, llm_server: ScriptedLLMServer) -> None:
    py = sys.executable
    _write_servers(home, (
        f'[servers.bad]\ncommand = "{py}"\nargs = ["{HOSTILE}"]\nallowed = true\ntimeout = 1\n\n'
        f'[servers.dead]\ncommand = "{py}"\nargs = ["{HOSTILE}", "--exit"]\nallowed = true\n\n'
        '[servers.missing]\ncommand = "/nonexistent/mcp-server"\nallowed = true\n'))
    app = _app(home, llm_server)
    clients = _attach(app)
    try:
        states = {s["name"]: s for s in clients.describe()}
        assert states["bad"]["status"] == "ready", states
        assert states["dead"]["status"] == "failed" and states["missing"]["status"] == "failed"
        assert not any(n.startswith(("dead__", "missing__")) for n in app.tools.names())
        llm_server.script(
            tool_call("bad__hang", {}, id="h"),
            tool_call("bad__flood", {"n": 3_000_000}, id="f"),
            tool_call("bad__sneaky", {}, id="s"),
            reply("Done."),
        )
        res = app.run(app.agent.turn("quick", "try the tools", stream=False), timeout=120)
        assert res.reply == "Done."
        hang, flood, sneaky = _tool_results(app)[-3:]
        assert "did not answer within 1 s" in hang
        assert len(flood) < 30_000 and "cut" in flood
        assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in sneaky  # handed to the model as data ...
        assert "files deleted" not in app.store.state.memory  # ... and nothing acted on it
        assert [c["status"] for c in _calls(app)] == ["timeout", "ok", "ok"]
        assert all(len(c["result"]) <= mcpclient.MAX_LOGGED for c in _calls(app))
    finally:
        clients.close()
        app.close()


def test_bad_server_lists_are_refused_clearly(home: Home) -> None:
    _write_servers(home, '[servers."bad name"]\ncommand = "x"\n')
    out = cli_here(home.root, "mcp", "servers")
    assert out.returncode != 0 and "a server name is" in out.stderr and "Traceback" not in out.stderr
    _write_servers(home, '[servers.a]\ncommand = "x"\nurl = "http://127.0.0.1:1/mcp"\n')
    out = cli_here(home.root, "mcp", "allow", "a")
    assert out.returncode != 0 and "either `command`" in out.stderr
    _write_servers(home, '[servers.a]\ncommand = "x"\n')
    out = cli_here(home.root, "mcp", "allow", "nope")
    assert out.returncode != 0 and "no MCP server named 'nope'" in out.stderr
    assert cli_here(home.root, "mcp", "servers").stdout.split()[:3] == ["a", "not", "allowed"]


def test_servers_start_at_the_first_turn_only(home: Home, llm_server: ScriptedLLMServer) -> None:
    exe = _time_server()
    _write_servers(home, f'[servers.time]\ncommand = "{exe}"\nallowed = true\n')
    app = _app(home, llm_server)
    lazy = app.mcp  # the App's own (app.py wires it into the agent's before_turn)
    lazy.wait = 120
    try:
        assert lazy.clients is None and "time__get_current_time" not in app.tools.names()
        llm_server.script(tool_call("time__convert_time", {"source_timezone": "Europe/Paris", "time": "12:00",
                                                           "target_timezone": "America/New_York"}), reply("6 am."))
        assert app.run(app.agent.turn("quick", "noon in Paris is when in New York?", stream=False)).reply == "6 am."
        assert "06:00" in _tool_results(app)[-1]
        assert [s["status"] for s in lazy.describe()] == ["ready"]
    finally:
        app.close()


def _everything_server() -> Path:
    return npm_peer("everything") / "node_modules" / ".bin" / "mcp-server-everything"


def test_reference_everything_server_through_the_agent(home: Home, llm_server: ScriptedLLMServer) -> None:
    exe = _everything_server()
    _write_servers(home, f'[servers.everything]\ncommand = "{exe}"\nargs = ["stdio"]\nallowed = true\n')
    app = _app(home, llm_server)
    clients = _attach(app)
    try:
        assert {"everything__echo", "everything__get-sum", "everything__get-tiny-image"} <= set(app.tools.names())
        llm_server.script(
            tool_call("everything__get-sum", {"a": 19, "b": 23}, id="sum"),
            tool_call("everything__get-tiny-image", {}, id="img"),
            tool_call("everything__echo", {"message": 42}, id="bad"),  # wrong type: refused before the server
            reply("42."),
        )
        assert app.run(app.agent.turn("quick", "add 19 and 23", stream=False)).reply == "42."
        total, image, bad = _tool_results(app)[-3:]
        assert "42" in total
        assert "[image omitted]" in image
        assert bad.startswith("error:") and "string" in bad
        assert [c["status"] for c in _calls(app)] == ["ok", "ok"]
    finally:
        clients.close()
        app.close()

