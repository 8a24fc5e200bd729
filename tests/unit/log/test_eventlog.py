"""The event log: durable appends, recovery of torn tails, refusal of middle damage."""

from __future__ import annotations

import errno
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.errors import LogCorrupt, LogWriteError
from memtray.core.log.eventlog import EventLog, FileOps
from memtray.core.log.events import decode_raw, encode, verify_line
from memtray.core.log.segments import list_segments, verify


def _open(d: Path, **kw: object) -> EventLog:
    clock = FakeClock()
    return EventLog.open(d, clock=clock, ids=seeded_ids(clock), **kw)  # type: ignore[arg-type]


def _fill(elog: EventLog, n: int, session: str = "s") -> None:
    for i in range(n):
        elog.append("message", {"role": "user", "content": f"message {i}"}, session=session)


def test_append_is_gapless_and_reopens(tmp_path: Path) -> None:
    elog = _open(tmp_path)
    _fill(elog, 10)
    assert elog.last_seq == 10
    elog.close()
    again = _open(tmp_path)
    assert [r.seq for r in again.records()] == list(range(1, 11))
    assert again.last_seq == 10


def test_record_line_format_matches_envelope(tmp_path: Path) -> None:
    elog = _open(tmp_path)
    rec = elog.append("message", {"role": "user", "content": "hi"}, session="quick")
    line = (tmp_path / "000001.jsonl").read_bytes()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    obj = json.loads(line)
    assert list(obj) == ["seq", "id", "ts", "type", "v", "session", "data", "crc"]
    assert obj["seq"] == rec.seq == 1 and obj["type"] == "message" and obj["v"] == 1
    assert obj["ts"].endswith("Z") and len(obj["id"]) == 26
    assert verify_line(line[:-1])


def test_files_are_private(tmp_path: Path) -> None:
    elog = _open(tmp_path / "events")
    _fill(elog, 1)
    assert (tmp_path / "events").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "events" / "000001.jsonl").stat().st_mode & 0o777 == 0o600


def test_torn_last_record_at_every_offset(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    base = tmp_path / "base"
    elog = _open(base)
    _fill(elog, 3)
    elog.close()
    seg = (base / "000001.jsonl").read_bytes()
    lines = seg.split(b"\n")[:-1]
    good = b"".join(ln + b"\n" for ln in lines[:2])
    last = lines[2] + b"\n"
    for cut in range(1, len(last)):  # every proper prefix of the last record
        d = tmp_path / f"cut{cut}"
        d.mkdir()
        (d / "000001.jsonl").write_bytes(good + last[:cut])
        with caplog.at_level(logging.WARNING):
            reopened = _open(d)
        assert reopened.last_seq == 2, cut
        assert not reopened.readonly
        assert (d / "000001.jsonl").read_bytes() == good
        assert (d / "000001.jsonl.torn").read_bytes() == last[:cut]
        # the log keeps working, seq stays gapless
        assert reopened.append("message", {"role": "user", "content": "after"}).seq == 3
        reopened.close()
    assert "cut" in caplog.text


@pytest.mark.parametrize("junk", [b"\x00" * 17, b"\x00\x00\n\x00\n", b"garbage", b"{not json}\n", b"\xff\xfe\n"])
def test_garbage_after_last_newline_is_cut(tmp_path: Path, junk: bytes, caplog: pytest.LogCaptureFixture) -> None:
    elog = _open(tmp_path)
    _fill(elog, 4)
    elog.close()
    seg = tmp_path / "000001.jsonl"
    good = seg.read_bytes()
    seg.write_bytes(good + junk)
    with caplog.at_level(logging.WARNING):
        again = _open(tmp_path)
    assert again.last_seq == 4 and seg.read_bytes() == good
    assert (tmp_path / "000001.jsonl.torn").read_bytes() == junk


def test_flipped_byte_in_middle_opens_read_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    elog = _open(tmp_path)
    _fill(elog, 5)
    elog.close()
    seg = tmp_path / "000001.jsonl"
    raw = bytearray(seg.read_bytes())
    second = raw.index(b"\n") + 1
    raw[second + 30] ^= 0x01  # inside record 2
    seg.write_bytes(bytes(raw))
    before = seg.read_bytes()
    with caplog.at_level(logging.ERROR):
        again = _open(tmp_path)
    assert again.readonly and again.problem is not None
    assert "000001.jsonl, line 2" in again.problem.describe()
    with pytest.raises(LogCorrupt) as err:
        again.append("message", {"role": "user", "content": "x"})
    assert "doctor" in err.value.hint
    assert seg.read_bytes() == before  # never repaired behind the user's back
    count, damages = verify(tmp_path)
    assert count == 4 and len(damages) == 1 and damages[0].line == 2


def test_middle_damage_in_earlier_segment_is_reported_by_read(tmp_path: Path) -> None:
    elog = _open(tmp_path, segment_bytes=600)
    _fill(elog, 12)
    elog.close()
    segs = list_segments(tmp_path)
    assert len(segs) > 2
    first = segs[0][1]
    raw = bytearray(first.read_bytes())
    raw[5] ^= 0x20
    first.write_bytes(bytes(raw))
    again = _open(tmp_path, segment_bytes=600)  # tail segment is fine
    with pytest.raises(LogCorrupt):
        list(again.records())


def test_segments_rotate_and_seq_continues(tmp_path: Path) -> None:
    elog = _open(tmp_path, segment_bytes=1000)
    _fill(elog, 30)
    elog.close()
    segs = list_segments(tmp_path)
    assert len(segs) >= 5
    assert all(p.stat().st_size <= 1000 for _, p in segs[:-1])
    again = _open(tmp_path, segment_bytes=1000)
    assert [r.seq for r in again.records()] == list(range(1, 31))
    assert again.append("x.test", {}).seq == 31


class FaultyFiles(FileOps):
    def __init__(self) -> None:
        self.fail_write: int | None = None
        self.fail_fsync: int | None = None
        self.fail_truncate = False
        self.partial = False

    def write(self, fd: int, data: bytes) -> int:
        if self.fail_write is not None:
            if self.partial:
                super().write(fd, data[: len(data) // 2])
            raise OSError(self.fail_write, "injected")
        return super().write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.fail_fsync is not None:
            raise OSError(self.fail_fsync, "injected")
        super().fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        if self.fail_truncate:
            raise OSError(errno.EIO, "injected")
        super().truncate(fd, size)


@pytest.mark.parametrize("where", ["write", "partial-write", "fsync"])
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_write_faults_raise_typed_error_and_retry_is_idempotent(tmp_path: Path, where: str, code: int) -> None:
    files = FaultyFiles()
    elog = _open(tmp_path, files=files)
    _fill(elog, 2)
    size = (tmp_path / "000001.jsonl").stat().st_size
    if where == "fsync":
        files.fail_fsync = code
    else:
        files.fail_write = code
        files.partial = where == "partial-write"
    with pytest.raises(LogWriteError) as err:
        elog.append("message", {"role": "user", "content": "lost?"}, id="01EVENTIDRETRY0000000000000")
    assert ("full" in str(err.value)) == (code == errno.ENOSPC)
    assert elog.last_seq == 2  # state did not advance
    assert (tmp_path / "000001.jsonl").stat().st_size == size  # nothing half-written stays
    files.fail_write = files.fail_fsync = None
    rec = elog.append("message", {"role": "user", "content": "lost?"}, id="01EVENTIDRETRY0000000000000")
    again = elog.append("message", {"role": "user", "content": "lost?"}, id="01EVENTIDRETRY0000000000000")
    assert rec.seq == again.seq == 3
    assert [r.seq for r in _open(tmp_path).records()] == [1, 2, 3]


def test_fsync_failure_with_failed_undo_adopts_what_reached_disk(tmp_path: Path) -> None:
    files = FaultyFiles()
    elog = _open(tmp_path, files=files)
    _fill(elog, 1)
    files.fail_fsync = errno.EIO
    files.fail_truncate = True
    with pytest.raises(LogWriteError):
        elog.append("message", {"role": "user", "content": "maybe"}, id="01MAYBE0000000000000000000")
    files.fail_fsync = None
    files.fail_truncate = False
    # The bytes did reach the file: the retry finds them instead of writing twice.
    rec = elog.append("message", {"role": "user", "content": "maybe"}, id="01MAYBE0000000000000000000")
    assert rec.seq == 2
    nxt = elog.append("message", {"role": "user", "content": "next"})
    assert nxt.seq == 3
    assert [r.seq for r in _open(tmp_path).records()] == [1, 2, 3]


def test_idempotent_id_survives_reopen(tmp_path: Path) -> None:
    elog = _open(tmp_path)
    elog.append("message", {"role": "user", "content": "a"}, id="01SAMEID000000000000000000")
    elog.close()
    again = _open(tmp_path)
    rec = again.append("message", {"role": "user", "content": "a"}, id="01SAMEID000000000000000000")
    assert rec.seq == 1 and again.last_seq == 1


def test_unknown_type_and_newer_version_are_kept(tmp_path: Path) -> None:
    elog = _open(tmp_path)
    elog.append("message", {"role": "user", "content": "a"})
    elog.append("future.thing", {"x": 1})
    elog.append("message", {"role": "user", "content": "b"}, v=99)
    elog.close()
    recs = list(_open(tmp_path).records())
    assert [r.type for r in recs] == ["message", "future.thing", "message"]
    assert recs[1].data == {"x": 1} and recs[2].v == 99


def _plant_legacy(elog: EventLog, directory: Path, content: str) -> None:
    """Append a record as memtray <= 0.x wrote lone surrogates: escaped in the JSON."""
    from memtray.core.log.events import Record, legacy_line

    seq = elog.last_seq + 1
    elog.close()
    rec = Record(seq, f"legacy{seq:020d}", "2026-11-30T09:00:00.000Z", "message", 1, None,
                 {"role": "user", "content": content})
    with open(directory / "000001.jsonl", "ab") as fh:
        fh.write(legacy_line(rec))


def test_non_utf8_is_refused_and_large_payloads_round_trip(tmp_path: Path) -> None:
    from memtray.core.base.errors import InvalidText

    big = "x" * 3_000_000
    elog = _open(tmp_path)
    for bad in ("bytes \udcff\udcfe", "lone \ud800", "nul \x00 inside", "\udfff"):
        with pytest.raises(InvalidText, match=r"refused to log message: content contains a (lone surrogate|NUL)"):
            elog.append("message", {"role": "user", "content": bad})
    with pytest.raises(InvalidText, match="session contains a NUL"):
        elog.append("message", {"role": "user", "content": "ok"}, session="a\x00b")
    with pytest.raises(InvalidText, match=r"tool_calls\[0\]\.function \(a key\)"):
        elog.append("message", {"role": "assistant", "tool_calls": [{"function": {"\ud800": 1}}]})
    assert elog.last_seq == 0 and not (tmp_path / "000001.jsonl").exists()  # nothing was written
    ok = "an escaped backslash-u0000 is text: \\u0000, and 🎉 é 東京"
    elog.append("message", {"role": "user", "content": ok})
    elog.append("message", {"role": "user", "content": big})
    elog.close()
    recs = list(_open(tmp_path).records())
    assert recs[0].data["content"] == ok
    assert recs[1].data["content"] == big


def test_records_older_versions_wrote_with_surrogates_still_read(tmp_path: Path) -> None:
    weird = "bytes \udcff\udcfe and NUL-free text " + "é" * 10
    elog = _open(tmp_path)
    _fill(elog, 2)
    _plant_legacy(elog, tmp_path, weird)
    again = _open(tmp_path)
    assert [r.data["content"] for r in again.records()][-1] == weird
    again.append("message", {"role": "user", "content": "after"})
    assert verify(tmp_path) == (4, [])


def test_group_commit_writes_all_in_one_append(tmp_path: Path) -> None:
    elog = _open(tmp_path)
    recs = elog.append_many([("a", {}, None, None, None), ("b", {}, None, None, None)])
    assert [r.seq for r in recs] == [1, 2]
    assert [decode_raw(ln).type for ln in (tmp_path / "000001.jsonl").read_bytes().split(b"\n")[:-1]] == ["a", "b"]


def test_encode_decode_roundtrip_and_crc_detects_flip() -> None:
    from memtray.core.log.events import Record

    rec = Record(7, "01ABC", "2026-11-30T09:00:00.000Z", "message", 1, "quick", {"role": "user", "content": "hi ✓"})
    line = encode(rec)[:-1]
    assert decode_raw(line) == rec
    for i in range(len(line)):
        flipped = bytearray(line)
        flipped[i] ^= 0x04
        assert not verify_line(bytes(flipped)), i


def _careful(path: Path, expect_seq: int | None = None) -> tuple[list[Any], list[int], object]:
    from memtray.core.log.segments import _scan_careful

    records: list[Any] = []
    ends: list[int] = []
    damage = _scan_careful(path, path.read_bytes(), 0, 0, 0, expect_seq, records, ends)
    return records, ends, damage


def test_bulk_scan_finds_exactly_what_the_line_by_line_scan_finds(tmp_path: Path) -> None:
    """The fast path of scan_segment must judge every damage like the careful scan."""
    from memtray.core.log.segments import scan_envelopes as _scan_envelopes
    from memtray.core.log.segments import scan_segment

    raws = []
    for name, odd in (("plain", None), ("surrogate", "lone \udcff surrogate")):  # stdlib-only JSON
        elog = _open(tmp_path / name)
        _fill(elog, 5)
        if odd is not None:
            _plant_legacy(elog, tmp_path / name, odd)  # older versions wrote these
            elog = _open(tmp_path / name)
        _fill(elog, 2)
        elog.close()
        raws.append((tmp_path / name / "000001.jsonl").read_bytes())
    seg = tmp_path / "000001.jsonl"
    variants = []
    for raw in raws:
        lines = raw.split(b"\n")
        variants += [raw, raw[:-1], raw + b'{"seq":9', b"\n".join(lines[:2] + lines[3:])]  # torn, gap
        variants += [raw[:i] for i in range(0, len(raw), 13)]
        variants += [raw[:i] + bytes([raw[i] ^ 0x04]) + raw[i + 1 :] for i in range(0, len(raw), 11)]
    for variant in variants:
        seg.write_bytes(variant)
        for expect in (None, 1, 2):
            fast = scan_segment(seg, 1, 0, expect)
            records, ends, damage = _careful(seg, expect)
            assert (fast.records, fast.ends, fast.damage) == (records, ends, damage)
            assert fast.good_end == (ends[-1] if ends else 0)
            assert fast.tail_bytes == len(variant) - fast.good_end
            quick = _scan_envelopes(seg, expect)  # recovery's fast path: all or nothing
            if quick is not None:
                assert damage is None
                assert quick == ([r.seq for r in records], [r.id for r in records], len(variant))
    clean = tmp_path / "plain" / "000001.jsonl"
    assert _scan_envelopes(clean, None) is not None and _scan_envelopes(clean, 1) is not None
