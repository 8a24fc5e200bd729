"""Recall in the turn: past snippets given to the model, late in the request, recorded on
the reply, left out of later requests, and rebuilt exactly by prompt time travel."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memtray.core.agent.timetravel import reconstruct
from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message

from tests.fixtures.llm_server import ScriptedLLMServer


def config(server: ScriptedLLMServer, **kw: Any) -> Config:
    return Config(model="openai/test-model", api_base=server.base_url, llm_retries=0,
                  embedding_model="openai/test-embedding", **kw)


def words_only(server: ScriptedLLMServer, **kw: Any) -> Config:
    """Recall on, no embedding model: recall is by words (as with the offline vectors)."""
    return Config(model="openai/test-model", api_base=server.base_url, llm_retries=0, recall=True, **kw)


def append(app: App, content: str, role: str, session: str) -> int:
    return app.write(lambda: app.store.append(Message(role=role, content=content), session=session)).seq


def last_user_content(server: ScriptedLLMServer) -> str:
    msgs = server.chat_requests[-1]["messages"]
    return str(next(m for m in reversed(msgs) if m["role"] == "user")["content"])


def test_recall_gives_past_snippets_and_records_them(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = App.open(home, config=config(llm_server, recall=True))
    try:
        old = append(app, "Ada's maths teacher, Mr Okafor, wants to meet us on Thursday.", "user", "quick")
        append(app, "Noted.", "assistant", "quick")
        append(app, "The printer is broken again.", "user", "desk")
        tail = append(app, "Okafor's number is on the fridge, by the way.", "user", "cli")
        append(app, "Got it.", "assistant", "cli")
        app.run(app.search.backfill())

        result = app.run(app.agent.turn("cli", "What is my daughter's teacher called?", stream=False))
        sent = last_user_content(llm_server)
        assert sent.startswith("[Runtime context:")
        assert "[Recalled from earlier conversations" in sent
        assert "session quick · user: Ada's maths teacher, Mr Okafor" in sent
        assert sent.rstrip().endswith("What is my daughter's teacher called?")  # the question comes last
        assert "fridge" not in sent.split("What is my")[0].split("[Recalled", 1)[1]  # the tail is in the prompt already
        system = llm_server.chat_requests[-1]["messages"][0]["content"]
        assert "Okafor" not in system  # the cached prefix is untouched

        records = list(app.store.log.records())
        user = next(r for r in records if r.type == "message" and r.data.get("role") == "user"
                    and r.data.get("content") == "What is my daughter's teacher called?")
        assert old in user.data["recalled"] and tail not in user.data["recalled"]
        reply = result.records[-1]
        assert reply.data["role"] == "assistant" and reply.data["recalled"] == user.data["recalled"]

        rebuilt = reconstruct(app.store.log.records, [reply.seq])[reply.seq]
        assert rebuilt.match, rebuilt.notes

        app.run(app.agent.turn("cli", "Thanks, and the printer?", stream=False))
        msgs = llm_server.chat_requests[-1]["messages"]
        earlier = next(m for m in msgs if m["role"] == "user" and "daughter's teacher called" in m["content"])
        assert "[Recalled" not in earlier["content"]  # only the newest user message carries recall
        second = app.store.state.session("cli").messages[-1]
        assert second["role"] == "assistant"
        later = reconstruct(app.store.log.records, [second["seq"]])[second["seq"]]
        assert later.match, later.notes
    finally:
        app.close()


def test_recall_is_off_by_default_and_never_fails_a_turn(home: Home, llm_server: ScriptedLLMServer) -> None:
    cfg = config(llm_server)
    assert cfg.recall is False
    app = App.open(home, config=cfg)
    try:
        append(app, "Ada's maths teacher, Mr Okafor, wants to meet us.", "user", "quick")
        app.run(app.search.backfill())
        result = app.run(app.agent.turn("cli", "Who is Okafor?", stream=False))
        assert "[Recalled" not in last_user_content(llm_server)
        assert "recalled" not in result.records[-1].data

        app.reconfigure(replace(cfg, recall=True, embedding_model="openai/missing",
                                embedding_api_base="http://127.0.0.1:9/v1"))  # nothing listens there
        result = app.run(app.agent.turn("cli", "Who is Okafor again?", stream=False))
        assert result.reply.startswith("echo:")
        sent = last_user_content(llm_server)
        assert "Okafor, wants to meet us" in sent  # keyword recall still works without vectors
    finally:
        app.close()


def test_a_deleted_conversation_is_not_recalled_until_restored(home: Home, llm_server: ScriptedLLMServer) -> None:
    from memtray.core.log import chats

    app = App.open(home, config=config(llm_server, recall=True))
    try:
        append(app, "Ada's maths teacher, Mr Okafor, wants to meet us on Thursday.", "user", "chat-school")
        app.run(app.search.backfill())
        app.worker.call(lambda: chats.delete(app.store, "chat-school"))
        app.run(app.agent.turn("cli", "What is my daughter's teacher called?", stream=False))
        assert "Okafor" not in last_user_content(llm_server)
        assert app.search.search("Okafor")  # still found by an explicit search
        app.worker.call(lambda: chats.restore(app.store, "chat-school"))
        app.run(app.agent.turn("cli", "And her teacher's name again?", stream=False))
        assert "session chat-school · user: Ada's maths teacher, Mr Okafor" in last_user_content(llm_server)
    finally:
        app.close()


def test_the_answer_to_a_matched_question_is_recalled(home: Home, llm_server: ScriptedLLMServer) -> None:
    """History search ranks the answer after a matched question (it shares no word with the
    new message); recall once dropped it as a "weak semantic" match and kept the question."""
    app = App.open(home, config=words_only(llm_server, recall_limit=2))
    try:
        append(app, "Which career path are you going to choose in the end?", "user", "talk")
        append(app, "Counselling, for trans youth. I have applied to the master's programme.", "assistant", "talk")
        for i in range(20):  # other talk, so the answer is not found by chance
            append(app, f"The weather was grey again on day {i}.", "user", "other")
        found = app.run(app.search.asearch("What career path did she choose?", limit=2, kind="message"))
        assert any("Counselling" in h.snippet for h in found.hits)  # `history search` finds it...
        app.run(app.agent.turn("cli", "What career path did she choose?", stream=False))
        assert "Counselling, for trans youth" in last_user_content(llm_server)  # ...and so does recall
    finally:
        app.close()


def test_deleted_talk_does_not_crowd_out_what_is_left(home: Home, llm_server: ScriptedLLMServer) -> None:
    from memtray.core.log import chats

    app = App.open(home, config=words_only(llm_server, recall_limit=1))
    try:
        append(app, "Mr Okafor is Ada's maths teacher.", "user", "kept")
        for i in range(20):
            append(app, f"The weather was grey again on day {i}.", "user", "other")
        for i in range(8):  # a deleted conversation that matches the question better, many times over
            append(app, f"Okafor Okafor teacher teacher maths, note {i}.", "user", f"gone-{i}")
            app.worker.call(lambda i=i: chats.delete(app.store, f"gone-{i}"))
        app.run(app.agent.turn("cli", "Who is Okafor, the maths teacher?", stream=False))
        sent = last_user_content(llm_server)
        assert "session kept · user: Mr Okafor is Ada's maths teacher." in sent
        assert "note " not in sent
    finally:
        app.close()
