"""Two real data homes merge their memory by fact id, as sync hands them each other's heads.

Each home writes memory its own way (the agent's remember/forget, a hand edit of MEMORY.md);
the other's ``memory.written`` events are read from its log and handed over as
``PeerHead``s, exactly as the sync does. Real git: merge commits have two parents, and a
rebuild of ``memory/`` from the log makes the same graph.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Verbatim
from memtray.core.log.origin import origin_of
from memtray.core.memory.merge import MergeOutcome, PeerHead

from tests.integration import sync_support


def open_app(root: Path) -> App:
    return App.open(Home.resolve(root), config=Config(model="openai/x"), start_services=False)


LOW, HIGH = "d000000000001", "d00000000000f"


@pytest.fixture(params=["a-low", "a-high"])
def pair(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[App, App]]:
    """Two homes; the merge orders sides by device id, so every test runs with both orders."""
    ids = (LOW, HIGH) if request.param == "a-low" else (HIGH, LOW)
    for name, dev in zip("ab", ids, strict=True):
        home = Home.resolve(tmp_path / name)
        home.device_file.parent.mkdir(parents=True, exist_ok=True)
        home.device_file.write_text(json.dumps({"id": dev, "name": name}))
    a, b = open_app(tmp_path / "a"), open_app(tmp_path / "b")
    assert (a.memory.device, b.memory.device) == ids
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def heads(app: App, after: int = 0) -> list[PeerHead]:
    """The memory revisions ``app`` wrote itself, as the sync reads them from its stream."""
    dev = app.memory.device
    return [PeerHead(dev, r.id, r.ts, dict(r.data)) for r in app.store.log.records(after)
            if r.type == "memory.written" and origin_of(r) is None]


def sync(x: App, y: App) -> tuple[MergeOutcome, MergeOutcome]:
    """Both directions, each with the other's heads as they were before either merged."""
    hx, hy = heads(x), heads(y)
    return x.memory.merge_peer_heads(hy), y.memory.merge_peer_heads(hx)


def remember(app: App, fact: str) -> None:
    sync_support.remember(app, fact, "Me")


def git(app: App, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=app.home.memory, check=True, capture_output=True, text=True).stdout


def facts(app: App) -> list[tuple[str, str]]:
    return [(f.id, f.text) for f in app.memory.ledger().facts]


def test_two_devices_that_both_wrote_end_with_the_same_memory_and_ids(pair: tuple[App, App]) -> None:
    a, b = pair
    assert a.memory.device != b.memory.device
    remember(a, "Lives in Lyon")
    remember(a, "Has a cat named Mimi")
    remember(a, "Works at Acme")
    out_b = b.memory.merge_peer_heads(heads(a))
    assert out_b.fast_forward and not out_b.merged
    assert a.memory.merge_peer_heads(heads(b)).up_to_date  # b's copy of a's revision is a's own
    assert facts(b) == facts(a)
    # both go on: b removes a fact with a reason and adds one; a rewords that fact by hand and adds one
    b.memory.forget("F2", "the cat was given away", model=None)
    remember(b, "Speaks Japanese")
    text = (a.home.memory / "MEMORY.md").read_text()
    (a.home.memory / "MEMORY.md").write_text(text.replace("Has a cat named Mimi", "Has a tabby cat named Mimi"))
    assert a.memory.check_worktree()
    remember(a, "Plays the cello")
    out_a, out_b = sync(a, b)
    assert out_a.merged and out_b.merged
    assert a.store.state.memory == b.store.state.memory
    assert facts(a) == facts(b)
    texts = [t for _i, t in facts(a)]
    assert texts.count("Has a tabby cat named Mimi") == 1  # removed there, reworded here: kept
    assert {"Lives in Lyon", "Works at Acme", "Plays the cello", "Speaks Japanese"} <= set(texts)
    assert len(texts) == 5 and len({i for i, _t in facts(a)}) == 5  # F4 was handed out on both: renumbered
    # the same merge event on both devices: each one's copy is the other's
    assert a.memory.head_id() == b.memory.head_id()
    assert a.memory.merge_peer_heads(heads(b)).up_to_date and b.memory.merge_peer_heads(heads(a)).up_to_date
    # the conflict is listed for review on both, with each side's words
    for app in (a, b):
        [item] = [i for i in app.memory.pending_review() if i["kind"] == "merge-conflict"]
        assert item["fact_id"] == "F2" and "the cat was given away" in item["reason"]
        assert item["text"] == "Has a tabby cat named Mimi"  # what `review restore` would remove
    [c] = out_a.conflicts
    assert c["fact_id"] == "F2" and c["ours"] == "Has a tabby cat named Mimi" and c["theirs"] is None
    assert c["kind"] == "merge-conflict" and c["conflict"] == "removed-reworded" and c["id"] == c["review"]
    [c] = out_b.conflicts
    assert c["ours"] is None and c["theirs"] == "Has a tabby cat named Mimi"
    # real git: the merge commit has both heads as parents, and git itself is content with the repo
    for app in (a, b):
        parents = git(app, "rev-list", "--parents", "-n", "1", "HEAD").split()[1:]
        assert len(parents) == 2
        assert "merge" in git(app, "log", "-1", "--format=%s")
        graph = git(app, "log", "--graph", "--format=%s")
        assert "|\\" in graph and "|/" in graph
        git(app, "fsck", "--strict")
        assert git(app, "status", "--porcelain") == ""


def test_review_resolves_a_conflict_the_other_way_and_the_resolution_syncs(pair: tuple[App, App]) -> None:
    a, b = pair
    remember(a, "Lives in Lyon")
    remember(a, "Works at Acme")
    b.memory.merge_peer_heads(heads(a))
    b.memory.forget("F2", "changed jobs", model=None)
    text = (a.home.memory / "MEMORY.md").read_text()
    (a.home.memory / "MEMORY.md").write_text(text.replace("Works at Acme", "Works at Acme in sales"))
    assert a.memory.check_worktree()
    sync(a, b)
    [item] = [i for i in b.memory.pending_review() if i["kind"] == "merge-conflict"]
    b.memory.restore_review(item["id"])  # the other way: the removal after all
    assert [t for _i, t in facts(b)] == ["Lives in Lyon"]
    assert b.memory.pending_review() == []
    out = a.memory.merge_peer_heads(heads(b))
    assert out.fast_forward
    assert facts(a) == facts(b)
    assert a.memory.pending_review() == []


def test_merges_rebuild_from_the_log_with_the_same_graph(pair: tuple[App, App], tmp_path: Path) -> None:
    a, b = pair
    remember(a, "Lives in Lyon")
    b.memory.merge_peer_heads(heads(a))
    for k in range(3):
        remember(a, f"Visited city number {k} in 2025")
        remember(b, f"Read book number {k} in 2024")
        sync(a, b)
    graph = git(a, "log", "--graph", "--all", "--format=%H %P %s")
    head = git(a, "rev-parse", "HEAD")
    text = a.store.state.memory
    assert graph.count("merge") >= 3
    a.close()
    shutil.rmtree(tmp_path / "a" / "memory")
    again = open_app(tmp_path / "a")
    try:
        assert git(again, "rev-parse", "HEAD") == head
        assert git(again, "log", "--graph", "--all", "--format=%H %P %s") == graph
        assert (again.home.memory / "MEMORY.md").read_text() == text
    finally:
        again.close()


def test_why_dropped_undo_and_rollback_work_across_a_merge(pair: tuple[App, App]) -> None:
    a, b = pair
    remember(a, "Lives in Lyon")
    remember(a, "Has a cat named Mimi")
    b.memory.merge_peer_heads(heads(a))
    before = a.memory.revision("HEAD")
    b.memory.forget("F2", "Mimi died in May", model=None)
    remember(b, "Speaks Japanese")
    remember(a, "Plays the cello")
    out, _ = sync(a, b)
    assert out.merged
    merge = a.memory.revision("HEAD")
    assert merge.reason == "merge"
    # why: a fact that came from the other device names the merge revision
    info = a.memory.why("Speaks Japanese")
    assert info["revision"]["rev"] == merge.rev and info["revision"]["reason"] == "merge"
    # dropped: the removal made there, with its reason, by the merge here
    [row] = [r for r in a.memory.dropped() if r["text"] == "Has a cat named Mimi"]
    assert row["by"] == "merge" and "Mimi died in May" in row["reason"] and not row["present_now"]
    # undo of the merge: what it brought in goes, what it removed comes back, by id
    res = a.memory.undo(merge.rev)
    assert res.revision is not None
    assert sorted(t for _i, t in facts(a)) == ["Has a cat named Mimi", "Lives in Lyon", "Plays the cello"]
    assert a.memory.ledger().get("F2") is not None
    # rollback to before the merge, and to the merge again
    a.memory.rollback(before.rev)
    assert [t for _i, t in facts(a)] == ["Lives in Lyon", "Has a cat named Mimi"]
    a.memory.rollback(merge.rev)
    assert sorted(t for _i, t in facts(a)) == ["Lives in Lyon", "Plays the cello", "Speaks Japanese"]
    # and the devices still converge after all that
    sync(a, b)
    assert facts(a) == facts(b)


def test_a_device_offline_for_many_writes_merges_them_all_at_once(pair: tuple[App, App]) -> None:
    a, b = pair
    remember(a, "Lives in Lyon")
    b.memory.merge_peer_heads(heads(a))
    seen = b.store.log.last_seq
    for k in range(6):
        remember(a, f"Visited city number {k} in 2025")
    remember(b, "Speaks Japanese")
    out = b.memory.merge_peer_heads(heads(a))
    assert out.merged and out.conflicts == []
    assert len(b.memory.ledger().facts) == 8
    # each of a's revisions is on b's side line, parents of the one merge commit
    side = git(b, "rev-list", "HEAD^2")
    assert len(side.split()) >= 6
    assert sum(1 for r in b.store.log.records(seen) if r.type == "memory.written") == 2  # Japanese, the merge


def test_three_devices_converge_without_writing_revisions_back_and_forth(tmp_path: Path) -> None:
    apps = [open_app(tmp_path / n) for n in "abc"]
    a, b, c = apps
    try:
        remember(a, "Lives in Lyon")
        for other in (b, c):
            other.memory.merge_peer_heads(heads(a))
        remember(a, "Plays the cello")
        remember(b, "Speaks Japanese")
        b.memory.forget("F1", "moved to Grenoble", model=None)
        remember(c, "Runs marathons")
        # sync rounds in a fixed order, each device taking every other's heads, until nothing moves
        for _round in range(4):
            moved = 0
            for x in apps:
                for y in apps:
                    if x is not y:
                        out = x.memory.merge_peer_heads(heads(y))
                        moved += out.merged or out.fast_forward
            if not moved:
                break
        assert not moved, "the devices kept writing revisions at each other"
        assert a.store.state.memory == b.store.state.memory == c.store.state.memory
        assert facts(a) == facts(b) == facts(c)
        assert sorted(t for _i, t in facts(a)) == ["Plays the cello", "Runs marathons", "Speaks Japanese"]
        assert len({x.memory.head_id() for x in apps}) == 1
    finally:
        for x in apps:
            x.close()


def test_why_names_the_messages_another_device_consolidated_a_fact_from(pair: tuple[App, App]) -> None:
    from memtray.core.log.events import Message
    from memtray.core.log.origin import marked, peer_session

    a, b = pair
    remember(a, "Lives in Lyon")
    b.memory.merge_peer_heads(heads(a))
    said = b.store.append(Message(role="user", content="I started learning Japanese last week"),
                          session="quick")
    b.memory.remember("Is learning Japanese", "Me", model=None, source_seq=said.seq)
    remember(a, "Plays the cello")
    # what the sync does: b's message imported into a's log with its id and origin, b's heads merged
    a.store.append(Verbatim(Message.TYPE, marked(said, b.memory.device)), session=peer_session("quick", b.memory.device),
                   id=said.id)
    assert a.memory.merge_peer_heads(heads(b)).merged
    info = a.memory.why("Is learning Japanese")
    assert info["revision"]["reason"] == "merge"
    assert [m["content"] for m in info["messages"]] == ["I started learning Japanese last week"]


def test_a_peer_revision_holding_a_secret_is_stored_redacted_as_a_revision_of_its_own(pair: tuple[App, App]) -> None:
    a, b = pair
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    # what an older memtray (or a hostile stream) might send: a revision with the token in it
    text = f"## Me\n\n- Lives in Lyon\n- Deploys with {token}\n"
    head = PeerHead(b.memory.device, "01PEERREVISIONWITHSECRET01", "2026-12-02T10:00:00.000Z",
                    {"memory": text, "reason": "user-edit", "source": "user", "facts": {"ids": ["F1", "F2"], "next": 3},
                     "diff": {"added": [{"id": "F1", "text": "Lives in Lyon"}, {"id": "F2", "text": f"Deploys with {token}"}],
                              "dropped": [], "changed": []},
                     "device": b.memory.device, "parents": []})
    out = a.memory.merge_peer_heads([head])
    assert out.fast_forward and "1 fact(s) held for review" in out.summary
    # the fact that carried it is held for review, redacted; the rest is written
    assert a.store.state.memory == "## Me\n\n- Lives in Lyon\n"
    assert [(i["kind"], i["text"]) for i in a.memory.pending_review()] == [
        ("secret", "Deploys with [REDACTED:github-token]")]
    assert token not in (a.home.memory / "MEMORY.md").read_text()
    assert token not in git(a, "log", "-p", "--all")  # the peer's own line included
    assert token.encode() not in b"".join(f.read_bytes() for f in a.home.events.iterdir() if f.is_file())
    # not under the peer's id: the stored text is not the peer's, so it is a revision that follows it
    assert a.memory.head_id() != head.event_id
    assert [i for i, _t in facts(a)] == ["F1"]


def test_a_merge_that_cannot_be_written_leaves_nothing_and_is_tried_again(pair: tuple[App, App]) -> None:
    from memtray.core.base.errors import MemtrayError
    from memtray.core.memory import factdiff
    from memtray.core.memory.service import MAX_MEMORY_CHARS

    a, b = pair
    remember(a, "Lives in Lyon")
    big = "## Me\n\n" + "".join(f"- Fact number {k} is a long fact about things {'x' * 60}\n"
                                 for k in range(MAX_MEMORY_CHARS // 80 + 10))
    head = PeerHead(b.memory.device, "01PEERREVISIONTOOBIG000001", "2026-12-02T10:00:00.000Z",
                    {"memory": big, "reason": "user-edit", "source": "user", "device": b.memory.device, "parents": [],
                     "diff": {"added": [{"id": f.id, "text": f.text} for f in factdiff.parse(big)], "dropped": [],
                              "changed": []}})
    before = a.store.log.last_seq
    for _attempt in range(2):  # the second time it is not "already known": nothing of the first stayed
        with pytest.raises(MemtrayError, match="limit"):
            a.memory.merge_peer_heads([head])
        assert a.store.log.last_seq == before
    remember(b, "Plays the cello")
    assert a.memory.merge_peer_heads(heads(b)).merged
    assert sorted(t for _i, t in facts(a)) == ["Lives in Lyon", "Plays the cello"]


def test_a_merge_that_renumbered_this_devices_ids_diffs_only_what_it_brought_and_says_what_review_did(
        pair: tuple[App, App]) -> None:
    from memtray.core.cli.memory import dropped_why

    from tests.support import run_cli

    a, b = pair
    remember(a, "Lives in Lyon")
    b.memory.merge_peer_heads(heads(a))
    remember(a, "Works at Acme")  # F2 on both: one side is renumbered by the merge
    remember(b, "Speaks Japanese")
    b.memory.forget("F1", "moved away", model=None)
    text = (a.home.memory / "MEMORY.md").read_text()
    (a.home.memory / "MEMORY.md").write_text(text.replace("Lives in Lyon", "Lives in Lyon, France"))
    assert a.memory.check_worktree()
    sync(a, b)
    for app, own, other in ((a, "Works at Acme", "Speaks Japanese"), (b, "Speaks Japanese", "Works at Acme")):
        assert app.memory.revision("HEAD").reason == "merge"
        d = app.memory.diff()
        assert other in [f.text for f in d.added], (app.memory.device, d)
        assert own not in [f.text for f in d.added] + [c.new.text for c in d.changed] + [f.text for f in d.dropped]
    assert any(r.data.get("relabeled") for app in (a, b) for r in app.store.log.records()
               if r.type == "memory.written")  # the case this test is about did happen
    # the conflict (removed on b, reworded on a) resolved as the removal: the CLI says so
    [item] = [i for i in a.memory.pending_review() if i["kind"] == "merge-conflict"]
    home = a.home.root
    a.close()
    out = run_cli(home, "memory", "review", "restore", item["id"])
    assert out.returncode == 0, out.stderr
    assert "removed 'Lives in Lyon, France' from memory" in out.stdout and "restored" not in out.stdout
    assert dropped_why("merge", "merge") == "removed by a merge with another device's memory"
