"""Automatic sync in the long-lived instance: every interval, sooner again after a failure."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from memtray.core.base.clock import FakeClock
from memtray.core.sync.gitcli import SyncError

from tests.integration.sync_support import bare, open_app, say


def test_automatic_sync_runs_every_interval_and_backs_off_after_failures(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    clock = FakeClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    app = open_app(tmp_path / "a", clock=clock, sync_enabled=True, sync_remote=str(remote),
                   sync_interval_minutes=15.0)
    try:
        svc = app.sync
        assert svc is not None
        say(app, "one")
        rep = svc.tick()
        assert rep is not None and rep.pushed == 2
        assert svc.tick() is None  # not due again yet
        clock.advance(15 * 60)
        say(app, "two")
        rep = svc.tick()
        assert rep is not None and rep.pushed == 2
        # the remote starts refusing: retried after 1, then 2, then 4 minutes (never more than the interval)
        hook = remote / "hooks" / "pre-receive"
        hook.write_text("#!/bin/sh\nexit 1\n")
        hook.chmod(0o755)
        say(app, "three")
        clock.advance(15 * 60)
        assert svc.tick() is None and svc.status()["failures"] == 1
        clock.advance(59)
        assert not svc.due()
        clock.advance(1)
        assert svc.due()
        assert svc.tick() is None and svc.status()["failures"] == 2
        clock.advance(119)
        assert not svc.due()
        clock.advance(1)
        hook.unlink()
        rep = svc.tick()
        assert rep is not None and rep.pushed == 2
        assert svc.status()["failures"] == 0 and svc.status()["last_error"] is None
        # turned off: nothing runs, however long it has been
        app.reconfigure(app.config.__class__(**{**app.config.__dict__, "sync_enabled": False}))
        clock.advance(24 * 3600)
        assert not svc.due() and svc.tick() is None
    finally:
        app.close()


def test_the_instance_schedules_the_sync_check(tmp_path: Path) -> None:
    app = open_app(tmp_path / "a")
    try:
        assert app.reminders.start()
        assert "maintenance:sync" in app.scheduler.timers()
    finally:
        app.close()


def test_a_one_off_sync_with_another_remote_keeps_the_configured_remote_s_status(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    app = open_app(tmp_path / "a", sync_enabled=True, sync_remote=str(remote))
    try:
        svc = app.sync
        assert svc is not None
        say(app, "one")
        svc.sync()
        good = svc.status()
        for _ in range(3):  # a one-off remote that does not exist, tried three times
            with pytest.raises(SyncError):
                svc.sync(str(tmp_path / "elsewhere.git"))
        st = svc.status()
        assert st["last_error"] is None and st["failures"] == 0 and st["last_success"] == good["last_success"]
        assert not svc.due()  # the configured remote is not retried because of the other one
    finally:
        app.close()
    from tests.support import cli_here

    assert cli_here(tmp_path / "a", "sync", "--status", "--json").returncode == 0
    (remote / "HEAD").unlink()  # the configured remote breaks: now the status says so, in both forms
    assert cli_here(tmp_path / "a", "sync", str(remote)).returncode == 1  # (no remote configured there)
    text, js = cli_here(tmp_path / "a", "sync", "--status"), cli_here(tmp_path / "a", "sync", "--status", "--json")
    assert text.returncode == js.returncode == 1
    assert json.loads(js.stdout)["last_error"]
