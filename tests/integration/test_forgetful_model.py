"""A deliberately forgetful model, 200+ consolidations: no fact is ever lost silently.

The scripted server plays a consolidating model (over HTTP, through real litellm)
that learns one fact per round from the conversation and, at random but seeded,

* drops facts without listing them in ``removed_facts``,
* rewords facts (close rewordings of the same fact, never listed),
* replaces a fact by a different one (another year, another city: a *new* fact; the
  old one is dropped without a word),
* now and then removes a fact properly, listing it with a reason,
* sometimes answers badly (no tool call, broken JSON, a catastrophically shrunken
  memory) so the consolidation fails and is retried.

The model knows what it did, which is the test's oracle: every fact that ever entered
MEMORY.md must, after every consolidation, still be there (in one of its wordings) or
have been removed with a reason that `memtray memory dropped --json` reports. Then
restore-fact, rollback and redo run through the CLI and are checked in the work tree
and with ``git show``.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import MemoryWritten, Message
from memtray.core.memory import factdiff
from memtray.core.memory.consolidation import ConsolidationFailedError
from memtray.core.memory.facts import read_markers
from memtray.core.memory.service import MemoryService

from tests.fixtures.consolidator import ScriptedConsolidator, norm
from tests.fixtures.llm_server import Response, ScriptedLLMServer, reply, tool_call
from tests.support import cli_here

SEED = 20261130
ROUNDS = 200  # successful consolidations (failed ones come on top)

TEMPLATES: dict[str, str] = {
    "Food": "User likes {food} with {extra}",
    "Travel": "User visited {city} in {year}",
    "Family": "User's {relation} {name} lives in {city}",
    "Learning": "User is learning {language} on {day}s",
    "Work": "User works on the {project} project with {name}",
    "Things": "User owns a {color} {thing}",
    "Sports": "User plays {sport} with {name} on {day}s",
}
FILLERS: dict[str, list[str]] = {
    "food": ["pasta", "ramen", "curry", "tacos", "risotto", "dumplings", "paella", "falafel", "goulash"],
    "extra": ["lemon", "chili", "garlic", "basil", "honey", "ginger", "mint", "sesame"],
    "city": ["Paris", "Rome", "Kyoto", "Lisbon", "Oslo", "Quito", "Hanoi", "Dakar", "Perth", "Tallinn", "Cusco"],
    "year": [str(y) for y in range(2001, 2025)],
    "relation": ["sister", "brother", "cousin", "aunt", "uncle", "niece", "nephew", "grandmother"],
    "name": ["Mia", "Omar", "Ingrid", "Kenji", "Lucia", "Tobias", "Zara", "Pedro", "Yusuf", "Greta", "Ravi"],
    "language": ["Rust", "Haskell", "Japanese", "Swahili", "Finnish", "Elixir", "Welsh", "Tagalog"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "project": ["Atlas", "Beacon", "Cobalt", "Dynamo", "Ember", "Falcon", "Granite", "Harbor"],
    "color": ["red", "teal", "amber", "violet", "olive", "navy", "coral", "ivory"],
    "thing": ["bicycle", "kayak", "telescope", "synthesizer", "typewriter", "hammock", "drone", "canoe"],
    "sport": ["tennis", "squash", "badminton", "volleyball", "handball", "curling", "fencing"],
}
SLOT = re.compile(r"\{(\w+)\}")


@dataclass
class Fact:
    k: int
    section: str
    fillers: dict[str, str]
    wordings: set[str] = field(default_factory=set)  # normalised


@dataclass
class ForgetfulModel(ScriptedConsolidator[Fact]):
    """The scripted consolidator and the oracle of what it did."""

    #: proper removals of the last answer, committed once the consolidation succeeds
    pending: list[tuple[int, str, str]] = field(default_factory=list)
    removed: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # k -> [(text, reason)]

    # --- facts and their wordings ------------------------------------------------------------

    def new_fact(self, section: str | None = None, base: dict[str, str] | None = None) -> tuple[int, str]:
        """A fact (text) no fact so far has: fresh, or ``base`` with one filler changed."""
        for _ in range(1000):
            sec = section or self.rng.choice(list(TEMPLATES))
            slots = SLOT.findall(TEMPLATES[sec])
            fillers = dict(base) if base else {s: self.rng.choice(FILLERS[s]) for s in slots}
            if base:
                slot = self.rng.choice(slots)
                fillers[slot] = self.rng.choice([v for v in FILLERS[slot] if v != base[slot]])
            text = TEMPLATES[sec].format(**fillers)
            if norm(text) not in self.by_norm:
                k = len(self.facts) + 1
                self.facts[k] = Fact(k, sec, fillers)
                self.register(k, text)
                return k, text
        raise AssertionError("ran out of fresh facts")

    def reword(self, k: int, text: str) -> str:
        """The same fact in other words (close enough for anyone to call it a rewording)."""
        if text.startswith("The user"):
            out = "User" + text[len("The user"):]
        elif text.endswith(" (still true)"):
            out = text[: -len(" (still true)")]
        elif self.rng.random() < 0.5:
            out = "The user" + text[len("User"):]
        else:
            out = text + " (still true)"
        if norm(out) in self.by_norm and self.by_norm[norm(out)] != k:
            return text
        self.register(k, out)
        return out

    def k_of(self, text: str) -> int:
        k = self.by_norm.get(norm(text))
        assert k is not None, f"memory holds a fact nobody wrote: {text!r}"
        return k

    # --- answering ---------------------------------------------------------------------------

    def answer(self, req: dict[str, Any]) -> Response:
        self.pending = []
        prompt = req["messages"][-1]["content"]
        memory = prompt.split("## Current memory\n\n", 1)[1].split("\n\n## Conversation to consolidate", 1)[0]
        memory = read_markers(memory).text  # a model that ignores fact ids: the guard matches its text
        conversation = prompt.split("## Conversation to consolidate\n\n", 1)[1]
        facts = [] if memory == "(empty)" else [(f.section, f.text) for f in factdiff.parse(memory)]
        said = re.findall(r"^#(\d+) \[[^\]]*\] USER: Please remember that (.+)\.$", conversation, flags=re.M)
        learned = [text for _n, text in said]
        r = self.rng.random()
        if r < 0.02:
            self.bump("no-tool-call")
            return reply("Memory consolidated!")
        if r < 0.04:
            self.bump("bad-json")
            return tool_call("save_memory", '{"history_entry": "[2026-11-30 09:00] oops", "memory_update": "- ')
        if r < 0.06 and len(facts) >= 6:
            self.bump("catastrophic")
            kept = self.rng.sample(facts, max(1, len(facts) // 5))
            return self.save(kept, [], "forgot nearly everything")
        out = list(facts)
        removed: list[dict[str, str]] = []
        # silent drops
        for _ in range(self.rng.choice([0, 0, 1, 1, 2, 3])):
            if out:
                out.pop(self.rng.randrange(len(out)))
                self.bump("silent-drop")
        # close rewordings of the same fact, never listed
        for _ in range(self.rng.choice([0, 1, 1, 2])):
            if out:
                i = self.rng.randrange(len(out))
                sec, text = out[i]
                out[i] = (sec, self.reword(self.k_of(text), text))
                self.bump("reword")
        # a different fact in place of an old one (another year, city...), never listed
        if out and self.rng.random() < 0.15:
            i = self.rng.randrange(len(out))
            sec, text = out[i]
            old = self.facts[self.k_of(text)]
            _k, new_text = self.new_fact(old.section, old.fillers)
            out[i] = (sec, new_text)
            self.bump("replaced")
        # a proper removal, with its reason
        if out and self.rng.random() < 0.1:
            _sec, text = out[self.rng.randrange(len(out))]
            k = self.k_of(text)
            reason = f"superseded (removal {sum(len(v) for v in self.removed.values()) + len(self.pending) + 1})"
            for sec2, text2 in [x for x in out if self.k_of(x[1]) == k]:
                out.remove((sec2, text2))
                removed.append({"fact": text2, "reason": reason})
                self.pending.append((k, text2, reason))
            self.bump("listed-removal")
        if self.rng.random() < 0.2:
            self.rng.shuffle(out)
        present = {norm(t) for _s, t in out}
        receipts: list[dict[str, Any]] = []  # the user's words for each fact it adds (issue 27)
        for n, text in said:
            k = self.k_of(text)
            if norm(text) not in present and not any(w in present for w in self.facts[k].wordings):
                out.append((self.facts[k].section, text))
                receipts.append({"fact": text, "messages": [int(n)], "quote": text})
        return self.save(out, removed, f"learned {len(learned)} fact(s)", receipts)

    @staticmethod
    def save(facts: list[tuple[str, str]], removed: list[dict[str, str]], summary: str,
             receipts: list[dict[str, Any]] | None = None) -> Response:
        sections: dict[str, list[str]] = {}
        for sec, text in facts:
            sections.setdefault(sec or "General", []).append(text)
        body = "# Memory\n" + "".join(
            f"\n## {sec}\n" + "".join(f"- {t}\n" for t in texts) for sec, texts in sections.items())
        return tool_call("save_memory", {"history_entry": f"[2026-11-30 09:00] {summary}.",
                                         "memory_update": body, "removed_facts": removed,
                                         "receipts": receipts or []})

    # --- the oracle --------------------------------------------------------------------------

    def commit(self) -> None:
        for k, text, reason in self.pending:
            self.removed.setdefault(k, []).append((text, reason))
        self.pending = []

    def entered(self, memory: str) -> set[int]:
        return {self.k_of(f.text) for f in factdiff.parse(memory)}

    def lost(self, ever: set[int], memory: str) -> list[str]:
        here = {norm(f.text) for f in factdiff.parse(memory)}
        out = []
        for k in sorted(ever):
            if k in self.removed or self.facts[k].wordings & here:
                continue
            out.append(f"fact {k} ({sorted(self.facts[k].wordings)})")
        return out


@pytest.fixture
def model() -> ForgetfulModel:
    return ForgetfulModel(random.Random(SEED))


def git(home: Home, *args: str) -> str:
    return subprocess.run(["git", "-C", str(home.memory), *args], capture_output=True, text=True,
                          check=True).stdout


def cli_json(home: Home, *args: str) -> Any:
    out = cli_here(home.root, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_forgetful_model_never_makes_memory_forget(home: Home, served: ScriptedLLMServer,
                                                   model: ForgetfulModel) -> None:
    clock = FakeClock()
    cfg = Config(model="openai/test-model", api_base=served.base_url, llm_retries=0, llm_timeout=30.0,
                 memory_window=2, idle_consolidate_minutes=0, drop_policy="keep")
    app = App.open(home, config=cfg, clock=clock, ids=seeded_ids(clock, SEED), start_services=False)
    ever: set[int] = set()
    done: list[str] = []  # consolidation ids, oldest first
    failures = 0
    try:
        svc: MemoryService = app.memory
        cons = app.consolidation
        while len(done) < ROUNDS:
            clock.advance(60)
            _k, text = model.new_fact()  # after a failure the retry covers two rounds
            app.store.append_many([
                (Message(role="user", content=f"Please remember that {text}."), "chat", None),
                (Message(role="assistant", content="Noted."), "chat", None),
            ])
            before = app.store.state.memory
            try:
                out = app.run(cons.consolidate("chat", trigger="window"))
            except ConsolidationFailedError:
                failures += 1
                model.pending = []
                assert app.store.state.memory == before  # a failure changes nothing
                continue
            assert not out.nothing_to_do
            model.commit()
            done.append(out.consolidation)
            memory = app.store.state.memory
            ever |= model.entered(memory)
            lost = model.lost(ever, memory)
            assert not lost, f"after consolidation {len(done)}: silently lost {lost}"
            if len(done) % 50 == 0:
                assert (home.memory / "MEMORY.md").read_text() == memory
                assert svc.git.read(svc.git.head() or "", "MEMORY.md") == memory
        assert not model.errors, model.errors
        # the model really was forgetful, in every way it can be
        for what in ("silent-drop", "reword", "replaced", "listed-removal", "no-tool-call", "bad-json",
                     "catastrophic"):
            assert model.stats.get(what, 0) > 0, (what, model.stats)
        assert model.stats["silent-drop"] >= 150 and model.stats["reword"] >= 150, model.stats
        failed = [c for c in app.store.state.consolidations.values() if c.status == "failed"]
        assert len(failed) == failures > 0
        assert sum(1 for r in app.store.log.records() if r.type == MemoryWritten.TYPE) == len(done)
        final = app.store.state.memory
    finally:
        app.close()

    # every removal is reported, with the reason the model gave
    rows = cli_json(home, "memory", "dropped")
    listed = {(text, reason) for v in model.removed.values() for text, reason in v}
    assert {(r["text"], r["reason"]) for r in rows} == listed and listed
    assert all(r["by"] == "consolidation" and r["present_now"] is False for r in rows)
    assert git(home, "show", "HEAD:MEMORY.md") == final == (home.memory / "MEMORY.md").read_text()

    # restore-fact, from the revision that dropped it
    row = rows[0]
    out = cli_here(home.root, "memory", "restore-fact", row["rev"], row["text"])
    assert out.returncode == 0, out.stderr
    assert f"- {row['text']}\n" in (home.memory / "MEMORY.md").read_text()
    assert f"- {row['text']}\n" in git(home, "show", "HEAD:MEMORY.md")
    assert "Reason: restore" in git(home, "log", "-1", "--format=%B")

    # rollback to the memory of an old consolidation
    target = done[ROUNDS // 2]
    out = cli_here(home.root, "memory", "rollback", target)
    assert out.returncode == 0, out.stderr
    sha = git(home, "log", "--format=%H", f"--grep=Consolidation: {target}", "main").split()[0]
    rolled = git(home, "show", f"{sha}:MEMORY.md")
    assert (home.memory / "MEMORY.md").read_text() == rolled == git(home, "show", "HEAD:MEMORY.md")
    assert "Reason: rollback" in git(home, "log", "-1", "--format=%B")
    # what the rollback removes: the facts (by id) the memory had that the target did not
    app = App.open(home, config=Config(model="openai/test-model"), start_services=False)
    try:
        pre_ids, rolled_ids = app.memory.ledger_at("HEAD~1"), app.memory.ledger_at("HEAD")
    finally:
        app.close()
    expect = {f.text for f in pre_ids.facts if rolled_ids.get(f.id) is None}
    assert expect, "the rollback should undo something"
    by_rollback = [r for r in cli_json(home, "memory", "dropped") if r["by"] == "rollback"]
    assert {r["text"] for r in by_rollback} == expect
    assert all(r["reason"] == "rollback" and not r["present_now"] for r in by_rollback)

    # redo that consolidation with another model (the forgetful one again), over HTTP;
    # the model may fail an attempt on purpose, so allow it a few
    env = {"MEMTRAY_MODEL": "openai/test-model", "MEMTRAY_API_BASE": served.base_url, "OPENAI_API_KEY": "sk-x"}
    for _attempt in range(4):
        requests = len(served.chat_requests)
        out = cli_here(home.root, "memory", "redo", target, "--model", "openai/other-model", **env)
        assert served.chat_requests[requests]["model"] == "other-model"
        if out.returncode == 0:
            break
        model.pending = []
        assert "consolidation failed" in out.stderr
        assert git(home, "show", "HEAD:MEMORY.md") == rolled  # a failed redo changes nothing
    else:
        pytest.fail("every redo attempt failed")
    redo_removed = {(text, reason) for _k, text, reason in model.pending}
    body = git(home, "log", "-1", "--format=%B")
    assert "Reason: redo" in body and "Model: openai/other-model" in body and f"Consolidation: {target}" not in body
    head = git(home, "show", "HEAD:MEMORY.md")
    assert head == (home.memory / "MEMORY.md").read_text()
    here = {f.norm for f in factdiff.parse(head)}
    for f in factdiff.parse(rolled):  # nothing the memory had before the redo is lost silently
        k = model.k_of(f.text)
        assert model.facts[k].wordings & here or any(t == f.text for t, _r in redo_removed), f.text
    rows = cli_json(home, "memory", "dropped")
    assert {(r["text"], r["reason"]) for r in rows if r["by"] == "redo"} == redo_removed
    assert not model.errors, model.errors
