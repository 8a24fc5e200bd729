"""Crash campaign: 1 000 SIGKILLs of real memtray commands at random moments.

Each child of the fork server (tests/crash/forkserver.py) runs 2-4 random commands
through the CLI entry -- ``ask``, ``ask`` that makes the agent call ``remember``,
``consolidate``, ``memory rollback``, ``memory restore-fact``, ``memory redo``,
``memory rebuild`` and ``memory undo`` -- against real litellm
and the scripted model server, and is SIGKILLed at a random moment. After every
kill the home is opened as the next command would open it (no doctor) and
checked: every acknowledged event present (a user message is acknowledged once
it is durable), seq gapless, MEMORY.md == git HEAD == the log's last
memory.written, every consolidation completed or failed and the pointer moved
only by completed ones; ``git fsck`` every 50 kills. A command that shows a
traceback, or an ``ask`` that fails, stops the campaign. The figures say, per command,
how often it started, how often the kill landed while it ran, how often it ran to
its end, and why it was refused when it was (a command that never runs to its end
or is never killed while running fails the campaign).

Usage: python bench/crash_campaign.py [--kills 1000] [--seed 20261201]
Prints the figures recorded in docs/RELIABILITY.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.crash.forkserver import OPS  # noqa: E402
from tests.crash.harness import ForkServer, campaign_responder, run_campaign  # noqa: E402
from tests.fixtures.llm_server import ScriptedLLMServer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memtray-campaign-"))
    t0 = time.monotonic()
    try:
        with ScriptedLLMServer(responder=campaign_responder) as model, ForkServer(preload_llm=True) as server:
            def progress(r: object) -> None:
                print(f"  {r.kills} kills, {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)  # type: ignore[attr-defined]

            result = run_campaign(server, work / "home", model.base_url, kills=args.kills, seed=args.seed,
                                  progress=progress)
            errors = list(model.errors)
    except AssertionError as exc:
        print(f"FAILED after {time.monotonic() - t0:.0f} s: {exc}\nhome kept in {work}")
        return 1
    took = time.monotonic() - t0
    print(f"crash campaign (seed {args.seed}): {result.kills} SIGKILLs, {result.finished} runs finished first, "
          f"0 broken commands, {result.events} events and {result.commits} memory commits checked "
          f"(a new home every 50 kills), "
          f"{took:.0f} s")
    print("commands started: " + ", ".join(f"{k} {v}" for k, v in sorted(result.commands.items())))
    print("SIGKILLed while running: " + ", ".join(f"{k} {v}" for k, v in sorted(result.killed.items()))
          + f" (between commands: {result.kills - sum(result.killed.values())})")
    print("commands finished with status 0: " + ", ".join(f"{k} {v}" for k, v in sorted(result.succeeded.items())))
    for op, reasons in sorted(result.refused.items()):
        print(f"{op} refused: " + "; ".join(f"{n}x {why}" for why, n in sorted(reasons.items(), key=lambda x: -x[1])))
    missing = [op for op in OPS if not result.killed.get(op) or not result.succeeded.get(op)]
    if missing:
        print(f"FAILED: never killed while running, or never finished: {', '.join(missing)}")
        return 1
    print(f"model server errors: {len(errors)}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
