"""Prompt-prefix stability: how much of each request is an identical prefix of the previous one.

Drives a real App (store, memory service with git, agent) over a synthetic
conversation without a model: each turn logs the user message with
``Agent.log_user`` (runtime-context line and all, on a clock that moves a minute
per turn), builds the request with ``Agent.messages_for`` exactly as a turn
does, then appends the assistant reply as a ``message`` event. When
``memory_window`` messages are unconsolidated, a consolidation is recorded the
way the consolidation service records one (``consolidation.started``, then
``MemoryService.write`` with ``consolidation.completed``; MEMORY.md gains a
fact), so the system prompt and the history start move.

Each request is serialised as the HTTP body carries its messages (JSON, order
kept). Figures (see ``peer_nanobot/common.py:prefix_shares``):

* reuse  = common prefix / previous request: what a provider prompt cache can
  serve again. Budget: >= 99 % between consolidations.
* cached = common prefix / new request: bounded by how much text a turn adds
  (a turn of ~600 bytes over a ~20 KiB prompt caps it near 97 %), shown for
  completeness.

Usage: python bench/prompt_prefix.py [--turns 300]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "peer_nanobot"))

from common import KEEP, WINDOW, memory_text, message, prefix_shares, serialize
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, IdGenerator
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import ConsolidationCompleted, ConsolidationStarted, Message

SESSION = "quick"


def open_app(home: Home, clock: FakeClock) -> App:
    cfg = Config(model="openai/bench-no-model", timezone="UTC", memory_window=WINDOW)
    return App.open(home, clock=clock, ids=IdGenerator(clock), config=cfg, start_services=False)


def consolidate(app: App, session: str, revision: int, model: str = "bench") -> None:
    """Record a consolidation of all but the newest KEEP messages, as the service does."""
    s = app.store.state.session(session)
    start, end = s.last_consolidated, s.count - KEEP
    cid = app.store.new_id()
    app.store.append(
        ConsolidationStarted(consolidation=cid, start=start, end=end, model=model),
        session=session,
    )
    memory = app.memory
    memory.write(
        memory_text(revision), reason="consolidation", source="model", model=model, consolidation=cid,
        history_append=f"[bench] consolidated messages {start}..{end}", session=session,
        extra=[(ConsolidationCompleted(consolidation=cid, end=end, memory_seq=0), session)],
    )


def run_turns(app: App, clock: FakeClock, turns: int, session: str = SESSION,
              revision: int = 0) -> tuple[list[bytes], list[bool]]:
    """Requests of ``turns`` consecutive turns, and which of them follow a consolidation."""
    agent, store = app.agent, app.store
    prompts: list[bytes] = []
    consolidated: list[bool] = []
    pending = False
    for _ in range(turns):
        clock.advance(60)
        i = store.state.session(session).count
        _, text = message(i, 23)
        agent.log_user(session, text)
        prompts.append(serialize(agent.messages_for(session)))
        consolidated.append(pending)
        pending = False
        _, reply = message(i + 1, 23)
        store.append(Message(role="assistant", content=reply, model="bench"),
                     session=session)
        if store.state.session(session).unconsolidated >= app.config.memory_window:
            revision += 1
            consolidate(app, session, revision)
            pending = True
    return prompts, consolidated


def pct(x: float) -> str:
    return f"{x * 100:.3f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=300)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memtray-prefix-", dir=os.environ.get("BENCH_DIR")))
    clock = FakeClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    app = open_app(Home.resolve(tmp / "home"), clock)
    try:
        prompts, consolidated = run_turns(app, clock, args.turns)
    finally:
        app.close()
        shutil.rmtree(tmp, ignore_errors=True)
    r = prefix_shares(prompts, consolidated)
    sr, sc, cr = r["steady_reuse"], r["steady_cached"], r["consolidation_reuse"]
    print(f"prompt prefix over {args.turns} turns ({sum(consolidated)} after a consolidation; "
          f"window {WINDOW}, keep {KEEP}; last request {r['prompt_bytes_last'] / 1024:.1f} KiB)")
    print(f"  between consolidations: reuse of previous request min {pct(sr['min'])} median {pct(sr['median'])} "
          f"(budget >= 99 %: {'met' if sr['min'] >= 0.99 else 'MISSED'})")
    print(f"  between consolidations: cached share of new request min {pct(sc['min'])} median {pct(sc['median'])}")
    if cr:
        print(f"  turn after a consolidation: reuse mean {pct(cr['mean'])} median {pct(cr['median'])} "
              f"min {pct(cr['min'])} over {cr['n']} (a turn that re-bases its prompt starts from the identity "
              "prompt again: see docs/ARCHITECTURE.md, prompt layout 3)")


if __name__ == "__main__":
    main()
