"""Hypothesis stateful test: append / crash / reopen / checkpoint / reset.

After every step, ``replay(log)`` and the store's live state equal a simple model.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.home import Home
from memtray.core.log.events import Message, Record, SessionReset, encode
from memtray.core.log.projections import replay
from memtray.core.log.store import Store

SESSIONS = st.sampled_from(["quick", "cli", "reminder:1"])
# what may enter an event: Unicode scalar values without NUL (the codec refuses the rest,
# tests/unit/log/test_text_boundary.py checks that)
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=0, max_size=40)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="memtray-hyp-"))
        self.home = Home.resolve(self.dir / "home")
        self.clock = FakeClock()
        self.ids = seeded_ids(self.clock, 7)
        self.store: Store | None = self._open()
        # the model: per session, the list of (role, content) since the last reset
        self.model: dict[str, list[tuple[str, str]]] = {}
        self.resets: dict[str, int] = {}
        self.total = 0

    def _open(self) -> Store:
        return Store.open(self.home, clock=self.clock, ids=self.ids, segment_bytes=2048)

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close(checkpoint=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    @precondition(lambda self: self.store is not None)
    @rule(session=SESSIONS, role=st.sampled_from(["user", "assistant"]), text=TEXT)
    def append(self, session: str, role: str, text: str) -> None:
        assert self.store is not None
        self.store.append(Message(role=role, content=text), session=session)
        self.model.setdefault(session, []).append((role, text))
        self.total += 1

    @precondition(lambda self: self.store is not None)
    @rule(session=SESSIONS)
    def reset(self, session: str) -> None:
        assert self.store is not None
        self.store.append(SessionReset(reason="user"), session=session)
        self.model[session] = []
        self.resets[session] = self.resets.get(session, 0) + 1
        self.total += 1

    @precondition(lambda self: self.store is not None)
    @rule()
    def checkpoint(self) -> None:
        assert self.store is not None
        self.store.checkpoint()

    @precondition(lambda self: self.store is not None)
    @rule(torn=st.integers(min_value=0, max_value=200))
    def crash(self, torn: int) -> None:
        """Die without a checkpoint, maybe in the middle of writing a record."""
        assert self.store is not None
        head = self.store.log.head
        self.store.log.close()
        lock = self.store._lock
        if lock is not None:
            lock.release()
        self.store = None
        if torn:
            rec = Record(self.total + 1, "01TORN", "2026-01-01T00:00:00.000Z", "message", 1, "quick",
                         {"role": "user", "content": "never acknowledged"})
            line = encode(rec)
            seg = self.home.events / f"{head.segment:06d}.jsonl"
            with open(seg, "ab") as fh:
                fh.write(line[: min(torn, len(line) - 1)])

    @precondition(lambda self: self.store is None)
    @rule()
    def reopen(self) -> None:
        self.store = self._open()

    @rule()
    def drop_state_dir(self) -> None:
        if self.store is None:
            shutil.rmtree(self.home.state, ignore_errors=True)

    @invariant()
    def matches_model(self) -> None:
        if self.store is None:
            return
        st_live = self.store.state
        full = replay(self.store.log.records())
        assert full.to_json() == st_live.to_json()
        assert st_live.last_seq == self.total
        for session, msgs in self.model.items():
            got = [(m["role"], m.get("content", "")) for m in st_live.session(session).messages]
            assert got == msgs
            assert st_live.session(session).resets == self.resets.get(session, 0)


TestLogMachine = LogMachine.TestCase
