"""The holder's record in memtray.lock: written on taking the home, naming the socket once
it serves, gone on release, and never trusted once its process is gone or its pid reused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from memtray.core.base import holder
from memtray.core.base.errors import AlreadyRunning
from memtray.core.base.home import Home, HomeLock, announce, current_holder, held_by


@pytest.fixture(autouse=True)
def _role() -> object:
    before = holder.role()
    holder.set_role("memtray memory log", serves=False)
    yield
    holder.set_role(before.command, serves=before.serves)


def test_the_lock_names_its_holder_then_its_socket_and_nothing_once_released(home: Home) -> None:
    lock = HomeLock(home).acquire()
    try:
        found = current_holder(home)
        assert found is not None and found.pid == os.getpid()
        assert (found.command, found.serves, found.socket) == ("memtray memory log", False, None)
        assert held_by(home) == f" (pid {os.getpid()}: memtray memory log)"
        assert home.lockfile.read_text().splitlines()[0] == str(os.getpid())  # what older versions read
        assert announce(home, "/run/user/1000/memtray-1000-abc.sock")
        found = current_holder(home)
        assert found is not None and found.serves and found.socket == "/run/user/1000/memtray-1000-abc.sock"
        assert announce(home, None)
        found = current_holder(home)
        assert found is not None and found.socket is None and found.serves is False
        with pytest.raises(AlreadyRunning, match=rf"pid {os.getpid()}: memtray memory log"):
            HomeLock(home).acquire()
    finally:
        lock.release()
    assert current_holder(home) is None and home.lockfile.read_bytes() == b""
    assert not announce(home, "/tmp/x.sock")  # not held here: nothing to say


def test_a_record_left_by_a_dead_process_is_not_believed(home: Home) -> None:
    Home.create(home)
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    dead = int(child.stdout)  # reaped: this pid runs nothing now (until reused, which the next test covers)
    home.lockfile.write_bytes(holder.encode("/tmp/gone.sock", pid=dead))
    assert holder.decode(home.lockfile.read_bytes()) is not None  # a well-formed record...
    assert current_holder(home) is None  # ...of nobody


def test_a_reused_pid_is_not_the_holder(home: Home) -> None:
    Home.create(home)
    record = json.loads(holder.encode(None).splitlines()[1])
    assert record["since"] is not None  # Linux: the start time is known
    record["since"] = str(int(record["since"]) + 1)  # the same pid, started at another time
    home.lockfile.write_text(f"{os.getpid()}\n{json.dumps(record)}\n")
    assert current_holder(home) is None
    record["since"] = holder.start_time(os.getpid())
    record["boot"] = "another-boot"  # the same pid and start time, before a reboot
    home.lockfile.write_text(f"{os.getpid()}\n{json.dumps(record)}\n")
    assert current_holder(home) is None
    record["boot"] = holder.boot_id()
    home.lockfile.write_text(f"{os.getpid()}\n{json.dumps(record)}\n")
    assert current_holder(home) is not None


@pytest.mark.parametrize("raw", [
    b"",  # released
    b"4242\n{\"pid\": 4242, \"comm",  # cut short while being written
    b"4242\n{\"pid\": 1, \"command\": \"x\", \"serves\": false, \"socket\": null}\n",  # another pid
    b"4242\n[1, 2]\n",
    b"\xff\xfe\n",
    b"4242\n{\"pid\": 4242, \"command\": 3, \"serves\": false, \"socket\": null}\n",
])
def test_a_damaged_or_partial_record_names_nobody(raw: bytes) -> None:
    assert holder.decode(raw) is None


def test_an_older_versions_pid_is_still_read() -> None:
    found = holder.decode(b"4242\n")
    assert found is not None and found.pid == 4242 and found.serves is None and found.describe() == "pid 4242"


@pytest.mark.parametrize("sock", ["relative/path.sock", "/" + "x" * 200 + ".sock", "/tmp/a\0b.sock"])
def test_a_socket_memtray_could_not_have_listened_on_is_ignored(sock: str) -> None:
    body = {"pid": 4242, "command": "memtray daemon", "serves": True, "socket": sock}
    found = holder.decode(f"4242\n{json.dumps(body)}\n".encode())
    assert found is not None and found.serves and found.socket is None


def test_trailing_bytes_of_a_longer_old_record_are_ignored(tmp_path: Path) -> None:
    # a record is written over the old text, then cut: a reader in between sees the new one first
    new = holder.encode(None)
    old_tail = b"x" * 50 + b"\n"
    found = holder.decode(new + old_tail)
    assert found is not None and found.pid == os.getpid()
