"""Parent side of the crash tests: drive the fork server, kill its children, check the home.

Used by tests/crash/test_kill_*.py and bench/crash_soak.py. The checks are
plain ``assert`` statements so pytest shows the values; the bench catches the
AssertionError and reports it.
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class ForkServer:
    """One ``tests/crash/forkserver.py`` process; :meth:`start` forks a writer."""

    def __init__(self, *, preload_llm: bool = False) -> None:
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        env = {**os.environ, "PYTHONUNBUFFERED": "1",
               "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
        env.pop("MEMTRAY_TEST_CRASH_AT", None)
        args = [sys.executable, str(ROOT / "tests" / "crash" / "forkserver.py")]
        if preload_llm:
            args.append("--preload-llm")
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, cwd=str(ROOT), env=env)
        self._buf = b""
        line = self.readline(120)
        if line != "ready":
            raise RuntimeError(f"fork server did not start: {line!r}\n{self.stderr()}")

    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read().decode("utf-8", "replace")[-4000:]

    def readline(self, timeout: float) -> str | None:
        """The next line from the server or its child, or None after ``timeout`` seconds."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"fork server died\n{self.stderr()}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def start(self, **params: Any) -> Child:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(params) + "\n").encode())
        self.proc.stdin.flush()
        child = Child(self)
        line = self.readline(120)
        while line is not None and not line.startswith("start"):
            if line.startswith(("exit", "error")):
                rest = [line]
                while not rest[-1].startswith("exit"):
                    rest.append(self.readline(30) or "exit ?")
                raise RuntimeError(f"writer failed before starting: {rest}\n{self.stderr()}")
            line = self.readline(120)
        if line is None:
            raise RuntimeError(f"writer did not start\n{self.stderr()}")
        _, pid, last = line.split()
        child.pid, child.start_seq = int(pid), int(last)
        return child

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._err.close()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Child:
    server: ForkServer
    pid: int = 0
    start_seq: int = 0
    acked: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    status: int | None = None  # signal number, or -exit code
    killed_by_us: bool = False

    def _take(self, line: str) -> None:
        self.lines.append(line)
        if line.startswith("ack "):
            self.acked += [int(x) for x in line.split()[1:]]
        elif line.startswith("exit "):
            self.status = int(line.split()[2])

    def next(self, timeout: float = 60) -> str | None:
        line = self.server.readline(timeout)
        if line is not None:
            self._take(line)
        return line

    def kill(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                self.killed_by_us = True
            except ProcessLookupError:
                pass

    def wait(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while self.status is None:
            line = self.next(max(0.1, deadline - time.monotonic()))
            if line is None:
                self.kill()
                if time.monotonic() > deadline + 30:
                    raise RuntimeError(f"writer {self.pid} did not exit\n{self.server.stderr()}")
        return self.status


# --- one kill cycle ------------------------------------------------------------------------


def kill_writer(server: ForkServer, home: Path, rng: random.Random, *, segment_bytes: int = 8192) -> Child:
    """Fork a log writer, let it acknowledge 0-12 appends, SIGKILL it at a random moment."""
    child = server.start(mode="log", home=str(home), seed=rng.randrange(2**32), n=100_000,
                         segment_bytes=segment_bytes, split=rng.random() < 0.5)
    target = rng.randint(0, 12)
    while len(child.acked) < target and child.status is None:
        if child.next(60) is None:
            break
    if rng.random() < 0.7:
        time.sleep(rng.random() * 0.004)
    child.kill()
    child.wait()
    return child


def kill_consolidation(server: ForkServer, home: Path, base_url: str, rng: random.Random,
                       crash_at: str | None) -> Child:
    """Run the app in a child until it dies at ``crash_at`` (or is killed at random)."""
    child = server.start(mode="consolidate", home=str(home), base_url=base_url, crash_at=crash_at,
                         seed=rng.randrange(2**32), rounds=1 if crash_at is None else 3)
    if crash_at is None:
        # a random moment: while the messages are appended, or 0-250 ms into the consolidation
        phase = rng.random()
        while child.status is None:
            line = child.next(60)
            if line is None:
                break
            if phase < 0.2 and line.startswith("ack") and rng.random() < 0.3:
                break
            if line.startswith("phase"):
                time.sleep(rng.random() * 0.25)
                break
        child.kill()
    child.wait()
    return child


# --- the checkers --------------------------------------------------------------------------


@dataclass
class Checked:
    events: int
    cut: int
    commits: int = 0


def check_log(home: Path, acked: set[int], *, segment_bytes: int = 8192) -> Checked:
    """Reopen as the writer would: acked seqs present, seq gapless, <= 1 torn record cut,
    checkpoint + tail == full replay."""
    from memtray.core.base.home import Home
    from memtray.core.log.projections import replay
    from memtray.core.log.store import Store

    store = Store.open(Home.resolve(home), segment_bytes=segment_bytes)
    try:
        seqs = [r.seq for r in store.log.records()]
        assert seqs == list(range(1, len(seqs) + 1)), "seq must be gapless"
        missing = acked - set(seqs)
        assert not missing, f"acknowledged events lost: {sorted(missing)[:10]}"
        assert len(store.log.cut) <= 1, f"more than one torn record cut: {store.log.cut}"
        assert store.state.to_json() == replay(store.log.records()).to_json(), "checkpoint + tail != replay"
        return Checked(len(seqs), len(store.log.cut))
    finally:
        store.close()


def check_app(home: Path, acked: set[int], *, fsck: bool = False) -> Checked:
    """Reopen the app (recovery runs) and check the log, memory, git and the pointer."""
    from memtray.core.app import App
    from memtray.core.base.clock import parse_ts
    from memtray.core.base.config import Config
    from memtray.core.base.home import Home
    from memtray.core.log.projections import replay
    from memtray.core.memory.revisions import history_entry

    app = App.open(Home.resolve(home), config=Config(model="openai/none", api_base="http://127.0.0.1:9/v1",
                                                     idle_consolidate_minutes=0))
    try:
        store = app.store
        recs = list(store.log.records())
        seqs = [r.seq for r in recs]
        assert seqs == list(range(1, len(seqs) + 1)), "seq must be gapless"
        missing = acked - set(seqs)
        assert not missing, f"acknowledged events lost: {sorted(missing)[:10]}"
        assert len(store.log.cut) <= 1, f"more than one torn record cut: {store.log.cut}"
        full = replay(recs)
        assert store.state.to_json() == full.to_json(), "checkpoint + tail != replay"

        # MEMORY.md == git HEAD == last memory.written; one commit per memory.written
        written = [r for r in recs if r.type == "memory.written"]
        git = app.memory.git
        commits = list(reversed(list(git.walk())))
        assert [c.trailers.get("Event-Seq") for c in commits] == [str(r.seq) for r in written], \
            "one commit per memory.written, in log order"
        history = ""
        for rec in written:
            d = rec.data
            if d.get("history") is not None:
                history = d["history"]
            elif d.get("history_append"):
                history += history_entry(parse_ts(rec.ts), d["history_append"])
        if written:
            head = git.head()
            assert head is not None
            last = written[-1].data["memory"]
            assert git.read(head, "MEMORY.md") == last == full.memory, "HEAD != last memory.written"
            assert git.worktree_text("MEMORY.md") == last, "MEMORY.md != HEAD"
            assert git.read(head, "HISTORY.md") == history == git.worktree_text("HISTORY.md"), "HISTORY.md"
        else:
            assert git.head() is None

        # the pointer: only completed consolidations move it; nothing is left half-done
        by_id = {r.data["consolidation"]: r for r in written if r.data.get("consolidation")}
        for c in full.consolidations.values():
            assert c.status in ("completed", "failed"), f"consolidation {c.id} left {c.status}"
            if c.status == "completed":
                assert c.id in by_id and c.memory_seq == by_id[c.id].seq, f"{c.id} has no memory revision"
            else:
                assert c.id not in by_id, f"failed consolidation {c.id} wrote memory"
        for key, s in full.sessions.items():
            ends = [c.end for c in full.consolidations.values()
                    if c.session == key and c.status == "completed" and c.redo_of is None]
            assert s.last_consolidated == max([*ends, s.base]), f"pointer of {key}"
        if fsck:
            git_fsck(home / "memory")
        return Checked(len(recs), len(store.log.cut), len(commits))
    finally:
        app.close()


def git_fsck(repo: Path) -> None:
    git = shutil.which("git")
    if git is None:
        return
    res = subprocess.run([git, "-C", str(repo), "fsck", "--strict", "--no-progress"],
                         capture_output=True, text=True, timeout=120)
    bad = [ln for ln in (res.stdout + res.stderr).splitlines()
           if ln and not ln.startswith(("Checking", "dangling", "notice: "))]  # notice: no commits yet
    assert res.returncode == 0 and not bad, f"git fsck: {bad}"


# --- the scripted model for consolidations ---------------------------------------------------


def save_memory_responder(request: dict[str, Any]) -> Any:
    """A deterministic model: keeps every fact, adds one per user note, sometimes removes one."""
    import hashlib

    from tests.fixtures.llm_server import reply, tool_call

    prompt = ""
    for m in request.get("messages") or []:
        if m.get("role") == "user":
            prompt = str(m.get("content") or "")
    if "## Conversation to consolidate" not in prompt:
        return reply("ok")
    head, conv = prompt.split("## Conversation to consolidate", 1)
    current = head.split("## Current memory", 1)[1].strip()
    lines = [] if current in ("", "(empty)") else current.splitlines()
    said = [(int(ln.split(" ", 1)[0].lstrip("#")), ln.split("USER: ", 1)[1])
            for ln in conv.strip().splitlines() if "USER: " in ln and ln.startswith("#")]
    notes = [n for _num, n in said]
    facts = [ln for ln in lines if ln.startswith("- ")]
    removed = []
    digest = int(hashlib.sha256(conv.encode()).hexdigest(), 16)
    if facts and digest % 3 == 0:
        removed.append({"fact": facts[0][2:], "reason": "superseded by newer notes"})
        lines.remove(facts[0])
    if "## Notes" not in lines:
        lines = [*lines, "", "## Notes", ""] if lines else ["## Notes", ""]
    new = "\n".join(lines).rstrip("\n") + "\n" + "".join(f"- {n}\n" for n in notes)
    entry = f"[2026-01-01 00:00] Talked about {len(notes)} notes."
    receipts = [{"fact": n, "messages": [num], "quote": n} for num, n in said]  # the user's words (issue 27)
    return tool_call("save_memory", {"history_entry": entry, "memory_update": new, "removed_facts": removed,
                                     "receipts": receipts})


# --- the crash campaign: random commands, random kills ---------------------------------------


def campaign_responder(request: dict[str, Any]) -> Any:
    """The campaign's model: consolidations as :func:`save_memory_responder`; in chat, a
    "please remember" calls the ``remember`` tool, a tool result gets a short reply."""
    from tests.fixtures.llm_server import reply, tool_call

    messages = request.get("messages") or []
    if any(t.get("function", {}).get("name") == "save_memory" for t in request.get("tools") or []):
        return save_memory_responder(request)
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return reply("done")
    text = str(last.get("content") or "")
    if "please remember" in text:
        fact = text.split("please remember", 1)[1].strip().splitlines()[0][:80]
        return tool_call("remember", {"fact": f"User mentioned {fact}", "section": "Notes"})
    return reply("ok")


def kill_ops(server: ForkServer, home: Path, base_url: str, rng: random.Random,
             ops: list[str] | None = None, *, finish: bool = False) -> Child:
    """Run 2-4 random commands in a child and SIGKILL it at a random moment: after 0-5
    acknowledged appends or commands, plus 0-40 ms (a few children finish first).
    With ``finish`` the child is left to run to its end."""
    child = server.start(mode="ops", home=str(home), base_url=base_url, seed=rng.randrange(2**32),
                         commands=rng.randint(2, 4), ops=ops)
    target = 10**9 if finish else rng.randint(0, 5)
    seen = 0
    while child.status is None:
        line = child.next(120)
        if line is None or line == "done":
            break
        if line.startswith(("ack", "cmd")):
            seen += 1
            if seen > target:
                break
    if child.status is None and child.lines[-1:] != ["done"]:
        time.sleep(rng.random() * 0.04)
        child.kill()
    child.wait()
    return child


@dataclass
class Campaign:
    kills: int = 0
    finished: int = 0
    events: int = 0
    commits: int = 0
    commands: dict[str, int] = field(default_factory=dict)
    #: commands that ran to the end with exit status 0 (not killed first)
    succeeded: dict[str, int] = field(default_factory=dict)
    #: commands that ended with another status, by command and first line of stderr
    refused: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the command that was running when its child was SIGKILLed (started, not yet ended)
    killed: dict[str, int] = field(default_factory=dict)
    broken: list[str] = field(default_factory=list)
    home: Path | None = None
    last_events: int = 0
    last_commits: int = 0


def run_campaign(server: ForkServer, home: Path, base_url: str, *, kills: int, seed: int,
                 fsck_every: int = 50, ops: list[str] | None = None, fresh_every: int = 50,
                 progress: Any = None) -> Campaign:
    """SIGKILL commands until ``kills`` children died by our hand; check the home after each.

    Every acknowledged event (each user message is acknowledged once it is durable) must
    be present, memory must equal the log's last ``memory.written`` (git HEAD, work tree),
    consolidations must be completed or failed with the pointer where they left it, and
    the next command must work without ``doctor`` (a command that shows a traceback, or
    an ``ask`` that fails, is recorded as broken).

    Every ``fresh_every`` kills the campaign moves to a new home (``home`` with a
    number): a rebuild re-consolidates the whole log, so one ever-growing home would
    make each kill slower than the last. ``git fsck`` runs every ``fsck_every`` kills
    and on each home before it is left.

    Which command a kill lands in is chance (and what a command can do depends on what
    earlier kills left), so after ``kills`` kills a command never killed while running,
    or never run to its end, gets runs of its own (with ``consolidate``, which makes
    what undo, redo and restore-fact work on, and ``ask``), up to ``kills // 10 + 20``
    more children, in the last home; one already killed while running is left to
    finish (``ask`` with ``remember`` appends so much that a kill nearly always lands first)."""
    from tests.crash.forkserver import OPS

    rng = random.Random(seed)
    acked: set[int] = set()
    out = Campaign()
    base = home
    wanted = list(ops or OPS)
    extra = kills // 10 + 20
    finish = False
    while True:
        if out.kills >= kills:
            missing = [op for op in wanted if not out.killed.get(op) or not out.succeeded.get(op)]
            if not missing or extra <= 0:
                break
            extra -= 1
            op = missing[extra % len(missing)]
            ops = sorted({op, "ask", "consolidate"})
            finish = bool(out.killed.get(op))  # killed already: this run goes to its end
        n = min(out.kills, kills - 1) // fresh_every  # the runs that top up stay in the last home
        home = base.with_name(f"{base.name}-{n}")
        if not home.exists():
            left = base.with_name(f"{base.name}-{n - 1}") / "memory"
            if out.kills and (left / ".git").is_dir():
                git_fsck(left)
            acked = set()
        child = kill_ops(server, home, base_url, rng, ops, finish=finish)
        running: str | None = None
        for line in child.lines:
            if line.startswith("cmd "):
                running = line.split()[1]
                out.commands[running] = out.commands.get(running, 0) + 1
            elif line.startswith("did "):
                _, op, code, *why = line.split(maxsplit=3)
                running = None
                if code == "0":
                    out.succeeded[op] = out.succeeded.get(op, 0) + 1
                else:
                    reasons = out.refused.setdefault(op, {})
                    why_ = re.sub(r"\b[0-9a-f]{8}\b", "<id>", why[0] if why else "")  # one line per kind
                    why_ = re.sub(r"\d+ of \d+", "N of M", re.sub(r"\[F\d+\] .*", "<fact>", why_))
                    reason = f"exit {code}: {why_}"
                    reasons[reason] = reasons.get(reason, 0) + 1
            elif line.startswith("broken"):
                out.broken.append(line)
                running = None
        assert not out.broken, out.broken[:3]
        if child.killed_by_us and child.status == signal.SIGKILL:
            out.kills += 1
            if running is not None:
                out.killed[running] = out.killed.get(running, 0) + 1
        elif child.status == 0:
            out.finished += 1
        else:
            raise AssertionError(f"child ended with {child.status}: {child.lines[-5:]}\n{server.stderr()}")
        acked.update(child.acked)
        fsck = out.kills % fsck_every == 0 and (home / "memory" / ".git").is_dir()
        checked = check_app(home, acked, fsck=fsck)
        out.events += checked.events - out.last_events if home == out.home else checked.events
        out.commits += checked.commits - out.last_commits if home == out.home else checked.commits
        out.home, out.last_events, out.last_commits = home, checked.events, checked.commits
        if progress is not None and child.killed_by_us and out.kills % 50 == 0:
            progress(out)
    return out
