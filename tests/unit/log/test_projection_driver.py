"""The one projection driver: catch-up from a store's mark, a store that is behind or
does not match the log, an event that raises (quarantined, retried), rebuild."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.home import Home
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import Message, Record, Verbatim
from memtray.core.log.projection_driver import START, Mark, ProjectionDriver, check_quarantines
from memtray.core.log.store import Store


class Texts:
    """A derived store in memory: the text of every message, by seq."""

    name = "texts"
    restart_types = frozenset({"memory.purged"})

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self.mark: Mark | None = START
        self.poison: set[str] = set()  # texts whose record raises when applied
        self.broken = False  # the store itself fails (its disk is full)
        self.mark_broken = False  # the store fails to write any mark (a bug there, not an OS error)
        self.batches: list[list[int]] = []  # the seqs of each apply that went in
        self.starts = 0

    def position(self) -> Mark | None:
        return self.mark

    def apply(self, records: Sequence[Record], mark: Mark) -> int:
        if self.broken:
            raise OSError("no space left on device")
        if self.mark_broken:
            raise RuntimeError("cannot write the mark")
        new = {}
        for rec in records:
            if rec.type == Message.TYPE:
                text = Message.of(rec).content or ""
                if text in self.poison:
                    raise ValueError(f"cannot take {text!r}")
                new[rec.seq] = text
        self.texts.update(new)  # all or nothing, with the mark
        self.mark = mark
        self.batches.append([r.seq for r in records])
        return len(new)

    def start_over(self, elog: EventLog) -> Mark:
        self.texts.clear()
        self.starts += 1
        return START


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    clock = FakeClock()
    s = Store.open(Home(tmp_path / "home"), clock=clock, ids=seeded_ids(clock))
    yield s
    s.close()


def _say(store: Store, *texts: str) -> list[int]:
    return [store.append(Message(role="user", content=t), session="s").seq for t in texts]


def _driver(proj: Texts, tmp_path: Path) -> ProjectionDriver:
    return ProjectionDriver(proj, tmp_path / "texts.quarantine.json")


def test_catch_up_reads_only_after_the_mark_and_can_stop_between_batches(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    driver = _driver(proj, tmp_path)
    _say(store, "a", "b", "c", "d", "e")
    assert driver.behind(store.log)
    assert driver.catch_up(store.log, batch=2, should_stop=lambda: True) == 2
    assert proj.texts == {1: "a", 2: "b"} and proj.mark is not None and proj.mark.seq == 2
    assert driver.catch_up(store.log, batch=2) == 3
    assert proj.batches == [[1, 2], [3, 4], [5]]
    assert not driver.behind(store.log)
    assert driver.catch_up(store.log) == 0 and proj.batches[-1] == [5]  # up to date: nothing applied
    _say(store, "f")
    assert driver.behind(store.log)
    assert driver.catch_up(store.log) == 1
    assert proj.batches[-1] == [6] and proj.starts == 0


def test_a_store_ahead_of_or_foreign_to_the_log_is_rebuilt(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    _say(store, "a", "b")
    _driver(proj, tmp_path).catch_up(store.log)
    proj.mark = Mark(9, "someone-else", proj.mark.position if proj.mark else None)  # ahead of the log
    assert _driver(proj, tmp_path).catch_up(store.log) == 2 and proj.starts == 1
    assert proj.mark is not None and proj.mark.seq == 2
    proj.mark = Mark(2, "not-this-log", proj.mark.position)  # same seq, another record there
    proj.texts[99] = "stale"
    assert _driver(proj, tmp_path).catch_up(store.log) == 2 and proj.starts == 2
    assert proj.texts == {1: "a", 2: "b"}
    proj.mark = None  # it cannot say where it stands
    assert _driver(proj, tmp_path).catch_up(store.log) == 2 and proj.starts == 3


def test_a_restart_type_rebuilds_and_rebuild_replays_everything(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    driver = _driver(proj, tmp_path)
    _say(store, "a", "b")
    driver.catch_up(store.log)
    store.append(Verbatim("memory.purged", {"reason": "user"}))
    _say(store, "c")
    assert driver.catch_up(store.log) == 3 and proj.starts == 1  # everything again, not just "c"
    assert proj.texts == {1: "a", 2: "b", 4: "c"}
    assert driver.rebuild(store.log) == 3 and proj.starts == 2
    assert proj.mark is not None and proj.mark.seq == store.log.last_seq


def test_an_event_that_raises_is_quarantined_and_retried(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    proj.poison = {"bad"}
    driver = _driver(proj, tmp_path)
    bad = _say(store, "a", "bad", "c")[1]
    assert driver.catch_up(store.log) == 2
    assert proj.texts == {1: "a", 3: "c"}
    assert proj.mark is not None and proj.mark.seq == 3  # the rest went on past it
    (q,) = driver.quarantined()
    assert q.seq == bad and "cannot take 'bad'" in q.reason
    saved = json.loads((tmp_path / "texts.quarantine.json").read_text())
    assert [e["seq"] for e in saved] == [bad]  # it outlives this process
    (finding,) = check_quarantines(tmp_path)  # and the doctor says so
    assert not finding.ok and finding.title == "texts: 1 event(s) could not be applied"
    assert f"seq {bad}: ValueError" in finding.detail
    # still failing: kept, counted
    assert driver.catch_up(store.log) == 0
    assert driver.quarantined()[0].attempts == 2
    # fixed (an upgrade): a new driver reads the quarantine back and the retry puts it in
    proj.poison = set()
    again = _driver(proj, tmp_path)
    assert again.catch_up(store.log) == 1
    assert proj.texts == {1: "a", 2: "bad", 3: "c"} and proj.mark.seq == 3
    assert again.quarantined() == [] and not (tmp_path / "texts.quarantine.json").exists()
    assert check_quarantines(tmp_path) == []


def test_a_last_event_that_raises_does_not_hold_the_mark_back(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    proj.poison = {"bad"}
    driver = _driver(proj, tmp_path)
    _say(store, "a", "bad")
    assert driver.catch_up(store.log) == 1
    assert proj.mark is not None and proj.mark.seq == 2
    assert [q.seq for q in driver.quarantined()] == [2]


def test_a_failing_store_raises_and_nothing_moves(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    proj.broken = True
    driver = _driver(proj, tmp_path)
    _say(store, "a", "b", "c")
    with pytest.raises(OSError, match="no space"):
        driver.catch_up(store.log)
    assert proj.texts == {} and proj.mark == START
    assert driver.quarantined() == [] and not (tmp_path / "texts.quarantine.json").exists()
    proj.broken = False
    assert driver.catch_up(store.log) == 3  # the next catch-up does it all


def test_a_store_that_breaks_later_is_not_mistaken_for_bad_events(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    driver = _driver(proj, tmp_path)
    _say(store, "a", "b")
    driver.catch_up(store.log)
    proj.mark_broken = True  # not an OS error: asking it to keep its own mark tells
    _say(store, "c", "d")
    with pytest.raises(RuntimeError, match="cannot write the mark"):
        driver.catch_up(store.log)
    # it could not even keep its own mark: the store's failure, not the events' (no quarantine)
    assert proj.texts == {1: "a", 2: "b"} and proj.mark is not None and proj.mark.seq == 2
    assert driver.quarantined() == [] and not (tmp_path / "texts.quarantine.json").exists()
    proj.mark_broken = False
    assert driver.catch_up(store.log) == 2 and proj.texts[4] == "d"


def test_a_lone_event_that_raises_while_following_is_quarantined(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    proj.poison = {"bad"}
    driver = _driver(proj, tmp_path)
    _say(store, "a")
    driver.catch_up(store.log)
    rec = store.append(Message(role="user", content="bad"), session="s")
    assert driver.follow([rec], store.log) == 0  # the listener does not raise into the append
    assert proj.mark == Mark(rec.seq, rec.id, store.log.head)
    assert [q.seq for q in driver.quarantined()] == [rec.seq]


def test_follow_applies_new_records_and_a_store_behind_catches_up(store: Store, tmp_path: Path) -> None:
    proj = Texts()
    driver = _driver(proj, tmp_path)
    _say(store, "a")
    driver.catch_up(store.log)
    rec = store.append(Message(role="user", content="b"), session="s")
    assert driver.follow([rec], store.log) == 1
    assert proj.batches[-1] == [2] and proj.mark == Mark(2, rec.id, store.log.head)
    _say(store, "c")  # not followed (appended while it was not listening)
    late = store.append(Message(role="user", content="d"), session="s")
    assert driver.follow([late], store.log) == 2  # read from the log: c and d
    assert proj.texts == {1: "a", 2: "b", 3: "c", 4: "d"}
