"""``memtray doctor``: check the data home, explain findings, repair with consent.

Checks: permissions and planted symbolic links, leftover temporary files, the
writer lock, the event log (every record), the checkpoint against a full
replay, config.toml, the keyring backend, free disk, and the memory repository
(git fsck, every object readable, MEMORY.md == HEAD == the last memory.written).
``--repair`` fixes what can be fixed, asking first for each: tighten modes,
remove links (never their targets), remove temporary files, put placeholder
records in place of damaged ones, delete a stale checkpoint, make missing
memory commits, and rebuild a damaged memory repository from the log (the
damaged copy is kept aside as ``memory.damaged-<time>``).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtray.core.admin.door_health import check_door
from memtray.core.base import config as cfgmod
from memtray.core.base.clock import Clock, IdGenerator, format_ts
from memtray.core.base.errors import AlreadyRunning, MemtrayError
from memtray.core.base.findings import Finding
from memtray.core.base.fsutil import atomic_write, check_private, fix_private
from memtray.core.base.home import Home, HomeLock
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import (
    BadRecord,
    LogDamaged,
    MemoryWritten,
    Message,
    Record,
    decode_raw,
    encode,
)
from memtray.core.log.projections import replay
from memtray.core.log.segments import list_segments, verify
from memtray.core.log.store import load_checkpoint, remove_checkpoints
from memtray.core.memory import scopes
from memtray.core.memory.projection import scope_files, unread_said, unread_scope_files

Out = Callable[[str], None]
MIN_FREE_BYTES = 200 * 1024 * 1024




def check(home: Home) -> list[Finding]:
    out: list[Finding] = []
    if not home.root.exists():
        return [Finding(True, f"data home {home.root} does not exist yet (nothing to check)")]

    # permissions and links
    problems = check_private(home.root)
    links = [p for p in problems if p.endswith("is a symbolic link")]
    modes = [p for p in problems if p not in links]
    if modes:
        out.append(Finding(False, "permissions", _some(modes), "tighten to 0700/0600 (links are left alone)",
                           lambda: _do(fix_private, home.root, "permissions tightened"), "permissions"))
    else:
        out.append(Finding(True, "permissions: data home is private (0700/0600)", code="permissions"))
    if links:
        out.append(Finding(False, "symbolic links inside the data home (memtray never follows them)", _some(links),
                           "remove the links (what they point to is not touched)",
                           lambda: remove_links(home), "links"))

    # lock
    locked = False
    try:
        with HomeLock(home):
            out.append(Finding(True, "no other memtray process is writing", code="lock"))
    except AlreadyRunning as exc:
        locked = True
        out.append(Finding(True, f"note: {exc} (checks are read-only)", code="lock"))

    # temporary files left by a crash in the middle of a save (only meaningful when nobody writes)
    if not locked:
        tmps = stale_temp_files(home)
        if tmps:
            out.append(Finding(False, "temporary files left by an interrupted save",
                               _some([str(p.relative_to(home.root)) for p in tmps]),
                               "delete them (each is an unfinished copy of a file that is intact)",
                               lambda: _remove_temp_files(home), "tempfiles"))

    # log
    count, damages = verify(home.events)
    if damages:
        for d in damages:
            out.append(Finding(
                False, "event log damaged", d.describe(),
                "move the damaged bytes to a side file and put placeholder records in their place "
                "(sequence stays gapless; nothing good is dropped)",
                _repairer(home, d.segment.name), "log",
            ))
    else:
        out.append(Finding(True, f"event log: {count} records, checksums and sequence ok", code="log"))

    # checkpoint vs replay
    full = None
    if not damages:
        elog = EventLog.open(home.events, readonly=True)
        full = replay(r for r, _ in elog.read())
        state, after, used = load_checkpoint(home, elog)
        if used:
            for rec, _ in elog.read(after):
                from memtray.core.log.projections import apply

                apply(state, rec)
            if state.to_json() != full.to_json():
                out.append(Finding(False, "checkpoint disagrees with a full replay", "",
                                   "delete the checkpoint (start-up replays the log)",
                                   lambda: _do(remove_checkpoints, home, "checkpoint removed"), "checkpoint"))
            else:
                out.append(Finding(True, "checkpoint matches a full replay", code="checkpoint"))
        else:
            out.append(Finding(True, "no checkpoint (start-up replays the whole log)", code="checkpoint"))
        if full.unknown:
            kinds = ", ".join(f"{k} ×{n}" for k, n in full.unknown.items())
            out.append(Finding(True, f"note: events from a newer memtray are kept untouched: {kinds}"))

    # config
    cfg = None
    try:
        cfg = cfgmod.load(home)
        out.append(Finding(True, f"config: model {cfg.model or '(none set)'}", code="config"))
    except MemtrayError as exc:
        out.append(Finding(False, "config.toml", str(exc), code="config"))

    out.append(_check_keyring(cfg))

    # disk
    free = free_bytes(home)
    if free < MIN_FREE_BYTES:
        out.append(Finding(False, "low disk space", f"{free // 2**20} MiB free; memtray needs "
                           f"{MIN_FREE_BYTES // 2**20} MiB to keep writing safely", code="disk"))
    else:
        out.append(Finding(True, f"disk: {free // 2**30} GiB free", code="disk"))

    out.extend(check_door(home, full))
    out.extend(check_memory(home, log_damaged=bool(damages)))
    out.extend(check_scope_files(home))
    if not damages:
        out.extend(check_text(home))
        out.extend(check_attachments(home))
    from memtray.core.audit.adopt import check_rebuilds
    from memtray.core.memory.provenance import check_provenance

    out.extend(check_provenance(home))
    out.extend(check_rebuilds(home))
    from memtray.core.search.health import check_search

    out.extend(check_search(home, cfg.embedding_model if cfg is not None else ""))
    from memtray.core.sync.health import check_sync

    out.extend(check_sync(home, cfg))
    from memtray.core.log.projection_driver import check_quarantines

    out.extend(check_quarantines(home.state))
    return out


def check_text(home: Home) -> list[Finding]:
    """Events older versions logged with text that is not valid Unicode (a lone surrogate)
    or holds a NUL. memtray refuses such text now; an old ``memory.written`` of it cannot
    become a git commit, so start-up skips it in git (quarantined) and keeps it in the log.
    The repair writes the latest memory again with the text made valid."""
    from memtray.core.log.events import find_invalid

    bad: list[tuple[Record, str]] = []
    last_memory: Record | None = None
    try:
        elog = EventLog.open(home.events, readonly=True)
        try:
            for rec in elog.records():
                found = find_invalid({"session": rec.session, **dict(rec.data)})
                if found is not None:
                    bad.append((rec, f"seq {rec.seq} ({rec.type}): {found[0]} holds {found[1]}"))
                if rec.type == MemoryWritten.TYPE:
                    last_memory = rec
        finally:
            elog.close()
    except MemtrayError as exc:
        return [Finding(True, f"note: text of the log not checked ({exc})", code="text")]
    if not bad:
        return [Finding(True, "every text in the log is valid Unicode without NUL", code="text")]
    detail = "; ".join(said for _r, said in bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "")
    if last_memory is not None and any(r.seq == last_memory.seq for r, _ in bad):
        return [Finding(False, "the current memory holds text git cannot store (its revision is quarantined)",
                        detail, "write the current memory again with the invalid characters replaced "
                        "(U+FFFD) and NULs removed: one new revision", lambda: repair_text(home), code="text")]
    return [Finding(True, f"warning: {len(bad)} older event(s) hold text memtray no longer accepts; they "
                    "stay readable in the log (a memory revision among them is skipped in git)", detail,
                    code="text")]


def repair_text(home: Home) -> str:
    """A new ``memory.written`` of the current memory with lone surrogates replaced and NULs removed."""
    from memtray.core.app import App
    from memtray.core.base.config import Config
    from memtray.core.log.events import MemoryWritten, scrub_text

    app = App.open(home, config=Config(), start_services=False)
    try:
        clean = scrub_text(app.store.state.memory)
        # appended as is (no fact diff): a diff against the current text would carry the very
        # characters the log refuses; the facts keep their ids from the text (older events' way)
        ev = MemoryWritten(memory=clean, reason="user-edit", source="memtray")
        app.write(lambda: app.store.append(ev))
        return "wrote the current memory again with valid text (one new revision); the old one stays in the log"
    finally:
        app.close()


def check_attachments(home: Home) -> list[Finding]:
    """Every attachment a message references is in ``attachments/`` with its hash."""
    from memtray.core.log.attachments import AttachmentStore, Ref, is_hash
    from memtray.core.log.origin import origin_of

    store = AttachmentStore(home.root)
    problems: list[str] = []
    elsewhere: list[str] = []  # of other devices' messages: their file has not come (yet)
    seen = 0
    try:
        elog = EventLog.open(home.events, readonly=True)
        try:
            for rec in elog.records():
                if rec.type != Message.TYPE:
                    continue
                origin = origin_of(rec)
                for ref in [Ref.from_data(a) for a in Message.of(rec).attachments or []]:
                    seen += 1
                    problem = store.problem(ref)
                    if problem is not None and origin is not None and is_hash(ref.sha256) \
                            and not store.path(ref.sha256).exists():
                        elsewhere.append(f"seq {rec.seq} ({ref.name}): on device {origin.device}, not synced here")
                    elif problem is not None:
                        problems.append(f"seq {rec.seq} ({ref.name}): {problem}")
        finally:
            elog.close()
    except MemtrayError as exc:
        return [Finding(True, f"note: attachments not checked ({exc})", code="attachments")]
    out = [Finding(True, f"note: {len(elsewhere)} attachment(s) of other devices' messages are not here (their "
                   "device's memtray did not sync them); the messages show their names", _some(elsewhere),
                   code="attachments-peers")] if elsewhere else []
    if problems:
        return [*out, Finding(False, f"{len(problems)} attachment(s) missing or damaged", _some(problems), code="attachments")]
    return [*out, Finding(True, f"attachments: {seen} referenced, "
                          + ("the others present with their hash" if elsewhere else "all present with their hash"),
                          code="attachments")]


def _check_keyring(cfg: Any) -> Finding:
    """No secure keyring is a problem only when the model needs a key that nothing else
    gives: with the key in the provider's environment variable (or a model that needs
    none) it is a warning, and never something ``--repair`` could fix."""
    try:
        from memtray.core.base import keys

        if keys.backend_is_secure():
            return Finding(True, f"keyring: {keys.backend_name()}", code="keyring")
        backend = keys.backend_name()
        provider = keys.provider_of(cfg.model) if cfg is not None and cfg.model else "openai"
        source = keys.key_source(provider)
    except Exception as exc:  # a keyring backend that fails to load: say so, never a traceback
        return Finding(False, "keyring unavailable", f"{type(exc).__name__}: {exc}", code="keyring")
    var = keys.ENV_VARS.get(provider, f"{provider.upper()}_API_KEY")
    if source.startswith("environment") or source == "not needed" or (cfg is not None and cfg.api_base):
        why = f"the {provider} key comes from the {source}" if source.startswith("environment") else (
            f"{provider} needs no key" if source == "not needed" else f"the model is served at {cfg.api_base}")
        return Finding(True, f"warning: no secure keyring backend ({backend}); {why}, so nothing is missing",
                       "keys can be set only through environment variables", code="keyring")
    return Finding(False, "no secure keyring backend and no API key",
                   f"found {backend}; set {var or 'the provider key'} in the environment, or install and unlock "
                   "a keyring service (GNOME Keyring / KWallet, macOS Keychain, Windows Credential Locker)",
                   code="keyring")


def check_memory(home: Home, *, log_damaged: bool = False) -> list[Finding]:
    """git fsck, every object readable, and MEMORY.md == git HEAD == the last memory.written event.

    With a damaged log only git fsck runs: memory cannot be compared with a log that
    cannot be read, and the log's own finding comes first (its repair, then a re-check).
    """
    from memtray.core.memory.gitrepo import GitRepo

    out: list[Finding] = []
    rebuild = ("rebuild memory/ from the event log (commits are deterministic, so the same revisions "
               "come back; the damaged copy is kept as memory.damaged-<time>)")
    repo = GitRepo(home.memory)
    if not repo.exists():
        if _has_memory_events(home):
            out.append(Finding(False, "memory repository missing", "", rebuild,
                               lambda: rebuild_memory(home), "memory"))
        return out
    problems = git_fsck(home)
    if problems:
        out.append(Finding(False, "git fsck found problems in memory/", "; ".join(problems[:3]), rebuild,
                           lambda: rebuild_memory(home), "memory"))
        return out
    if problems is not None:
        out.append(Finding(True, "memory repository passes git fsck", code="fsck"))
    if log_damaged:
        out.append(Finding(True, "note: memory not compared with the event log until the log is repaired",
                           code="memory"))
        return out
    try:
        repo.open(create=False)
        head = repo.head()
        last_text = None
        last_seq = 0
        elog = EventLog.open(home.events, readonly=True)
        for rec, _ in elog.read():
            if rec.type == MemoryWritten.TYPE:
                last_text, last_seq = MemoryWritten.of(rec).memory, rec.seq
        if head is None:
            if last_text is not None:
                out.append(Finding(False, "memory repository has no commits but the log has memory events", "",
                                   "make the missing commits", lambda: reconcile_memory(home), "memory"))
            return out
        for info in repo.walk():  # every revision's files must be readable (its scopes' too)
            repo.read(info.sha, "HISTORY.md")
            repo.read_memory(info.sha)
        info = repo.info(head)
        # the memory is MEMORY.md and every scope's file (core/memory/scopes.py), joined
        head_text = repo.read_memory(head)
        in_head = ["MEMORY.md", *(f"{scopes.FOLDER}/{n}" for n in repo.listdir(head, scopes.FOLDER))]
        edited = [n for n in ["MEMORY.md", *scope_files(home.memory, in_head[1:])]
                  if repo.worktree_text(n) != (repo.read(head, n) if n in in_head else None)]
        seq_ok = info.trailers.get("Event-Seq") == str(last_seq)
        if last_text is not None and head_text == last_text and seq_ok and not edited:
            out.append(Finding(True, f"MEMORY.md == git HEAD ({head[:8]}) == last memory event (seq {last_seq})",
                               code="memory"))
        else:
            detail = []
            if not seq_ok:
                detail.append(f"HEAD records event {info.trailers.get('Event-Seq')} but the last memory event is {last_seq}")
            if last_text is not None and head_text != last_text:
                detail.append("HEAD's MEMORY.md differs from the last memory event")
            if edited:
                detail.append(f"{', '.join(edited)} in the work tree differ{'s' if len(edited) == 1 else ''} "
                              "from HEAD (a hand edit?)")
            out.append(Finding(False, "memory out of sync", "; ".join(detail),
                               "make the missing commits and record a hand edit as a user edit "
                               "(what memtray does at start)", lambda: reconcile_memory(home), "memory"))
    except MemtrayError as exc:
        out.append(Finding(False, "memory repository unreadable", str(exc), rebuild,
                           lambda: rebuild_memory(home), "memory"))
    except Exception as exc:  # dulwich: an empty or corrupt object, a broken ref
        out.append(Finding(False, "memory repository unreadable", f"{type(exc).__name__}: {exc}", rebuild,
                           lambda: rebuild_memory(home), "memory"))
    finally:
        repo.close()
    return out


def check_scope_files(home: Home) -> list[Finding]:
    """A file in memory/scopes/ that memtray does not read (``Work.md``): the user's facts in
    no scope and no prompt. The repair renames it to the scope file name, when that is free."""
    out = []
    for name, to in unread_scope_files(home.memory):
        fix: Callable[[], str] | None = None
        if to is not None:
            fix = functools.partial(_rename_scope_file, home, name, to)
        out.append(Finding(False, f"a file in memory/{scopes.FOLDER}/ is not read: {name}",
                           unread_said(name, to).split(": ", 1)[1],
                           f"rename it to {scopes.FOLDER}/{to} (its facts are then recorded as a hand edit)" if to else "",
                           fix, "scope-files"))
    return out


def _rename_scope_file(home: Home, name: str, to: str) -> str:
    folder = home.memory / scopes.FOLDER
    with HomeLock(home):
        if to in os.listdir(folder):  # exact names: Work.md -> work.md is one file on some disks
            raise MemtrayError(f"{scopes.FOLDER}/{to} exists already; move the facts of {name} into it by hand")
        os.rename(folder / name, folder / to)
    _open_app_once(home)  # start-up records the file as a hand edit
    return f"renamed {scopes.FOLDER}/{name} to {scopes.FOLDER}/{to}; its facts are in the scope {to[:-3]!r}"


def _has_memory_events(home: Home) -> bool:
    try:
        return any(r.type == MemoryWritten.TYPE for r in EventLog.open(home.events, readonly=True).records())
    except MemtrayError:
        return True  # the log check reports the damage; assume memory is needed


def git_fsck(home: Home) -> list[str] | None:
    """Problems ``git fsck`` reports in memory/ ([] if none; None without the git binary)."""
    import subprocess

    git = shutil.which("git")
    if not git:
        return None
    res = subprocess.run([git, "-C", str(home.memory), "fsck", "--no-progress", "--no-dangling"],
                         capture_output=True, text=True, timeout=300)
    lines = [ln for ln in (res.stdout + res.stderr).splitlines()
             if ln and "fsyncObjectFiles is deprecated" not in ln and not ln.startswith("Checking")]
    if res.returncode != 0 or any(ln.startswith(("error", "missing", "broken", "bad", "fatal")) for ln in lines):
        return lines or [f"git fsck exited with {res.returncode}"]
    return []


def free_bytes(home: Home) -> int:
    return shutil.disk_usage(home.root).free


def _some(items: list[str], n: int = 5) -> str:
    return "; ".join(items[:n]) + (f" (and {len(items) - n} more)" if len(items) > n else "")


# --- repairs ------------------------------------------------------------------------------


_TMP_RE = re.compile(r"^\..+\.\d+\.tmp$")  # fsutil.atomic_write's temporary files


def stale_temp_files(home: Home) -> list[Path]:
    out = []
    for root, _dirs, files in os.walk(home.root, followlinks=False):
        if os.sep + ".git" in root[len(str(home.root)):]:
            continue
        out += [Path(root) / f for f in files if _TMP_RE.match(f) and not os.path.islink(Path(root) / f)]
    return sorted(out)


def _remove_temp_files(home: Home) -> str:
    with HomeLock(home):
        tmps = stale_temp_files(home)
        for p in tmps:
            p.unlink()
    return f"removed {len(tmps)} temporary file(s)"


def remove_links(home: Home) -> str:
    """Remove symbolic links inside the home; their targets are never touched."""
    removed = []
    for root, dirs, files in os.walk(home.root, followlinks=False):
        for name in dirs + files:
            p = Path(root) / name
            if p.is_symlink():
                p.unlink()
                removed.append(str(p.relative_to(home.root)))
    return f"removed {len(removed)} link(s): {', '.join(removed)}"


def _open_app_once(home: Home) -> int:
    """Open and close the app: start-up reconciles memory/ with the log. Returns memory revisions."""
    from memtray.core.app import App
    from memtray.core.base.config import Config

    app = App.open(home, config=Config(), start_services=False)
    try:
        return app.store.state.memory_revisions
    finally:
        app.close()


def reconcile_memory(home: Home) -> str:
    n = _open_app_once(home)
    return f"memory/ matches the log again ({n} revisions)"


def rebuild_memory(home: Home) -> str:
    """Move memory/ aside and make it again from the log; carry an unrecorded hand edit over."""
    from memtray.core.base.clock import Clock
    from memtray.core.memory.gitrepo import bring_back, move_aside

    carried: dict[str, bytes] = {}
    aside: Path | None = None
    with HomeLock(home):
        if home.memory.exists():
            logged = {MemoryWritten.of(r).memory for r in EventLog.open(home.events, readonly=True).records()
                      if r.type == MemoryWritten.TYPE}
            aside, carried = move_aside(home.memory, Clock().now().strftime("%Y%m%dT%H%M%S"), logged)
    n = _open_app_once(home)
    said = f"rebuilt memory/ from the event log ({n} revisions)"
    if aside is not None:
        with HomeLock(home):
            bring_back(aside, home.memory, carried)
        if carried:
            n = _open_app_once(home)  # start-up records the hand edit as a user edit
            said += f"; the hand edit of {', '.join(sorted(carried))} was recorded"
        said += f"; the damaged copy is in {aside.name} (delete it when you are satisfied)"
    return said


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
        # after the last newline: b"" (dropped) or a torn record (kept as it is, cut on open)
        last = lines.pop()
        trailing = last or None
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
                                format_ts(clock.now()), LogDamaged.TYPE, LogDamaged.VERSION, None,
                                LogDamaged(side_file=path.name + ".damaged", lines=len(pending)).to_data())
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
        level = level_of(f)
        mark = {"fail": "FAIL", "note": "note", "warn": "warn"}.get(level, "ok  ")
        title = f.title.removeprefix("note: ").removeprefix("warning: ")
        out(f"  [{mark}] {title}" + (f": {f.detail}" if f.detail else ""))
        if not f.ok and f.repair:
            out(f"         repair: {f.repair}")
    warnings = sum(level_of(f) == "warn" for f in findings)
    if not bad:
        out("No problems found." + (f" {warnings} warning(s)." if warnings else ""))
        return 0
    if not repair:
        fixable = [f for f in bad if f.fix]
        said = f"{len(bad)} problem(s)."
        if fixable and len(fixable) == len(bad):
            said += " Run `memtray doctor --repair` to fix them."
        elif fixable:  # suggest --repair only for what it repairs
            said += " `memtray doctor --repair` can fix: " + "; ".join(f.title for f in fixable) + "."
        out(said)
        return 1
    done: set[str] = set()
    for f in bad:
        if f.fix is None or (f.code and f.code in done and f.code == "memory"):
            continue
        if not assume_yes:
            try:
                answer = input(f"Repair '{f.title}' ({f.repair})? [y/N] ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                out("  skipped")
                continue
        try:
            out(f"  {f.fix()}")
        except MemtrayError as exc:
            out(f"  could not repair: {exc}")
            continue
        done.add(f.code)
    remaining = [f for f in check(home) if not f.ok]
    out("All repaired." if not remaining else f"{len(remaining)} problem(s) remain.")
    return 0 if not remaining else 1


def level_of(f: Finding) -> str:
    """``ok``, ``note``, ``warn`` (reported, not a failure: exit status 0) or ``fail``."""
    if not f.ok:
        return "fail"
    if f.title.startswith("warning: "):
        return "warn"
    return "note" if f.title.startswith("note: ") else "ok"


def report_json(findings: list[Finding]) -> str:
    return json.dumps([{"ok": f.ok, "code": f.code, "title": f.title, "detail": f.detail, "level": level_of(f),
                        "repairable": f.fix is not None} for f in findings])
