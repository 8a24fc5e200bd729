"""The door's checks (core/log/validate.py, core/log/door.py): what a line from outside may be."""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest
from memtray.core.log.door import Door, Quarantine, Refusal, Source
from memtray.core.log.events import SCHEMA, Record, encode
from memtray.core.log.payloads import SCOPE_NAME_RULE
from memtray.core.log.validate import LIMITS, Invalid, Limits, check_envelope, checker

SRC = Source("peer", "d0123456789ab", "segments/x.jsonl line 1")
ID = "01JDOOR00000000000000000AB"
TS = "2026-12-01T10:00:00.000Z"


def line_of(obj: dict[str, Any]) -> bytes:
    """A line with a matching checksum around any JSON object (as a hostile peer can write)."""
    body = json.dumps(obj, separators=(",", ":")).encode()
    return body[:-1] + b',"crc":"' + f"{zlib.crc32(body):08x}".encode() + b'"}'


def event(**over: Any) -> dict[str, Any]:
    base = {"seq": 1, "id": ID, "ts": TS, "type": "message", "v": 1, "session": "quick",
            "data": {"role": "user", "content": "hello"}}
    return {**base, **over}


def reason(got: Record | Refusal) -> str:
    assert isinstance(got, Refusal), got
    return got.reason


def test_a_good_line_passes_and_a_secret_in_it_is_redacted() -> None:
    got = Door().line(line_of(event(data={"role": "user", "content": "key sk-proj-" + "a1B2" * 12})), SRC)
    assert isinstance(got, Record) and got.data["role"] == "user"
    assert "sk-proj-" not in got.data["content"] and "[REDACTED" in got.data["content"]


@pytest.mark.parametrize(("over", "said"), [
    ({"data": [1, 2]}, "data: must be an object"),
    ({"seq": "1"}, "seq: must be a positive integer"),
    ({"seq": 0}, "seq: must be a positive integer"),
    ({"id": 12345}, "id: is not an event id"),
    ({"id": "a b"}, "id: is not an event id"),
    ({"id": "x" * 200}, "id: is not an event id"),
    ({"ts": "yesterday"}, "ts: is not an RFC 3339 time"),
    ({"ts": "1969-12-31T23:59:59.000Z"}, "outside the years"),
    ({"ts": "9999-01-01T00:00:00.000Z"}, "outside the years"),
    ({"ts": "2026-02-30T00:00:00.000Z"}, "not a valid time"),
    ({"type": ["message"]}, "type: is not an event type name"),
    ({"v": "1"}, "v: must be an integer"),
    ({"session": "a\nb"}, "session: is not a session name"),
    ({"session": 7}, "session: is not a session name"),
    ({"data": {"content": "no role"}}, "missing required field(s): role"),
    ({"data": {"role": 3}}, "data.role: must be a text"),
    ({"data": {"role": "user", "content": {"x": 1}}}, "data.content: must be a text"),
    ({"data": {"role": "user", "tool_calls": [{"id": "c", "type": "function"}]}}, "missing required field(s): function"),
    ({"data": {"role": "user", "basis_seq": 1.5}}, "data.basis_seq: must be an integer"),
    ({"data": {"role": "user", "basis_seq": True}}, "data.basis_seq: must be an integer"),
    ({"data": {"role": "user", "Bad Name": 1}}, "an unknown member with a name no field has"),
    ({"type": "reminder.cancelled", "data": {"reason": "user"}}, "missing required field(s): reminder"),
    ({"type": "sync.purge", "data": {"pattern_sha256": "x", "salt": "y", "events": {"E1": "not an object"}}},
     "data.events.E1: must be an object"),
    ({"type": "sync.purge", "data": {"pattern_sha256": "x", "salt": "y", "events": [1]}}, "data.events: must be"),
    ({"data": {"role": "user", "content": "a\u0000b"}}, "NUL"),
])
def test_a_malformed_event_is_refused_with_where_and_why(over: dict[str, Any], said: str) -> None:
    assert said in reason(Door().line(line_of(event(**over)), SRC))


def test_nesting_100_000_deep_is_refused_not_a_recursion_error() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    body = b'{"seq":1,"id":"' + ID.encode() + b'","ts":"' + TS.encode() + b'","type":"x.y","v":1,"session":null,' \
        b'"data":{"x":' + deep + b"}}"
    line = body[:-1] + b',"crc":"' + f"{zlib.crc32(body):08x}".encode() + b'"}'
    assert "nested too deep" in reason(Door().line(line, SRC))
    # deep but within what the parser reads: the door's own limit
    nested: Any = "x"
    for _ in range(40):
        nested = [nested]
    assert "nested deeper than" in reason(Door().line(line_of(event(type="x.y", data={"x": nested})), SRC))


def test_sizes_are_capped_before_parsing() -> None:
    small = Door(limits=Limits(event_bytes=2000, string_chars=100))
    assert "an event of" in reason(small.line(line_of(event(data={"role": "user", "content": "x" * 3000})), SRC))
    assert "characters (at most 100)" in reason(small.line(line_of(event(data={"role": "user",
                                                                                "content": "x" * 500})), SRC))
    # a streaming reader hands over only the first bytes and the real size
    assert "150,000,000 bytes" in reason(Door().line(b"{", SRC, size=150_000_000))


def test_a_damaged_line_and_garbage_are_refused() -> None:
    good = line_of(event())
    assert "checksum" in reason(Door().line(good.replace(b"hello", b"hellO"), SRC))
    assert "checksum" in reason(Door().line(b"\xff\xfe garbage", SRC))


def test_an_unknown_type_or_a_newer_version_is_kept_verbatim_after_the_generic_checks() -> None:
    newer = Door().line(line_of(event(type="poll.created", data={"question": "tea?", "options": ["y", "n"]})), SRC)
    assert isinstance(newer, Record) and newer.data == {"question": "tea?", "options": ["y", "n"]}
    v9 = Door().line(line_of(event(v=9, data={"shape": "unknown to us"})), SRC)
    assert isinstance(v9, Record) and v9.v == 9
    # a newer device's extra field on a known type is kept
    extra = Door().line(line_of(event(data={"role": "user", "content": "hi", "mood": "happy"})), SRC)
    assert isinstance(extra, Record) and extra.data["mood"] == "happy"


def test_every_registered_class_compiles_and_accepts_what_the_app_writes() -> None:
    for cls in SCHEMA.types.values():
        checker(cls)
    # a line the codec writes passes (the golden fixtures are checked the same way below)
    rec = Record(3, ID, TS, "reminder.scheduled", 1, None,
                 {"reminder": ID, "text": "tea", "kind": "at", "spec": TS, "tz": "UTC"})
    assert isinstance(Door().line(encode(rec)[:-1], SRC), Record)


def test_the_golden_events_all_pass_the_door() -> None:
    from pathlib import Path

    golden = Path(__file__).parents[2] / "golden" / "events"
    lines = [ln for p in sorted(golden.glob("v*.jsonl")) for ln in p.read_bytes().splitlines() if ln]
    assert lines
    refused = [(ln[:80], got.reason) for ln in lines if isinstance(got := Door().line(ln, SRC), Refusal)]
    assert not refused


def test_envelope_checks_raise_invalid_only() -> None:
    with pytest.raises(Invalid, match="seq"):
        check_envelope(None, ID, TS, "message", 1, None)
    check_envelope(1, "reminder.fired:" + ID + ":2026-12-01T10:00:00Z", TS, "reminder.fired", 1, None)
    check_envelope(1, "M" + "0123456789ABCDEF012345678", TS, "memory.written", 1, None)
    assert LIMITS.event_bytes == 1 << 20


def test_an_admitted_import_event_is_checked_and_redacted() -> None:
    door = Door()
    ok = door.event("message", {"role": "user", "content": "token ghp_" + "a" * 36}, "chatgpt:1", SRC)
    assert not isinstance(ok, Refusal) and "ghp_" not in ok.data["content"]
    assert ok.payload().to_data() == ok.data and ok.session == "chatgpt:1"
    bad = door.event("message", {"role": ["user"]}, None, SRC)
    assert isinstance(bad, Refusal) and "data.role" in bad.reason


def test_the_quarantine_keeps_a_refusal_once_capped_and_redacted(tmp_path: Any) -> None:
    q = Quarantine(tmp_path)
    got = Door().line(line_of(event(seq="1", data={"role": "user", "content": "AKIAIOSFODNN7EXAMPLE " + "z" * 9000})),
                      SRC)
    assert isinstance(got, Refusal)
    q.put(got)
    q.put(got)
    [entry] = q.entries()
    assert entry["source"]["name"] == "d0123456789ab" and "seq" in entry["reason"]
    assert len(entry["raw"]) <= 4096 + 100 and "AKIAIOSFODNN7EXAMPLE" not in entry["raw"]
    assert (tmp_path / "quarantine").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(("data", "said"), [
    ({"device": "laptop", "name": "Laptop"}, "data.device: is not a device id"),
    ({"device": "d0123456789ab", "name": "x" * 41}, "data.name: is not a device name"),
    ({"device": "d0123456789ab", "name": "Lap\ntop"}, "data.name: is not a device name"),
    ({"device": "d0123456789ab", "name": "d000000000001"}, "data.name: is not a device name"),
])
def test_a_peers_device_name_is_one_short_line_for_a_real_device(data: dict[str, Any], said: str) -> None:
    assert said in reason(Door().line(line_of(event(type="device.named", data=data)), SRC))
    good = Door().line(line_of(event(type="device.named", data={"device": "d0123456789ab", "name": "Laptop"})), SRC)
    assert isinstance(good, Record)


@pytest.mark.parametrize("scope", ["../family", "Work", "\u212a", "café", "work/x", "a" * 33, "-x", "work\n", "scopes/../x"])
def test_a_peers_conversation_scope_must_be_a_scope_name(scope: str) -> None:
    """``session.scope`` travels (a conversation keeps its scope on every device); its name
    becomes a file name and picks the facts a prompt carries, so a peer's is checked."""
    got = Door().line(line_of(event(type="session.scope", data={"scope": scope})), SRC)
    assert "data.scope" in reason(got) and SCOPE_NAME_RULE in reason(got)  # the CLI's words (scopes.check_name)


@pytest.mark.parametrize("scope", ["work", "family-2", "p_x", "global", ""])
def test_a_peers_good_conversation_scope_passes(scope: str) -> None:
    got = Door().line(line_of(event(type="session.scope", data={"scope": scope})), SRC)
    assert isinstance(got, Record) and got.data["scope"] == scope


def test_a_conversation_scope_without_its_member_is_the_global_memory() -> None:
    """``scope`` has a default (the global memory): a payload without it is read, not a crash."""
    got = Door().line(line_of(event(type="session.scope", data={})), SRC)
    assert isinstance(got, Record) and got.data == {}
