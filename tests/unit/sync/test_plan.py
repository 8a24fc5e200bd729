"""The sync's planner (``core/sync/plan.py``): every decision of one sync from plain values,
with git's answers handed in as functions, so each branch is one fast test. A fact a
decision does not need is never asked for (``_never``): a steady sync makes no git call."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from memtray.core.log.events import Record, legacy_line
from memtray.core.sync import plan
from memtray.core.sync.gitcli import SyncError
from memtray.core.sync.identity import PAIR_HINT
from memtray.core.sync.plan import (
    Base,
    NotMemtrayRemote,
    Peer,
    PeerPlan,
    PeerRefused,
    Push,
    Remote,
    Streams,
)
from memtray.core.sync.stream import StreamHead, tracking_ref

ME, PEER, OTHER = "dme000000000", "dpeer0000000", "dother000000"
WHERE = "/srv/memtray.git"


def _log(dev: str) -> str:
    return f"refs/memtray/devices/{dev}/log"


def _keys(dev: str) -> str:
    return f"refs/memtray/devices/{dev}/keys"


def _never(*_args: Any) -> Any:
    raise AssertionError("a fact this decision does not need was asked for")


def _ancestry(pairs: set[tuple[str, str]]) -> plan.Relation[bool]:
    """``older`` is an ancestor of ``newer`` when the pair is listed (or they are the same)."""
    return lambda older, newer: older == newer or (older, newer) in pairs


# --- the remote ---------------------------------------------------------------------


def test_a_remote_reads_its_streams_and_what_else_memtray_keeps_there() -> None:
    r = Remote({_log(PEER): "a", _log(ME): "b", _keys(PEER): "c", "refs/heads/main": "d",
                "refs/memtray/devices/odd/memory": "e"})
    assert (r.streams, r.memtrays, r.rostered, r.encrypted) == ([ME, PEER], True, True, True)
    invited = Remote({"refs/memtray/pairing/abc": "a"})
    assert (invited.streams, invited.memtrays, invited.rostered, invited.encrypted) == ([], True, False, True)
    foreign = Remote({"refs/heads/main": "a", "refs/tags/v1": "b"})
    assert (foreign.streams, foreign.memtrays, foreign.rostered, foreign.encrypted) == ([], False, False, False)


@pytest.mark.parametrize("refs", [{}, {_log(PEER): "a"}, {"refs/memtray/pairing/x": "a", "refs/heads/main": "b"}])
def test_an_empty_remote_or_one_memtray_uses_is_a_memtray_remote(refs: dict[str, str]) -> None:
    plan.check_memtray(Remote(refs), WHERE, init=False, taken=False)  # no error


def test_a_foreign_remote_is_refused_with_the_error_and_its_hint() -> None:
    with pytest.raises(NotMemtrayRemote) as got:
        plan.check_memtray(Remote({"refs/heads/main": "a", "refs/tags/v1": "b"}), WHERE, init=False, taken=False)
    assert str(got.value) == f"{WHERE} is not a memtray remote (it has 2 ref(s), no memtray stream)"
    assert got.value.hint == ("Use an empty repository for sync, or `memtray sync --init URL` to add memtray's "
                              "refs (under refs/memtray/ only) beside what it holds.")


@pytest.mark.parametrize(("init", "taken"), [(True, False), (False, True), (True, True)])
def test_a_foreign_remote_is_taken_with_init_or_once_taken(init: bool, taken: bool) -> None:
    plan.check_memtray(Remote({"refs/heads/main": "a"}), WHERE, init=init, taken=taken)  # no error


def test_a_new_remote_gets_keys_by_default() -> None:
    asked: list[bool] = []

    def in_clear() -> bool:
        asked.append(True)
        return False

    assert plan.keys_for_new_remote(Remote({}), WHERE, clear=False, encrypt=True, syncs_in_clear=in_clear)
    assert plan.keys_for_new_remote(Remote({"refs/heads/main": "a"}), WHERE, clear=False, encrypt=True,
                                    syncs_in_clear=in_clear)
    assert asked == [True, True]


def test_no_keys_when_asked_for_clear_or_on_a_clear_remote_in_use_or_when_syncing_in_clear_elsewhere() -> None:
    assert not plan.keys_for_new_remote(Remote({}), WHERE, clear=True, encrypt=True, syncs_in_clear=_never)
    assert not plan.keys_for_new_remote(Remote({}), WHERE, clear=False, encrypt=False, syncs_in_clear=_never)
    assert not plan.keys_for_new_remote(Remote({_log(PEER): "a"}), WHERE, clear=False, encrypt=True,
                                        syncs_in_clear=_never)
    assert not plan.keys_for_new_remote(Remote({}), WHERE, clear=False, encrypt=True, syncs_in_clear=lambda: True)


@pytest.mark.parametrize("refs", [{_keys(PEER): "a", _log(PEER): "b"}, {"refs/memtray/pairing/x": "a"}])
def test_an_encrypted_remote_refuses_a_device_without_keys_even_in_clear(refs: dict[str, str]) -> None:
    with pytest.raises(SyncError) as got:
        plan.keys_for_new_remote(Remote(refs), WHERE, clear=True, encrypt=False, syncs_in_clear=_never)
    assert str(got.value) == f"{WHERE} is an encrypted remote and this device is not paired with its devices"
    assert got.value.hint == PAIR_HINT


def test_a_device_with_keys_is_refused_on_a_remote_its_peers_use_in_clear() -> None:
    with pytest.raises(SyncError) as got:
        plan.refuse_sealing(Remote({_log(PEER): "a", _log(ME): "b"}), WHERE, keyed=True, me=ME)
    assert str(got.value) == (f"{WHERE} is a clear remote that other devices sync with in clear, and this device "
                              "encrypts what it publishes (it has sync keys): syncing it here would lock them out")
    assert got.value.hint.startswith("Move every device to a new encrypted remote")


@pytest.mark.parametrize(("refs", "keyed"), [
    ({_log(PEER): "a"}, False),                       # no keys: it publishes in clear like them
    ({_log(ME): "a"}, True),                          # its own stream only
    ({}, True),                                       # an empty remote
    ({_log(PEER): "a", _keys(PEER): "b"}, True),      # an encrypted remote
])
def test_sealing_goes_on_where_it_locks_nobody_out(refs: dict[str, str], keyed: bool) -> None:
    plan.refuse_sealing(Remote(refs), WHERE, keyed=keyed, me=ME)  # no error


def test_new_device_is_refused_only_with_keys() -> None:
    plan.check_new_device(new_device=True, secured=False)
    plan.check_new_device(new_device=False, secured=True)
    with pytest.raises(SyncError) as got:
        plan.check_new_device(new_device=True, secured=True)
    assert str(got.value) == "--new-device is not supported on a device with sync keys yet"


# --- the streams --------------------------------------------------------------------


def test_own_stream_only_has_no_peers() -> None:
    key = "k1"
    got = plan.streams(Remote({_log(ME): "m"}), ME, key, {tracking_ref(key, ME): "m1"}, {})
    assert got == Streams(peers=(), mine="m1")


def test_peers_are_every_other_stream_in_order_with_their_fetched_commit_and_cursor() -> None:
    key = "k1"
    refs = {_log(OTHER): "o", _log(ME): "m", _log(PEER): "p", "refs/heads/main": "x"}
    tracked = {tracking_ref(key, OTHER): "o1", tracking_ref(key, ME): "m1", tracking_ref("k2", PEER): "elsewhere"}
    cursor = {"commit": "o0", "through": 7}
    got = plan.streams(Remote(refs), ME, key, tracked, {OTHER: cursor})
    assert got == Streams(peers=(Peer(OTHER, "o1", cursor), Peer(PEER, None, {})), mine="m1")


def test_a_new_device_id_has_no_stream_yet_and_its_old_id_is_a_peer() -> None:
    key = "k1"
    got = plan.streams(Remote({_log(ME): "m"}), "dnew00000000", key, {tracking_ref(key, ME): "m1"}, {})
    assert got == Streams(peers=(Peer(ME, "m1", {}),), mine=None)


def test_an_empty_remote_has_no_streams() -> None:
    assert plan.streams(Remote({}), ME, "k", {}, {}) == Streams(peers=(), mine=None)


# --- this device's base -------------------------------------------------------------


def test_no_copy_on_the_remote_builds_on_the_local_ref_without_asking_git() -> None:
    assert plan.base(ME, "l", None, ancestor=_never, republishes=_never) == Base("l")
    assert plan.base(ME, None, None, ancestor=_never, republishes=_never) == Base(None)


def test_the_steady_case_builds_on_the_local_ref_without_asking_git() -> None:
    # the same commit here and there: no ancestry or epoch to ask (is_ancestor(x, x) is free)
    assert plan.base(ME, "c", "c", ancestor=_ancestry(set()), republishes=_never) == Base("c")


def test_no_local_ref_adopts_the_remote_copy() -> None:
    assert plan.base(ME, None, "r", ancestor=_never, republishes=_never) == Base("r", adopt=True, forward=False)


def test_a_remote_copy_ahead_is_adopted_as_a_continuation() -> None:
    assert plan.base(ME, "l", "r", ancestor=_ancestry({("l", "r")}), republishes=_never) == Base(
        "r", adopt=True, forward=True)


def test_a_remote_copy_republished_elsewhere_is_adopted_not_as_a_continuation() -> None:
    got = plan.base(ME, "l", "r", ancestor=_ancestry(set()), republishes=lambda old, new: (old, new) == ("l", "r"))
    assert got == Base("r", adopt=True, forward=False)


def test_a_remote_copy_behind_builds_on_the_local_ref() -> None:
    assert plan.base(ME, "l", "r", ancestor=_ancestry({("r", "l")}), republishes=lambda *_: False) == Base("l")


def test_a_stale_remote_copy_this_device_republished_since_builds_on_the_local_ref() -> None:
    got = plan.base(ME, "l", "r", ancestor=_ancestry(set()), republishes=lambda old, new: (old, new) == ("r", "l"))
    assert got == Base("l")


def test_a_diverged_remote_copy_is_refused_never_forced() -> None:
    with pytest.raises(SyncError) as got:
        plan.base(ME, "l", "r", ancestor=_ancestry(set()), republishes=lambda *_: False)
    assert str(got.value) == (f"this device's stream on the remote (refs/memtray/devices/{ME}/log) was "
                              "rewritten by someone else")
    assert got.value.hint == ("Nothing was pushed. memtray never force-pushes; restore the ref on the remote "
                              "or sync with another remote.")


def test_an_adopted_copy_that_agrees_with_the_log_is_taken() -> None:
    plan.check_adoption(ME, remote_last=5, log_last=9, changed=lambda: [], differs=lambda: None)  # no error


def test_an_adopted_copy_beyond_the_log_is_another_home_under_this_id() -> None:
    with pytest.raises(SyncError) as got:
        plan.check_adoption(ME, remote_last=10, log_last=9, changed=_never, differs=_never)
    assert str(got.value) == (f"the remote's stream of this device ({ME}) holds events this home does not have "
                              "(up to seq 10, here 9): another data home pushed under the same device id")
    assert got.value.hint == plan.COPIED_HINT


def test_an_adopted_copy_with_a_changed_file_is_refused() -> None:
    with pytest.raises(SyncError) as got:
        plan.check_adoption(ME, remote_last=5, log_last=9, changed=lambda: ["segments/a", "segments/b"],
                            differs=_never)
    assert str(got.value) == (f"the remote's copy of this device's stream ({ME}) was rewritten: segments/a "
                              "changed; memtray does not adopt it")
    assert "--republish" in got.value.hint


def test_an_adopted_copy_that_differs_from_the_log_is_another_home_under_this_id() -> None:
    with pytest.raises(SyncError) as got:
        plan.check_adoption(ME, remote_last=5, log_last=9, changed=lambda: [], differs=lambda: 4)
    assert str(got.value) == (f"the remote's stream of this device ({ME}) differs from this home's log at seq 4: "
                              "another data home pushed under the same device id")
    assert got.value.hint == plan.COPIED_HINT


# --- this device's push -------------------------------------------------------------


@pytest.mark.parametrize("why", ["asked", "purged", "own_purges"])
def test_a_purge_or_republish_publishes_again_without_asking_for_the_copies(why: str) -> None:
    flags = {"asked": False, "purged": False, "own_purges": False, why: True}
    assert plan.must_republish("b", None, **flags, clear_copy=_never)
    assert plan.must_republish(None, "m", **flags, clear_copy=_never)


def test_a_first_push_has_nothing_to_publish_again() -> None:
    assert not plan.must_republish(None, None, asked=True, purged=True, own_purges=True, clear_copy=lambda: True)


def test_a_copy_in_clear_is_published_again_sealed_and_otherwise_a_segment_is_added() -> None:
    assert plan.must_republish("b", "b", asked=False, purged=False, own_purges=False, clear_copy=lambda: True)
    assert not plan.must_republish("b", "b", asked=False, purged=False, own_purges=False, clear_copy=lambda: False)


def test_a_republication_goes_above_every_copy() -> None:
    assert plan.next_epoch([]) == 1
    assert plan.next_epoch([0, 3, 2]) == 4


def test_nothing_new_is_no_push() -> None:
    assert plan.push(None, "m", republication=False, fast_forward=_never) is None
    assert plan.push("m", "m", republication=False, fast_forward=_never) is None


def test_a_first_push_is_a_fast_forward_of_a_new_ref() -> None:
    assert plan.push("h", None, republication=False, fast_forward=_never) == Push(None, republished=False, kept=False)


def test_a_push_on_the_remote_copy_is_a_fast_forward_and_counts_only_the_new_events() -> None:
    got = plan.push("h", "m", republication=False, fast_forward=lambda old, new: (old, new) == ("m", "h"))
    assert got == Push(lease=None, republished=False, kept=True)


def test_a_republication_replaces_the_copy_with_a_lease() -> None:
    assert plan.push("h", "m", republication=True, fast_forward=_never) == Push("m", republished=True, kept=False)
    assert plan.push("h", None, republication=True, fast_forward=_never) == Push("", republished=True, kept=False)


def test_a_stale_remote_copy_is_replaced_with_a_lease_like_a_republication() -> None:
    got = plan.push("h", "m", republication=False, fast_forward=lambda *_: False)
    assert got == Push(lease="m", republished=True, kept=False)


# --- a peer's stream ----------------------------------------------------------------


def test_a_peer_listed_and_not_fetched_is_an_error() -> None:
    with pytest.raises(SyncError) as got:
        plan.news(PEER, None, "c")
    assert str(got.value) == f"the stream of {PEER} was listed but could not be fetched"


def test_a_peer_at_its_cursor_has_nothing_new() -> None:
    assert plan.news(PEER, "c", "c") is None
    assert plan.news(PEER, "c", "b") == "c"
    assert plan.news(PEER, "c", None) == "c"


def test_a_peer_never_imported_is_read_without_comparing() -> None:
    assert plan.peer(PEER, None, "c", ancestry=_never, republishes=_never, problem=_never, stale=_never) == PeerPlan(
        read=True)


def test_a_peer_continued_is_read_after_checking_its_files() -> None:
    got = plan.peer(PEER, "s", "c", ancestry=_ancestry({("s", "c")}), republishes=_never, problem=_never,
                    stale=_never)
    assert got == PeerPlan(read=True, continuation=True)


def test_a_peer_behind_what_was_imported_has_nothing_new() -> None:
    got = plan.peer(PEER, "s", "c", ancestry=_ancestry({("c", "s")}), republishes=_never, problem=_never,
                    stale=_never)
    assert got == PeerPlan(read=False)


def test_a_peer_whose_imported_commit_is_gone_here_is_read_from_its_cursor() -> None:
    got = plan.peer(PEER, "s", "c", ancestry=lambda older, newer: False if older == "c" else None,
                    republishes=_never, problem=_never, stale=_never)
    assert got == PeerPlan(read=True, continuation=False)


def test_a_peer_republished_as_a_purge_is_read() -> None:
    got = plan.peer(PEER, "s", "c", ancestry=_ancestry(set()), republishes=lambda *_: True, problem=lambda: None,
                    stale=_never)
    assert got == PeerPlan(read=True, continuation=False)


def test_a_peer_republished_with_more_than_a_purge_is_refused() -> None:
    with pytest.raises(PeerRefused) as got:
        plan.peer(PEER, "s", "c", ancestry=_ancestry(set()), republishes=lambda *_: True,
                  problem=lambda: "the republished stream lacks seq 3", stale=_never)
    assert str(got.value) == (f"the stream of device {PEER} was republished with changes a purge cannot make: "
                              "the republished stream lacks seq 3")
    assert got.value.hint.startswith(f"Nothing was imported from {PEER}. If {PEER} did not do this")


def test_a_stale_peer_copy_is_skipped_with_a_note() -> None:
    got = plan.peer(PEER, "s", "c", ancestry=_ancestry(set()), republishes=lambda *_: False, problem=_never,
                    stale=lambda: (1, 2))
    assert got == PeerPlan(read=False, note=(
        f"the stream of {PEER} here is an older copy (epoch 1; imported before: epoch 2): nothing imported from "
        f"it; {PEER} replaces it when it syncs with this remote"))


def test_a_peer_rewritten_by_someone_else_is_refused() -> None:
    with pytest.raises(PeerRefused) as got:
        plan.peer(PEER, "0123456789abcdef", "c", ancestry=_ancestry(set()), republishes=lambda *_: False,
                  problem=_never, stale=lambda: None)
    assert str(got.value) == (f"the stream of device {PEER} on the remote was rewritten by someone else (it no "
                              "longer contains 0123456789ab, imported here)")


def test_a_continuation_that_changed_a_file_is_refused() -> None:
    plan.check_continuation(PEER, [])
    with pytest.raises(PeerRefused) as got:
        plan.check_continuation(PEER, ["seg/1"])
    assert str(got.value) == (f"the stream of device {PEER} on the remote was rewritten: seg/1 changed after it "
                              "was imported here")


def _head(epoch: int, last_seq: int) -> StreamHead:
    return StreamHead("c", PEER, last_seq, 1, last_seq, epoch)


def test_a_republication_is_a_higher_epoch_reaching_as_far() -> None:
    assert plan.is_republication(_head(0, 10), _head(1, 10))
    assert not plan.is_republication(_head(0, 10), _head(1, 9))   # lost events: rewritten
    assert not plan.is_republication(_head(1, 10), _head(1, 12))  # same epoch: not one


def test_a_stale_copy_is_a_lower_epoch_reaching_no_further_than_imported() -> None:
    assert plan.stale_copy(_head(2, 10), _head(1, 10), 10) == (1, 2)
    assert plan.stale_copy(_head(2, 10), _head(1, 12), 12) == (1, 2)   # imported that far before
    assert plan.stale_copy(_head(2, 10), _head(1, 12), 10) is None     # reaches further: rewritten
    assert plan.stale_copy(_head(2, 10), _head(2, 8), 10) is None      # same epoch: not stale


def _line(seq: int, text: str, rid: str = "") -> bytes:
    rec = Record(seq, rid or f"e{seq}", "2024-01-01T00:00:00Z", "message.added", 1, None,
                 {"role": "user", "content": text})
    return legacy_line(rec).rstrip(b"\n")


def test_a_republication_that_only_purges_has_no_problem() -> None:
    old = [(1, _line(1, "hello")), (2, _line(2, "my secret is 42"))]
    new = [(1, _line(1, "hello")), (2, _line(2, "my secret is [PURGED]")), (3, _line(3, "later"))]
    assert plan.republication_problem(old, new, 2, _never) is None


@pytest.mark.parametrize(("new", "problem"), [
    ([(1, _line(1, "hello"))], "the republished stream lacks seq 2"),
    ([(1, _line(1, "hello")), (2, _line(2, "b")), (-1, b"x")], "a line of the republished stream cannot be read"),
    ([(1, _line(1, "hello", "other")), (2, _line(2, "b"))], "seq 1 is another event in the republished stream"),
    ([(1, _line(1, "goodbye")), (2, _line(2, "b"))], "seq 1 (e1) was changed, not purged"),
    ([(1, b"not json"), (2, _line(2, "b"))], "seq 1 of the republished stream is damaged"),
])
def test_a_republication_with_more_than_a_purge_says_what(new: list[tuple[int, bytes]], problem: str) -> None:
    old = [(1, _line(1, "hello")), (2, _line(2, "b"))]
    got = plan.republication_problem(old, new, 2, _never)
    assert got is not None and got.startswith(problem)


def test_a_republication_holding_a_seq_the_old_stream_lacked_is_refused() -> None:
    old = [(2, _line(2, "b"))]
    new = [(1, _line(1, "a")), (2, _line(2, "b"))]
    assert plan.republication_problem(old, new, 2, _never) == (
        "the republished stream holds seq 1, which the stream it replaces did not")


def test_the_planner_does_no_io() -> None:
    """No git, no file, no clock: plan.py imports none of them and nothing that runs git."""
    path = Path(plan.__file__)
    allowed = {"__future__", "collections.abc", "dataclasses", "typing", "memtray.core.log.events",
               "memtray.core.log.tombstone", "memtray.core.sync.gitcli", "memtray.core.sync.identity",
               "memtray.core.sync.stream"}
    names = {"memtray.core.sync.gitcli": {"SyncError"}, "memtray.core.sync.identity": {"PAIR_HINT"},
             "memtray.core.sync.stream": {"PREFIX", "StreamHead", "log_ref", "tracking_ref"}}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            assert not node.names, f"plan.py imports {[a.name for a in node.names]}"
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            assert mod in allowed, f"plan.py imports {mod}"
            if mod in names:
                assert {a.name for a in node.names} <= names[mod], f"plan.py imports {mod}: {node.names}"
