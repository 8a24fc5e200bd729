"""Storage faults through the fault-injecting file layer (core/faults.py).

* ENOSPC / EIO on the log's write and fsync (whole, and after a partial write),
  on opening a new segment, and on the undo after a failure;
* ENOSPC / EIO on write, fsync and rename of atomic saves (checkpoints, the
  memory work tree) and on git's object writes;
* lost unsynced writes: a power cut truncates every file back to its last
  fsynced size, keeping any prefix of the unsynced bytes;
* a zero-byte git object, a deleted state/, a deleted memory/.

What must hold: an append either is acknowledged and survives, or raises a
clear :class:`LogWriteError` and leaves no trace; retrying with the same id
never duplicates; the log stays gapless and verifiable; derived state (git,
checkpoints) catches up from the log with identical commit SHAs.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Any

import pytest
from memtray.core.admin import doctor
from memtray.core.base.errors import LogWriteError
from memtray.core.base.faults import Fault, FaultyFileOps, PowerCut, fs_faults
from memtray.core.base.fsutil import DiskError
from memtray.core.base.home import Home
from memtray.core.log.events import ConsolidationFailed, ConsolidationStarted, Verbatim
from memtray.core.log.projections import replay
from memtray.core.log.segments import verify
from memtray.core.log.store import CHECKPOINT_NAME, Store

from tests.crash.harness import check_app, check_log, git_fsck
from tests.faults.support import crash, git, loose_object, open_app, rev_list, write_memory

ERRNOS = [errno.ENOSPC, errno.EIO]


def _msg(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {i} " + "x" * (i % 50)}


def _store(home: Home, ops: FaultyFileOps, **kw: Any) -> Store:
    return Store.open(home, files=ops, **kw)


def _segment_bytes(home: Home) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.events.glob("*.jsonl")))


# --- the event log --------------------------------------------------------------------------


@pytest.mark.parametrize("err", ERRNOS, ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize(("op", "partial"), [("write", None), ("write", 37), ("fsync", None)])
def test_log_write_fault_leaves_no_trace_and_retry_is_idempotent(
    tmp_path: Path, op: str, partial: int | None, err: int
) -> None:
    home = Home.resolve(tmp_path / "h")
    ops = FaultyFileOps()
    store = _store(home, ops)
    for i in range(5):
        store.append(Verbatim("message", _msg(i)), session="s")
    before_state = store.state.to_json()
    before_bytes = _segment_bytes(home)
    ops.arm(Fault(op, err, partial=partial))
    with pytest.raises(LogWriteError) as exc:
        store.append(Verbatim("message", _msg(5)), session="s", id="01RETRY0000000000000000000")
    assert ("disk is full" if err == errno.ENOSPC else "I/O error") in str(exc.value)
    assert "nothing was lost" in exc.value.hint
    assert store.state.to_json() == before_state  # state did not advance
    assert _segment_bytes(home) == before_bytes  # the failed bytes were taken back
    # the retry (same id) succeeds once; a second retry returns the same record
    rec = store.append(Verbatim("message", _msg(5)), session="s", id="01RETRY0000000000000000000")
    again = store.append(Verbatim("message", _msg(5)), session="s", id="01RETRY0000000000000000000")
    assert rec.seq == again.seq == 6
    store.close()
    assert check_log(home.root, {1, 2, 3, 4, 5, 6}, segment_bytes=16 * 2**20).events == 6
    assert verify(home.events) == (6, [])


@pytest.mark.parametrize("partial", [None, 23])
def test_failed_undo_is_rescanned_before_the_next_append(tmp_path: Path, partial: int | None) -> None:
    """Write (or fsync) fails and so does the truncate: what reached the disk is adopted
    if it is a whole record, cut into .torn if not -- never duplicated, never a gap."""
    home = Home.resolve(tmp_path / "h")
    ops = FaultyFileOps()
    store = _store(home, ops)
    store.append(Verbatim("message", _msg(0)), session="s")
    if partial:
        ops.arm(Fault("write", errno.EIO, partial=partial))
    else:
        ops.arm(Fault("fsync", errno.EIO))  # the whole record is in the file
    ops.arm(Fault("truncate", errno.EIO))
    with pytest.raises(LogWriteError):
        store.append(Verbatim("message", _msg(1)), session="s", id="01WEDGED000000000000000000")
    rec = store.append(Verbatim("message", _msg(1)), session="s", id="01WEDGED000000000000000000")
    assert rec.seq == 2
    assert [r.id for r in store.log.records()].count("01WEDGED000000000000000000") == 1
    torn = home.events / "000001.jsonl.torn"
    assert torn.exists() == bool(partial)
    store.close()
    check_log(home.root, {1, 2}, segment_bytes=16 * 2**20)


@pytest.mark.parametrize("err", ERRNOS, ids=["ENOSPC", "EIO"])
def test_cannot_open_new_segment(tmp_path: Path, err: int) -> None:
    home = Home.resolve(tmp_path / "h")
    ops = FaultyFileOps()
    store = _store(home, ops, segment_bytes=400)
    store.append(Verbatim("message", _msg(0)), session="s")
    ops.arm(Fault("open", err))
    big = {"role": "user", "content": "y" * 500}
    with pytest.raises(LogWriteError, match="could not open"):
        store.append(Verbatim("message", big), session="s")
    assert store.log.last_seq == 1
    assert store.append(Verbatim("message", big), session="s").seq == 2
    store.close()
    check_log(home.root, {1, 2}, segment_bytes=400)


@pytest.mark.parametrize("keep", [0, 1, 40, 10**6])
def test_power_cut_loses_only_unacknowledged_writes(tmp_path: Path, keep: int) -> None:
    """The machine dies during an fsync; the disk keeps the synced bytes plus any prefix
    (``keep``) of the rest. Reopening: every acknowledged event, nothing torn left."""
    home = Home.resolve(tmp_path / "h")
    ops = FaultyFileOps()
    store = _store(home, ops)
    acked = {store.append(Verbatim("message", _msg(i)), session="s").seq for i in range(8)}
    ops.arm(Fault("fsync", power_cut=True))
    with pytest.raises(PowerCut):
        store.append_many([(Verbatim("message", _msg(8)), "s", "01LOST00000000000000000001"),
                           (Verbatim("message", _msg(9)), "s", "01LOST00000000000000000002")])
    store.log.close()
    assert store._lock is not None
    store._lock.release()
    lost = ops.power_cut(keep_unsynced=keep)
    checked = check_log(home.root, acked, segment_bytes=16 * 2**20)
    assert 8 <= checked.events <= 10
    if keep == 0:
        assert sum(lost.values()) > 0 and checked.events == 8 and checked.cut == 0
    if keep >= 10**6:  # everything reached the disk after all: adopted, not duplicated on retry
        assert checked.events == 10
        again = Store.open(home)
        rec = again.append(Verbatim("message", _msg(9)), session="s", id="01LOST00000000000000000002")
        assert rec.seq == 10 and again.log.last_seq == 10
        again.close()


# --- atomic saves: checkpoints and the memory work tree ----------------------------------


@pytest.mark.parametrize("err", ERRNOS, ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("op", ["write", "fsync", "replace"])
def test_checkpoint_save_fault_keeps_the_old_one(tmp_path: Path, op: str, err: int) -> None:
    home = Home.resolve(tmp_path / "h")
    store = Store.open(home)
    for i in range(5):
        store.append(Verbatim("message", _msg(i)), session="s")
    store.checkpoint()
    old = (home.state / CHECKPOINT_NAME).read_bytes()
    for i in range(5, 9):
        store.append(Verbatim("message", _msg(i)), session="s")
    with fs_faults(Fault(op, err)), pytest.raises(DiskError):
        store.checkpoint()
    assert (home.state / CHECKPOINT_NAME).read_bytes() == old
    assert [p.name for p in home.state.iterdir()] == [CHECKPOINT_NAME]  # no temp file left
    live = store.state.to_json()
    store.close(checkpoint=False)
    again = Store.open(home)
    assert again.checkpoint_used and again.replayed_on_open == 4
    assert again.state.to_json() == live == replay(again.log.records()).to_json()
    again.close()


def test_automatic_checkpoint_failure_never_fails_an_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: a full disk during the automatic checkpoint made a durable append raise
    and skipped its listeners (so git missed the commit)."""
    import memtray.core.log.store as store_mod

    monkeypatch.setattr(store_mod, "CHECKPOINT_EVERY", 3)
    home = Home.resolve(tmp_path / "h")
    store = Store.open(home)
    seen: list[int] = []
    store.subscribe(lambda recs, _s: seen.extend(r.seq for r in recs))
    with fs_faults(Fault("replace", errno.ENOSPC, times=-1)):
        for i in range(7):
            store.append(Verbatim("message", _msg(i)), session="s")
        store.close()  # the final checkpoint fails quietly too
    assert seen == list(range(1, 8))
    check_log(home.root, set(seen), segment_bytes=16 * 2**20)


@pytest.mark.parametrize("err", ERRNOS, ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("op", ["write", "fsync", "replace"])
def test_work_tree_save_fault_is_caught_up(tmp_path: Path, op: str, err: int) -> None:
    """Writing MEMORY.md fails after the commit: the event is durable, the next write (or
    start) brings the work tree back in line; nothing is reported as a hand edit."""
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    write_memory(app, ["likes tea"])
    with fs_faults(Fault(op, err)):
        write_memory(app, ["likes tea", "plays chess"])
    assert "plays chess" in app.store.state.memory
    write_memory(app, ["likes tea", "plays chess", "lives in Oslo"])
    assert (home.memory / "MEMORY.md").read_text() == app.store.state.memory
    with fs_faults(Fault(op, err, times=-1)):
        write_memory(app, ["likes tea", "lives in Oslo"])
    crash(app)
    checked = check_app(home.root, set(), fsck=True)
    assert checked.commits == 4  # no extra user-edit revision


def _failing_git_objects(monkeypatch: pytest.MonkeyPatch, err: int) -> dict[str, bool]:
    """Make dulwich's object writes fail with ``err`` while the returned switch is on."""
    from dulwich.object_store import DiskObjectStore

    real = DiskObjectStore.add_object
    failing = {"on": True}

    def add_object(self: Any, obj: Any) -> None:
        if failing["on"]:
            raise OSError(err, "injected")
        real(self, obj)

    monkeypatch.setattr(DiskObjectStore, "add_object", add_object)
    return failing


@pytest.mark.parametrize("err", ERRNOS, ids=["ENOSPC", "EIO"])
def test_git_object_write_fault_is_caught_up(tmp_path: Path, err: int, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    write_memory(app, ["likes tea"])
    failing = _failing_git_objects(monkeypatch, err)
    write_memory(app, ["likes tea", "plays chess"])  # logged; the commit fails
    svc = app.memory
    assert svc.head_seq() < app.store.state.memory_seq
    failing["on"] = False
    write_memory(app, ["likes tea", "plays chess", "lives in Oslo"])  # catches up first
    assert svc.head_seq() == app.store.state.memory_seq
    failing["on"] = True
    write_memory(app, ["lives in Oslo", "likes tea", "plays chess", "bakes bread"])
    crash(app)
    failing["on"] = False
    assert check_app(home.root, set(), fsck=True).commits == 4


# --- damaged and deleted derived state --------------------------------------------------


def _history(app: Any) -> None:
    for i, facts in enumerate([["likes tea"], ["likes tea", "plays chess"], ["plays chess", "lives in Oslo"]]):
        write_memory(app, facts, history_append=f"entry {i}")
        app.store.append(Verbatim("message", _msg(i)), session="quick")


@pytest.mark.parametrize("which", ["commit", "tree", "blob"])
def test_zero_byte_git_object_is_found_and_rebuilt_from_the_log(tmp_path: Path, which: str) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    _history(app)
    app.close()
    shas = rev_list(home.memory)
    head = shas[0]
    target = {
        "commit": head,
        "tree": git(home.memory, "rev-parse", "HEAD^{tree}").strip(),
        "blob": git(home.memory, "rev-parse", "HEAD~1:MEMORY.md").strip(),
    }[which]
    obj = loose_object(home.memory, target)
    obj.chmod(0o600)
    obj.write_bytes(b"")

    findings = [f for f in doctor.check(home) if not f.ok]
    assert [f.code for f in findings] == ["memory"], findings
    assert findings[0].fix is not None and "rebuild" in findings[0].repair
    said = findings[0].fix()
    assert "rebuilt memory/ from the event log (3 revisions)" in said and "memory.damaged-" in said
    assert rev_list(home.memory) == shas  # deterministic commits: the same SHAs
    assert not [f for f in doctor.check(home) if not f.ok]
    check_app(home.root, set(), fsck=True)


@pytest.mark.parametrize("damage", ["empty HEAD commit", "garbage HEAD commit", "empty HEAD tree", "broken ref"])
def test_start_up_rebuilds_a_damaged_repository_from_the_log(tmp_path: Path, damage: str,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    _history(app)
    app.close()
    shas = rev_list(home.memory)
    memory = (home.memory / "MEMORY.md").read_bytes()
    (home.memory / "notes.txt").write_text("my own file in memory/\n")
    if damage == "broken ref":
        (home.memory / ".git" / "refs" / "heads" / "main").write_text("nonsense\n")
    else:
        target = shas[0] if "commit" in damage else git(home.memory, "rev-parse", "HEAD^{tree}").strip()
        obj = loose_object(home.memory, target)
        obj.chmod(0o600)
        obj.write_bytes(b"" if "empty" in damage else b"garbage")

    with caplog.at_level("WARNING"):
        app = open_app(home)  # no exception: git is derived from the log
    try:
        mem = app.memory
        assert len(mem.problems) == 1 and "rebuilt from the event log (3 revisions" in mem.problems[0]
        assert "memory.damaged-" in caplog.text
        mem_text = app.store.state.memory
    finally:
        app.close()
    assert rev_list(home.memory) == shas  # deterministic commits: the same SHAs
    assert (home.memory / "MEMORY.md").read_bytes() == memory and "plays chess" in mem_text
    assert (home.memory / "notes.txt").read_text() == "my own file in memory/\n"
    [aside] = [p for p in home.root.iterdir() if p.name.startswith("memory.damaged-")]
    assert (aside / ".git").is_dir()  # the damaged copy is kept, not deleted
    assert not [f for f in doctor.check(home) if not f.ok]
    check_app(home.root, set(), fsck=True)  # `git fsck` on the rebuilt repository


def test_a_hand_edit_in_a_damaged_repository_is_carried_over(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    _history(app)
    app.close()
    edited = (home.memory / "MEMORY.md").read_text() + "- edited by hand before the damage\n"
    (home.memory / "MEMORY.md").write_text(edited)
    obj = loose_object(home.memory, rev_list(home.memory)[0])
    obj.chmod(0o600)
    obj.write_bytes(b"")
    app = open_app(home)
    try:
        assert "edited by hand before the damage" in app.store.state.memory
        assert "edit of MEMORY.md was carried over" in app.memory.problems[0]
        last = [r for r in app.store.log.records() if r.type == "memory.written"][-1]
        assert last.data["reason"] == "user-edit"
    finally:
        app.close()
    assert len(rev_list(home.memory)) == 4
    check_app(home.root, set(), fsck=True)


@pytest.mark.parametrize("err", ERRNOS, ids=["ENOSPC", "EIO"])
def test_a_write_failure_at_start_is_not_damage(tmp_path: Path, err: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """git behind the log and the disk still full at the next start: the start goes on (git is
    a projection; it is reported), nothing is moved aside; once there is room it catches up,
    the user's files untouched."""
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    write_memory(app, ["likes tea"])
    failing = _failing_git_objects(monkeypatch, err)
    write_memory(app, ["likes tea", "plays chess"])  # logged; the commit fails
    crash(app)
    (home.memory / "notes.txt").write_text("mine\n")
    app = open_app(home)
    try:
        said = " ".join(app.memory.problems)
        assert "could not follow the event log" in said and "cannot write" in said, said
        assert app.store.state.memory.endswith("- plays chess\n")
    finally:
        app.close()
    assert not list(home.root.glob("memory.*")), "a healthy repository was moved aside"
    failing["on"] = False
    app = open_app(home)
    try:
        assert app.memory.problems == [] and app.memory.commits_made_on_start == 1
    finally:
        app.close()
    assert (home.memory / "notes.txt").read_text() == "mine\n"
    assert not list(home.root.glob("memory.*"))
    check_app(home.root, set(), fsck=True)


def test_a_hand_edit_is_carried_over_when_the_index_is_unreadable_too(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    _history(app)
    app.close()
    (home.memory / "MEMORY.md").write_text((home.memory / "MEMORY.md").read_text() + "- added by hand\n")
    (home.memory / ".git" / "index").write_bytes(b"garbage")
    obj = loose_object(home.memory, rev_list(home.memory)[0])
    obj.chmod(0o600)
    obj.write_bytes(b"")
    app = open_app(home)
    try:
        assert "added by hand" in app.store.state.memory  # the log now has it (a user edit)
    finally:
        app.close()
    check_app(home.root, set(), fsck=True)


def test_a_failed_rebuild_leaves_memory_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    _history(app)
    app.close()
    obj = loose_object(home.memory, rev_list(home.memory)[0])
    obj.chmod(0o600)
    obj.write_bytes(b"")
    before = sorted(str(p.relative_to(home.root)) for p in home.memory.rglob("*"))
    from memtray.core.memory import gitrepo

    def full(*_a: Any, **_k: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gitrepo, "atomic_write", full)  # the rebuild's checkout fails
    app = open_app(home)  # the start goes on: git is a projection, the failure is reported
    try:
        assert "could not be rebuilt" in " ".join(app.memory.problems)
    finally:
        app.close()
    assert sorted(str(p.relative_to(home.root)) for p in home.memory.rglob("*")) == before
    assert not list(home.root.glob("memory.*"))  # no half-made copy, nothing moved
    monkeypatch.undo()
    app = open_app(home)  # with room again it is rebuilt
    try:
        assert "rebuilt from the event log (3 revisions)" in app.memory.problems[0]
    finally:
        app.close()


def test_a_hand_edit_made_while_git_was_behind_survives_the_catch_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    write_memory(app, ["likes tea"])
    failing = _failing_git_objects(monkeypatch, errno.ENOSPC)
    write_memory(app, ["likes tea", "plays chess"])  # logged; the commit (and checkout) fail
    crash(app)
    failing["on"] = False
    edited = (home.memory / "MEMORY.md").read_text() + "- edited while git was behind\n"
    (home.memory / "MEMORY.md").write_text(edited)
    app = open_app(home)
    try:
        memory = app.store.state.memory
        # the edit was made on the text before "plays chess": both survive, merged
        assert "edited while git was behind" in memory and "plays chess" in memory and "likes tea" in memory
        last = [r for r in app.store.log.records() if r.type == "memory.written"][-1]
        assert last.data["reason"] == "user-edit"
        assert [f["text"] for f in last.data["diff"]["added"]] == ["edited while git was behind"]
        assert last.data["diff"]["dropped"] == []
    finally:
        app.close()
    check_app(home.root, set(), fsck=True)


def test_a_corrupt_index_at_start_is_damage_and_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    _history(app)
    failing = _failing_git_objects(monkeypatch, errno.ENOSPC)
    write_memory(app, ["plays chess", "lives in Oslo", "bakes bread"])  # git is behind the log
    crash(app)
    failing["on"] = False
    (home.memory / ".git" / "index").write_bytes(b"not an index")
    app = open_app(home)  # no AssertionError from dulwich: the repository is rebuilt
    try:
        assert "rebuilt from the event log (4 revisions)" in app.memory.problems[0]
        assert "bakes bread" in (home.memory / "MEMORY.md").read_text()
    finally:
        app.close()
    check_app(home.root, set(), fsck=True)


def test_deleted_state_and_memory_come_back_identical(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    _history(app)
    app.store.append(ConsolidationStarted(consolidation="c1", start=0, end=2, model="m"),
                     session="quick")
    app.store.append(ConsolidationFailed(consolidation="c1", reason="test"), session="quick")
    state = app.store.state.to_json()
    app.close()
    shas = rev_list(home.memory)
    files = {n: (home.memory / n).read_bytes() for n in ("MEMORY.md", "HISTORY.md")}

    shutil.rmtree(home.state)
    shutil.rmtree(home.memory)
    app = open_app(home)
    try:
        assert not app.store.checkpoint_used
        assert app.store.state.to_json() == state
        assert app.memory.commits_made_on_start == 3
    finally:
        app.close()
    assert rev_list(home.memory) == shas
    assert {n: (home.memory / n).read_bytes() for n in files} == files
    git_fsck(home.memory)
    assert git(home.memory, "status", "--porcelain") == ""
