"""The origin mark of imported events and how the fold treats them."""

from __future__ import annotations

from memtray.core.log.events import Record
from memtray.core.log.origin import EXPORTED, IMPORTED, Origin, marked, origin_of, peer_session
from memtray.core.log.projections import State, apply, replay


def _rec(seq: int, type_: str, data: dict, session: str | None = "quick", id_: str | None = None) -> Record:
    return Record(seq, id_ or f"ID{seq:04d}", "2026-12-01T10:00:00.000Z", type_, 1, session, data)


def test_origin_of_reads_the_mark_and_ignores_events_made_here() -> None:
    peer = _rec(7, "message", {"role": "user", "content": "hi"})
    here = _rec(1, "message", marked(peer, "d0123456789ab"), session=peer_session("quick", "d0123456789ab"),
                id_=peer.id)  # an import keeps the id it was made with
    assert origin_of(here) == Origin("d0123456789ab", 7, "2026-12-01T10:00:00.000Z", "ID0007")
    assert here.session == "quick@d0123456789ab"
    assert origin_of(peer) is None
    assert origin_of(_rec(2, "message", {"role": "user", "origin": "not a mark"})) is None


def test_memory_heads_travel_but_are_never_imported_as_is() -> None:
    assert "memory.written" in EXPORTED and "memory.written" not in IMPORTED
    assert "consolidation.started" not in EXPORTED


def test_imported_messages_are_never_part_of_a_tail_and_never_move_a_local_pointer() -> None:
    dev = "d0123456789ab"
    recs = [
        _rec(1, "message", {"role": "user", "content": "mine"}),
        _rec(2, "message", marked(_rec(5, "message", {"role": "user", "content": "theirs"}), dev),
             session=peer_session("quick", dev)),
        _rec(3, "message", {"role": "assistant", "content": "mine too"}),
    ]
    st = replay(recs)
    assert [m["content"] for m in st.sessions["quick"].messages] == ["mine", "mine too"]
    peer = st.sessions[f"quick@{dev}"]
    assert peer.messages == [] and peer.unconsolidated == 0 and peer.count == 1
    assert st.last_seq == 3


def test_a_peers_reminder_is_owned_by_its_device_and_the_cursor_is_kept() -> None:
    dev = "d0123456789ab"
    sched = {"reminder": "R1", "text": "call", "kind": "at", "spec": "2026-12-02T10:00:00+00:00", "tz": "UTC"}
    st = State()
    apply(st, _rec(1, "reminder.scheduled", marked(_rec(3, "reminder.scheduled", sched), dev)))
    apply(st, _rec(2, "reminder.scheduled", {**sched, "reminder": "R2"}))
    apply(st, _rec(3, "sync.pulled", {"device": dev, "commit": "c" * 40, "through": 3}))
    assert st.reminders["R1"].device == dev and st.reminders["R2"].device is None
    assert st.sync == {dev: {"commit": "c" * 40, "through": 3}}
    again = State.from_json(st.to_json())
    assert again.sync == st.sync and again.reminders["R1"].device == dev
    assert "sync.pulled" not in st.unknown


def test_an_imported_event_is_dated_when_it_was_said_never_after_it_arrived() -> None:
    from memtray.core.log.origin import said_at

    dev = "d0123456789ab"
    peer = Record(3, "IDP3", "2026-12-01T08:00:00.000Z", "message", 1, "quick", {"role": "user", "content": "x"})
    here = Record(9, "IDP3", "2026-12-01T10:00:00.000Z", "message", 1, "quick@" + dev, marked(peer, dev))
    assert said_at(here) == "2026-12-01T08:00:00.000Z"  # the time there, not the import's
    assert said_at(peer) == peer.ts  # made here: its own time
    ahead = Record(3, "IDP4", "2026-12-01T17:00:00.000Z", "message", 1, "quick", {"role": "user", "content": "y"})
    arrived = Record(10, "IDP4", "2026-12-01T10:00:00.000Z", "message", 1, "quick@" + dev, marked(ahead, dev))
    assert said_at(arrived) == arrived.ts  # a peer clock 7 h ahead: capped at the arrival here
    state = replay([here])
    assert state.sessions["quick@" + dev].last_ts == "2026-12-01T08:00:00.000Z"


def test_a_reminders_cancel_or_firing_imported_before_the_reminder_itself_still_counts() -> None:
    """Peers' streams are imported one after another: a cancel made on device 0 can come in
    before device 1's schedule of the reminder. The fold gives the same state in any order."""
    sched = {"reminder": "R1", "text": "call mum", "kind": "at", "spec": "2026-12-24T10:00:00Z", "tz": "UTC",
             "origin": {"device": "d1", "seq": 3, "ts": "2026-12-01T09:00:00.000Z"}}
    cancel = {"reminder": "R1", "origin": {"device": "d0", "seq": 9, "ts": "2026-12-01T09:05:00.000Z"}}
    fired = {"reminder": "R2", "occurrence": "2026-12-02T10:00:00Z", "origin": {"device": "d1", "seq": 5,
                                                                                "ts": "2026-12-02T10:00:00.000Z"}}
    sched2 = {**sched, "reminder": "R2", "kind": "every", "spec": "1d"}
    events = [("reminder.scheduled", sched), ("reminder.cancelled", cancel),
              ("reminder.scheduled", sched2), ("reminder.fired", fired)]
    forward = replay([_rec(i + 1, t, d, None) for i, (t, d) in enumerate(events)])
    backward = replay([_rec(i + 1, t, d, None) for i, (t, d) in enumerate(reversed(events))])
    for st in (forward, backward):
        assert not st.reminders["R1"].active
        assert st.reminders["R2"].active and st.reminders["R2"].fired == ["2026-12-02T10:00:00Z"]
        assert st.early == {}
    assert State.from_json(backward.to_json()).to_json() == backward.to_json()


def test_a_message_imported_from_another_assistant_is_dated_when_it_was_sent() -> None:
    from memtray.core.log.origin import said_at

    at = "2026-12-03T14:17:00.000Z"  # when memtray import ran
    chatgpt = Record(5, "IDS5", at, "message", 1, "chatgpt:c-1",
                     {"role": "user", "content": "x", "sent_at": "2024-10-04T01:20:00Z"})
    assert said_at(chatgpt) == "2024-10-04T01:20:00.000Z"  # the log's own form
    offset = Record(6, "IDS6", at, "message", 1, "nanobot:s", {"role": "user", "content": "y",
                                                              "sent_at": "2025-02-25T10:30:00.250+01:00"})
    assert said_at(offset) == "2025-02-25T09:30:00.250Z"
    future = Record(7, "IDS7", at, "message", 1, "nanobot:s", {"role": "user", "content": "z",
                                                              "sent_at": "2027-01-01T00:00:00Z"})
    assert said_at(future) == at  # never after it arrived here
    for bad in ("yesterday", "", "2024-13-45T00:00:00Z"):
        junk = Record(8, "IDS8", at, "message", 1, "nanobot:s", {"role": "user", "content": "w", "sent_at": bad})
        assert said_at(junk) == at
    reset = Record(9, "IDS9", at, "session.reset", 1, "nanobot:s", {"reason": "import", "sent_at": "2024-01-01T00:00Z"})
    assert said_at(reset) == at  # only messages carry the time they were sent
