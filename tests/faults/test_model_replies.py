"""Hostile model replies, through real litellm over HTTP against the scripted server.

A model's reply is the least trusted input memtray has: one ``save_memory`` whose
``memory_update`` held a lone surrogate and a NUL used to be logged, then failed
its git commit at every start, so no command worked again. Here hypothesis sends
arbitrary JSON, arbitrary Unicode (lone surrogates, NUL, escaped backslashes),
huge strings and wrong types in every field of ``save_memory`` and of every tool
the agent offers, and in the reply text itself. After each reply: the log
verifies, ``doctor`` finds no problem, ``git fsck`` passes, memory equals the
log's last ``memory.written``, every consolidation completed or failed without
moving the pointer, and the next start and turn work.

CI runs a modest number of examples (``FUZZ_EXAMPLES``, 25); the ``deep``
hypothesis profile (``HYPOTHESIS_PROFILE=deep``) runs 300.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from memtray.core.admin import doctor
from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import find_invalid
from memtray.core.log.segments import verify
from memtray.core.memory.consolidation import ConsolidationFailedError

from tests.crash.harness import check_app
from tests.faults.support import git
from tests.fixtures.llm_server import ScriptedLLMServer, ToolCall, ToolCalls, reply, tool_call
from tests.fixtures.receipting import receipted

DEEP = os.environ.get("HYPOTHESIS_PROFILE", "ci") == "deep"
FUZZ_EXAMPLES = 300 if DEEP else 25
#: no shrinking: one example costs two starts and a doctor run, and the drawn values are printed
PHASES = [Phase.explicit, Phase.reuse, Phase.generate]

#: every C0/C1 control character, drawn as often as the rest: memory keeps none but "\n" and "\t"
CONTROL = st.sampled_from([chr(c) for c in (*range(0x01, 0x20), *range(0x7F, 0xA0))])
ANY_CHAR = st.one_of(
    st.characters(), st.characters(categories=["Cs"]), CONTROL,
    st.sampled_from(["\x00", "\\", '"', "\n", "\t", "-", "#", "u"]),
)
TEXT = st.text(alphabet=ANY_CHAR, max_size=80)
HUGE = st.builds(lambda c, n: (c * n)[:n], st.sampled_from(["x", "\x00", "\ud800", "é", "- fact\n"]),
                 st.sampled_from([70_000, 250_000, 2_100_000]))
VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | TEXT,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(TEXT, kids, max_size=4),
    max_leaves=10,
)
FIELD = st.one_of(TEXT, TEXT.map(lambda t: "# Memory\n\n## Facts\n- " + t + "\n"), VALUE, HUGE)


def _arguments(names: list[str]) -> st.SearchStrategy[Any]:
    """Arguments for a tool with these parameter names: any subset of them with any value,
    stray keys, a JSON value that is not an object, or text that is not JSON at all."""
    obj = st.fixed_dictionaries({}, optional={n: FIELD for n in names}).flatmap(
        lambda d: st.dictionaries(TEXT, VALUE, max_size=2).map(lambda extra: {**extra, **d}))
    return st.one_of(obj, obj, obj, VALUE, TEXT)


SAVE_MEMORY = _arguments(["history_entry", "memory_update", "removed_facts"])
MEM0 = "# Memory\n\n## Facts\n- User's name is Ada\n- User likes green tea\n"


def _config(server: ScriptedLLMServer) -> Config:
    return Config(model="openai/test-model", api_base=server.base_url, llm_retries=0, llm_timeout=30.0,
                  memory_window=1000, idle_consolidate_minutes=0, consolidation_timeout=60.0)


def _open(home: Home, server: ScriptedLLMServer) -> App:
    return App.open(home, config=_config(server), start_services=False)


def _acked(home: Home) -> set[int]:
    from memtray.core.log.eventlog import EventLog

    elog = EventLog.open(home.events, readonly=True)
    try:
        return {r.seq for r in elog.records()}
    finally:
        elog.close()


def _healthy(home: Home) -> None:
    """What the user would run after a bad reply: all of it passes."""
    count, damages = verify(home.events)
    assert damages == [] and count > 0
    for rec in _records(home):
        assert find_invalid(dict(rec.data)) is None, f"seq {rec.seq} holds text that may not be logged"
    for rec in _records(home):  # memory and its diary hold no control character but \n, \t (and CRLF)
        if rec.type == "memory.written":
            for key in ("memory", "history_append", "history"):
                text = str(rec.data.get(key) or "").replace("\r\n", "\n")
                assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), (rec.seq, key, text[:200])
    problems = [f"{f.title}: {f.detail}" for f in doctor.check(home) if not f.ok]  # provenance included
    assert problems == [], problems
    if (home.memory / ".git").is_dir():
        git(home.memory, "fsck", "--strict", "--no-progress")
        assert git(home.memory, "status", "--porcelain") == ""
    check_app(home.root, _acked(home))  # memory == git HEAD == last memory.written; pointer; torn


def _records(home: Home) -> list[Any]:
    from memtray.core.log.eventlog import EventLog

    elog = EventLog.open(home.events, readonly=True)
    try:
        return list(elog.records())
    finally:
        elog.close()


def _still_works(home: Home, server: ScriptedLLMServer, n: int) -> None:
    app = _open(home, server)  # start-up catch-up: what used to die for good
    try:
        server.script(reply(f"fine {n}"))
        res = app.run(app.agent.turn("quick", f"are you there {n}?", stream=False))
        assert res.reply == f"fine {n}"
        assert app.memory.revisions(limit=5) is not None
        assert app.store.state.memory == (app.memory.git.worktree_text("MEMORY.md") or "")
    finally:
        app.close()


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    with ScriptedLLMServer() as s:
        yield s


def test_the_reported_reply_fails_the_consolidation_and_breaks_nothing(tmp_path: Path, server: ScriptedLLMServer
                                                                      ) -> None:
    """The issue's case: a lone surrogate and a NUL in memory_update (and in history_entry)."""
    server.reset()
    home = Home.resolve(tmp_path / "home")
    app = _open(home, server)
    try:
        app.write(lambda: app.memory.write(MEM0, reason="user-edit", source="user"))
        server.script(reply("noted"))
        app.run(app.agent.turn("quick", "I moved to Lyon", stream=False))
        before = (app.store.state.memory, app.store.state.session("quick").last_consolidated)
        raw = json.dumps({"history_entry": "[2026-11-30] moved \ud800",
                          "memory_update": MEM0 + "- User lives in Lyon \ud800\x00\n", "removed_facts": []})
        assert "\\ud800" in raw and "\\u0000" in raw  # as a provider sends it: escaped in the JSON
        server.script(tool_call("save_memory", raw))
        with pytest.raises(ConsolidationFailedError, match="lone surrogate") as err:
            app.run(app.consolidation.consolidate("quick", trigger="manual"))
        assert "Traceback" not in str(err.value)
        failed = [r for r in app.store.log.records() if r.type == "consolidation.failed"]
        assert len(failed) == 1 and "U+D800" in failed[0].data["reason"], failed[0].data
        assert "memory.written" not in [r.type for r in app.store.log.records()][-3:]
        assert (app.store.state.memory, app.store.state.session("quick").last_consolidated) == before
    finally:
        app.close()
    _healthy(home)
    _still_works(home, server, 0)
    server.script(receipted(tool_call("save_memory", {"history_entry": "[2026-11-30] moved.",
                                                      "memory_update": MEM0 + "- User lives in Lyon\n"})))
    app = _open(home, server)
    try:  # the retry with a clean reply goes through
        out = app.run(app.consolidation.consolidate("quick", trigger="manual"))
        assert out.added == 1 and "Lyon" in (home.memory / "MEMORY.md").read_text()
    finally:
        app.close()
    _healthy(home)


def test_tool_arguments_with_invalid_text_are_refused_to_the_model(tmp_path: Path, server: ScriptedLLMServer
                                                                   ) -> None:
    server.reset()
    home = Home.resolve(tmp_path / "home")
    app = _open(home, server)
    try:
        server.script(ToolCalls([ToolCall("remember", json.dumps({"fact": "likes \ud800 tea\x00"}))]),
                      reply("done \udfff\x00"))
        res = app.run(app.agent.turn("quick", "remember that I like tea", stream=False))
        assert res.reply == "done \ufffd"  # the model's own reply is kept, made storable
        tool_msgs = [r.data for r in app.store.log.records() if r.data.get("role") == "tool"]
        assert "lone surrogate" in tool_msgs[-1]["content"] and tool_msgs[-1]["content"].startswith("error:")
        assert app.store.state.memory == ""  # nothing was remembered
    finally:
        app.close()
    _healthy(home)


def test_control_characters_are_cleaned_once_and_facts_keep_their_provenance(tmp_path: Path,
                                                                           server: ScriptedLLMServer) -> None:
    """What the fuzz test found: a fact remembered with control characters came out of
    doctor without its provenance. Memory now keeps none (but \\n, \\t): the remembered
    fact, a consolidation's facts and diary entry, and a hand edit are cleaned the same way,
    and every fact still traces to the message it came from."""
    server.reset()
    home = Home.resolve(tmp_path / "home")
    app = _open(home, server)
    try:
        app.write(lambda: app.memory.write(MEM0, reason="user-edit", source="user"))
        server.script(ToolCalls([ToolCall("remember", json.dumps({"fact": "(\x05 plays the \x1b[31mviolin\x07"}))]),
                      reply("noted"))
        app.run(app.agent.turn("quick", "I play the violin and I live in Lyon", stream=False))
        assert "- ( plays the [31mviolin\n" in app.store.state.memory
        memory = app.store.state.memory.replace("## Facts\n", "## Facts\n- User lives in Ly\x00on\x1f\x7f [#1]\n")
        server.script(receipted(tool_call("save_memory", {"history_entry": "[2026-12-01] violin\x0band Lyon\x1b",
                                                          "memory_update": memory.replace("violin", "vio\x08lin")})))
        out = app.run(app.consolidation.consolidate("quick", trigger="manual"))
        assert out.added == 1
    finally:
        app.close()
    (home.memory / "MEMORY.md").write_text((home.memory / "MEMORY.md").read_text() + "- Owns a cat\x1b\x9b\n")
    _still_works(home, server, 2)  # the hand edit is adopted at start, cleaned
    text = (home.memory / "MEMORY.md").read_text()
    assert "- User lives in Lyon [#1]" not in text and "- User lives in Lyon\n" in text, text
    assert "- Owns a cat\n" in text and "- ( plays the [31mviolin\n" in text
    assert "violin and Lyon" in (home.memory / "HISTORY.md").read_text()
    _healthy(home)  # no control character in any revision; doctor (provenance too) clean


@pytest.mark.filterwarnings("ignore:Sending a large body directly:ResourceWarning")  # httpx, for a 2 MB prompt
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=not DEEP, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_model_replies_never_break_the_home(tmp_path_factory: pytest.TempPathFactory,
                                                   server: ScriptedLLMServer, data: st.DataObject) -> None:
    server.reset()
    home = Home.resolve(tmp_path_factory.mktemp("fuzz") / "home")
    app = _open(home, server)
    try:
        app.write(lambda: app.memory.write(MEM0, reason="user-edit", source="user"))
        app.agent.after_turn.clear()  # the test starts the consolidation itself (a huge reply would trigger one)
        specs = {t["function"]["name"]: list(t["function"]["parameters"].get("properties", {}))
                 for t in app.agent.tools.specs()}
        names = data.draw(st.lists(st.sampled_from(sorted(specs)), min_size=1, max_size=3), label="tools")
        calls = [ToolCall(n, _as_arguments(data.draw(_arguments(specs[n]), label=n))) for n in names]
        if data.draw(st.booleans(), label="unknown tool"):
            calls.append(ToolCall(data.draw(TEXT, label="tool name") or "x", "{}"))
        text = data.draw(st.one_of(TEXT, HUGE), label="reply")
        stream = data.draw(st.booleans(), label="stream")
        server.script(ToolCalls(calls, text=data.draw(st.none() | TEXT, label="text"), split=False),
                      reply(text, chunk_size=65536))
        res = app.run(app.agent.turn("quick", "hello", stream=stream))
        assert find_invalid(res.reply) is None
        args = _as_arguments(data.draw(SAVE_MEMORY, label="save_memory"))
        server.script(ToolCalls([ToolCall("save_memory", args)], split=False))
        pointer = app.store.state.session("quick").last_consolidated
        try:
            app.run(app.consolidation.consolidate("quick", trigger="manual"))
        except ConsolidationFailedError as exc:
            assert "Traceback" not in str(exc)
            assert app.store.state.session("quick").last_consolidated == pointer
            assert [r.type for r in app.store.log.records()][-1] == "consolidation.failed"
    finally:
        app.close()
    _healthy(home)
    _still_works(home, server, 1)
    shutil.rmtree(home.root, ignore_errors=True)


def _as_arguments(value: Any) -> str:
    """The tool call's ``arguments`` string as a provider would send it: JSON text (lone
    surrogates and NUL escaped) or, for a drawn string, that text verbatim."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def test_a_session_name_the_user_typed_is_checked_before_anything_is_logged(tmp_path: Path,
                                                                           server: ScriptedLLMServer) -> None:
    from memtray.core.base.errors import InvalidText

    home = Home.resolve(tmp_path / "home")
    app = _open(home, server)
    try:
        for bad in ("work\x00", "caf\udce9"):
            with pytest.raises(InvalidText, match=r"^the session name contains a (NUL|lone surrogate)"):
                app.run(app.agent.turn(bad, "hello", stream=False))
        assert list(app.store.log.records()) == []
    finally:
        app.close()
