"""Who holds a data home: the record its holder keeps in ``memtray.lock``.

Whoever takes the home's lock writes two lines into the lock file: its pid (what
older versions wrote and read) and a JSON object naming it::

    {"pid": 4242, "since": "8812345", "boot": "3f0c…", "command": "memtray memory log",
     "serves": false, "socket": null}

``serves`` says the holder is an instance that accepts forwarded commands (the
desktop app, ``memtray daemon``, the background instance), ``socket`` where it
listens once it does. A command finds the instance from this record, whatever
``XDG_RUNTIME_DIR`` or ``TMPDIR`` it was started with itself (cron, ssh, a systemd
unit, an app launcher), and when it must wait for a one-shot command it can say
which one.

A record outlives a holder that crashed (the kernel drops the lock, not the file's
text) and its pid may be reused by another program: a record counts only while its
pid runs and is the same process (its start time since boot, and the boot).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

#: Longest command description kept (the rest is cut): the record stays one small write.
MAX_COMMAND = 200
#: AF_UNIX paths: 108 bytes with the NUL on Linux, 104 on macOS.
MAX_SOCKET_BYTES = 107


@dataclass(frozen=True)
class Role:
    """What this process is, as other memtray processes will read it."""

    command: str
    serves: bool


def _default_command() -> str:
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return name if name not in ("__main__.py", "-c", "") else "python"


_role: list[Role] = [Role(_default_command(), False)]


def set_role(command: str, *, serves: bool) -> None:
    """Declare what this process is before it takes a home's lock (the CLI, the daemon,
    the desktop app do; a library user keeps the default, the program's name)."""
    _role[0] = Role(" ".join(command.split())[:MAX_COMMAND], serves)


def role() -> Role:
    return _role[0]


@dataclass(frozen=True)
class Holder:
    """The process that holds a data home, as its record names it."""

    pid: int
    command: str = ""  # "" when the record has only a pid (an older version wrote it)
    serves: bool | None = None  # None: unknown
    socket: str | None = None
    since: str | None = None
    boot: str | None = None

    def describe(self) -> str:
        """``pid 4242: memtray memory log`` (or just the pid)."""
        return f"pid {self.pid}: {self.command}" if self.command else f"pid {self.pid}"


def encode(socket: str | None = None, *, pid: int | None = None) -> bytes:
    """This process's record (``socket``: where it listens, once it does)."""
    me = role()
    pid = os.getpid() if pid is None else pid
    body = {"pid": pid, "since": start_time(pid), "boot": boot_id(), "command": me.command,
            "serves": me.serves or socket is not None, "socket": socket}
    return f"{pid}\n{json.dumps(body, ensure_ascii=False)}\n".encode()


def decode(raw: bytes) -> Holder | None:
    """The record in ``raw``; None when there is none (released, being written, damaged)."""
    lines = raw.split(b"\n")
    head = lines[0].strip()
    if not head.isdigit():
        return None
    pid = int(head)
    if len(lines) < 3:  # the pid alone (an older version), or the JSON line cut short
        return Holder(pid) if len(lines) == 2 and not lines[1].strip() else None
    try:
        body = json.loads(lines[1])
    except ValueError:
        return None  # being rewritten: the caller looks again
    if not isinstance(body, dict) or body.get("pid") != pid:
        return None
    command, serves, sock = body.get("command"), body.get("serves"), body.get("socket")
    since, boot = body.get("since"), body.get("boot")
    if not isinstance(command, str) or not isinstance(serves, bool):
        return None
    if sock is not None and not _socket_ok(sock):
        sock = None  # not a path memtray could have listened on: ignored, never connected to
    return Holder(pid, command[:MAX_COMMAND], serves, sock,
                  since if isinstance(since, str) else None, boot if isinstance(boot, str) else None)


def _socket_ok(value: object) -> bool:
    return (isinstance(value, str) and os.path.isabs(value) and "\0" not in value
            and len(os.fsencode(value)) <= MAX_SOCKET_BYTES)


def read(path: Path) -> Holder | None:
    """The live holder named in the lock file at ``path``; None when nobody is named
    or the named process is gone (a crash left the record, its pid was reused)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        raw = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    found = decode(raw)
    return found if found is not None and is_current(found) else None


def is_current(h: Holder) -> bool:
    """Whether the process the record names still runs (and is that process)."""
    if h.pid <= 0:
        return False
    if os.name == "nt":  # pragma: no cover - os.kill(pid, 0) would end the process there
        return True
    try:
        os.kill(h.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it runs, as someone else: the start time below tells whether it is ours
    except OSError:
        return False
    if h.boot is not None and boot_id() not in (None, h.boot):
        return False
    return h.since is None or start_time(h.pid) in (None, h.since)


def start_time(pid: int) -> str | None:
    """When ``pid`` started, in clock ticks since boot (Linux); None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: count from the last ')'
    fields = stat[stat.rfind(b")") + 2:].split()
    with contextlib.suppress(IndexError):
        return fields[19].decode()  # field 22 of stat(5)
    return None


def boot_id() -> str | None:
    """This boot's id (Linux): a record from before a reboot names another boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip() or None
    except OSError:
        return None
