"""A sync renumbers this device's fact ids while its model is consolidating (real litellm, real git).

Device B (the higher device id, so the merge renumbers B's colliding ids) asks its
model to consolidate; the scripted model's answer is held until a sync with A has
merged memory and renumbered B's facts. The model rephrases everything it was shown
(key: value reformat), removes a renumbered fact with a reason, merges a renumbered
fact into one that kept its id, and adds a fact that the merge brought in meanwhile
under A's id. The consolidation's rebase must translate the model's ids through the
merge's ``relabeled`` map: the model's words survive, the removal is a removal with
its reason, nothing is doubled, and ``memory why`` still traces the reworded fact.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from memtray.core.app import App
from memtray.core.log.events import Message
from memtray.core.memory import facts as fact_ids
from memtray.core.memory.merging import SyncFields

from tests.fixtures.llm_server import Response, ScriptedLLMServer, tool_call
from tests.fixtures.receipting import with_receipts
from tests.integration.sync_support import bare, digest, open_app

JSON = dict[str, Any]
FACT = re.compile(r"Remember this: (User [^.\n]+)\.")
LINE = re.compile(r"^- \[([^\]]+)\] (.+)$", re.M)
GATE = "Consolidate this while I sync."
WAIT = 60.0  # an upper bound for a stuck test, never a synchronisation


class Model:
    """Keeps what it is shown and adds what the conversation states; for the gated
    conversation it signals ``asked``, waits for ``release``, then rephrases."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()
        self.shown: dict[str, str] = {}

    def __call__(self, req: JSON) -> Response:
        text = req["messages"][-1]["content"]
        memory = text.split("## Current memory\n\n", 1)[1].split("\n\n## Conversation to consolidate", 1)[0]
        conversation = text.split("## Conversation to consolidate\n\n", 1)[1]
        if GATE not in conversation:
            base = "" if memory == "(empty)" else memory + "\n"
            new = "".join(f"- {f}\n" for f in FACT.findall(conversation))
            return tool_call("save_memory", {"history_entry": "[2026-12-01 10:00] Talked.",
                                             "memory_update": base + new, "removed_facts": []})
        self.shown = {words: fid for fid, words in LINE.findall(memory)}
        self.asked.set()
        assert self.release.wait(WAIT), "the test never released the model"
        ids = self.shown
        lyon, rex = ids["User lives in Lyon"], ids["User has a cat named Rex"]
        flat, bike = ids["User rents a flat with a balcony"], ids["User owns a red bicycle"]
        beacon = ids["User works on the Beacon project"]
        num = {m: n for n, m in re.findall(r"#(\d+) \[[^\]]*\] USER: (.+)", conversation)}
        update = (
            f"- [{lyon}, {flat}] Home: a flat with a balcony in Lyon\n"
            f"- [{rex}] Pet: a cat named Rex\n"
            f"- [{bike}] Bicycle: red\n"
            f"- Second cat: Mimi [#{num['I adopted a second cat named Mimi.']}]\n"
            f"- User plays chess every Sunday [#{num['I play chess on Sundays.']}]\n"
        )
        return tool_call("save_memory", {
            "history_entry": "[2026-12-01 11:00] Talked about cats and work.",
            "memory_update": update,
            "removed_facts": [{"fact": beacon, "reason": "the user left the Beacon project in November"}],
        })


def _open(root: Path, server: ScriptedLLMServer) -> App:
    return open_app(root, model="openai/test-model", api_base=server.base_url, llm_retries=0,
                    memory_window=1000, idle_consolidate_minutes=0)


def _tell(app: App, session: str, facts: list[str]) -> None:
    app.store.append_many([(Message(role="user", content=f"Remember this: {f}."), session, None)
                           for f in facts]
                          + [(Message(role="assistant", content="Noted."), session, None)])
    out = app.run(app.consolidation.consolidate(session, archive_all=True), timeout=WAIT)
    assert out.added == len(facts) and out.flagged == 0, out.summary()


def _facts(app: App) -> list[str]:
    return [f.text for f in app.memory.ledger().facts]


def _gated(app: App, model: Model) -> Any:
    app.store.append_many([(Message(role="user", content=c), "quick", None) for c in (
        GATE, "I adopted a second cat named Mimi.", "I play chess on Sundays.",
        "I left the Beacon project in November.")]
        + [(Message(role="assistant", content="Noted."), "quick", None)])
    running = app.worker.submit(app.consolidation.consolidate("quick", archive_all=True))
    assert model.asked.wait(WAIT), "the consolidation never asked the model"
    return running


def test_a_sync_that_renumbers_facts_during_a_consolidation_loses_none_of_the_models_changes(tmp_path: Path) -> None:
    model = Model()
    remote = bare(tmp_path / "remote.git")
    with ScriptedLLMServer(responder=with_receipts(model)) as server:
        one, two = _open(tmp_path / "one", server), _open(tmp_path / "two", server)
        # b is the higher device id: the merge renumbers b's new ids that a used too
        a, b = sorted((one, two), key=lambda app: app.memory.device)
        try:
            assert a.sync is not None and b.sync is not None
            _tell(a, "quick", ["User lives in Lyon"])
            a.sync.sync(str(remote))
            b.sync.sync(str(remote))
            _tell(b, "quick", ["User has a cat named Rex", "User works on the Beacon project",
                               "User rents a flat with a balcony", "User owns a red bicycle"])
            _tell(a, "quick", ["User plays chess on Sundays", "User drinks green tea",
                               "User has a sister named Ada", "User speaks Portuguese"])
            a.sync.sync(str(remote))
            before = {f.text: f.id for f in b.memory.ledger().facts}

            running = _gated(b, model)
            assert model.shown == before  # the model works on the ids before the merge

            rep = b.sync.sync(str(remote))
            assert rep.merges
            merge = [r for r in b.store.log.records() if r.type == "memory.written"][-1]
            relabeled = merge.data.get("relabeled") or {}
            rex, beacon = before["User has a cat named Rex"], before["User works on the Beacon project"]
            flat = before["User rents a flat with a balcony"]
            assert rex in relabeled and beacon in relabeled and flat in relabeled, relabeled
            model.release.set()
            out = running.result(WAIT)
            assert out.flagged == 0, out.notes

            facts = _facts(b)
            led = {f.text: f.id for f in b.memory.ledger().facts}
            # the model's words for the renumbered facts, under their new ids
            assert led.get("Pet: a cat named Rex") == relabeled[rex], facts
            assert led.get("Bicycle: red") == relabeled[before["User owns a red bicycle"]], facts
            assert led.get("Home: a flat with a balcony in Lyon") == before["User lives in Lyon"], facts
            assert not any(t in led for t in ("User has a cat named Rex", "User owns a red bicycle",
                                             "User rents a flat with a balcony", "User lives in Lyon")), facts
            # the removal is a removal, with its reason; the merged fact says where it went
            assert not any("Beacon" in t for t in facts), facts
            dropped = {d["id"]: d for d in b.memory.dropped() if d["by"] == "consolidation"}
            assert dropped[relabeled[beacon]]["reason"] == "the user left the Beacon project in November"
            assert dropped[relabeled[beacon]]["text"] == "User works on the Beacon project"
            assert dropped[relabeled[flat]]["reason"].startswith("merged into"), dropped
            # A's facts all arrived, once; the model's restatement of one is not a second fact
            for t in ("User drinks green tea", "User has a sister named Ada", "User speaks Portuguese"):
                assert facts.count(t) == 1, facts
            assert sum("chess" in t for t in facts) == 1, facts
            assert facts.count("Second cat: Mimi") == 1, facts
            assert len(set(b.memory.ledger().ids)) == len(facts)
            # why still traces the reworded, renumbered fact to this consolidation and its messages
            info = b.memory.why("Pet: a cat named Rex")
            assert info["consolidation"] == out.consolidation, info
            assert info["revision"]["reason"] == "consolidation" and info["fact"]["id"] == relabeled[rex], info
            said = [m["content"] for m in b.memory.why("Second cat: Mimi")["messages"] if m["role"] == "user"]
            assert "I adopted a second cat named Mimi." in said
            # and the other device converges on the same memory
            a.sync.sync(str(remote))
            b.sync.sync(str(remote))
            a.sync.sync(str(remote))
            assert sorted(_facts(a)) == sorted(_facts(b))
            assert digest(a) == digest(b)
        finally:
            model.release.set()
            a.close()
            b.close()


def test_ids_a_merge_renumbered_past_following_are_held_for_review_never_guessed(tmp_path: Path) -> None:
    """A ``relabeled`` map that sends two facts to one id (and the facts reworded since): memory
    keeps them as they are now, and what the model did to them waits in `memory review`."""
    model = Model()
    with ScriptedLLMServer(responder=with_receipts(model)) as server:
        b = _open(tmp_path / "b", server)
        try:
            _tell(b, "quick", ["User lives in Lyon"])
            _tell(b, "quick", ["User has a cat named Rex", "User works on the Beacon project",
                               "User rents a flat with a balcony", "User owns a red bicycle"])
            running = _gated(b, model)
            led = b.memory.ledger()
            rex, beacon = model.shown["User has a cat named Rex"], model.shown["User works on the Beacon project"]
            text = (b.store.state.memory.replace("a cat named Rex", "a tabby cat named Rex")
                    .replace("Beacon project", "Beacon project at Acme"))
            b.write(lambda: b.memory.write(text, reason="merge", facts=fact_ids.Ledger.with_ids(text, led.ids, led.next),
                                           sync=SyncFields(relabeled={rex: beacon})))
            model.release.set()
            out = running.result(WAIT)
            facts = _facts(b)
            assert "User has a tabby cat named Rex" in facts and "User works on the Beacon project at Acme" in facts
            assert "Pet: a cat named Rex" not in facts
            assert "Bicycle: red" in facts and "Second cat: Mimi" in facts  # the rest of the reply is applied
            held = {i["text"]: i for i in b.memory.pending_review() if i["kind"] == "rebase"}
            assert set(held) == {"Pet: a cat named Rex", "User works on the Beacon project"}, held
            assert "left the Beacon project in November" in held["User works on the Beacon project"]["reason"]
            assert out.flagged == 2
        finally:
            model.release.set()
            b.close()
