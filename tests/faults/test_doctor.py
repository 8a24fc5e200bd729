"""`memtray doctor`: every finding it can make, and every repair it offers.

Each test breaks one thing in a healthy data home, checks that doctor reports
exactly that (and exits non-zero), repairs it, and checks that doctor is then
clean and the home still works.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from memtray.core.admin import doctor
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.log.segments import verify
from memtray.core.log.store import CHECKPOINT_NAME, Store

from tests.crash.harness import check_app
from tests.faults.support import crash, git, loose_object, open_app, rev_list, write_memory
from tests.support import run_cli


@pytest.fixture
def healthy(tmp_path: Path) -> Home:
    home = Home.resolve(tmp_path / "home")
    app = open_app(home)
    for i, facts in enumerate([["likes tea"], ["likes tea", "plays chess"], ["plays chess", "lives in Oslo"]]):
        write_memory(app, facts, history_append=f"entry {i}")
        app.store.append(Message(role="user", content=f"hello {i}"), session="quick")
    app.close()
    assert _problems(home) == []
    return home


def _problems(home: Home) -> list[doctor.Finding]:
    return [f for f in doctor.check(home) if not f.ok]


def _repair(home: Home, code: str) -> str:
    bad = _problems(home)
    assert [f.code for f in bad] == [code], [(f.code, f.title, f.detail) for f in bad]
    assert bad[0].fix is not None and bad[0].repair
    said = bad[0].fix()
    assert _problems(home) == [], [(f.code, f.title, f.detail) for f in _problems(home)]
    return said


def _lines(out: list[str]) -> str:
    return "\n".join(out)


def test_missing_home_is_not_a_problem(tmp_path: Path) -> None:
    findings = doctor.check(Home.resolve(tmp_path / "nowhere"))
    assert len(findings) == 1 and findings[0].ok and "does not exist yet" in findings[0].title


def test_healthy_home_reports_every_check(healthy: Home) -> None:
    out: list[str] = []
    assert doctor.run_doctor(healthy, repair=False, assume_yes=False, out=out.append) == 0
    text = _lines(out)
    for needle in ("permissions: data home is private", "no other memtray process", "event log: 6 records",
                   "checkpoint matches a full replay", "config: model", "keyring:", "disk:",
                   "memory repository passes git fsck", "MEMORY.md == git HEAD", "No problems found."):
        assert needle in text, needle
    codes = {f.code for f in doctor.check(healthy)}
    assert {"permissions", "lock", "log", "checkpoint", "config", "keyring", "disk", "memory"} <= codes


def test_permissions(healthy: Home) -> None:
    os.chmod(healthy.events / "000001.jsonl", 0o644)
    os.chmod(healthy.state, 0o755)
    bad = _problems(healthy)
    assert "000001.jsonl is readable by others (mode 644" in bad[0].detail
    _repair(healthy, "permissions")
    assert (healthy.events / "000001.jsonl").stat().st_mode & 0o777 == 0o600
    assert healthy.state.stat().st_mode & 0o777 == 0o700


def test_planted_links_are_removed_not_followed(healthy: Home, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("not memtray's")
    os.chmod(target, 0o644)
    (healthy.events / "000002.jsonl").symlink_to(target)
    said = _repair(healthy, "links")
    assert "events/000002.jsonl" in said
    assert target.read_text() == "not memtray's" and target.stat().st_mode & 0o777 == 0o644


def test_leftover_temp_files(healthy: Home) -> None:
    (healthy.state / f".{CHECKPOINT_NAME}.4242.tmp").write_bytes(b"half a checkpoint")
    (healthy.memory / ".MEMORY.md.4242.tmp").write_bytes(b"- half")
    assert "removed 2 temporary file(s)" in _repair(healthy, "tempfiles")


def test_running_instance_makes_checks_read_only(healthy: Home) -> None:
    (healthy.state / f".{CHECKPOINT_NAME}.4242.tmp").write_bytes(b"in flight")  # not stale while it runs
    os.chmod(healthy.state, 0o755)
    store = Store.open(healthy)
    try:
        findings = doctor.check(healthy)
        assert any(f.ok and "another memtray process" in f.title for f in findings)
        assert "tempfiles" not in {f.code for f in findings}
        # a repair that needs the lock says so instead of failing
        (healthy.events / "000001.jsonl").write_bytes((healthy.events / "000001.jsonl").read_bytes())
        out: list[str] = []
        seg = healthy.events / "000001.jsonl"
        raw = bytearray(seg.read_bytes())
        raw[raw.index(b"\n") + 20] ^= 1
        seg.write_bytes(bytes(raw))
        assert doctor.run_doctor(healthy, repair=True, assume_yes=True, out=out.append) == 1
        assert "could not repair: another memtray process" in _lines(out)
    finally:
        store.close(checkpoint=False)


def test_damaged_record_in_the_middle(healthy: Home) -> None:
    seg = healthy.events / "000001.jsonl"
    raw = bytearray(seg.read_bytes())
    raw[raw.index(b"\n") + 30] ^= 0x01  # inside record 2
    seg.write_bytes(bytes(raw))
    bad = _problems(healthy)
    # only the log is at fault: memory is not blamed (nor rebuilt) for a log it cannot read
    assert [f.code for f in bad] == ["log"] and "000001.jsonl, line 2" in bad[0].detail
    out: list[str] = []
    doctor.run_doctor(healthy, repair=False, assume_yes=False, out=out.append)
    assert "[note] memory not compared with the event log until the log is repaired" in _lines(out)
    said = bad[0].fix()  # type: ignore[misc]
    assert "1 damaged line(s) kept in 000001.jsonl.damaged" in said
    count, damages = verify(healthy.events)
    assert damages == [] and count == 6
    store = Store.open(healthy)
    assert [r.type for r in store.log.records()][1] == "log.damaged"
    assert store.append(Message(role="user", content="after repair")).seq == 7
    store.close()


def test_checkpoint_that_disagrees_with_replay(healthy: Home) -> None:
    path = healthy.state / CHECKPOINT_NAME
    body = json.loads(path.read_bytes())
    body["state"]["memory"] = "# Facts\n\n- something never written\n"
    path.write_text(json.dumps(body))
    assert "checkpoint removed" in _repair(healthy, "checkpoint")
    assert not path.exists()


def test_broken_config_is_reported(healthy: Home) -> None:
    healthy.config.write_text("model = [unclosed\n")
    bad = _problems(healthy)
    assert [f.code for f in bad] == ["config"] and bad[0].fix is None
    out: list[str] = []
    assert doctor.run_doctor(healthy, repair=False, assume_yes=False, out=out.append) == 1
    assert "1 problem(s)." in _lines(out)


def test_insecure_keyring_and_low_disk(healthy: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtray.core.base import keys

    monkeypatch.setattr(keys, "backend_is_secure", lambda: False)
    monkeypatch.setattr(doctor, "free_bytes", lambda _home: 50 * 2**20)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MEMTRAY_API_BASE", raising=False)
    monkeypatch.setenv("MEMTRAY_MODEL", "openai/gpt-4o-mini")
    bad = {f.code: f for f in _problems(healthy)}
    assert set(bad) == {"keyring", "disk"}
    assert "OPENAI_API_KEY in the environment" in bad["keyring"].detail and "50 MiB free" in bad["disk"].detail
    assert bad["keyring"].fix is None and bad["disk"].fix is None
    out: list[str] = []
    assert doctor.run_doctor(healthy, repair=False, assume_yes=False, out=out.append) == 1
    assert "--repair" not in "\n".join(out)  # it repairs neither


def test_no_keyring_is_a_warning_when_the_key_comes_from_the_environment(
    healthy: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtray.core.base import keys

    monkeypatch.setattr(keys, "backend_is_secure", lambda: False)
    monkeypatch.setenv("MEMTRAY_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-from-the-environment-0000")
    assert _problems(healthy) == []
    out: list[str] = []
    assert doctor.run_doctor(healthy, repair=False, assume_yes=False, out=out.append) == 0
    text = "\n".join(out)
    assert "[warn] no secure keyring backend" in text and "comes from the environment (OPENAI_API_KEY)" in text
    assert "No problems found. 1 warning(s)." in text and "--repair" not in text
    found = json.loads(doctor.report_json(doctor.check(healthy)))
    assert {f["code"]: f["level"] for f in found}["keyring"] == "warn"
    monkeypatch.setenv("MEMTRAY_MODEL", "ollama/llama3")  # needs no key at all
    monkeypatch.delenv("OPENAI_API_KEY")
    assert _problems(healthy) == []


def test_memory_repository_deleted(healthy: Home) -> None:
    import shutil

    shas = rev_list(healthy.memory)
    shutil.rmtree(healthy.memory)
    assert "rebuilt memory/ from the event log (3 revisions)" in _repair(healthy, "memory")
    assert rev_list(healthy.memory) == shas


def test_hand_edit_not_yet_recorded(healthy: Home) -> None:
    (healthy.memory / "MEMORY.md").write_text("# Facts\n\n- plays chess\n- lives in Oslo\n- edited by hand\n")
    bad = _problems(healthy)
    assert "a hand edit?" in bad[0].detail
    _repair(healthy, "memory")
    checked = check_app(healthy.root, set())
    assert checked.commits == 4  # the edit became a user-edit revision


def test_git_behind_the_log(healthy: Home) -> None:
    parent = git(healthy.memory, "rev-parse", "HEAD~1").strip()
    head = rev_list(healthy.memory)[0]
    git(healthy.memory, "update-ref", "refs/heads/main", parent)
    assert "HEAD records event" in _problems(healthy)[0].detail
    _repair(healthy, "memory")
    assert rev_list(healthy.memory)[0] == head  # the same commit is made again


def test_no_commits_but_memory_events(healthy: Home) -> None:
    git(healthy.memory, "update-ref", "-d", "refs/heads/main")
    assert "has no commits" in _problems(healthy)[0].title
    _repair(healthy, "memory")
    check_app(healthy.root, set(), fsck=True)


@pytest.mark.parametrize("damage", ["empty-head-commit", "garbage-ref"])
def test_unreadable_repository_is_rebuilt(healthy: Home, damage: str) -> None:
    shas = rev_list(healthy.memory)
    if damage == "empty-head-commit":
        obj = loose_object(healthy.memory, shas[0])
        obj.chmod(0o600)
        obj.write_bytes(b"")
    else:
        (healthy.memory / ".git" / "refs" / "heads" / "main").write_text("not a sha\n")
    said = _repair(healthy, "memory")
    assert "memory.damaged-" in said
    assert rev_list(healthy.memory) == shas
    assert any(p.name.startswith("memory.damaged-") for p in healthy.root.iterdir())


def test_rebuild_keeps_an_unrecorded_hand_edit(healthy: Home) -> None:
    (healthy.memory / "MEMORY.md").write_text("# Facts\n\n- plays chess\n- edited before the damage\n")
    head = rev_list(healthy.memory)[0]
    obj = loose_object(healthy.memory, head)
    obj.chmod(0o600)
    obj.write_bytes(b"")
    said = _repair(healthy, "memory")
    assert "hand edit of MEMORY.md was recorded" in said
    assert "edited before the damage" in (healthy.memory / "MEMORY.md").read_text()
    assert check_app(healthy.root, set()).commits == 4


@pytest.mark.parametrize(("answer", "code"), [("y", 0), ("n", 1), (None, 1)])
def test_repair_asks_first(healthy: Home, monkeypatch: pytest.MonkeyPatch, answer: str | None, code: int) -> None:
    os.chmod(healthy.events / "000001.jsonl", 0o644)
    asked: list[str] = []

    def fake_input(prompt: str) -> str:
        asked.append(prompt)
        if answer is None:
            raise EOFError
        return answer

    monkeypatch.setattr("builtins.input", fake_input)
    out: list[str] = []
    assert doctor.run_doctor(healthy, repair=True, assume_yes=False, out=out.append) == code
    assert len(asked) == 1 and "Repair 'permissions'" in asked[0] and "[y/N]" in asked[0]
    assert ("skipped" in _lines(out)) == (answer != "y")


def test_cli_doctor_exit_codes_and_repair(healthy: Home) -> None:
    os.chmod(healthy.events / "000001.jsonl", 0o644)
    secure = {"PYTHON_KEYRING_BACKEND": "tests.support.MemoryKeyring"}
    out = run_cli(healthy.root, "doctor", **secure)
    assert out.returncode == 1
    assert "[FAIL] permissions" in out.stdout and "Run `memtray doctor --repair`" in out.stdout
    out = run_cli(healthy.root, "doctor", "--repair", "--yes", **secure)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "All repaired." in out.stdout
    assert run_cli(healthy.root, "doctor", **secure).returncode == 0
    # without a usable keyring: a problem doctor explains but cannot repair
    out = run_cli(healthy.root, "doctor", "--repair", "--yes")
    assert out.returncode == 1 and "[FAIL] no secure keyring backend" in out.stdout


def test_doctor_after_a_crash_mid_commit(tmp_path: Path) -> None:
    """A crash between the memory.written append and its commit: doctor says so; repair
    (or the next start) makes the commit."""
    home = Home.resolve(tmp_path / "h")
    app = open_app(home)
    write_memory(app, ["likes tea"])
    svc = app.memory
    app.store._listeners.remove(svc.projection._on_append)  # the process dies before git follows
    write_memory(app, ["likes tea", "plays chess"])
    crash(app)
    bad = _problems(home)
    assert bad and bad[0].code == "memory" and "HEAD records event 1 but the last memory event is 2" in bad[0].detail
    _repair(home, "memory")
    assert check_app(home.root, set()).commits == 2
