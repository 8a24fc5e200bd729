"""Receipts end to end (issue 27): real litellm against the scripted server, a model that rewords.

The model rewords what the user said ("Sam keeps bees in the garden" -> "Is a hobby
beekeeper") and sends a receipt for each fact: the facts are written, and `memory why`,
`memory show --sources` and the fact list show the quote in its message. A model that
invents a fact with a fake quote, or takes its own guess for a fact, has it held for review
with the true reason; under `inferred_facts = write` the guess is written, marked inferred.
"""

from __future__ import annotations

import json
from typing import Any

from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message

from tests.fixtures.llm_server import Response, ScriptedLLMServer, tool_call
from tests.support import cli_here

CHAT = [
    ("user", "Sam keeps bees in the garden."),
    ("assistant", "Lovely! Since you are up early anyway, mornings must suit the bees."),
    ("user", "Sam prefers short answers, please."),
    ("assistant", "Got it."),
    ("user", "Sam plays the cello and wakes up at 5 am."),
    ("assistant", "You must be a morning person."),
]


def open_app(home: Home, server: ScriptedLLMServer, **kw: Any) -> App:
    cfg = Config(model="openai/test-model", api_base=server.base_url, llm_retries=0, llm_timeout=10.0,
                 memory_window=1000, idle_consolidate_minutes=0, consolidation_timeout=30.0, **kw)
    app = App.open(home, config=cfg)
    app.store.append_many([(Message(role=r, content=t), "s", None) for r, t in CHAT])
    return app


def rewording_model(req: dict[str, Any]) -> Response:
    """Rewords as real models do, with a receipt for each fact; one fact with a fake quote,
    one from the assistant's own guess."""
    prompt = req["messages"][-1]["content"]
    assert "#1 [" in prompt and "receipt" in prompt  # the prompt numbers messages and asks for receipts
    return tool_call("save_memory", {
        "history_entry": "[2026-12-03 10:00] Sam on bees, answers, the cello and mornings.",
        "edits": [
            {"op": "add", "text": "Is a hobby beekeeper", "section": "Hobbies",
             "receipt": {"messages": [1], "quote": "Sam keeps bees in the garden"}},
            {"op": "add", "text": "Wants concise replies", "section": "Preferences",
             "receipt": {"messages": [3], "quote": "prefers short answers"}},
            {"op": "add", "text": "Is a cellist", "section": "Hobbies",
             "receipt": {"messages": [5], "quote": "Sam plays the cello"}},
            {"op": "add", "text": "Wake-up time: 5 am", "section": "Routine",
             "receipt": {"messages": [5], "quote": "wakes up at 5 am"}},
            # invented, with a quote no message has
            {"op": "add", "text": "Has a cat named Miso", "section": "Pets",
             "receipt": {"messages": [3], "quote": "I have a cat named Miso"}},
            # the model's own guess, quoted from its own reply
            {"op": "add", "text": "Is a morning person", "section": "Routine",
             "receipt": {"messages": [6], "quote": "You must be a morning person"}},
            # a real quote that says another number
            {"op": "add", "text": "Wakes up at 6 am", "section": "Routine",
             "receipt": {"messages": [5], "quote": "wakes up at 5 am"}},
        ],
        "removed_facts": [],
    })


def test_reworded_facts_with_receipts_are_written_and_invented_ones_held(
        home: Home, llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = rewording_model
    app = open_app(home, llm_server)
    try:
        out = app.run(app.consolidation.consolidate("s", trigger="manual"))
        memory = app.store.state.memory
        for fact in ("Is a hobby beekeeper", "Wants concise replies", "Is a cellist", "Wake-up time: 5 am"):
            assert f"- {fact}\n" in memory, (fact, memory)
        for fact in ("Miso", "morning person", "6 am"):
            assert fact not in memory
        assert out.added == 4 and out.flagged == 3
        held = {i["text"]: i for i in app.memory.pending_review()}
        assert held["Has a cat named Miso"]["kind"] == "unsupported"
        assert held["Has a cat named Miso"]["reason"] == "the quote is not in message #3"
        assert held["Wakes up at 6 am"]["reason"] == "the fact says '6', the quote says '5'"
        guess = held["Is a morning person"]
        assert guess["kind"] == "inferred" and guess["reason"] == "only the assistant said this (message #6)"
        seqs = {m.seq: m for m in app.store.log.records() if m.type == Message.TYPE}
        assert guess["quote"] == "You must be a morning person"
        assert [Message.of(seqs[s]).content for s in guess["source_seqs"]] == [CHAT[5][1]]
        # the receipt is kept with the fact
        info = app.memory.why("Is a hobby beekeeper")
        assert info["receipt"]["quote"] == "Sam keeps bees in the garden" and info["receipt"]["stated"] is True
        assert [Message.of(seqs[s]).content for s in info["receipt"]["source_seqs"]] == [CHAT[0][1]]
        by_text = {f["text"]: f for f in app.memory.current_facts()}
        assert by_text["Is a cellist"]["receipt"]["stated"] is True
        # the user confirms the guess: one action writes it
        app.memory.restore_review(guess["id"])
        assert "- Is a morning person\n" in app.store.state.memory
        assert "Is a morning person" not in {i["text"] for i in app.memory.pending_review()}
    finally:
        app.close()
    shown = cli_here(home.root, "memory", "why", "Is a hobby beekeeper")
    assert shown.returncode == 0, shown.stderr
    assert "receipt:   stated by the user: \u201cSam keeps bees in the garden\u201d" in shown.stdout
    assert "user: \u00bbSam keeps bees in the garden\u00ab." in shown.stdout
    why = json.loads(cli_here(home.root, "memory", "why", "Is a cellist", "--json").stdout)
    assert why["receipt"]["quote"] == "Sam plays the cello"
    listing = cli_here(home.root, "memory", "show", "--sources").stdout
    line = next(x for x in listing.splitlines() if "Is a hobby beekeeper" in x)
    assert "(stated, #" in line and "\u201cSam keeps bees in the garden\u201d" in line
    review = cli_here(home.root, "memory", "review", "--json")
    kinds = {i["text"]: i["kind"] for i in json.loads(review.stdout)}
    assert kinds == {"Has a cat named Miso": "unsupported", "Wakes up at 6 am": "unsupported"}


def test_under_inferred_facts_write_a_guess_is_written_and_marked(home: Home, llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = rewording_model
    app = open_app(home, llm_server, inferred_facts="write")
    try:
        app.run(app.consolidation.consolidate("s", trigger="manual"))
        assert "- Is a morning person\n" in app.store.state.memory
        assert "Miso" not in app.store.state.memory  # invented stays held whatever the policy
        receipt = app.memory.why("Is a morning person")["receipt"]
        assert receipt == {"quote": "You must be a morning person", "stated": False,
                           "source_seqs": receipt["source_seqs"]} and receipt["source_seqs"]
    finally:
        app.close()
    listing = cli_here(home.root, "memory", "show", "--sources").stdout
    assert "(inferred, #" in next(x for x in listing.splitlines() if "morning person" in x)
    assert "(no receipt)" not in next(x for x in listing.splitlines() if "beekeeper" in x)


def test_a_fact_without_a_receipt_is_held_and_old_facts_keep_working(
        home: Home, llm_server: ScriptedLLMServer) -> None:
    def no_receipts(_req: dict[str, Any]) -> Response:
        return tool_call("save_memory", {"history_entry": "[2026-12-03 10:00] x",
                                         "memory_update": "## Me\n- Keeps bees [#1]\n", "removed_facts": []})

    llm_server.responder = no_receipts
    app = open_app(home, llm_server)
    try:
        app.memory.write("# Memory\n\n## Me\n- Lives in Graz\n", reason="user-edit", source="user")
        out = app.run(app.consolidation.consolidate("s", trigger="manual"))
        assert "Keeps bees" not in app.store.state.memory and out.flagged == 1
        [item] = app.memory.pending_review()
        assert (item["kind"], item["reason"]) == ("unsupported", "no receipt")
        assert app.memory.why("Lives in Graz")["receipt"] is None  # an old fact: no receipt, no error
    finally:
        app.close()
    listing = cli_here(home.root, "memory", "show", "--sources").stdout
    assert "Lives in Graz  [F1] (no receipt)" in listing


def test_with_an_embedding_model_a_rewording_its_words_miss_is_weighed_by_meaning(
        tmp_path: Any, llm_server: ScriptedLLMServer) -> None:
    """"I take the car to work" -> "Takes the automobile to work": the words miss 'automobile'
    (no table knows it; 'railway' was the example until resources/corpus/paraphrases.txt
    got it), the embedding model puts the two together. Without an embedding
    model it is held; with one it is written; a changed name is held either way."""
    said = [("user", "I take the car to work with Greta.")]

    def model(req: dict[str, Any]) -> Response:
        return tool_call("save_memory", {"history_entry": "", "edits": [
            {"op": "add", "text": "Takes the automobile to work", "section": "Routine",
             "receipt": {"messages": [1], "quote": "I take the car to work"}},
            {"op": "add", "text": "Takes the automobile to work with Mia", "section": "Routine",
             "receipt": {"messages": [1], "quote": "I take the car to work with Greta"}}]})

    def run(name: str, **kw: Any) -> tuple[str, list[dict[str, Any]], int]:
        llm_server.responder = model
        home = Home.resolve(tmp_path / name)
        cfg = Config(model="openai/test-model", api_base=llm_server.base_url, llm_retries=0, llm_timeout=10.0,
                     memory_window=1000, idle_consolidate_minutes=0, consolidation_timeout=30.0, **kw)
        app = App.open(home, config=cfg, start_services=False)
        try:
            app.store.append_many([(Message(role=r, content=t), "s", None) for r, t in said])
            before = len([r for r in llm_server.requests if r.path.endswith("/embeddings")])
            app.run(app.consolidation.consolidate("s", trigger="manual"))
            asked = len([r for r in llm_server.requests if r.path.endswith("/embeddings")]) - before
            held = [i for i in app.memory.pending_review() if i["kind"] != "not-remembered"]
            return app.store.state.memory, held, asked
        finally:
            app.close()

    memory, held, asked = run("words")
    assert "automobile" not in memory and asked == 0
    assert {i["text"]: i["kind"] for i in held} == {"Takes the automobile to work": "unsupported",
                                                    "Takes the automobile to work with Mia": "unsupported"}
    memory, held, asked = run("meaning", embedding_model="openai/text-embedding-3-small")
    assert "- Takes the automobile to work" in memory and "Mia" not in memory and asked >= 1
    assert [(i["text"], i["kind"]) for i in held] == [("Takes the automobile to work with Mia", "unsupported")]
    assert "'Mia'" in held[0]["reason"] and "'Greta'" in held[0]["reason"]
