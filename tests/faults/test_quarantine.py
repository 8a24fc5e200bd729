"""A memory revision git cannot store (logged by an older version) never breaks a start.

Older versions logged a ``memory.written`` whose text held a lone surrogate; its git
commit then failed at every start and no command worked again. Now such an event is
quarantined: skipped in git, kept in the log, reported at start and by ``doctor``,
whose repair writes the memory again with valid text.
"""

from __future__ import annotations

from pathlib import Path

from memtray.core.admin import doctor
from memtray.core.base.home import Home
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import Record, legacy_line
from memtray.core.log.segments import verify

from tests.faults.support import git, open_app, write_memory
from tests.fixtures.llm_server import ScriptedLLMServer, reply

BAD = "# Facts\n\n- likes tea\n- caf\udce9 lover \ud800\x00\n"


def _plant(home: Home, data: dict[str, object]) -> int:
    elog = EventLog.open(home.events, readonly=True)
    seq = elog.last_seq + 1
    elog.close()
    seg = max(home.events.glob("*.jsonl"))
    rec = Record(seq, f"01LEGACY{seq:018d}", "2026-11-30T09:00:00.000Z", "memory.written", 1, None, data)
    with open(seg, "ab") as fh:
        fh.write(legacy_line(rec))
    return seq


def test_an_unstorable_revision_is_quarantined_reported_and_repaired(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "home")
    app = open_app(home)
    try:
        app.write(lambda: write_memory(app, ["likes tea"]))
    finally:
        app.close()
    seq = _plant(home, {"memory": BAD, "reason": "user-edit", "source": "user", "history_append": "met \udcff"})
    assert verify(home.events) == (seq, [])  # a valid record, as the old version wrote it

    with ScriptedLLMServer() as server:
        server.script(reply("still here"))
        app = open_app(home, model="openai/test-model", api_base=server.base_url)  # used to die here
        try:
            said = " ".join(app.memory.problems)
            assert f"event seq {seq}" in said and "git cannot store" in said, said
            res = app.run(app.agent.turn("quick", "hello?", stream=False))
            assert res.reply == "still here"
            assert [r.data.get("content") for r in app.store.log.records() if r.data.get("role") == "user"] \
                == ["hello?"]
        finally:
            app.close()
    git(home.memory, "fsck", "--strict")

    found = {f.code: f for f in doctor.check(home)}
    assert not found["text"].ok and f"seq {seq} (memory.written)" in found["text"].detail
    assert "lone surrogate (U+DCE9)" in found["text"].detail and found["text"].fix is not None
    out: list[str] = []
    assert doctor.run_doctor(home, repair=True, assume_yes=True, out=out.append) == 0, "\n".join(out)
    assert [f for f in doctor.check(home) if not f.ok] == []
    assert (home.memory / "MEMORY.md").read_text() == "# Facts\n\n- likes tea\n- caf\ufffd lover \ufffd\n"
    git(home.memory, "fsck", "--strict")
    app = open_app(home)
    try:
        assert app.memory.problems == []  # the quarantined revision is no longer the current one
    finally:
        app.close()


def test_a_full_disk_at_start_is_reported_and_never_stops_a_command(tmp_path: Path) -> None:
    """git behind the log (a commit failed) and its catch-up failing again at the next start."""
    import errno

    from memtray.core.memory import gitrepo

    home = Home.resolve(tmp_path / "home")
    app = open_app(home)
    try:
        app.write(lambda: write_memory(app, ["likes tea"]))
    finally:
        app.close()
    _plant(home, {"memory": "# Facts\n\n- likes tea\n- plays chess\n", "reason": "agent", "source": "model"})
    real = gitrepo.GitRepo.commit

    def full(self: gitrepo.GitRepo, *a: object, **kw: object) -> str:
        raise gitrepo.GitError(f"cannot write the memory repository: {gitrepo._describe(OSError(errno.ENOSPC, 'x'))}")

    gitrepo.GitRepo.commit = full  # type: ignore[method-assign]
    try:
        app = open_app(home)
        try:
            said = " ".join(app.memory.problems)
            assert "could not follow the event log" in said and "the disk is full" in said, said
            assert app.store.state.memory.endswith("- plays chess\n")  # memory is the log's
        finally:
            app.close()
    finally:
        gitrepo.GitRepo.commit = real  # type: ignore[method-assign]
    app = open_app(home)
    try:
        assert app.memory.problems == [] and app.memory.commits_made_on_start == 1
    finally:
        app.close()
    assert (home.memory / "MEMORY.md").read_text().endswith("- plays chess\n")
