"""Hypothesis stateful test of the whole app: append / crash / reopen / checkpoint /
consolidate / remember / forget / hand edit / rollback / restore, against a model.

The app is the real one (store, memory service, git, consolidation service with
its guard); only the LLM is an in-process scripted client (:class:`ScriptedModel`)
that answers ``save_memory`` deterministically from the prompt it is sent: it
keeps every fact, adds ``note <text>`` for each user message, and when the
number of notes is a multiple of 3 removes the alphabetically first fact with a
reason. In-process rather than through the HTTP fixture server because the
transport is not what this test explores (tests/faults/test_llm_faults.py and
tests/crash/test_kill_consolidation.py cover it through real litellm) and ~50x
cheaper steps let hypothesis explore far longer sequences in the same time.

The model is plain Python: per session the unconsolidated messages and the
pointer, the set of facts in memory, the list of memory revisions and the
commit SHAs. After every step: ``replay(log) == live state``, the state matches
the model, MEMORY.md == git HEAD == the last memory.written, one commit per
revision; after ``memory/`` is deleted the rebuilt repository has the same SHAs.

Profiles (tests/conftest.py, HYPOTHESIS_PROFILE): ``ci`` (derandomised) runs 60
sequences of up to 40 steps; ``deep`` runs 1000 random sequences of up to 80 steps.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.llm.client import DeltaCallback, LLMClient, LLMResult, Request, ToolCall
from memtray.core.log.events import Message, Record, encode
from memtray.core.log.projections import replay
from memtray.core.memory import factdiff, facts

SESSIONS = st.sampled_from(["quick", "cli"])
WORDS = st.lists(st.sampled_from(["apple", "river", "violin", "garden", "tea", "chess", "maple", "comet"]),
                 min_size=1, max_size=3)


class ScriptedModel(LLMClient):
    """Answers consolidation requests with a deterministic save_memory call."""

    def __init__(self) -> None:
        super().__init__(Config(model="scripted/model"))
        self.calls = 0

    async def ready(self, model: str | None = None) -> None:
        """No provider library to load: the answers are made here."""

    async def complete(self, req: Request, on_delta: DeltaCallback | None = None) -> LLMResult:
        self.calls += 1
        prompt = str(req.messages[-1]["content"])
        head, conv = prompt.split("## Conversation to consolidate", 1)
        current = head.split("## Current memory", 1)[1].strip()
        # the memory is shown with fact ids ("- [F3] likes tea 4"): the model decides by the
        # words, as the machine's model does, and gives every kept fact back with its id
        marked = facts.read_markers("" if current == "(empty)" else current)
        ids = {f.text: (i[0] if i else None) for f, i in zip(marked.facts, marked.ids, strict=True)}
        said = [(int(ln.split(" ", 1)[0].lstrip("#")), ln.split("USER: ", 1)[1])
                for ln in conv.strip().splitlines() if "USER: " in ln and ln.startswith("#")]
        notes = [f"note {text}" for _n, text in said]
        kept, removed = plan_update(list(ids), notes)
        args = {
            "history_entry": f"[2026-01-01 00:00] {len(notes)} notes",
            "memory_update": "## Notes\n\n" + "".join(f"- [{ids[f]}] {f}\n" if ids[f] else f"- {f}\n" for f in kept)
                             + "".join(f"- {n}\n" for n in notes),
            "removed_facts": [{"fact": ids[f] or f, "reason": "superseded"} for f in removed],
            "receipts": [{"fact": f"note {text}", "messages": [n], "quote": text} for n, text in said],
        }
        return LLMResult("", [ToolCall(f"call_{self.calls}", "save_memory", json.dumps(args))], "scripted/model")


def plan_update(facts: list[str], notes: list[str]) -> tuple[list[str], list[str]]:
    """What the scripted model keeps and removes (the model of the test uses it too)."""
    if len(notes) % 3 == 0 and len(facts) >= 2:
        first = min(facts)
        return [f for f in facts if f != first], [first]
    return list(facts), []


class AppMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="memtray-app-hyp-"))
        self.home = Home.resolve(self.dir / "home")
        self.clock = FakeClock()
        self.ids = seeded_ids(self.clock, 11)
        self.llm = ScriptedModel()
        self.counter = 0
        # the model
        self.messages: dict[str, list[tuple[str, str]]] = {}  # unconsolidated (role, content)
        self.count: dict[str, int] = {}
        self.pointer: dict[str, int] = {}
        self.facts: set[str] = set()
        self.revisions: list[set[str]] = []
        self.pending_edit: set[str] | None = None
        self.shas: list[str] = []
        self.app: App | None = self._open()

    # --- plumbing -------------------------------------------------------------------

    def _open(self) -> App:
        cfg = Config(model="scripted/model", memory_window=4, idle_consolidate_minutes=0)
        # no background sweep: every consolidation is a step of the test
        app = App.open(self.home, clock=self.clock, ids=self.ids, config=cfg, llm=self.llm, start_services=False)
        if self.pending_edit is not None:  # start-up records the hand edit
            self._revision(self.pending_edit)
            self.pending_edit = None
        return app

    def _svc(self) -> Any:
        assert self.app is not None
        return self.app.memory

    def _revision(self, facts: set[str]) -> None:
        self.facts = set(facts)
        self.revisions.append(set(facts))

    def _adopt(self) -> None:
        """Every memory operation first records a pending hand edit."""
        if self.pending_edit is not None:
            self._revision(self.pending_edit)
            self.pending_edit = None

    def _next(self) -> int:
        self.counter += 1
        self.clock.advance(61)
        return self.counter

    def _crash(self) -> None:
        app = self.app
        assert app is not None
        app.worker.stop()
        app.search.close()
        self._svc().git.close()
        app.store.log.close()
        assert app.store._lock is not None
        app.store._lock.release()
        app.store._lock = None
        self.app = None

    def teardown(self) -> None:
        if self.app is not None:
            self.app.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- rules ------------------------------------------------------------------------

    @rule(session=SESSIONS, role=st.sampled_from(["user", "user", "assistant"]), words=WORDS)
    def append(self, session: str, role: str, words: list[str]) -> None:
        assert self.app is not None
        text = f"m{self._next()} " + " ".join(words)
        self.app.store.append(Message(role=role, content=text), session=session)
        self.messages.setdefault(session, []).append((role, text))
        self.count[session] = self.count.get(session, 0) + 1

    @rule(session=SESSIONS, archive_all=st.booleans())
    def consolidate(self, session: str, archive_all: bool) -> None:
        assert self.app is not None
        self._next()
        start = self.pointer.get(session, 0)
        count = self.count.get(session, 0)
        end = max(start, count - (0 if archive_all else 2))  # memory_window // 2 kept
        if end == start and count > start:
            end = count  # a manual consolidation takes what there is
        cons = self.app.consolidation
        out = self.app.run(cons.consolidate(session, archive_all=archive_all, trigger="manual"))
        if end <= start:
            assert out.nothing_to_do
            return
        self._adopt()  # the consolidation records a pending hand edit before it reads memory
        taken = self.messages[session][: end - start]
        notes = [f"note {text}" for role, text in taken if role == "user"]
        kept, _removed = plan_update(sorted(self.facts), notes)
        self._revision(set(kept) | set(notes))
        self.messages[session] = self.messages[session][end - start :]
        self.pointer[session] = end
        assert (out.start, out.end) == (start, end)

    @rule(words=WORDS)
    def remember(self, words: list[str]) -> None:
        fact = f"likes {' '.join(words)} {self._next()}"
        said = self._svc().remember(fact, "Preferences", model=None, source_seq=None)
        assert said.startswith("remembered"), said
        self._adopt()
        self._revision(self.facts | {fact})

    @precondition(lambda self: self.facts and self.pending_edit is None)
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        fact = data.draw(st.sampled_from(sorted(self.facts)))
        self._next()
        said = self._svc().forget(fact, "the user asked", model=None)
        assert said.startswith("forgot"), said
        self._revision(self.facts - {fact})

    @rule(drop=st.booleans(), words=WORDS)
    def hand_edit(self, drop: bool, words: list[str]) -> None:
        base = set(self.pending_edit if self.pending_edit is not None else self.facts)
        if drop and base:
            base.discard(min(base))
        else:
            base.add(f"hand {' '.join(words)} {self._next()}")
        text = "## Notes\n\n" + "".join(f"- {f}\n" for f in sorted(base))
        (self.home.memory / "MEMORY.md").write_text(text)
        assert self.app is not None
        # the same bytes as HEAD are no edit at all
        self.pending_edit = None if text == self.app.store.state.memory else base

    @precondition(lambda self: len(self.revisions) >= 2)
    @rule(data=st.data())
    def rollback(self, data: st.DataObject) -> None:
        self._adopt_now()
        k = data.draw(st.integers(min_value=1, max_value=len(self.revisions) - 1))
        self._next()
        self._svc().rollback(f"HEAD~{k}")
        self._revision(self.revisions[-1 - k])

    @precondition(lambda self: len(self.revisions) >= 2)
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        self._adopt_now()
        candidates = [(k, f) for k, rev in enumerate(reversed(self.revisions)) for f in sorted(rev - self.facts)]
        if not candidates:
            return
        k, fact = data.draw(st.sampled_from(candidates))
        self._next()
        self._svc().restore_fact(f"HEAD~{k}", fact)
        self._revision(self.facts | {fact})

    def _adopt_now(self) -> None:
        """Record a pending hand edit (as any memory operation would) so HEAD~k names what the model expects."""
        if self.pending_edit is not None:
            assert self._svc().check_worktree()
            self._adopt()

    @rule()
    def checkpoint(self) -> None:
        assert self.app is not None
        self.app.store.checkpoint()

    @rule(torn=st.integers(min_value=0, max_value=120), before_commit=st.booleans(),
          drop_state=st.booleans(), drop_memory=st.booleans())
    def crash_and_reopen(self, torn: int, before_commit: bool, drop_state: bool, drop_memory: bool) -> None:
        """Die without a checkpoint -- maybe right after a memory.written reached the log but
        before git followed, maybe in the middle of writing one more record -- then start again,
        maybe without state/ or memory/."""
        assert self.app is not None
        if before_commit:
            svc = self._svc()
            self.app.store._listeners.remove(svc.projection._on_append)
            self.remember(["comet"])
        head = self.app.store.log.head
        self._crash()
        if torn:
            rec = Record(10**6, "01TORN", "2026-01-01T00:00:00.000Z", "message", 1, "quick",
                         {"role": "user", "content": "never acknowledged"})
            line = encode(rec)
            with open(self.home.events / f"{head.segment:06d}.jsonl", "ab") as fh:
                fh.write(line[: min(torn, len(line) - 1)])
        self._reopen(drop_state, drop_memory)

    @rule(drop_state=st.booleans(), drop_memory=st.booleans())
    def close_and_reopen(self, drop_state: bool, drop_memory: bool) -> None:
        assert self.app is not None
        self.app.close()
        self.app = None
        self._reopen(drop_state, drop_memory)

    def _reopen(self, drop_state: bool, drop_memory: bool) -> None:
        if drop_state:
            shutil.rmtree(self.home.state, ignore_errors=True)
        rebuilt = drop_memory and self.pending_edit is None
        if rebuilt:
            shutil.rmtree(self.home.memory, ignore_errors=True)
        self.app = self._open()
        if rebuilt:  # deterministic commits: the same SHAs (plus any commit a crash left to make)
            got = [info.sha for info in reversed(list(self._svc().git.walk()))]
            assert got[: len(self.shas)] == self.shas

    # --- the invariant ------------------------------------------------------------------

    @invariant()
    def matches_model(self) -> None:
        assert self.app is not None
        store = self.app.store
        recs = list(store.log.records())
        assert [r.seq for r in recs] == list(range(1, len(recs) + 1))
        assert store.state.to_json() == replay(recs).to_json()
        for key in set(self.count) | set(store.state.sessions):
            s = store.state.sessions[key]
            assert [(m["role"], m["content"]) for m in s.messages] == self.messages.get(key, [])
            assert s.last_consolidated == self.pointer.get(key, 0)
            assert all(c.status != "started" for c in store.state.consolidations.values())
        assert {f.text for f in factdiff.parse(store.state.memory)} == self.facts
        written = [r for r in recs if r.type == "memory.written"]
        assert len(written) == len(self.revisions)
        git = self._svc().git
        commits = list(reversed(list(git.walk())))
        assert [c.trailers["Event-Seq"] for c in commits] == [str(r.seq) for r in written]
        if written:
            head = git.head()
            assert head is not None and git.read(head, "MEMORY.md") == store.state.memory
            if self.pending_edit is None:
                assert git.worktree_text("MEMORY.md") == store.state.memory
        self.shas = [c.sha for c in commits]


_current = settings()
_deep = _current.max_examples > 100
AppMachine.TestCase.settings = settings(_current, stateful_step_count=80 if _deep else 40)
# the deep profile runs for many minutes: no per-test timeout then
TestAppMachine = pytest.mark.timeout(0)(AppMachine.TestCase) if _deep else AppMachine.TestCase


# --- regressions: bugs the machine found, fixed in core (docs/RELIABILITY.md) ----------------


def _plain_app(tmp_path: Path) -> App:
    return App.open(Home.resolve(tmp_path / "home"), config=Config(idle_consolidate_minutes=0), start_services=False)


def test_consolidating_an_unknown_session_leaves_state_alone(tmp_path: Path) -> None:
    """It used to create the session in the live state only: live state != replay."""
    app = _plain_app(tmp_path)
    try:
        out = app.run(app.consolidation.consolidate("nosuch", trigger="manual"))
        assert out.nothing_to_do
        assert app.store.state.to_json() == replay(app.store.log.records()).to_json()
    finally:
        app.close()


def test_hand_edit_before_the_first_revision(tmp_path: Path) -> None:
    """A MEMORY.md written by hand before memtray's first revision used to be overwritten unrecorded."""
    app = _plain_app(tmp_path)
    home = app.home
    app.close()
    (home.memory / "MEMORY.md").write_text("## Notes\n\n- written by hand before memtray wrote any\n")
    app = _plain_app(tmp_path)
    try:
        app.memory.remember("likes tea", "Preferences", model=None, source_seq=None)
        assert "written by hand" in app.store.state.memory
    finally:
        app.close()


def test_hand_edit_while_git_is_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a commit failed, each write used to re-adopt the stale work tree: a forgotten fact came back."""
    from dulwich.object_store import DiskObjectStore

    app = _plain_app(tmp_path)
    svc = app.memory
    try:
        svc.write("## Notes\n\n- likes tea\n- plays chess\n", reason="user-edit", source="user")
        real = DiskObjectStore.add_object
        failing = {"on": True}

        def add_object(self: Any, obj: Any) -> None:
            if failing["on"]:
                raise OSError(28, "No space left on device")
            real(self, obj)

        monkeypatch.setattr(DiskObjectStore, "add_object", add_object)
        (app.home.memory / "MEMORY.md").write_text("## Notes\n\n- likes tea\n- plays chess\n- by hand\n")
        svc.forget("plays chess", "the user asked", model=None)  # adopts the edit, then forgets
        failing["on"] = False
        svc.remember("bakes bread", "Notes", model=None, source_seq=None)
        assert "plays chess" not in app.store.state.memory
        assert [r.data["reason"] for r in app.store.log.records() if r.type == "memory.written"] == [
            "user-edit", "user-edit", "agent", "agent"]
    finally:
        app.close()


def test_a_hand_edit_that_changes_a_number_is_another_fact(tmp_path: Path) -> None:
    """The machine's finding: "likes apple 1" edited by hand into "hand apple 2" where it stood
    kept the old id, so the old fact could not be restored ("already in memory"). A hand edit
    keeps the id when it changes words, not when it changes a name or a number."""
    app = _plain_app(tmp_path)
    svc = app.memory
    try:
        svc.write("## Notes\n\n- likes apple 1\n- plays chess\n", reason="user-edit", source="user")
        f1, chess = svc.ledger().facts
        (app.home.memory / "MEMORY.md").write_text("## Notes\n\n- hand apple 2\n- plays chess\n")
        assert svc.check_worktree()
        led = svc.ledger()
        assert led.ids[1] == chess.id and led.ids[0] != f1.id  # another fact, a new id
        assert [d["text"] for d in svc.dropped()] == ["likes apple 1"]
        svc.restore_fact("HEAD~1", "likes apple 1")
        assert svc.ledger().get(f1.id) is not None and svc.ledger().get(f1.id).text == "likes apple 1"
        # words only: the same fact, its id kept
        (app.home.memory / "MEMORY.md").write_text(app.store.state.memory.replace("plays chess", "enjoys chess"))
        assert svc.check_worktree()
        assert svc.ledger().get(chess.id) is not None and svc.ledger().get(chess.id).text == "enjoys chess"
    finally:
        app.close()
