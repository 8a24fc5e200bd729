"""The App's timer: one apscheduler BackgroundScheduler for everything that runs on time.

The composition root (core/app.py) builds one :class:`Scheduler` and owns it: it
registers the maintenance chores (idle consolidation, git gc, settings refresh,
embedding, sync, ...) with :meth:`Scheduler.add_maintenance`, and hands the
scheduler to the reminder service, which keeps its own jobs on it (the next-due
timer, the wake-up). Nothing runs until :meth:`Scheduler.start`, which only a
long-lived instance reaches (the reminder service starts it when delivery starts:
the daemon and the desktop); a one-shot command never starts it.

Threads: jobs run on apscheduler's threads and only hand work to the app worker. A
chore may return a coroutine: it then runs on the worker and is waited for, and
cancelled when the App closes meanwhile (a chore is crash-safe; quitting does not
wait for it). A failing chore is logged, never raised, and keeps its timer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memtray.core.base.worker import Worker

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

log = logging.getLogger(__name__)

MAINTENANCE_PREFIX = "maintenance:"


class Scheduler:
    """The App's one timer (module doc)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._lock = threading.RLock()
        self._scheduler: BackgroundScheduler | None = None
        self._maintenance: dict[str, tuple[float, Callable[[], Any]]] = {}
        self._closed = False

    @property
    def running(self) -> bool:
        return self._scheduler is not None

    def start(self) -> bool:
        """Start the timer (idempotent); False once the App is closing."""
        with self._lock:
            if self._closed:
                return False
            if self._scheduler is not None:
                return True
            from apscheduler.executors.pool import ThreadPoolExecutor
            from apscheduler.schedulers.background import BackgroundScheduler

            _quiet_apscheduler()
            self._scheduler = BackgroundScheduler(
                timezone=UTC,
                executors={"default": ThreadPoolExecutor(4)},
                job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            )
            for name, (seconds, fn) in self._maintenance.items():
                self._add_maintenance_job(name, seconds, fn)
            self._scheduler.start()
        return True

    # --- jobs --------------------------------------------------------------------------

    def every(self, job_id: str, seconds: float, fn: Callable[[], Any], name: str) -> None:
        """Run ``fn`` every ``seconds`` (replacing a job of the same id); not before :meth:`start`."""
        from apscheduler.triggers.interval import IntervalTrigger

        with self._lock:
            if self._scheduler is not None:
                self._scheduler.add_job(fn, trigger=IntervalTrigger(seconds=seconds, timezone=UTC), id=job_id,
                                        name=name, replace_existing=True)

    def at(self, job_id: str, when: datetime, fn: Callable[[], Any], name: str) -> None:
        """Run ``fn`` once at ``when`` (replacing a job of the same id); not before :meth:`start`."""
        from apscheduler.triggers.date import DateTrigger

        with self._lock:
            if self._scheduler is not None:
                self._scheduler.add_job(fn, trigger=DateTrigger(run_date=when, timezone=UTC), id=job_id,
                                        name=name, replace_existing=True)

    def remove(self, job_id: str) -> None:
        with self._lock:
            if self._scheduler is not None:
                with contextlib.suppress(Exception):  # apscheduler's JobLookupError: it had run
                    self._scheduler.remove_job(job_id)

    def timers(self) -> dict[str, datetime | None]:
        """The jobs and when each runs next (empty before :meth:`start`)."""
        sched = self._scheduler
        if sched is None:
            return {}
        return {j.id: j.next_run_time for j in sched.get_jobs()}

    # --- maintenance -------------------------------------------------------------------

    def add_maintenance(self, name: str, seconds: float, fn: Callable[[], Any]) -> None:
        """Run ``fn`` every ``seconds`` on the scheduler's threads once started.

        ``fn`` may return a coroutine; it then runs on the app worker. Failures
        are logged, never raised.
        """
        if seconds <= 0:
            raise ValueError(f"maintenance interval must be positive, not {seconds}")
        with self._lock:
            self._maintenance[name] = (seconds, fn)
            if self._scheduler is not None:
                self._add_maintenance_job(name, seconds, fn)

    def run_maintenance(self, name: str) -> None:
        """Run the maintenance task ``name`` now and wait for it (never from the worker: a
        coroutine task runs there); as the timer runs it, failures logged, never raised."""
        with self._lock:
            _seconds, fn = self._maintenance[name]
        self._run_maintenance(name, fn)

    def _add_maintenance_job(self, name: str, seconds: float, fn: Callable[[], Any]) -> None:
        from apscheduler.triggers.interval import IntervalTrigger

        assert self._scheduler is not None
        self._scheduler.add_job(
            self._run_maintenance, trigger=IntervalTrigger(seconds=seconds, timezone=UTC),
            args=(name, fn), id=MAINTENANCE_PREFIX + name, name=f"maintenance {name}", replace_existing=True,
        )

    def _run_maintenance(self, name: str, fn: Callable[[], Any]) -> None:
        try:
            result = fn()
            if asyncio.iscoroutine(result):
                fut = self.worker.submit(result)
                while True:
                    try:
                        fut.result(timeout=1.0)
                        break
                    except TimeoutError:
                        if self._closed:  # quitting: do not hold the exit for a chore (it is crash-safe)
                            fut.cancel()
                            log.info("maintenance task %s cancelled: memtray is quitting", name)
                            return
        except concurrent.futures.CancelledError:
            log.info("maintenance task %s cancelled", name)
        except Exception:  # a failing chore must not stop the scheduler
            log.exception("maintenance task %s failed", name)

    # --- life cycle --------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sched, self._scheduler = self._scheduler, None
        if sched is not None:
            # Empty the job stores first: that waits for a round of due jobs in progress (it
            # holds the stores' lock), which otherwise, seeing the scheduler stopped halfway,
            # fails to remove the timer it just ran (JobLookupError in apscheduler's thread).
            with contextlib.suppress(Exception):
                sched.remove_all_jobs()
            sched.shutdown(wait=True)


def _quiet_apscheduler() -> None:
    """apscheduler logs every job add/run at INFO; with thousands of reminders that is noise."""
    aps = logging.getLogger("apscheduler")
    if aps.level == logging.NOTSET:
        aps.setLevel(logging.WARNING)
