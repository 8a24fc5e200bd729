"""`memtray remind ...` and `memtray daemon`, run as a user would: separate processes.

The acceptance path: a daemon holds the data home; `remind add` from another
process is forwarded to it over IPC; the daemon prints the notification on
stdout; the log holds reminder.scheduled then exactly one reminder.fired.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT, cli_env


def memtray_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "memtray.core.cli", *args]


def run(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        memtray_cmd(*args), env=cli_env(home), capture_output=True, text=True, timeout=timeout, cwd=str(ROOT)
    )


def events(home: Path) -> list[dict[str, Any]]:
    out = run(home, "events", "tail", "-n", "1000", "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def reminder_types(home: Path) -> list[str]:
    return [e["type"] for e in events(home) if e["type"].startswith("reminder.")]


class Daemon:
    """`memtray daemon` in the background, its stdout and stderr read line by line."""

    def __init__(self, home: Path) -> None:
        self.proc = subprocess.Popen(
            memtray_cmd("daemon"), env=cli_env(home), cwd=str(ROOT),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        )
        self.out: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._pumps = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.out.put), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.err.append), daemon=True),
        ]
        for t in self._pumps:
            t.start()

    @staticmethod
    def _pump(stream: Any, sink: Any) -> None:
        for line in stream:
            sink(line.rstrip("\n"))

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any("memtray daemon: ready" in ln for ln in self.err):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"daemon not ready (exit {self.proc.poll()}): {self.err}")

    def next_line(self, timeout: float) -> str | None:
        try:
            return self.out.get(timeout=timeout)
        except queue.Empty:
            return None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        for t in self._pumps:  # they end at EOF; then the pipes can be closed
            t.join(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def daemon(home: Path) -> Iterator[Daemon]:
    d = Daemon(home)
    try:
        d.wait_ready()
        yield d
    finally:
        d.stop(signal.SIGKILL)


def test_daemon_delivers_a_forwarded_reminder_once(home: Path, daemon: Daemon) -> None:
    # relative to when the daemon reads it: an absolute time 2 s ahead was already past
    # when a CLI start under load took longer than that
    started = time.monotonic()
    add = run(home, "remind", "add", "stand up", "--at", "in 3s")
    assert add.returncode == 0, add.stderr
    assert add.stdout.startswith("scheduled ")  # the daemon's output, relayed over IPC
    rid = add.stdout.split()[1].rstrip(":")

    line = None
    while line is None and time.monotonic() - started < 60:
        line = daemon.next_line(0.2)
    assert line == "reminder: Reminder: stand up", daemon.err

    # the record follows the notification; poll the log briefly for it
    deadline = time.monotonic() + 10
    while reminder_types(home) != ["reminder.scheduled", "reminder.fired"] and time.monotonic() < deadline:
        time.sleep(0.2)
    evs = [e for e in events(home) if e["type"].startswith("reminder.")]
    assert [e["type"] for e in evs] == ["reminder.scheduled", "reminder.fired"]
    assert evs[0]["data"]["reminder"] == evs[1]["data"]["reminder"] == rid
    assert evs[1]["data"]["late"] is False

    # a second daemon for the same home is refused, not forwarded
    second = run(home, "daemon", timeout=60)
    assert second.returncode != 0 and "memtray: error:" in second.stderr

    assert daemon.stop() == 0
    assert any("memtray daemon: stopping" in ln for ln in daemon.err)
    assert daemon.next_line(0.5) is None  # delivered exactly once
    assert reminder_types(home) == ["reminder.scheduled", "reminder.fired"]

    # the daemon released the home: commands now run locally
    listing = run(home, "remind", "list", "--all", "--json")
    assert listing.returncode == 0, listing.stderr
    [row] = json.loads(listing.stdout)
    assert row["id"] == rid and row["status"] == "done"


def test_daemon_catches_up_a_reminder_missed_while_off(home: Path) -> None:
    soon = run(home, "remind", "add", "missed one", "--at", "in 1s", "--json")
    assert soon.returncode == 0, soon.stderr
    time.sleep(1.5)
    # a one-shot CLI command never delivers, even when a reminder is due
    assert run(home, "remind", "list").returncode == 0
    assert reminder_types(home) == ["reminder.scheduled"]
    d = Daemon(home)
    try:
        d.wait_ready()
        line = d.next_line(15)
        assert line is not None and line.startswith("reminder: Reminder") and line.endswith(": missed one")
    finally:
        assert d.stop() == 0
    fired = [e for e in events(home) if e["type"] == "reminder.fired"]
    assert len(fired) == 1


def test_add_list_cancel_and_json_without_a_daemon(home: Path) -> None:
    add = run(home, "remind", "add", "water", "the", "plants", "--every", "2h", "--tz", "Europe/Berlin", "--json")
    assert add.returncode == 0, add.stderr
    row = json.loads(add.stdout)
    assert row["text"] == "water the plants" and row["kind"] == "every" and row["spec"] == "2h"
    assert row["tz"] == "Europe/Berlin" and row["mode"] == "notify" and row["status"] == "active"
    agent = run(home, "remind", "add", "plan the week", "--cron", "0 9 * * mon", "--tz", "America/New_York", "--agent")
    assert agent.returncode == 0, agent.stderr
    listing = run(home, "remind", "list", "--json")
    rows = json.loads(listing.stdout)
    assert [(r["text"], r["mode"]) for r in rows] == [("water the plants", "notify"), ("plan the week", "agent")]
    assert datetime.fromisoformat(rows[1]["next"]).strftime("%a %H:%M") == "Mon 09:00"
    text = run(home, "remind", "list")
    assert "water the plants" in text.stdout and "[agent]" in text.stdout
    cancel = run(home, "remind", "cancel", row["id"])
    assert cancel.returncode == 0 and cancel.stdout.startswith(f"cancelled {row['id']}")
    again = run(home, "remind", "cancel", row["id"])
    assert again.returncode == 1 and "not active" in again.stderr
    assert [r["text"] for r in json.loads(run(home, "remind", "list", "--json").stdout)] == ["plan the week"]
    assert reminder_types(home) == ["reminder.scheduled", "reminder.scheduled", "reminder.cancelled"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cron", "61 * * * *"], "invalid cron expression"),
        (["--every", "1h", "--tz", "Mars/Olympus_Mons"], "unknown time zone"),
        (["--at", "2001-01-01T00:00:00Z"], "is in the past"),
        (["--every", "0m"], "must be positive"),
    ],
)
def test_invalid_requests_fail_clearly_and_log_nothing(home: Path, args: list[str], message: str) -> None:
    out = run(home, "remind", "add", "x", *args)
    assert out.returncode == 1
    first = out.stderr.splitlines()[0]
    assert first.startswith("memtray: error: ") and message in first, out.stderr
    assert out.stdout == ""
    assert reminder_types(home) == []


def test_usage_errors(home: Path) -> None:
    out = run(home, "remind", "add", "x")  # no --at/--every/--cron
    assert out.returncode == 2 and "one of the arguments --at --every --cron is required" in out.stderr
    out = run(home, "remind", "add", "x", "--at", "in 1h", "--every", "1h")
    assert out.returncode == 2 and "not allowed with" in out.stderr
    out = run(home, "remind", "cancel", "NOSUCHID")
    assert out.returncode == 1 and "no reminder with id" in out.stderr
    assert not os.path.exists(home / "events") or reminder_types(home) == []


def test_times_as_people_say_them_and_snooze(home: Path) -> None:
    """`--at "in 2 minutes"`, `--at "tomorrow at noon"` and `--every "weekday at 9"` (refused
    before: only `in 2m` was understood), then `remind snooze` moves the one-shot."""
    soon = run(home, "remind", "add", "tea", "--at", "in 2 minutes", "--tz", "Europe/Berlin", "--json")
    assert soon.returncode == 0, soon.stderr
    tea = json.loads(soon.stdout)
    left = datetime.fromisoformat(tea["next"]) - datetime.now().astimezone()
    assert 60 < left.total_seconds() <= 120
    noon = run(home, "remind", "add", "call mum", "--at", "tomorrow at noon", "--tz", "Europe/Berlin", "--json")
    assert noon.returncode == 0, noon.stderr
    assert datetime.fromisoformat(json.loads(noon.stdout)["next"]).strftime("%H:%M:%S") == "12:00:00"
    daily = run(home, "remind", "add", "stand up", "--every", "weekday at 9", "--tz", "Europe/Berlin", "--json")
    assert daily.returncode == 0, daily.stderr
    row = json.loads(daily.stdout)
    assert (row["kind"], row["spec"]) == ("cron", "0 9 * * mon-fri")
    nxt = datetime.fromisoformat(row["next"])
    assert nxt.strftime("%H:%M") == "09:00" and nxt.weekday() < 5
    snoozed = run(home, "remind", "snooze", tea["id"], "--for", "1 hour", "--json")
    assert snoozed.returncode == 0, snoozed.stderr
    moved = json.loads(snoozed.stdout)
    assert moved["text"] == "tea" and moved["id"] != tea["id"]
    assert 55 * 60 < (datetime.fromisoformat(moved["next"]) - datetime.now().astimezone()).total_seconds() <= 3600
    active = {r["text"]: r["id"] for r in json.loads(run(home, "remind", "list", "--json").stdout)}
    assert active == {"tea": moved["id"], "call mum": active["call mum"], "stand up": row["id"]}
    bad = run(home, "remind", "add", "x", "--at", "next tuesday-ish")
    assert bad.returncode == 1 and "not a date and time" in bad.stderr and "tomorrow at noon" in bad.stderr
