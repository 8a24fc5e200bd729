"""Prompt layout 3's share of the fold: snapshots and notes follow the records, stay bounded,
and a checkpoint carries them."""

from __future__ import annotations

from typing import Any

from memtray.core.log import promptbase
from memtray.core.log.events import (
    ConsolidationCompleted,
    ConsolidationStarted,
    MemoryWritten,
    Message,
    Payload,
    Record,
)
from memtray.core.log.projections import State, replay

TS = "2026-12-03T10:00:00.000Z"


class Log:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def add(self, payload: Payload, session: str | None = None) -> int:
        seq = len(self.records) + 1
        self.records.append(Record(seq, f"id{seq}", TS, payload.TYPE, payload.VERSION, session, payload.to_data()))
        return seq

    def say(self, session: str, text: str, *, rebase: bool = False) -> None:
        self.add(Message(role="user", content=text, rebase=rebase or None), session)
        self.add(Message(role="assistant", content="ok"), session)

    def memory(self, text: str, added: str) -> int:
        diff: Any = {"added": [{"id": "F1", "section": "Facts", "text": added}], "dropped": [], "changed": [],
                     "unchanged": 0}
        return self.add(MemoryWritten(memory=text, reason="agent", diff=diff))

    def consolidate(self, session: str, start: int, end: int) -> None:
        self.add(ConsolidationStarted(consolidation=f"c{end}", start=start, end=end, model="m"), session)
        self.add(ConsolidationCompleted(consolidation=f"c{end}", end=end), session)


def test_a_snapshot_and_its_notes_hold_memory_now_and_the_prompt_keeps_folded_messages() -> None:
    log = Log()
    first = log.memory("- tea\n", "tea")
    log.say("a", "hello", rebase=True)
    log.say("a", "more")
    log.memory("- tea\n- bees\n", "bees")
    log.consolidate("a", 0, 2)
    state = replay(log.records)
    s = state.sessions["a"]
    assert (s.prompt_base, s.snapshot_seq, s.last_consolidated, s.base) == (0, first, 2, 0)
    shown = promptbase.view(state, s)
    assert shown is not None and shown[0] == "- tea\n" and [n[1] for n in shown[1]] == ["+ [Facts] bees"]
    assert len(s.messages) == 4  # the folded two stay: the prompt still shows them
    assert replay(log.records[5:], State.from_json(replay(log.records[:5]).to_json())).to_json() == state.to_json()

    log.say("a", "again", rebase=True)  # starts over: memory now, the history from the pointer
    state = replay(log.records)
    s = state.sessions["a"]
    assert (s.prompt_base, s.base, len(s.messages)) == (2, 2, 4)
    shown = promptbase.view(state, s)
    assert shown is not None and shown == ("- tea\n- bees\n", []) and state.notes == []


def test_snapshots_and_notes_are_bounded_and_a_trimmed_session_shows_memory_now() -> None:
    log = Log()
    for i in range(promptbase.KEEP_SNAPSHOTS + 1):
        log.memory(f"- fact {i}\n", f"fact {i}")
        log.say(f"s{i}", "hi", rebase=True)
    state = replay(log.records)
    assert len(state.snapshots) == promptbase.KEEP_SNAPSHOTS
    assert promptbase.view(state, state.sessions["s0"]) is None  # its snapshot went: memory now
    assert promptbase.view(state, state.sessions[f"s{promptbase.KEEP_SNAPSHOTS}"]) == (
        f"- fact {promptbase.KEEP_SNAPSHOTS}\n", [])

    for i in range(promptbase.KEEP_NOTES + 5):
        log.memory(f"- more {i}\n", f"more {i}")
    state = replay(log.records)
    assert len(state.notes) == promptbase.KEEP_NOTES and state.notes_from > 0
    assert promptbase.view(state, state.sessions["s1"]) is None  # its notes were trimmed
    assert State.from_json(state.to_json()).to_json() == state.to_json()
