"""What a waiting command says about the holder of the home: a one-shot command by pid and
name, an instance that is starting as one, and nothing it cannot name."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from memtray.core.base import holder
from memtray.core.base.home import Home, HomeLock
from memtray.core.cli import console


@pytest.fixture
def role() -> Iterator[None]:
    before = holder.role()
    yield
    holder.set_role(before.command, serves=before.serves)


def test_a_one_shot_holder_is_named_with_its_command(home: Home, role: None) -> None:
    holder.set_role("memtray memory rollback", serves=False)
    with HomeLock(home):
        line = console.waiting_line(home)
    assert line == f"waiting for another memtray command to finish (pid {os.getpid()}: memtray memory rollback)…"


def test_an_instance_that_does_not_listen_yet_is_not_called_a_command(home: Home, role: None) -> None:
    holder.set_role("memtray daemon", serves=True)
    with HomeLock(home):
        line = console.waiting_line(home)
        assert console.waiting_line(home, instances=False) is None  # one leaving for us: not news
    assert line == f"waiting for the running memtray (pid {os.getpid()}: memtray daemon) to accept commands…"
    assert console.waiting_line(home) is None  # released: nobody to name


def test_a_record_of_a_gone_process_is_not_named(home: Home) -> None:
    Home.create(home)
    home.lockfile.write_bytes(holder.encode(None, pid=2 ** 22 + 12345))  # above any pid_max: no such process
    assert console.waiting_line(home) is None
