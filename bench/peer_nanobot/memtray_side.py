"""memtray's side of the comparison; run by memtray's venv python, driven over JSON lines.

Calls memtray's real code: ``Store.open`` (checkpoint + tail replay) at
start-up, ``Agent.log_user`` / ``Store.append`` to persist a message (one
durable append with fsync), ``Agent.messages_for`` to build the prompt, and the
same turn loop as ``bench/prompt_prefix.py`` for prefix stability.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import (  # noqa: E402
    KEEP,
    conversation,
    memory_text,
    message,
    pointer_after,
    prefix_shares,
    serve_side,
    timed,
)
from memtray.core.agent.context import runtime_context  # noqa: E402
from memtray.core.app import App  # noqa: E402
from memtray.core.base.clock import FakeClock  # noqa: E402
from memtray.core.base.home import Home  # noqa: E402
from memtray.core.log.events import (  # noqa: E402
    ConsolidationCompleted,
    ConsolidationStarted,
    Message,
    Record,
    Verbatim,
    encode,
)
from memtray.core.log.segments import DEFAULT_SEGMENT_BYTES  # noqa: E402
from memtray.core.log.store import Store  # noqa: E402
from prompt_prefix import SESSION, open_app, run_turns  # noqa: E402

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def write_log(home: Home, n: int, seed: int) -> int:
    """The conversation as events, written straight to one segment with the real codec.

    Same records the app would append (user messages carry their runtime-context
    line); each consolidation is ``consolidation.started`` + ``consolidation.completed``.
    Returns the number of consolidations.
    """
    home.events.mkdir(parents=True, exist_ok=True)
    # a consolidation (start, end) lands after the assistant message that makes count == end + KEEP
    due = {end + KEEP: (start, end) for start, end in pointer_after(n)}
    seq = 0
    lines: list[bytes] = []

    def add(type_: str, data: dict[str, Any], ts: datetime) -> None:
        nonlocal seq
        seq += 1
        stamp = ts.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        lines.append(encode(Record(seq, f"01BENCHPEER{seq:015d}", stamp, type_, 1, SESSION, data)))

    for i, (role, text) in enumerate(conversation(n, seed)):
        ts = T0 + timedelta(minutes=i // 2)
        msg = Message(role=role, content=text,
                      context=runtime_context(ts, "UTC") if role == "user" else None,
                      model="bench" if role == "assistant" else None)
        add(Message.TYPE, msg.to_data(), ts)
        if i + 1 in due:
            start, end = due[i + 1]
            cid = f"c{i:08d}"
            add(ConsolidationStarted.TYPE,
                ConsolidationStarted(consolidation=cid, start=start, end=end, model="bench").to_data(), ts)
            add(ConsolidationCompleted.TYPE, ConsolidationCompleted(consolidation=cid, end=end).to_data(), ts)
    segment, size, chunk = 1, 0, []
    for line in [*lines, b""]:  # rotate like the real log (DEFAULT_SEGMENT_BYTES)
        if not line or (size and size + len(line) > DEFAULT_SEGMENT_BYTES):
            (home.events / f"{segment:06d}.jsonl").write_bytes(b"".join(chunk))
            segment, size, chunk = segment + 1, 0, []
        chunk.append(line)
        size += len(line)
    return len(due)


class Side:
    def __init__(self) -> None:
        self.home: Home | None = None
        self.app: App | None = None
        self.clock = FakeClock(T0)
        self.n = 0
        self.revision = 0
        self.persisted = 0

    def setup(self, dir: str, n: int, seed: int = 7) -> dict[str, Any]:
        self.home = Home.resolve(Path(dir) / "home")
        self.revision = write_log(self.home, n, seed)
        self.clock = FakeClock(T0 + timedelta(minutes=n))
        app = open_app(self.home, self.clock)  # full replay, memory repo initialised
        try:
            app.memory.write(memory_text(self.revision), reason="consolidation", source="model",
                                         model="bench", session=SESSION)
            s = app.store.state.session(SESSION)
            assert s.count == n, (s.count, n)
            info = {"log_bytes": sum(p.stat().st_size for p in self.home.events.glob("*.jsonl")),
                    "unconsolidated": s.unconsolidated}
        finally:
            app.close()  # writes the checkpoint
        self.n = n
        return info

    def load(self) -> tuple[float, float]:
        """Start-up: Store.open reads the checkpoint and replays the tail after it."""
        assert self.home is not None and self.app is None
        box: dict[str, Store] = {}
        t = timed(lambda: box.setdefault("s", Store.open(self.home)))  # type: ignore[arg-type]
        s = box["s"]
        assert s.checkpoint_used and s.replayed_on_open < 10, (s.checkpoint_used, s.replayed_on_open)
        s.close(checkpoint=False)
        return t

    def open(self) -> None:
        assert self.home is not None
        self.app = open_app(self.home, self.clock)

    def build(self) -> tuple[float, float]:
        assert self.app is not None
        agent = self.app.agent
        return timed(lambda: agent.messages_for(SESSION))

    def persist(self) -> tuple[float, float]:
        """One more message made durable, as a turn does it (log_user, or the reply's append)."""
        assert self.app is not None
        agent, store = self.app.agent, self.app.store
        role, text = message(self.n + self.persisted, 11)
        self.persisted += 1
        if role == "user":
            return timed(lambda: agent.log_user(SESSION, text))
        data = Message(role="assistant", content=text, model="bench").to_data()
        return timed(lambda: store.append(Verbatim(Message.TYPE, data), session=SESSION))

    def prefix(self, turns: int) -> dict[str, Any]:
        assert self.app is not None
        prompts, consolidated = run_turns(self.app, self.clock, turns, revision=self.revision)
        return prefix_shares(prompts, consolidated)

    def close(self) -> None:
        if self.app is not None:
            self.app.close()
            self.app = None


def main() -> None:
    serve_side(Side(), lambda: __import__("memtray.core").core.__version__)


if __name__ == "__main__":
    main()
