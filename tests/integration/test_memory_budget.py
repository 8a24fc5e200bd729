"""Memory has a size budget: past 80 % of it the consolidation is asked to merge facts and
the user is told, once per consolidation; memory is never cut to fit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from memtray.core.base.home import Home
from memtray.core.base.notify import RecordingNotifier

from tests.fixtures.llm_server import JSON, Response, ScriptedLLMServer, tool_call
from tests.integration.test_consolidation import add_messages, open_app

FACTS = "".join(f"- Keeps a note number {i} about the garden shed and its tools\n" for i in range(30))
MEMORY = "# Memory\n\n## Notes\n" + FACTS


def test_near_the_budget_the_model_is_asked_to_merge_and_the_user_is_told(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    prompts: list[str] = []

    def keep(req: JSON) -> Response:
        prompts.append(req["messages"][-1]["content"])
        return tool_call("save_memory", {"history_entry": "[2026-12-01 10:00] Talked.", "memory_update": MEMORY,
                                         "removed_facts": []})

    llm_server.responder = keep
    app = open_app(Home(tmp_path / "home"), llm_server, memory_budget=len(MEMORY) + 200)
    try:
        sent = RecordingNotifier()
        app.notifier.set(sent)
        app.memory.write(MEMORY, reason="user-edit", source="user")
        add_messages(app, "cli", 4)
        app.run(app.consolidation.consolidate("cli", trigger="manual"))
        assert "merg" in prompts[-1].lower()  # resources/prompts/memory_budget.txt was added
        near = [n for n in sent.sent if n["title"] == "Memory is near its size budget"]
        assert len(near) == 1 and f"{len(app.store.state.memory):,} of" in near[0]["body"]
        assert app.store.state.memory.count("Keeps a note number") == 30  # nothing was cut to fit

        app.config = replace(app.config, memory_budget=100_000)  # well under it: nothing more is said
        add_messages(app, "cli", 4)
        app.run(app.consolidation.consolidate("cli", trigger="manual"))
        assert len([n for n in sent.sent if n["title"] == "Memory is near its size budget"]) == 1
    finally:
        app.close()
