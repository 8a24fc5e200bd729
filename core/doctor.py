"""``memtray doctor``: check the data home, explain findings, repair with consent.

Checks: the event log (every record), the checkpoint against a full replay,
permissions, the writer lock, the keyring backend, free disk, config.toml.
Memory checks (git fsck, MEMORY.md == HEAD == last event) join from
:mod:`memtray.core.memory`. ``--repair`` fixes what can be fixed after asking.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import config as cfgmod
from .clock import Clock, IdGenerator, format_ts
from .errors import AlreadyRunning, MemtrayError
from .eventlog import EventLog, list_segments, verify
from .events import BadRecord, Record, decode_raw, encode
from .fsutil import atomic_write, check_private, fix_private
from .home import Home, HomeLock
from .projections import replay
from .store import load_checkpoint, remove_checkpoints

Out = Callable[[str], None]
MIN_FREE_BYTES = 200 * 1024 * 1024


@dataclass
class Finding:
    ok: bool
    title: str
    detail: str = ""
    repair: str = ""  # what --repair would do ("" = nothing it can do)
    fix: Callable[[], str] | None = field(default=None, repr=False)


def check(home: Home) -> list[Finding]:
    out: list[Finding] = []
    if not home.root.exists():
        return [Finding(True, f"data home {home.root} does not exist yet (nothing to check)")]

    # permissions
    problems = check_private(home.root)
    if problems:
        out.append(Finding(False, "permissions", "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""),
                           "tighten to 0700/0600 (links are left alone)", lambda: _do(fix_private, home.root, "fixed")))
    else:
        out.append(Finding(True, "permissions: data home is private (0700/0600)"))

    # lock
    try:
        with HomeLock(home):
            out.append(Finding(True, "no other memtray process is writing"))
    except AlreadyRunning as exc:
        out.append(Finding(True, f"note: {exc} (checks are read-only)"))

    # log
    count, damages = verify(home.events)
    if damages:
        for d in damages:
            out.append(Finding(
                False, "event log damaged", d.describe(),
                "move the damaged bytes to a side file and put placeholder records in their place "
                "(sequence stays gapless; nothing good is dropped)",
                _repairer(home, d.segment.name),
            ))
    else:
        out.append(Finding(True, f"event log: {count} records, checksums and sequence ok"))

    # checkpoint vs replay
    if not damages:
        elog = EventLog.open(home.events, readonly=True)
        full = replay(r for r, _ in elog.read())
        state, after, used = load_checkpoint(home, elog)
        if used:
            for rec, _ in elog.read(after):
                from .projections import apply

                apply(state, rec)
            if state.to_json() != full.to_json():
                out.append(Finding(False, "checkpoint disagrees with a full replay", "",
                                   "delete state/ (it is rebuilt from the log)",
                                   lambda: _do(remove_checkpoints, home, "removed")))
            else:
                out.append(Finding(True, "checkpoint matches a full replay"))
        else:
            out.append(Finding(True, "no checkpoint (start-up replays the whole log)"))
        if full.unknown:
            kinds = ", ".join(f"{k} ×{n}" for k, n in full.unknown.items())
            out.append(Finding(True, f"note: events from a newer memtray are kept untouched: {kinds}"))

    # config
    try:
        cfg = cfgmod.load(home)
        out.append(Finding(True, f"config: model {cfg.model or '(none set)'}"))
    except MemtrayError as exc:
        out.append(Finding(False, "config.toml", str(exc)))

    # keyring
    try:
        from . import keys

        if keys.backend_is_secure():
            out.append(Finding(True, f"keyring: {keys.backend_name()}"))
        else:
            out.append(Finding(False, "no secure keyring backend", f"found {keys.backend_name()}; "
                               "API keys can only come from environment variables"))
    except Exception as exc:
        out.append(Finding(False, "keyring unavailable", str(exc)))

    # disk
    free = shutil.disk_usage(home.root).free
    if free < MIN_FREE_BYTES:
        out.append(Finding(False, "low disk space", f"{free // 2**20} MiB free"))
    else:
        out.append(Finding(True, f"disk: {free // 2**30} GiB free"))

    out.extend(check_memory(home))
    return out


def check_memory(home: Home) -> list[Finding]:
    """git fsck, and MEMORY.md == git HEAD == the last memory.written event."""
    import subprocess

    from .gitrepo import GitRepo

    out: list[Finding] = []
    repo = GitRepo(home.memory)
    if not repo.exists():
        if home.events.exists() and any(home.events.glob("*.jsonl")):
            out.append(Finding(False, "memory repository missing",
                               "it is rebuilt from the event log the next time memtray starts"))
        return out
    git = shutil.which("git")
    if git:
        res = subprocess.run([git, "-C", str(home.memory), "fsck", "--no-progress"],
                             capture_output=True, text=True, timeout=300)
        problems = [ln for ln in (res.stdout + res.stderr).splitlines()
                    if ln and "fsyncObjectFiles is deprecated" not in ln and not ln.startswith("Checking")]
        if res.returncode != 0 or any(ln.startswith(("error", "missing", "broken", "bad")) for ln in problems):
            out.append(Finding(False, "git fsck found problems in memory/", "; ".join(problems[:3]),
                               "rebuild the repository from the event log (start memtray after moving memory/ aside)"))
        else:
            out.append(Finding(True, "memory repository passes git fsck"))
    try:
        repo.open(create=False)
        head = repo.head()
        last_text = None
        last_seq = 0
        elog = EventLog.open(home.events, readonly=True)
        for rec, _ in elog.read():
            if rec.type == "memory.written":
                last_text, last_seq = rec.data.get("memory"), rec.seq
        if head is None:
            if last_text is not None:
                out.append(Finding(False, "memory repository has no commits but the log has memory events",
                                   "start memtray to make the missing commits"))
            return out
        info = repo.info(head)
        head_text = repo.read(head, "MEMORY.md")
        work = repo.worktree_text("MEMORY.md")
        seq_ok = info.trailers.get("Event-Seq") == str(last_seq)
        if last_text is not None and head_text == last_text and seq_ok and work == head_text:
            out.append(Finding(True, f"MEMORY.md == git HEAD ({head[:8]}) == last memory event (seq {last_seq})"))
        else:
            detail = []
            if not seq_ok:
                detail.append(f"HEAD records event {info.trailers.get('Event-Seq')} but the last memory event is {last_seq}")
            if last_text is not None and head_text != last_text:
                detail.append("HEAD's MEMORY.md differs from the last memory event")
            if work != head_text:
                detail.append("MEMORY.md in the work tree differs from HEAD (a hand edit?)")
            out.append(Finding(False, "memory out of sync", "; ".join(detail),
                               "start memtray: it makes missing commits and records hand edits as user edits"))
    except MemtrayError as exc:
        out.append(Finding(False, "memory repository unreadable", str(exc)))
    finally:
        repo.close()
    return out


def _do(fn: Callable[[Any], None], arg: Any, said: str) -> str:
    fn(arg)
    return said


def _repairer(home: Home, segment: str) -> Callable[[], str]:
    return lambda: repair_damage(home, segment)


def repair_damage(home: Home, segment_name: str) -> str:
    """Replace damaged lines of a segment by placeholder records; keep the bytes aside."""
    with HomeLock(home):
        segs = dict((p.name, (n, p)) for n, p in list_segments(home.events))
        _number, path = segs[segment_name]
        raw = path.read_bytes()
        lines = raw.split(b"\n")
        trailing = lines.pop() if lines and lines[-1] != b"" else None
        if lines and lines[-1] == b"" and trailing is None:
            pass
        good: list[tuple[int, Record | None, bytes]] = []
        for i, line in enumerate(lines):
            try:
                good.append((i, decode_raw(line), line))
            except BadRecord:
                good.append((i, None, line))
        clock = Clock()
        ids = IdGenerator(clock)
        out_lines: list[bytes] = []
        damaged: list[bytes] = []
        prev_seq = _seq_before(home, segment_name)
        pending: list[bytes] = []
        for _i, rec, line in good:
            if rec is None:
                pending.append(line)
                continue
            missing = rec.seq - (prev_seq + 1) if prev_seq is not None else 0
            if pending or missing > 0:
                damaged.extend(pending)
                n = max(missing, 0)
                for k in range(n):
                    ph = Record(prev_seq + 1 + k if prev_seq is not None else rec.seq - n + k, ids.new(),
                                format_ts(clock.now()), "log.damaged", 1, None,
                                {"side_file": path.name + ".damaged", "lines": len(pending)})
                    out_lines.append(encode(ph)[:-1])
                pending = []
            out_lines.append(line)
            prev_seq = rec.seq
        damaged.extend(pending)  # damage at the very end: it is a torn tail, cut
        side = path.with_name(path.name + ".damaged")
        with open(side, "ab") as fh:
            fh.write(b"\n".join(damaged) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        atomic_write(path, b"".join(ln + b"\n" for ln in out_lines) + (trailing or b""))
        remove_checkpoints(home)
        return f"rewrote {path.name}; {len(damaged)} damaged line(s) kept in {side.name}"


def _seq_before(home: Home, segment_name: str) -> int | None:
    prev = None
    for _n, p in list_segments(home.events):
        if p.name == segment_name:
            return prev
        last = None
        for line in p.read_bytes().split(b"\n"):
            try:
                last = decode_raw(line).seq
            except BadRecord:
                continue
        prev = last if last is not None else prev
    return prev


def run_doctor(home: Home, *, repair: bool, assume_yes: bool, out: Callable[[str], None]) -> int:
    findings = check(home)
    bad = [f for f in findings if not f.ok]
    out(f"memtray doctor — {home.root}")
    for f in findings:
        mark = "ok  " if f.ok else "FAIL"
        out(f"  [{mark}] {f.title}" + (f": {f.detail}" if f.detail else ""))
        if not f.ok and f.repair:
            out(f"         repair: {f.repair}")
    if not bad:
        out("No problems found.")
        return 0
    if not repair:
        fixable = [f for f in bad if f.fix]
        out(f"{len(bad)} problem(s)." + (" Run `memtray doctor --repair` to fix them." if fixable else ""))
        return 1
    for f in bad:
        if f.fix is None:
            continue
        if not assume_yes:
            try:
                answer = input(f"Repair '{f.title}' ({f.repair})? [y/N] ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                out("  skipped")
                continue
        out(f"  {f.fix()}")
    remaining = [f for f in check(home) if not f.ok]
    out("All repaired." if not remaining else f"{len(remaining)} problem(s) remain.")
    return 0 if not remaining else 1


def report_json(findings: list[Finding]) -> str:
    return json.dumps([{"ok": f.ok, "title": f.title, "detail": f.detail} for f in findings])
