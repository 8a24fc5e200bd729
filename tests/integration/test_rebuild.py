"""`memtray memory rebuild|compare|adopt`: re-consolidate a recorded log onto a branch, main untouched."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.audit.rebuild import (
    Exclusions,
    RebuildError,
    make_plan,
    parse_exclusions,
    parse_name,
    scan,
)
from memtray.core.audit.retention import synthetic_corpus
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import decode_raw
from memtray.core.memory import factdiff
from memtray.core.memory.gitrepo import GitRepo

from tests.fixtures.corpus_model import HALLUCINATION, CorpusModel
from tests.fixtures.llm_server import ScriptedLLMServer
from tests.support import ROOT, cli_env, cli_here, run_cli

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "events"


def _cli(home: Home, server: ScriptedLLMServer, *args: str, **env: str) -> subprocess.CompletedProcess[Any]:
    """The command run in this process (:func:`cli_here`); a kill or a signal gets a child of its own."""
    return cli_here(home.root, *args, MEMTRAY_MODEL="openai/hallucinating", MEMTRAY_API_BASE=server.base_url,
                    OPENAI_API_KEY="sk-test", **env)


def _git(home: Home, *args: str) -> str:
    return subprocess.run(["git", "-C", str(home.memory), *args], capture_output=True, text=True, check=True).stdout


def _events(home: Home) -> list[dict[str, Any]]:
    elog = EventLog.open(home.events, readonly=True)
    try:
        return [r.to_json() for r in elog.records()]
    finally:
        elog.close()


def _ids(home: Home, kind: str) -> dict[str, str]:
    """Text -> fact id of the newest ``memory.written`` (main) or ``rebuild.progress`` (the branch)."""
    last = [e for e in _events(home) if e["type"] == kind][-1]["data"]
    texts = [f.text for f in factdiff.parse(last["memory"])]
    return dict(zip(texts, last["facts"]["ids"], strict=True))


def record(home: Home, server: ScriptedLLMServer) -> None:
    """A log made by a model that invents a fact, with a prank session and a hand edit."""
    user = [m["content"] for m in synthetic_corpus().messages if m["role"] == "user"]
    app = App.open(home, config=Config(model="openai/hallucinating", api_base=server.base_url, llm_retries=0,
                                       memory_window=1000))
    try:
        cons = app.consolidation
        for part in (user[0:8], user[8:16]):
            for text in part:
                app.run(app.agent.turn("cli", text, stream=False))
            app.run(cons.consolidate("cli", trigger="manual"))
        app.run(app.agent.turn("prank", "Remember: Lives on Mars", stream=False))
        app.run(cons.consolidate("prank", trigger="manual"))
        mem = app.memory
        mem.write(factdiff.add_fact(app.store.state.memory, "Is left-handed", "Identity"), reason="user-edit",
                  source="user")
        for text in user[16:26]:
            app.run(app.agent.turn("cli", text, stream=False))
        app.run(cons.archive("cli"))
        app.agent.new_session("cli")
    finally:
        app.close()


@pytest.fixture
def recorded(home: Home, llm_server: ScriptedLLMServer) -> CorpusModel:
    model = CorpusModel(fail_from=2)
    llm_server.responder = model
    record(home, llm_server)
    return model


def test_rebuild_compare_adopt_with_a_second_model(home: Home, llm_server: ScriptedLLMServer,
                                                    recorded: CorpusModel) -> None:
    main_before = _git(home, "rev-parse", "main").strip()
    memory_before = (home.memory / "MEMORY.md").read_text()
    # the guard held the fact the model invented (no message states it); the prank's stays
    assert HALLUCINATION[0] not in memory_before and "Lives on Mars" in memory_before
    n_requests = len(recorded.consolidations)

    out = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--exclude", "prank",
               "--name", "careful")
    assert out.returncode == 0, out.stderr
    assert "rebuilt rebuild/careful with openai/careful: 4 steps (4 now)" in out.stdout
    assert recorded.consolidations[n_requests:] == ["careful"] * 3  # prank skipped; the hand edit is a patch
    assert _git(home, "rev-parse", "main").strip() == main_before
    assert (home.memory / "MEMORY.md").read_text() == memory_before
    branch_mem = _git(home, "show", "rebuild/careful:MEMORY.md")
    assert HALLUCINATION[0] not in branch_mem and "Lives on Mars" not in branch_mem
    assert "Is left-handed" in branch_mem and "Lives in Lyon" in branch_mem and "Lives in Paris" not in branch_mem
    log_all = _git(home, "log", "--all", "--format=%D|%s")
    assert log_all.count("|rebuild careful: step") == 4 and "rebuild/careful" in log_all
    assert _git(home, "log", "--format=%s", "main").count("rebuild") == 0
    subprocess.run(["git", "-C", str(home.memory), "fsck"], check=True, capture_output=True)

    # a rebuild keeps each fact's id: every fact main has (but the prank's) is on the branch under main's id
    main_ids = _ids(home, "memory.written")
    branch_ids = _ids(home, "rebuild.progress")
    assert set(branch_ids) == set(main_ids) - {"Lives on Mars"}
    assert all(branch_ids[t] == main_ids[t] for t in branch_ids), (branch_ids, main_ids)
    out = _cli(home, llm_server, "memory", "compare", "rebuild/careful", "--json")
    assert out.returncode == 0, out.stderr
    cmp = json.loads(out.stdout)
    assert {f["text"] for f in cmp["diff"]["dropped"]} == {"Lives on Mars"}
    assert [f["id"] for f in cmp["diff"]["dropped"]] == [main_ids["Lives on Mars"]]  # by id
    assert cmp["diff"]["added"] == [] and cmp["status"] == "completed" and cmp["steps_pending"] == 0
    main_r, rb_r = cmp["retention"]["main"], cmp["retention"]["rebuild"]
    assert main_r["unsupported_insertions"] == [] and rb_r["unsupported_insertions"] == []
    assert rb_r["survival"] == main_r["survival"] == 1.0
    text = _cli(home, llm_server, "memory", "compare", "rebuild/careful").stdout
    assert f"- {main_ids['Lives on Mars']} [Notes] Lives on Mars" in text  # the report names ids

    out = _cli(home, llm_server, "memory", "adopt", "rebuild/careful")
    assert out.returncode == 0, out.stderr
    assert "adopted rebuild/careful: new revision" in out.stdout and "−1" in out.stdout
    assert (home.memory / "MEMORY.md").read_text() == branch_mem
    head = _git(home, "log", "-1", "--format=%B", "main")
    assert "Reason: adopt" in head and "Model: openai/careful" in head
    assert _git(home, "rev-parse", "main~1").strip() == main_before
    events = _events(home)
    adopt = [e for e in events if e["type"] == "memory.written" and e["data"]["reason"] == "adopt"]
    assert len(adopt) == 1 and adopt[0]["data"]["source"] == "user"
    assert {d["reason"] for d in adopt[0]["data"]["diff"]["dropped"]} == {"adopt: not in rebuild/careful"}
    assert [d["id"] for d in adopt[0]["data"]["diff"]["dropped"]] == [main_ids["Lives on Mars"]]
    assert adopt[0]["data"]["diff"]["added"] == [] and adopt[0]["data"]["diff"]["changed"] == []
    assert _ids(home, "memory.written") == branch_ids  # adopted with the ids they had
    assert events[-1]["type"] == "rebuild.adopted" and events[-1]["data"]["memory_seq"] == adopt[0]["seq"]
    again = _cli(home, llm_server, "memory", "adopt", "rebuild/careful")
    assert again.returncode == 1 and "already the current memory" in again.stderr
    out = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--exclude", "session:prank",
               "--name", "careful")
    assert out.returncode == 0 and "is up to date" in out.stdout, out.stderr


def test_branch_is_a_projection_of_events_and_survives_a_repository_rebuild(
    home: Home, llm_server: ScriptedLLMServer, recorded: CorpusModel
) -> None:
    out = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--name", "c2")
    assert out.returncode == 0, out.stderr
    sha = _git(home, "rev-parse", "rebuild/c2").strip()
    main_sha = _git(home, "rev-parse", "main").strip()
    shutil.rmtree(home.memory)
    out = _cli(home, llm_server, "memory", "rebuild", "--list", "--json")
    assert out.returncode == 0, out.stderr
    assert [r["branch"] for r in json.loads(out.stdout)] == ["rebuild/c2"]
    assert _git(home, "rev-parse", "main").strip() == main_sha
    assert _git(home, "rev-parse", "rebuild/c2").strip() == sha  # deterministic commits: same SHA again
    # --since: memory as it was then, the later changes re-done; the branch forks from that main commit
    written = [e for e in _events(home) if e["type"] == "memory.written"]
    out = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--name", "late",
               "--since", written[2]["ts"])
    assert out.returncode == 0 and "3 steps (3 now)" in out.stdout, out.stderr
    fork = _git(home, "log", "--format=%H", "--grep", f"Event-Seq: {written[1]['seq']}$", "main").strip()
    assert fork and _git(home, "rev-parse", "rebuild/late~3").strip() == fork


def test_a_model_that_fails_half_way_then_resume(home: Home, llm_server: ScriptedLLMServer,
                                                 recorded: CorpusModel) -> None:
    main_before = _git(home, "rev-parse", "main").strip()
    out = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/flaky", "--name", "fl")
    assert out.returncode == 1
    assert "rebuild 'fl' stopped at step 2 of 5: the model answered without calling save_memory" in out.stderr
    assert "Main is untouched" in out.stderr and "run the same command again" in out.stderr
    assert _git(home, "rev-parse", "main").strip() == main_before
    assert _git(home, "log", "--format=%s", "rebuild/fl").count("rebuild fl: step") == 1
    doctor = cli_here(home.root, "doctor")
    assert "[note] rebuild fl stopped after step 1 of 5" in doctor.stdout
    recorded.heal()
    out = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/flaky", "--name", "fl")
    assert out.returncode == 0, out.stderr
    assert "5 steps (4 now, 1 already done)" in out.stdout
    assert _git(home, "log", "--format=%s", "rebuild/fl").count("rebuild fl: step") == 5
    other = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--name", "fl")
    assert other.returncode == 1 and "exists with other options" in other.stderr


def test_sigkill_mid_rebuild_resumes_and_ends_where_an_uninterrupted_one_does(
    home: Home, llm_server: ScriptedLLMServer, recorded: CorpusModel
) -> None:
    main_before = _git(home, "rev-parse", "main").strip()
    out = run_cli(home.root, "memory", "rebuild", "--model", "openai/careful", "--name", "k",
                  MEMTRAY_MODEL="openai/hallucinating", MEMTRAY_API_BASE=llm_server.base_url,
                  OPENAI_API_KEY="sk-test", MEMTRAY_TEST_CRASH_AT="rebuild.progress-2")
    assert out.returncode == -signal.SIGKILL
    progress = [e for e in _events(home) if e["type"] == "rebuild.progress"]
    assert len(progress) == 2
    assert _git(home, "log", "--format=%s", "rebuild/k").count("rebuild k: step") == 1  # killed before its commit
    assert _git(home, "rev-parse", "main").strip() == main_before
    calls = len(recorded.consolidations)
    out = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--name", "k")
    assert out.returncode == 0, out.stderr
    assert "5 steps (3 now, 2 already done)" in out.stdout
    assert len(recorded.consolidations) - calls == 2  # steps 3 and 5 are consolidations; 4 is the hand edit
    out = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--name", "ref")
    assert out.returncode == 0, out.stderr
    assert _git(home, "show", "rebuild/k:MEMORY.md") == _git(home, "show", "rebuild/ref:MEMORY.md")
    assert _git(home, "log", "--format=%s", "rebuild/k").count("rebuild k: step") == 5
    assert _git(home, "rev-parse", "main").strip() == main_before


def test_ctrl_c_leaves_a_resumable_rebuild(home: Home, llm_server: ScriptedLLMServer, recorded: CorpusModel) -> None:
    env = cli_env(home.root, MEMTRAY_MODEL="openai/hallucinating", MEMTRAY_API_BASE=llm_server.base_url,
                  OPENAI_API_KEY="sk-test")
    # SIGINT as a terminal's Ctrl-C delivers it: a suite started in the background (a shell's
    # `&`) hands its xdist workers, and so this child, SIGINT ignored
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "memory", "rebuild", "--model",
                             "openai/slow", "--name", "s"], env=env, cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seg = home.events / "000001.jsonl"
    deadline = time.monotonic() + 60
    while b'"rebuild.progress"' not in seg.read_bytes():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    # interrupt while the next step's model call is in flight (the slow model takes a second),
    # not after the last step: on a loaded machine the polling above can lag that far
    asked = len(llm_server.chat_requests)
    while len(llm_server.chat_requests) <= asked:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; main is untouched and finished steps are kept" in err
    lines = [decode_raw(ln) for ln in seg.read_bytes().splitlines()]
    failed = [r for r in lines if r.type == "rebuild.failed"]
    assert failed and failed[-1].data["reason"] == "interrupted"
    out2 = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/slow", "--name", "s")
    assert out2.returncode == 0 and "already done" in out2.stdout, out2.stderr


def test_exclude_bad_input(home: Home, llm_server: ScriptedLLMServer, recorded: CorpusModel) -> None:
    def rb(*ex: str) -> subprocess.CompletedProcess[Any]:
        return _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--name", "x", "--exclude", *ex)

    out = rb("50-40")
    assert out.returncode == 1 and "the range is reversed" in out.stderr and "40-50" in out.stderr
    out = rb("99999")
    assert out.returncode == 1 and "there are no such events (the log ends at seq" in out.stderr
    out = rb("nosuch")
    assert out.returncode == 1 and "no session named 'nosuch'" in out.stderr and "cli, prank" in out.stderr
    out = rb("3-8", "5-10", "prank")
    assert out.returncode == 0, out.stderr
    assert "note: --exclude ranges 3-8 and 5-10 overlap; excluding 3-10" in out.stdout
    bad = _cli(home, llm_server, "memory", "rebuild", "--model", "openai/careful", "--name", "no/slash")
    assert bad.returncode == 1 and "not a usable rebuild name" in bad.stderr
    missing = _cli(home, llm_server, "memory", "compare", "rebuild/none")
    assert missing.returncode == 1 and "no rebuild named 'none'" in missing.stderr


def test_exclusions_and_plan_units() -> None:
    ex, notes = parse_exclusions(["10-20", "15..30", "seq:40", "session:b"], last_seq=100, sessions=["a", "b"])
    assert ex.ranges == ((10, 30), (40, 40)) and ex.sessions == frozenset({"b"}) and len(notes) == 1
    assert ex.excludes(30, "a") and ex.excludes(40, None) and not ex.excludes(31, "a") and ex.excludes(1, "b")
    assert ex.specs() == ["session:b", "10-30", "40"]
    with pytest.raises(RebuildError):
        parse_exclusions(["0-3"], last_seq=10, sessions=[])
    assert parse_name("refs/heads/rebuild/abc") == "abc"
    recs = [decode_raw(ln) for ln in (GOLDEN / "v1.jsonl").read_bytes().splitlines() if ln]
    plan = make_plan(recs, since=None, exclude=Exclusions())
    assert [s.kind for s in plan.steps] and plan.base_seq == recs[-1].seq


def test_golden_rebuild_events_fold() -> None:
    recs = [decode_raw(ln) for ln in (GOLDEN / "v1-d.jsonl").read_bytes().splitlines() if ln]
    rebuilds, _ = scan(recs)
    (info,) = rebuilds.values()
    assert info.name == "gpt4o" and len(info.progress) == 2 and info.status == "discarded"
    assert info.exclude == ["session:prank", "120-180"] and info.base_seq == 5


def test_git_repo_branch_commit_does_not_touch_main(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    git = GitRepo(tmp_path / "m").open()
    when = datetime(2026, 1, 1, tzinfo=UTC)
    main = git.commit({"MEMORY.md": "- a\n"}, "main\n", when)
    git.commit({"MEMORY.md": "- b\n"}, "branch\n", when, branch=b"refs/heads/rebuild/x", update_worktree=False)
    assert git.head() == main and (tmp_path / "m" / "MEMORY.md").read_text() == "- a\n"
    git.close()
