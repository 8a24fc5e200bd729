"""Golden fixtures of every schema version still read, upcast and replay."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from memtray.core.base.errors import UnknownEventVersion
from memtray.core.log.events import SCHEMA, Record, Schema, decode_raw
from memtray.core.log.projections import KNOWN_TYPES, replay

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "events"


def _records(name: str) -> list[Record]:
    return [decode_raw(line) for line in (GOLDEN / name).read_bytes().split(b"\n") if line]


def test_v1_fixture_reads_and_replays() -> None:
    recs = _records("v1.jsonl")
    types = {r.type for r in recs}
    assert types <= KNOWN_TYPES
    for rec in recs:
        payload = SCHEMA.payload(rec)
        assert payload is not None, rec.type
        data = payload.to_data()
        for key, value in rec.data.items():
            if value is not None:
                assert data[key] == value, (rec.type, key)
    state = replay(SCHEMA.upcast(r) for r in recs)
    assert state.last_seq == len(recs)
    assert state.memory.startswith("# Facts")
    assert state.sessions["quick"].last_consolidated == 4
    assert not state.reminders["01REM"].active


def test_every_registered_type_has_a_golden_record() -> None:
    have = {r.type for p in GOLDEN.glob("v*.jsonl") for r in _records(p.name)}
    missing = set(SCHEMA.types) - have
    assert not missing, f"add a golden record for: {missing} in a new fixture file"


def test_fixture_bytes_are_frozen() -> None:
    files = sorted(GOLDEN.glob("v*.jsonl"))
    assert files
    for path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert digest == path.with_suffix(".sha256").read_text().split()[0], f"{path.name} was edited"


def test_upcaster_chain_and_newer_version() -> None:
    schema = Schema()
    schema.add_version("note", 3)

    @schema.upcaster("note", 1)
    def _v1(d: dict) -> dict:  # type: ignore[type-arg]
        return {"text": d["body"]}

    @schema.upcaster("note", 2)
    def _v2(d: dict) -> dict:  # type: ignore[type-arg]
        return {**d, "tags": []}

    old = Record(1, "i", "t", "note", 1, None, {"body": "hello"})
    up = schema.upcast(old)
    assert up.v == 3 and up.data == {"text": "hello", "tags": []}
    with pytest.raises(UnknownEventVersion):
        schema.upcast(Record(2, "j", "t", "note", 4, None, {}))
    unknown = Record(3, "k", "t", "other", 7, None, {"a": 1})
    assert schema.upcast(unknown) is unknown


def test_review_choices_and_device_names_fixture_replays() -> None:
    recs = _records("v1-review.jsonl")
    state = replay(SCHEMA.upcast(r) for r in recs)
    assert state.device_names == {"d000000000001": "Laptop", "d000000000002": "Desktop"}
    assert list(state.review) == ["5ecb9946c0"]  # the undo's revision holds the conflict again
    kept = SCHEMA.payload(recs[2])
    assert kept is not None and kept.to_data()["entry"]["quote"] == "I play the cello"
