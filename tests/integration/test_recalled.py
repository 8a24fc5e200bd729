"""What a front end shows of recall: the past entries a reply was given, read back from the
log by seq (core.log.transcript.recalled), and `memtray ask`'s stderr line."""

from __future__ import annotations

import re

from memtray.core.app import App
from memtray.core.base import config
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log import transcript
from memtray.core.log.events import Message

from tests.fixtures.llm_server import ScriptedLLMServer, reply
from tests.support import cli_here

MEM0 = "# Memory\n\n## Identity\n- User's name is Ada\n"


def _append(app: App, content: str, role: str, session: str) -> int:
    return app.write(lambda: app.store.append(Message(role=role, content=content), session=session)).seq


def test_recalled_returns_messages_diary_and_missing_entries_in_order(home: Home) -> None:
    app = App.open(home, config=Config())
    try:
        first = _append(app, "Ada's maths teacher is Mr Okafor.", "user", "desk")
        second = _append(app, "Noted: Mr Okafor.", "assistant", "desk")
        app.memory.write(MEM0, reason="agent", history_append="[2026-11-30 09:00] Talked about school.")
        diary = app.store.state.last_seq
        entries = transcript.recalled(app.store.log, [second, 999_999, diary, first])
    finally:
        app.close()
    assert [e.seq for e in entries] == [second, 999_999, diary, first]  # the order asked for
    assert (entries[0].role, entries[0].text, entries[0].session) == ("assistant", "Noted: Mr Okafor.", "desk")
    assert entries[0].ts and not entries[0].missing
    assert entries[1].missing and entries[1].text == ""
    assert entries[2].role == "diary" and "Talked about school." in entries[2].text
    assert (entries[3].role, entries[3].text) == ("user", "Ada's maths teacher is Mr Okafor.")


def _configure(home: Home, server: ScriptedLLMServer, *, recall: bool) -> None:
    for key, value in (("model", "openai/test-model"), ("api_base", server.base_url), ("llm_retries", 0),
                       ("embedding_model", "openai/test-embedding"), ("recall", recall)):
        config.set_value(home, key, value)


def test_ask_names_the_recalled_messages_on_stderr_only(home: Home, llm_server: ScriptedLLMServer) -> None:
    _configure(home, llm_server, recall=True)
    app = App.open(home)
    try:
        old = _append(app, "Ada's maths teacher, Mr Okafor, wants to meet us on Thursday.", "user", "quick")
        _append(app, "Noted.", "assistant", "quick")
        _append(app, "The printer is broken again.", "user", "desk")
        app.run(app.search.backfill())
    finally:
        app.close()
    llm_server.script(reply("Mr Okafor."))
    out = cli_here(home.root, "ask", "What is my daughter's teacher called?", OPENAI_API_KEY="sk-test")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Mr Okafor.\n"  # the contract: stdout is exactly the reply
    lines = [line for line in out.stderr.splitlines() if line.startswith("recalled:")]
    assert len(lines) == 1, out.stderr
    m = re.fullmatch(r"recalled: (\d+) past messages? \(seq ([\d, ]+)\)", lines[0])
    assert m is not None, lines[0]
    seqs = [int(s) for s in m.group(2).split(", ")]
    assert old in seqs and int(m.group(1)) == len(seqs)
    app = App.open(home)
    try:
        reply_msg = app.store.state.session("cli").messages[-1]
    finally:
        app.close()
    assert reply_msg["role"] == "assistant" and reply_msg["recalled"] == seqs  # what the log says


def test_ask_without_recall_prints_no_recalled_line(home: Home, llm_server: ScriptedLLMServer) -> None:
    _configure(home, llm_server, recall=False)
    app = App.open(home)
    try:
        _append(app, "Ada's maths teacher, Mr Okafor, wants to meet us.", "user", "quick")
    finally:
        app.close()
    llm_server.script(reply("I do not know."))
    out = cli_here(home.root, "ask", "Who is Okafor?", OPENAI_API_KEY="sk-test")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "I do not know.\n"
    assert "recalled:" not in out.stderr
