"""Injected time and identity: the clock, ULIDs, randomness.

Nothing in core calls ``time.time()`` or ``datetime.now()`` directly; it takes a
:class:`Clock` so tests can drive time without sleeping or monkeypatching.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class Clock:
    """Wall clock plus a monotonic clock. Subclass or use :class:`FakeClock` in tests."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def local_zone_name(self) -> str:
        return local_zone_name()


class FakeClock(Clock):
    """A clock that only moves when told to."""

    def __init__(self, start: datetime | None = None, zone: str = "UTC") -> None:
        self._now = start or datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)
        self._mono = 1000.0
        self._zone = zone
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def local_zone_name(self) -> str:
        return self._zone

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            self._mono += seconds


def local_zone_name() -> str:
    """Best-effort IANA name of the system time zone (falls back to UTC)."""
    tz = os.environ.get("TZ")
    if tz and "/" in tz:
        return tz.lstrip(":")
    try:
        link = os.readlink("/etc/localtime")
        if "zoneinfo/" in link:
            return link.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    try:
        with open("/etc/timezone", encoding="utf-8") as fh:
            name = fh.read().strip()
            if name:
                return name
    except OSError:
        pass
    return "UTC"


def format_ts(dt: datetime) -> str:
    """RFC 3339 UTC with milliseconds and a Z, as stored in events."""
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def parse_ts(text: str) -> datetime:
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt


class IdGenerator:
    """ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, sortable."""

    def __init__(self, clock: Clock | None = None, rng: Callable[[int], int] | None = None) -> None:
        self._clock = clock or Clock()
        self._rng = rng or random.SystemRandom().getrandbits

    def new(self) -> str:
        ms = int(self._clock.now().timestamp() * 1000)
        value = (ms << 80) | self._rng(80)
        chars = []
        for _ in range(26):
            chars.append(_CROCKFORD[value & 31])
            value >>= 5
        return "".join(reversed(chars))


def seeded_ids(clock: Clock, seed: int = 0) -> IdGenerator:
    """A deterministic id generator for tests and benchmarks."""
    return IdGenerator(clock, random.Random(seed).getrandbits)
