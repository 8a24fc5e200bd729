"""Benchmark the start-up rebuild of reminders from the event log.

Run: .venv/bin/python bench/reminders_rebuild.py [--reminders N] [--runs N]

Writes N ``reminder.scheduled`` events (a third each one-shot, interval and cron,
in several zones, some with earlier ``reminder.fired``) into a fresh data home,
then times, median of the runs (min-max in brackets):

* replay: ``Store.open`` folding the whole log (checkpoint deleted) and from the
  checkpoint,
* due: ``ReminderService.due()`` over every reminder (the catch-up check),
* start: ``ReminderService.start()``: the next-due index brought up to date
  (built from the state on the first run, read from ``state/reminders.sqlite``
  after), the catch-up check of what it says is due, one timer,
* total: ``App.open`` + ``start()`` + the catch-up finishing on the worker.

The app runs on a clock just after the log was written, so no run delivers anything.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memtray.core.app import App
from memtray.core.base.clock import FakeClock, IdGenerator
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.base.notify import RecordingNotifier
from memtray.core.log.events import ReminderFired, ReminderScheduled
from memtray.core.log.store import CHECKPOINT_NAME, Entry, Store
from memtray.core.reminders.service import ReminderService
from memtray.core.reminders.spec import occurrence_key

ZONES = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC", "Australia/Sydney"]
CRONS = ["0 9 * * *", "30 7 * * 1-5", "*/15 * * * *", "0 */2 * * *", "45 18 * * 0", "0 12 1 * *"]
INTERVALS = ["30m", "1h", "2h30m", "1d", "90m", "6h"]


def populate(home: Home, n: int, now: datetime, seed: int = 1) -> None:
    rng = random.Random(seed)
    clock = FakeClock(now)
    store = Store.open(home, clock=clock, ids=IdGenerator(clock))
    try:
        batch: list[Entry] = []
        for i in range(n):
            rid = f"R{i:08d}"
            tz = rng.choice(ZONES)
            kind = ("at", "every", "cron")[i % 3]
            if kind == "at":
                at = (now + timedelta(minutes=rng.randint(10, 60 * 24 * 90))).replace(microsecond=0)
                spec = at.isoformat()
            elif kind == "every":
                spec = rng.choice(INTERVALS)
            else:
                spec = rng.choice(CRONS)
            batch.append((ReminderScheduled(reminder=rid, text=f"reminder number {i}", kind=kind, spec=spec, tz=tz,
                                             mode="notify"), None, None))
            if kind != "at" and i % 5 == 0:  # some have fired before (not due again yet)
                batch.append((ReminderFired(reminder=rid, occurrence=occurrence_key(now - timedelta(seconds=30)),
                                            late=False), None, None))
            if len(batch) >= 1000:
                store.append_many(batch)
                batch = []
        if batch:
            store.append_many(batch)
    finally:
        store.close()


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:8.1f} ms  [{min(xs) * 1000:.1f}-{max(xs) * 1000:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reminders", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Home.resolve(Path(tmp) / "home")
        now = datetime.now(UTC).replace(microsecond=0)
        t = timed(lambda: populate(home, args.reminders, now))
        print(f"wrote {args.reminders} reminders in {t:.2f} s")
        cfg = Config(timezone="Europe/Berlin")
        replay_full, replay_ckpt, due_t, start_t, total = [], [], [], [], []
        jobs = 0
        for _ in range(args.runs):
            (home.state / CHECKPOINT_NAME).unlink(missing_ok=True)
            t0 = time.perf_counter()
            store = Store.open(home, use_checkpoint=False)
            replay_full.append(time.perf_counter() - t0)
            store.close()  # writes the checkpoint again
            t0 = time.perf_counter()
            store = Store.open(home)
            replay_ckpt.append(time.perf_counter() - t0)
            store.close()

            t0 = time.perf_counter()
            # the app's clock stands just after the log was written, so nothing is due and
            # every run does the same work (the catch-up check finds nothing to deliver)
            app = App.open(home, config=cfg, clock=FakeClock(now + timedelta(seconds=1)))
            try:
                app.notifier.set(RecordingNotifier())
                svc = app.reminders
                assert isinstance(svc, ReminderService)
                due_t.append(timed(svc.due))
                svc._schedules.clear()  # start() must not profit from the due() above
                start_t.append(timed(svc.start))
                app.run(asyncio.sleep(0))  # the worker has run the catch-up (nothing is due)
                total.append(time.perf_counter() - t0)
                jobs = len(app.scheduler.timers())
            finally:
                app.close()
        print(f"reminders: {args.reminders}, scheduler jobs in all: {jobs}, runs: {args.runs}")
        print(f"replay, full log     {fmt(replay_full)}")
        print(f"replay, checkpoint   {fmt(replay_ckpt)}")
        print(f"due() over all       {fmt(due_t)}")
        print(f"start(), first run   {start_t[0] * 1000:8.1f} ms  (builds the next-due index)")
        print(f"start(), later runs  {fmt(start_t[1:] or start_t)}")
        print(f"total start-up       {fmt(total)}   (App.open + start + catch-up)")


if __name__ == "__main__":
    main()
