"""A sync setting changed in a running instance takes effect at once: turning automatic sync
on (Settings, or `config set` / a hand edit the instance reads again) syncs then with a real
bare remote, not at the next maintenance check; a one-shot process (no delivery) never
syncs because a setting changed, nor does a change to another setting."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.base import config

from tests.integration.sync_support import bare, open_app, say


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    a = open_app(tmp_path / "a", sync_remote=str(bare(tmp_path / "remote.git")))
    yield a
    a.close()


def _sync_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memtray-sync" and t.is_alive()]


def test_turning_automatic_sync_on_in_a_running_instance_syncs_now(app: App) -> None:
    assert app.sync is not None and app.write(app.reminders.start)
    say(app, "hello")
    synced = threading.Event()
    app.sync.subscribe(lambda status: synced.set())
    assert not app.sync.status()
    # `memtray config set` from another process (the App here was opened with its settings given)
    config.set_value(app.home, "sync_remote", app.config.sync_remote)
    config.set_value(app.home, "sync_enabled", True)
    assert "sync_enabled" in app.refresh_settings()
    assert synced.wait(60), "the changed setting did not sync"
    st = app.sync.status()
    assert st["last_success"] and not st["last_error"] and st["pushed"]


def test_only_a_delivering_instance_and_only_a_sync_setting_starts_a_sync(app: App) -> None:
    assert app.sync is not None
    gate = threading.Event()
    app.sync.tick = lambda: gate.wait(30)  # type: ignore[method-assign,assignment,return-value]
    try:
        on = dataclasses.replace(app.config, sync_enabled=True)
        app.reconfigure(on)  # a one-shot command's App: nothing delivers, nothing syncs
        assert not _sync_threads()
        assert app.write(app.reminders.start)
        app.reconfigure(dataclasses.replace(on, memory_window=40))  # not a sync setting
        assert not _sync_threads()
        app.reconfigure(dataclasses.replace(on, memory_window=40, sync_interval_minutes=5))
        assert len(_sync_threads()) == 1  # the sync runs on a thread of its own, not on the caller's
        off = dataclasses.replace(app.config, sync_enabled=False, sync_interval_minutes=6)
        gate.set()
        for t in _sync_threads():
            t.join(30)
        app.reconfigure(off)  # turned off: nothing to run
        assert not _sync_threads()
    finally:
        gate.set()
