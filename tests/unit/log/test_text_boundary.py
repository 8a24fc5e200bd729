"""Text entering an event: valid Unicode scalar values without NUL, or a clear refusal.

The codec (``events.encode``) is the one door every append passes, so these tests
drive it directly and through :class:`EventLog`; the friendly helpers (check, scrub)
are what callers use where the user typed the text or memtray must keep it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.errors import InvalidText, MemtrayError
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import (
    Record,
    check_text,
    decode_raw,
    encode,
    find_invalid,
    scrub_obj,
    scrub_text,
    text_problem,
)

#: every kind of string hypothesis can make, lone surrogates and NUL included
ANY_CHAR = st.one_of(
    st.characters(), st.characters(categories=["Cs"]), st.sampled_from(["\x00", "\\", "u", "0", "\ufffd"])
)
ANY_TEXT = st.text(alphabet=ANY_CHAR, max_size=60)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ANY_TEXT,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(ANY_TEXT, kids, max_size=4),
    max_leaves=12,
)


def _valid(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _strings(obj: object) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in [*_strings(k), *_strings(v)]]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


@given(JSONISH)
def test_encode_accepts_exactly_valid_text_and_round_trips_it(data: object) -> None:
    rec = Record(1, "01ID", "2026-11-30T09:00:00.000Z", "message", 1, "quick", {"x": data})
    if all(_valid(s) for s in _strings(data)):
        line = encode(rec)
        assert decode_raw(line[:-1]).data == {"x": data}
        assert find_invalid(data) is None
    else:
        with pytest.raises(InvalidText) as err:
            encode(rec)
        assert isinstance(err.value, MemtrayError)
        assert "refused to log message: x" in str(err.value)
        str(err.value).encode("utf-8")  # the reason itself is storable (it goes into consolidation.failed)
        assert find_invalid(data) is not None


@given(ANY_TEXT)
def test_scrub_makes_any_text_storable_and_keeps_valid_text(text: str) -> None:
    clean = scrub_text(text)
    assert text_problem(clean) is None
    if _valid(text):
        assert clean == text
    assert find_invalid(scrub_obj({text: [text, {"k": text}]})) is None


def test_problems_are_named_with_the_first_bad_character() -> None:
    assert text_problem("ab\ud800c\x00") == "a lone surrogate (U+D800) at character 2"
    assert text_problem("a\x00b\udfff") == "a NUL character at character 1"
    assert text_problem("fine 🎉") is None
    with pytest.raises(InvalidText, match=r"^the session name contains a NUL character at character 4;"):
        check_text("work\x00", "the session name")
    with pytest.raises(InvalidText, match=r"^the arguments \(a\[1\]\) contains a lone surrogate"):
        check_text({"a": ["ok", "\udcff"]}, "the arguments")


def test_nothing_is_written_when_one_event_of_a_batch_is_refused(tmp_path: Path) -> None:
    clock = FakeClock()
    elog = EventLog.open(tmp_path, clock=clock, ids=seeded_ids(clock))
    elog.append("message", {"role": "user", "content": "first"})
    size = (tmp_path / "000001.jsonl").stat().st_size
    with pytest.raises(InvalidText, match=r"memory.written: memory contains a lone surrogate"):
        elog.append_many([
            ("message", {"role": "user", "content": "fine"}, None, None, None),
            ("memory.written", {"memory": "- a \ud800 fact\x00", "reason": "consolidation"}, None, None, None),
        ])
    assert (tmp_path / "000001.jsonl").stat().st_size == size and elog.last_seq == 1
    rec = elog.append("message", {"role": "user", "content": "next"})
    assert rec.seq == 2
