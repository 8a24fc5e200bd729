"""Sync over a real network transport: ``git daemon`` on 127.0.0.1, started by the test."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from memtray.core.sync.gitcli import SyncError
from memtray.core.sync.service import SyncReport

from tests.integration.sync_support import (
    contents,
    digest,
    git_daemon,
    homes,
    open_app,
    say,
    served,
    sync,
)


def test_three_homes_sync_through_git_daemon_even_at_the_same_moment(tmp_path: Path) -> None:
    base = served(tmp_path)
    with homes(tmp_path, "abc") as apps, git_daemon(base) as prefix:
        url = f"{prefix}/mem.git"
        for i, app in enumerate(apps):
            say(app, f"hello from {i}")
        # all three at once: each pushes only its own ref, so none can reject another
        reports: list[SyncReport] = []
        errors: list[BaseException] = []
        start = threading.Barrier(3)

        def run(app: object) -> None:
            try:
                start.wait()
                reports.append(app.sync.sync(url))  # type: ignore[attr-defined]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(app,)) for app in apps]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert sum(r.pushed for r in reports) == 6
        sync(url, *apps)
        assert len({digest(app) for app in apps}) == 1
        assert contents(apps[0]) >= {"hello from 0", "hello from 1", "hello from 2"}


def test_a_remote_that_goes_away_mid_way_leaves_the_next_sync_to_finish(tmp_path: Path) -> None:
    base = served(tmp_path)
    with homes(tmp_path, "ab") as (a, b):
        with git_daemon(base) as prefix:
            url = f"{prefix}/mem.git"
            say(a, "before the outage")
            a.sync.sync(url)
        say(a, "during the outage")
        with pytest.raises(SyncError, match="cannot reach the remote"):
            a.sync.sync(url)
        assert a.sync.status()["failures"] == 1
        with git_daemon(base) as prefix:  # another port: the same remote under a new address
            url = f"{prefix}/mem.git"
            assert a.sync.sync(url).pushed == 2
            b.sync.sync(url)
            assert "during the outage" in contents(b)
            assert digest(a) == digest(b)


def test_an_ssh_connection_error_keeps_git_s_real_cause(tmp_path: Path) -> None:
    from tests.integration.sync_support import free_port

    app = open_app(tmp_path / "a")
    try:
        assert app.sync is not None
        with pytest.raises(SyncError, match="Connection refused") as info:  # nothing listens on that port
            app.sync.sync(f"ssh://127.0.0.1:{free_port()}/x.git")
        assert "Please make sure" not in str(info.value)
    finally:
        app.close()
