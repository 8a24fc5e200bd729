"""The doctor's checks of sync: the setting, the last outcome, the private sync repository.

Read-only and offline (the doctor never reaches a remote): what the last sync said
(``sync/status.json``), whether automatic sync can run, and ``git fsck`` of
``sync/repo.git``, a cache the repair may delete (the next sync fetches again; the
cursors live in the event log, not there).
"""

from __future__ import annotations

import shutil
from typing import Any

from memtray.core.base.config import Config
from memtray.core.base.errors import MemtrayError
from memtray.core.base.findings import Finding
from memtray.core.base.home import Home
from memtray.core.sync.gitcli import Git, SyncError
from memtray.core.sync.status import read_status

#: failed automatic attempts in a row after which the doctor calls it a problem, not a warning
FAILING = 3


def check_sync(home: Home, cfg: Config | None) -> list[Finding]:
    st = read_status(home)
    remote = cfg.sync_remote if cfg is not None else ""
    enabled = cfg.sync_enabled if cfg is not None else False
    repo = home.root / "sync" / "repo.git"
    if not st and not remote and not repo.exists():
        return [Finding(True, "note: sync is not set up (see `memtray sync`)", code="sync")]
    out: list[Finding] = []
    if enabled and not remote:
        out.append(Finding(True, "warning: sync_enabled is on but sync_remote is empty: nothing syncs",
                           code="sync"))
    if st.get("last_error"):
        failures = int(st.get("failures", 1))
        detail = f"{st['last_error']} (at {st.get('last_attempt')}, {failures} failure(s) in a row; last success: " \
                 f"{st.get('last_success') or 'never'})"
        if st.get("hint"):  # the repair, when there is one, is in the hint (`memtray sync --republish`, ...)
            detail += f"; {st['hint']}"
        if failures >= FAILING:
            out.append(Finding(False, "sync keeps failing", detail, code="sync"))
        else:
            out.append(Finding(True, "warning: the last sync failed (retried automatically)", detail, code="sync"))
    elif st:
        out.append(Finding(True, f"sync: device {st.get('device')}, last sync {st.get('last_success')} with "
                           f"{st.get('remote')}", code="sync"))
    if st.get("pending_heads"):
        out.append(Finding(True, f"warning: {st['pending_heads']} memory revision(s) of other devices are not merged "
                           "(this memtray cannot merge memory)", code="sync"))
    waiting = open_conflicts(home)
    if waiting:
        out.append(Finding(True, f"note: {waiting} sync conflict(s) waiting for review "
                           "(`memtray memory review`)", code="sync"))
    if repo.exists():
        out.append(_fsck(home))
    return out


def open_conflicts(home: Home) -> int:
    """The merge conflicts waiting for review now, from the log (not the last sync's list:
    one resolved since, by a review or a hand edit, no longer counts)."""
    from memtray.core.log.eventlog import EventLog
    from memtray.core.log.events import MemoryReviewed, MemoryWritten
    from memtray.core.memory.factops import waiting
    from memtray.core.memory.facts import Ledger

    if not home.events.exists():
        return 0
    try:
        elog = EventLog.open(home.events, readonly=True)
    except MemtrayError:
        return 0  # the log check reports it
    # one pass, keeping only what the review queue is made of (as the fold does): the items
    # memory revisions hold for review, those reviewed since, and the last revision
    last: MemoryWritten | None = None
    items: dict[str, dict[str, Any]] = {}
    try:
        for rec in elog.records():
            if rec.type == MemoryWritten.TYPE:
                last = MemoryWritten.of(rec)
                for item in last.flagged or ():
                    items[item["id"]] = {**item, "seq": rec.seq}
            elif rec.type == MemoryReviewed.TYPE:
                items.pop(MemoryReviewed.of(rec).item, None)
    except MemtrayError:
        return 0
    finally:
        elog.close()
    conflicts = [i for i in items.values() if i["kind"] == "merge-conflict"]
    if not conflicts or last is None:
        return 0
    return len(waiting(conflicts, Ledger.of(last.memory, last.facts)))


def _fsck(home: Home) -> Finding:
    repo = home.root / "sync" / "repo.git"
    try:
        res = Git(repo).run(["fsck", "--no-progress", "--connectivity-only"], check=False)
    except SyncError as exc:
        return Finding(True, f"note: sync repository not checked ({exc})", code="sync-repo")
    if res.code == 0:
        return Finding(True, "sync repository passes git fsck", code="sync-repo")

    def drop() -> str:
        shutil.rmtree(repo, ignore_errors=True)
        return "removed sync/repo.git; the next sync fetches the streams again"

    return Finding(False, "the sync repository is damaged", res.err.strip().splitlines()[-1] if res.err.strip() else "",
                   "delete sync/repo.git (a cache: the next sync fetches again)", drop, code="sync-repo")
