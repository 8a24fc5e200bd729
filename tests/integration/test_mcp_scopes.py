"""An MCP client the user limited to one memory scope (``memtray mcp --scope NAME``), driven by
the official MCP SDK's client over stdio, as in test_mcp_server.py: it sees and writes that
scope only (issue 32)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.memory import scopes

from tests.integration.test_mcp_server import _session, _text
from tests.support import run_cli

MEMORY = ("# Memory\n\n## General\n- Lives in Lyon\n\n## Work\n- Reviews code at Acme on Fridays\n\n"
          "## Family\n- Daughter Ada plays the cello\n")


def seed(root: Path) -> dict[str, str]:
    """A home with a global fact, a work fact and a family fact, and a conversation in each scope."""
    home = Home.resolve(root)
    clock = FakeClock(datetime(2026, 12, 3, 10, 0, tzinfo=UTC))
    app = App.open(home, config=Config(model="openai/x"), clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        app.memory.write(MEMORY, reason="user-edit", source="user")
        ids = {w: next(f.id for f in app.memory.ledger().facts if w in f.text) for w in ("Lyon", "Acme", "Ada")}
        app.memory.move_fact(ids["Acme"], "work", "work")
        app.memory.move_fact(ids["Ada"], "family", "family")
        for session, scope, said in (("job", "work", "The Acme review is on Fridays"),
                                     ("home", "family", "Ada has a cello lesson on Fridays")):
            app.worker.call(lambda s=session, c=scope: scopes.choose(app.store, s, c))
            app.store.append(Message(role="user", content=said), session=session)
        # a diary entry the work conversation wrote: the diary is of no scope, no scoped client sees it
        app.memory.write(app.store.state.memory, reason="agent", session="job",
                         history_append="[2026-12-03 10:00] Talked about the Acme review on Fridays.")
        return ids
    finally:
        app.close()


def memory_of(root: Path) -> tuple[str, dict[str, str]]:
    home = Home.resolve(root)
    clock = FakeClock(datetime(2026, 12, 3, 11, 0, tzinfo=UTC))
    app = App.open(home, config=Config(model="openai/x"), clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        text = app.store.state.memory
        return text, {f.text: s for f, s in zip(app.memory.ledger().facts, scopes.of_facts(text), strict=True)}
    finally:
        app.close()


def test_a_client_limited_to_one_scope_sees_and_writes_only_that(tmp_path: Path) -> None:
    root = tmp_path / "home"
    ids = seed(root)
    before, _ = memory_of(root)

    async def body(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["memory"] = (await s.read_resource("memtray://memory/MEMORY.md")).contents[0].text
        out["tool"] = _text(await s.call_tool("read_memory", {"sources": True}))
        out["diary"] = await s.call_tool("read_memory", {"history": True})
        out["why_family"] = await s.call_tool("memory_why", {"fact": ids["Ada"]})
        out["why_work"] = await s.call_tool("memory_why", {"fact": ids["Acme"]})
        out["log"] = json.loads(_text(await s.call_tool("memory_log", {"limit": 20})))
        out["diff"] = _text(await s.call_tool("memory_diff", {"rev_a": "HEAD~2"}))
        out["resources"] = sorted(str(r.uri) for r in (await s.list_resources()).resources)
        out["search"] = json.loads(_text(await s.call_tool("search_history", {"query": "Fridays"})))
        out["diary_search"] = await s.call_tool("search_history", {"query": "Fridays", "kind": "history"})
        out["remember"] = await s.call_tool("remember", {"fact": "Tickets are tracked in Jira", "section": "Work"})
        out["forget_family"] = await s.call_tool("forget", {"fact": "Daughter Ada plays the cello", "reason": "test"})
        out["forget_global"] = await s.call_tool("forget", {"fact": "Lives in Lyon", "reason": "test"})
        return out

    out = anyio.run(_session, root, body, "--scope", "work")
    for shown in (out["memory"], out["tool"]):
        assert "Reviews code at Acme" in shown
        assert "Lyon" not in shown and "cello" not in shown and "scope:" not in shown
    assert out["diary"].is_error and "every memory scope" in _text(out["diary"])
    assert out["why_family"].is_error and "cello" not in _text(out["why_family"])
    assert not out["why_work"].is_error and json.loads(_text(out["why_work"]))["scope"] == "work"
    assert out["log"] and all("work" in r["scopes"] for r in out["log"] if r["kind"] == "revision")
    assert "cello" not in out["diff"] and "Lyon" not in out["diff"]
    assert out["resources"] == ["memtray://memory/MEMORY.md"]  # no HISTORY.md: the diary spans every scope
    assert [(h["session"], h["kind"]) for h in out["search"]] == [("job", "message")]  # no family, no diary
    assert out["diary_search"].is_error and "every memory scope" in _text(out["diary_search"])
    assert not out["remember"].is_error, _text(out["remember"])
    assert out["forget_family"].is_error and out["forget_global"].is_error

    after, where = memory_of(root)
    assert where["Tickets are tracked in Jira"] == "work"  # written into the client's scope
    assert scopes.only(after, "family") == scopes.only(before, "family")
    assert scopes.only(after, "global") == scopes.only(before, "global")

    async def tools(s: ClientSession) -> list[str]:
        return sorted(tool.name for tool in (await s.list_tools()).tools)

    names = anyio.run(_session, root, tools, "--scope", "work", "--read-only")
    assert "remember" not in names and "forget" not in names and "read_memory" in names


def test_an_unlimited_client_sees_every_scope_and_a_bad_scope_is_said(tmp_path: Path) -> None:
    root = tmp_path / "home"
    seed(root)

    async def body(s: ClientSession) -> tuple[str, list[str], list[str]]:
        hits = json.loads(_text(await s.call_tool("search_history", {"query": "Fridays"})))
        return (str((await s.read_resource("memtray://memory/MEMORY.md")).contents[0].text),
                sorted(str(r.uri) for r in (await s.list_resources()).resources), sorted(h["kind"] for h in hits))

    text, resources, kinds = anyio.run(_session, root, body)
    assert "Lyon" in text and "Acme" in text and "cello" in text  # as before scopes: the user's whole memory
    assert "memtray://memory/HISTORY.md" in resources and "history" in kinds  # the user's whole diary too
    bad = run_cli(root, "mcp", "--scope", "../family")
    assert bad.returncode != 0 and "not a scope name" in bad.stderr and "Traceback" not in bad.stderr


def test_a_scoped_client_forgets_by_id_only_in_its_scope(tmp_path: Path) -> None:
    """``forget`` takes a fact's id as ``read_memory`` with sources shows it (``F2``, or ``f2``
    as typed); an id of another scope's fact is "no fact" exactly as one that never existed."""
    root = tmp_path / "home"
    ids = seed(root)
    before, _ = memory_of(root)

    async def body(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {"sources": _text(await s.call_tool("read_memory", {"sources": True}))}
        out["family"] = await s.call_tool("forget", {"fact": ids["Ada"], "reason": "test"})
        out["global"] = await s.call_tool("forget", {"fact": ids["Lyon"].lower(), "reason": "test"})
        out["nowhere"] = await s.call_tool("forget", {"fact": "F99", "reason": "test"})
        out["work"] = await s.call_tool("forget", {"fact": ids["Acme"].lower(), "reason": "no longer at Acme"})
        return out

    out = anyio.run(_session, root, body, "--scope", "work")
    assert f"[{ids['Acme']}]" in out["sources"]
    said = "Error executing tool forget: no fact {} in the memory scope 'work'\n" \
           "read_memory with sources=true lists the facts with their ids."
    assert _text(out["family"]) == said.format(ids["Ada"])
    assert _text(out["nowhere"]) == said.format("F99")
    assert out["family"].is_error and out["global"].is_error and out["nowhere"].is_error
    assert not out["work"].is_error, _text(out["work"])
    assert _text(out["work"]) == "forgot: Reviews code at Acme on Fridays (no longer at Acme)"
    after, where = memory_of(root)
    assert "Acme" not in after and set(where) == {"Lives in Lyon", "Daughter Ada plays the cello"}
    assert scopes.only(after, "family") == scopes.only(before, "family")
    home = Home.resolve(root)
    app = App.open(home, config=Config(model="openai/x"), clock=FakeClock(datetime(2026, 12, 3, 12, 0, tzinfo=UTC)),
                   start_services=False)
    try:
        [gone] = [d for d in app.memory.dropped() if d["id"] == ids["Acme"]]
        assert gone["reason"] == "no longer at Acme (via Test Client)"
    finally:
        app.close()
