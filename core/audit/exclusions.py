"""Which parts of the log a rebuild leaves out (``--exclude``), and the error rebuilds raise.

``SESSION`` / ``session:KEY`` / ``SEQ`` / ``A-B`` / ``A..B``: parsed and checked
against the log by :func:`parse_exclusions` (pure).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from memtray.core.base.errors import MemtrayError


class RebuildError(MemtrayError):
    """A rebuild could not be started, resumed, compared or adopted as asked."""


@dataclass(frozen=True)
class Exclusions:
    sessions: frozenset[str] = frozenset()
    ranges: tuple[tuple[int, int], ...] = ()  # merged, sorted, inclusive

    def excludes(self, seq: int, session: str | None) -> bool:
        if session is not None and session in self.sessions:
            return True
        i = bisect.bisect_right(self.ranges, (seq, float("inf"))) - 1
        return i >= 0 and self.ranges[i][0] <= seq <= self.ranges[i][1]

    def specs(self) -> list[str]:
        return [f"session:{s}" for s in sorted(self.sessions)] + [
            f"{a}-{b}" if a != b else str(a) for a, b in self.ranges
        ]

    def __bool__(self) -> bool:
        return bool(self.sessions or self.ranges)


_RANGE_RE = re.compile(r"(?:seq:)?(\d+)(?:\s*(?:-|\.\.)\s*(\d+))?")


def parse_exclusions(specs: Iterable[str], *, last_seq: int, sessions: Iterable[str]) -> tuple[Exclusions, list[str]]:
    """``SESSION`` / ``session:KEY`` / ``SEQ`` / ``A-B`` / ``A..B`` -> exclusions and notes.

    A range beyond the log, a reversed range or an unknown session is an error;
    overlapping ranges are merged (with a note).
    """
    known = set(sessions)
    names: set[str] = set()
    ranges: list[tuple[int, int]] = []
    notes: list[str] = []
    for raw in specs:
        spec = raw.strip()
        m = _RANGE_RE.fullmatch(spec)
        if m and not spec.startswith("session:"):
            a, b = int(m.group(1)), int(m.group(2) or m.group(1))
            if b < a:
                raise RebuildError(f"--exclude {spec}: the range is reversed", hint=f"Write it as {b}-{a}.")
            if a < 1:
                raise RebuildError(f"--exclude {spec}: event seqs start at 1")
            if a > last_seq:
                raise RebuildError(f"--exclude {spec}: there are no such events (the log ends at seq {last_seq})",
                                   hint="See `memtray events tail` for seqs.")
            if b > last_seq:
                notes.append(f"--exclude {spec}: the log ends at seq {last_seq} (later events are excluded too)")
            ranges.append((a, b))
            continue
        key = spec.removeprefix("session:")
        if not key:
            raise RebuildError(f"--exclude {raw!r}: empty session name")
        if key not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise RebuildError(f"--exclude {spec}: no session named {key!r} in the log",
                               hint=f"Sessions in the log: {listed}. A seq range looks like 120-180.")
        names.add(key)
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for a, b in ranges:
        if merged and a <= merged[-1][1] + 1:
            prev = merged[-1]
            if a <= prev[1]:
                notes.append(f"--exclude ranges {prev[0]}-{prev[1]} and {a}-{b} overlap; excluding "
                             f"{prev[0]}-{max(b, prev[1])}")
            merged[-1] = (prev[0], max(b, prev[1]))
        else:
            merged.append((a, b))
    return Exclusions(frozenset(names), tuple(merged)), notes


__all__ = ["Exclusions", "RebuildError", "parse_exclusions"]
