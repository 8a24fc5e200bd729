"""Two devices consolidate at the same time, sync, and lose no fact (real litellm, scripted model).

Each device consolidates its own messages only (a peer's messages are never sent to
this device's model: the peer consolidated them); their two ``memory.written`` heads
meet in the memory merge, and every device ends with the same memory and state.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memtray.core.app import App
from memtray.core.log.events import Message

from tests.fixtures.llm_server import Response, ScriptedLLMServer, tool_call
from tests.fixtures.receipting import with_receipts
from tests.integration.sync_support import bare, digest, open_app

JSON = dict[str, Any]
FACT = re.compile(r"Remember this: (User [^.\n]+)\.")


class Consolidator:
    """Keeps every fact it is shown and adds the ones the conversation states."""

    def __init__(self) -> None:
        self.conversations: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, req: JSON) -> Response:
        text = req["messages"][-1]["content"]
        memory = text.split("## Current memory\n\n", 1)[1].split("\n\n## Conversation to consolidate", 1)[0]
        conversation = text.split("## Conversation to consolidate\n\n", 1)[1]
        with self.lock:
            self.conversations.append(conversation)
        base = "" if memory == "(empty)" else memory + "\n"
        new = "".join(f"- {f}\n" for f in FACT.findall(conversation))
        return tool_call("save_memory", {"history_entry": "[2026-12-01 10:00] Talked.",
                                         "memory_update": base + new, "removed_facts": []})


def _open(root: Path, server: ScriptedLLMServer) -> App:
    return open_app(root, model="openai/test-model", api_base=server.base_url, llm_retries=0,
                    memory_window=1000, idle_consolidate_minutes=0)


@contextlib.contextmanager
def _two_devices(tmp_path: Path) -> Iterator[tuple[Consolidator, Path, App, App]]:
    """The scripted model, a bare remote, and homes a and b that consolidate with it."""
    model = Consolidator()
    remote = bare(tmp_path / "remote.git")
    with ScriptedLLMServer(responder=with_receipts(model)) as server:
        a, b = _open(tmp_path / "a", server), _open(tmp_path / "b", server)
        try:
            assert a.sync is not None and b.sync is not None
            yield model, remote, a, b
        finally:
            a.close()
            b.close()


def _tell(app: App, session: str, facts: list[str]) -> None:
    app.store.append_many([(Message(role="user", content=f"Remember this: {f}."), session, None)
                           for f in facts]
                          + [(Message(role="assistant", content="Noted."), session, None)])
    out = app.run(app.consolidation.consolidate(session, archive_all=True), timeout=60)
    assert out.added == len(facts) and out.flagged == 0, out.summary()


def _facts(app: App) -> set[str]:
    return {re.sub(r"^- (\[[^\]]+\] )?", "", ln).strip() for ln in app.store.state.memory.splitlines()
            if ln.startswith("- ")}


def test_concurrent_consolidations_on_two_devices_merge_with_zero_silent_loss(tmp_path: Path) -> None:
    with _two_devices(tmp_path) as (model, remote, a, b):
        _tell(a, "quick", ["User lives in Lyon"])
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        assert _facts(b) == {"User lives in Lyon"}  # a new device gets the memory
        # now both consolidate before either syncs: two heads
        _tell(a, "quick", ["User plays chess on Sundays"])
        _tell(b, "quick", ["User has a cat named Rex"])
        _tell(b, "work", ["User works on the Beacon project"])
        b.sync.sync(str(remote))
        rep = a.sync.sync(str(remote))
        assert rep.merges
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        want = {"User lives in Lyon", "User plays chess on Sundays", "User has a cat named Rex",
                "User works on the Beacon project"}
        assert _facts(a) == _facts(b) == want
        assert digest(a) == digest(b)
        # a's model never saw b's messages (and the other way round)
        joined = "\n".join(model.conversations)
        assert joined.count("User has a cat named Rex") == 1 and joined.count("User plays chess") == 1


def test_a_device_offline_for_many_consolidations_then_syncs(tmp_path: Path) -> None:
    with _two_devices(tmp_path) as (_model, remote, a, b):
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        offline = [f"User visited city number {i} in 2025" for i in range(8)]
        for f in offline:
            _tell(b, "trip", [f])
        _tell(a, "quick", ["User drinks green tea"])
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        assert _facts(a) == _facts(b) == {*offline, "User drinks green tea"}
        assert digest(a) == digest(b)


def test_after_sync_every_fact_traces_to_the_consolidation_and_messages_that_introduced_it(tmp_path: Path) -> None:
    from memtray.core.memory.provenance import check_provenance

    with _two_devices(tmp_path) as (_model, remote, a, b):
        _tell(a, "quick", ["User lives in Lyon"])
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        _tell(a, "quick", ["User plays chess on Sundays"])
        _tell(b, "quick", ["User has a cat named Rex"])
        for _ in range(2):  # merges both ways, then fast-forwards
            b.sync.sync(str(remote))
            a.sync.sync(str(remote))
        _tell(b, "quick", ["User drinks green tea"])
        for _ in range(2):
            b.sync.sync(str(remote))
            a.sync.sync(str(remote))
        for app in (a, b):
            [finding] = check_provenance(app.home)
            assert finding.ok, finding
        dev_a, dev_b = a.memory.device, b.memory.device
        for app in (a, b):
            for fact, dev in (("Lyon", dev_a), ("chess", dev_a), ("Rex", dev_b), ("green tea", dev_b)):
                info = app.memory.why(fact)
                assert info["consolidation"], (app.memory.device, fact, info)
                assert info.get("device") == dev, (fact, info)
                said = [m["content"] for m in info["messages"] if m["role"] == "user"]
                assert any(fact in s for s in said), (app.memory.device, fact, info)
                if dev == app.memory.device:  # its own: the consolidation here, not a merge since
                    assert info["revision"]["reason"] == "consolidation", (fact, info)
