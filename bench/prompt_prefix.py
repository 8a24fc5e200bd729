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

With ``--nanobot`` the same turns are also run by real nanobot code in its own
process and venv (bench/peer_nanobot: ``nanobot_side.py``, created on first use), and
both are printed side by side from the same run.

Usage: python bench/prompt_prefix.py [--turns 300] [--nanobot]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


def nanobot_prefix(turns: int, scratch: Path) -> dict[str, Any]:
    """nanobot's figures over the same ``turns`` from an empty session (bench/peer_nanobot)."""
    from run import Worker, nanobot_python

    env = dict(os.environ, HOME=str(scratch / "nb-home"), BENCH_LOG=str(scratch / "nanobot.log"),
               PYTHONHASHSEED="0")
    (scratch / "nb-home").mkdir()
    worker = Worker("nanobot", [str(nanobot_python()), str(Path(__file__).resolve().parent / "peer_nanobot" /
                                                              "nanobot_side.py")], env)
    try:
        worker("setup", dir=str(scratch / "nanobot"), n=0)
        worker("open")
        result: dict[str, Any] = worker("prefix", turns=turns, save=False)
        result["version"] = worker("version")
        return result
    finally:
        worker.close()


def after_line(r: dict[str, Any]) -> str:
    cr = r["consolidation_reuse"]
    if not cr:
        return "no consolidation"
    return f"mean {pct(cr['mean'])} median {pct(cr['median'])} min {pct(cr['min'])} over {cr['n']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--nanobot", action="store_true", help="also run nanobot's own code over the same turns")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memtray-prefix-", dir=os.environ.get("BENCH_DIR")))
    clock = FakeClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    app = open_app(Home.resolve(tmp / "home"), clock)
    try:
        prompts, consolidated = run_turns(app, clock, args.turns)
    finally:
        app.close()
    try:
        peer = nanobot_prefix(args.turns, tmp) if args.nanobot else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    r = prefix_shares(prompts, consolidated)
    sr, sc, cr = r["steady_reuse"], r["steady_cached"], r["consolidation_reuse"]
    print(f"prompt prefix over {args.turns} turns ({sum(consolidated)} after a consolidation; "
          f"window {WINDOW}, keep {KEEP}; last request {r['prompt_bytes_last'] / 1024:.1f} KiB)")
    print(f"  between consolidations: reuse of previous request min {pct(sr['min'])} median {pct(sr['median'])} "
          f"(budget >= 99 %: {'met' if sr['min'] >= 0.99 else 'MISSED'})")
    print(f"  between consolidations: cached share of new request min {pct(sc['min'])} median {pct(sc['median'])}")
    if cr:
        print(f"  turn after a consolidation: reuse {after_line(r)} (a turn that re-bases its prompt starts "
              "from the identity prompt again: see docs/ARCHITECTURE.md, prompt layout 3)")
    if peer is not None:
        ps = peer["steady_reuse"]
        print(f"nanobot-ai {peer['version']}, same turns, same run:")
        print(f"  between consolidations: reuse min {pct(ps['min'])} median {pct(ps['median'])}")
        print(f"  turn after a consolidation: reuse {after_line(peer)}")


if __name__ == "__main__":
    main()
