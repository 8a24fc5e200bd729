"""Segment files of the event log: naming, scanning and checking them.

A segment is ``events/NNNNNN.jsonl``, one record a line. :func:`scan_segment`
reads a segment's records up to the first damaged line (and says what the
damage is and whether it is the torn tail); :func:`verify` checks every
record of every segment. Read-only: the writer is :class:`~memtray.core.log.eventlog.EventLog`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from memtray.core.log.events import (
    BadRecord,
    Record,
    count_verified,
    decode_many,
    decode_raw,
    envelopes,
)

SEGMENT_RE = re.compile(r"^(\d{6,})\.jsonl$")
DEFAULT_SEGMENT_BYTES = 4 * 1024 * 1024  # bounds what start-up checks (see _recover)


@dataclass(frozen=True, order=True)
class Position:
    """Where a record ends: (segment number, byte offset after its newline)."""

    segment: int
    offset: int

    def to_json(self) -> list[int]:
        return [self.segment, self.offset]

    @classmethod
    def from_json(cls, obj: Any) -> Position:
        return cls(int(obj[0]), int(obj[1]))


@dataclass(frozen=True)
class Damage:
    """A damaged record found while reading."""

    segment: Path
    line: int
    offset: int
    reason: str
    at_tail: bool

    def describe(self) -> str:
        where = "at the end of" if self.at_tail else "in the middle of"
        return f"{self.reason} {where} {self.segment.name}, line {self.line} (byte {self.offset})"


def segment_path(directory: Path, number: int) -> Path:
    return directory / f"{number:06d}.jsonl"


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    if not directory.is_dir():
        return []
    out = []
    for entry in directory.iterdir():
        m = SEGMENT_RE.match(entry.name)
        if m and not entry.is_symlink():
            out.append((int(m.group(1)), entry))
    return sorted(out)


@dataclass
class Scan:
    number: int
    records: list[Record]
    ends: list[int]  # offset after each record's newline
    good_end: int  # offset after the last good record
    damage: Damage | None
    tail_bytes: int  # bytes after good_end

    def pairs(self) -> Iterator[tuple[Record, Position]]:
        number = self.number
        for rec, end in zip(self.records, self.ends, strict=True):
            yield rec, Position(number, end)


def scan_segment(path: Path, number: int, start: int = 0, expect_seq: int | None = None) -> Scan:
    """Read one segment from ``start``; classify the first damage as torn tail or middle.

    Fast path: split on newlines, verify checksums in one loop, parse the verified
    lines in one comprehension and check the seqs in bulk. Whatever it cannot vouch
    for (damage, a torn tail, a seq gap, a line only the stdlib parses) is left to
    the careful line-by-line scan, from the first such line on, so the outcome is
    the same as scanning everything carefully.
    """
    with open(path, "rb") as fh:
        fh.seek(start)
        buf = fh.read()
    lines = buf.split(b"\n")
    lines.pop()  # after the last newline: b"" or a torn record (the careful scan judges it)
    ok = count_verified(lines)
    records = decode_many(lines[:ok])
    if records is None:
        records, ok = [], 0
    if records:
        first = records[0].seq if expect_seq is None else expect_seq
        if [r.seq for r in records] != list(range(first, first + len(records))):
            ok = next(i for i, r in enumerate(records) if r.seq != first + i)  # the gap: judged carefully
            del records[ok:]
        if records:
            expect_seq = records[-1].seq + 1
    ends = list(accumulate((len(line) + 1 for line in lines[:ok]), initial=start))[1:]
    pos = ends[-1] - start if ends else 0
    damage = None
    if pos < len(buf):
        damage = _scan_careful(path, buf, pos, start, ok, expect_seq, records, ends)
    good_end = ends[-1] if ends else start
    return Scan(number, records, ends, good_end, damage, start + len(buf) - good_end)


def _scan_careful(
    path: Path, buf: bytes, pos: int, start: int, line_no: int, expect_seq: int | None,
    records: list[Record], ends: list[int],
) -> Damage | None:
    """Line by line from ``buf[pos:]`` (``line_no`` lines before it) into ``records``/``ends``;
    the first damage found, if any."""
    size = len(buf)
    damage: Damage | None = None
    while pos < size:
        nl = buf.find(b"\n", pos)
        line_no += 1
        end = size if nl < 0 else nl
        line = buf[pos:end]
        reason = None
        if nl < 0:
            reason = "torn record (no newline)"
        else:
            try:
                rec = decode_raw(line)
            except BadRecord as exc:
                reason = str(exc)
            else:
                if expect_seq is not None and rec.seq != expect_seq:
                    reason = f"sequence gap (expected seq {expect_seq}, found {rec.seq})"
                else:
                    expect_seq = rec.seq + 1
                    records.append(rec)
                    ends.append(start + nl + 1)
        if reason is not None:
            at_tail = not _any_valid_after(buf, (end + 1) if nl >= 0 else size)
            damage = Damage(path, line_no, start + pos, reason, at_tail)
            break
        pos = nl + 1
    return damage


def scan_envelopes(path: Path, expect_seq: int | None) -> tuple[list[int], list[str], int] | None:
    """Recovery's fast path: seqs and ids of every record and the segment's size, when
    all of it is intact (every line checksummed, seqs gapless, no torn tail).

    Checks every checksum but parses no JSON (:func:`~memtray.core.log.events.envelopes`),
    so opening costs a fraction of a replay of the last segment. Anything irregular
    returns None: the caller then runs the careful :func:`scan_segment`. (A line with a
    matching checksum but broken JSON, which only a deliberately crafted line can be,
    is then first reported by the read that reaches it rather than at open.)
    """
    buf = path.read_bytes()
    found = _envelopes_of(buf, expect_seq)
    return None if found is None else (*found, len(buf))


def _envelopes_of(buf: bytes, expect_seq: int | None) -> tuple[list[int], list[str]] | None:
    if buf and not buf.endswith(b"\n"):
        return None
    lines = buf.split(b"\n")
    lines.pop()
    if count_verified(lines) != len(lines):
        return None
    found = envelopes(lines)
    if found is None:
        return None
    seqs, ids = found
    if seqs:
        first = seqs[0] if expect_seq is None else expect_seq
        if seqs != list(range(first, first + len(seqs))):
            return None
    return seqs, ids


def checked_from(path: Path, pos: Position, seq: int, expect_seq: int | None
                  ) -> tuple[list[int], list[str], int] | None:
    """Recovery's fast path after a checkpoint at ``pos`` (record ``seq``) in this segment:
    every checksum of the segment is checked, but seqs and ids are read only after ``pos``
    (the rest of the recent-ids index is loaded when an append first needs it). Before
    ``pos`` the seqs must still run without a gap from ``expect_seq`` (the previous
    segment's last + 1) to ``seq``: the first line's seq and the line count say so. None
    if anything is irregular: the caller then scans the segment carefully."""
    buf = path.read_bytes()
    if not 0 < pos.offset <= len(buf) or buf[pos.offset - 1 : pos.offset] != b"\n":
        return None
    before = buf[: pos.offset].split(b"\n")
    before.pop()
    if count_verified(before) != len(before):
        return None
    first = envelopes(before[:1])
    if not first or not first[0]:
        return None
    first_seq = first[0][0]
    if (expect_seq is not None and first_seq != expect_seq) or first_seq + len(before) - 1 != seq:
        return None
    found = _envelopes_of(buf[pos.offset :], seq + 1)
    return None if found is None else (*found, len(buf))


def _any_valid_after(buf: bytes, pos: int) -> bool:
    for line in buf[pos:].split(b"\n"):
        if line.strip(b"\x00 \r\t"):
            try:
                decode_raw(line)
                return True
            except BadRecord:
                continue
    return False


def last_record(path: Path, number: int) -> Record | None:
    """The last complete, valid record of a sealed segment (reads only its tail)."""
    size = path.stat().st_size
    chunk = 65536
    while True:
        start = max(0, size - chunk)
        with open(path, "rb") as fh:
            fh.seek(start)
            buf = fh.read(size - start)
        lines = buf.split(b"\n")
        if start > 0:
            lines = lines[1:]  # first piece may be partial
        for line in reversed(lines):
            if not line:
                continue
            try:
                return decode_raw(line)
            except BadRecord:
                continue
        if start == 0:
            return None
        chunk *= 4


def verify(directory: Path) -> tuple[int, list[Damage]]:
    """Check every record of every segment. Returns (records checked, damage found)."""
    count = 0
    damages: list[Damage] = []
    segs = list_segments(directory)
    expect: int | None = None
    for i, (number, path) in enumerate(segs):
        start = 0
        while True:
            scan = scan_segment(path, number, start, expect)
            count += len(scan.records)
            if scan.records:
                expect = scan.records[-1].seq + 1
            if scan.damage is None:
                break
            dmg = scan.damage
            if dmg.at_tail and i != len(segs) - 1:
                dmg = Damage(dmg.segment, dmg.line, dmg.offset, dmg.reason, False)
            damages.append(dmg)
            if dmg.at_tail:
                break
            # continue after the damaged line to report everything
            with open(path, "rb") as fh:
                fh.seek(dmg.offset)
                rest = fh.read()
            nl = rest.find(b"\n")
            if nl < 0:
                break
            start = dmg.offset + nl + 1
            expect = None
    return count, damages
