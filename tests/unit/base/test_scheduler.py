"""The App's one timer: maintenance chores wait for start, a coroutine chore runs on the
worker, a failing chore is logged and not raised, and a closed timer never starts again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from memtray.core.base.scheduler import Scheduler
from memtray.core.base.worker import Worker


@pytest.fixture
def worker() -> Iterator[Worker]:
    w = Worker()
    yield w
    w.stop()


def test_chores_run_on_the_worker_and_a_failure_is_only_logged(
    worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    timer = Scheduler(worker)
    threads: list[str] = []

    async def on_worker() -> None:
        threads.append(threading.current_thread().name)

    def boom() -> None:
        raise RuntimeError("chore failed")

    timer.add_maintenance("probe", 3600, on_worker)
    timer.add_maintenance("boom", 3600, boom)
    with pytest.raises(ValueError, match="positive"):
        timer.add_maintenance("never", 0, boom)
    assert timer.timers() == {} and not timer.running  # nothing is scheduled before start
    timer.run_maintenance("probe")
    assert threads == [worker.thread_name]
    timer.run_maintenance("boom")  # does not raise
    assert "maintenance task boom failed" in caplog.text
    try:
        assert timer.start() and timer.start()  # idempotent
        assert set(timer.timers()) == {"maintenance:probe", "maintenance:boom"}
    finally:
        timer.close()
    assert not timer.running and timer.timers() == {}
    assert timer.start() is False  # closing is for good (a start still queued at quit)


def test_jobs_of_a_service_are_replaced_and_removed(worker: Worker) -> None:
    timer = Scheduler(worker)
    when = datetime.now(UTC) + timedelta(days=1)
    timer.at("next", when, lambda: None, "next thing")  # before start: nothing
    assert timer.timers() == {}
    timer.start()
    try:
        timer.at("next", when, lambda: None, "next thing")
        timer.at("next", when + timedelta(hours=1), lambda: None, "next thing")
        timer.every("wake", 60, lambda: None, "wake up")
        timers = timer.timers()
        assert set(timers) == {"next", "wake"} and timers["next"] == when + timedelta(hours=1)
        timer.remove("next")
        timer.remove("next")  # already gone: no error
        assert set(timer.timers()) == {"wake"}
    finally:
        timer.close()
