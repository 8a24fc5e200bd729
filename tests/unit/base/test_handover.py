"""Handing the data home over (core/base/handover.py): whether it is free, and taking it
over from a one-shot command that holds it (the instance cases run in tests/gui/test_instance.py)."""

from __future__ import annotations

import pytest
from memtray.core.base import handover, holder
from memtray.core.base.errors import AlreadyRunning
from memtray.core.base.home import Home, HomeLock


@pytest.fixture(autouse=True)
def _role() -> object:
    before = holder.role()
    holder.set_role("memtray memory log", serves=False)  # a one-shot command: it serves nothing
    yield
    holder.set_role(before.command, serves=before.serves)


def test_the_home_is_free_only_while_nobody_holds_it(home: Home) -> None:
    assert handover.home_free(home)
    lock = HomeLock(home).acquire()
    try:
        assert not handover.home_free(home)
    finally:
        lock.release()
    assert handover.home_free(home)


def test_take_over_waits_for_a_one_shot_command_and_opens_once_it_left(home: Home) -> None:
    held = HomeLock(home).acquire()  # the command; it answers no IPC, so it is waited for
    tries: list[int] = []

    def open_app() -> HomeLock:
        tries.append(1)
        if len(tries) == 3:
            held.release()  # the command ends
        return HomeLock(home).acquire()  # AlreadyRunning while it is held: "not yet"

    opened = handover.take_over(home, open_app)
    try:
        assert opened is not None and len(tries) == 3  # refused twice, opened once it left
        assert not handover.home_free(home)
    finally:
        assert opened is not None
        opened.release()


def test_take_over_gives_up_after_its_timeout(home: Home) -> None:
    held = HomeLock(home).acquire()
    try:
        def open_app() -> str:
            raise AlreadyRunning("held")

        assert handover.take_over(home, open_app, timeout=0) is None
    finally:
        held.release()
