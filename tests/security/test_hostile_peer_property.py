"""Arbitrary peer events, synced: never a traceback, never a home that stops working,
nothing local lost or changed, every refusal reported.

One home syncs, example after example, with a new hostile device each time whose stream
(on a real bare remote) holds what hypothesis draws: valid events of every type that
travels, events of types that must not travel, a newer device's types, envelopes with any
JSON in any member, and bytes that are no JSON at all."""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memtray.core.admin.doctor import check
from memtray.core.admin.tombstones import follow_tombstones
from memtray.core.base.home import Home
from memtray.core.log.events import SCHEMA
from memtray.core.sync.digest import state_digest

from tests.integration.sync_support import bare, contents, open_app, say
from tests.security.hostile import TS, HostilePeer, line_of
from tests.unit.log.payload_strategies import JSON, TEXT, payload

TRAVELS = ["message", "session.reset", "reminder.scheduled", "reminder.fired", "reminder.cancelled", "sync.purge"]
LOCAL = ["sync.pulled", "consolidation.started", "memory.peer", "turn.failed"]
_devices = itertools.count(1)
_ids = itertools.count(1)


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.remote = bare(root / "remote.git")
        self.app = open_app(root / "a")
        follow_tombstones(self.app)
        say(self.app, "my own words")
        assert self.app.sync is not None
        self.app.sync.sync(str(self.remote))

    def own(self) -> dict[str, Any]:
        return {r.id: (r.type, r.session, dict(r.data)) for r in self.app.store.log.records()
                if "origin" not in r.data and r.type in ("message", "memory.written")}


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with tempfile.TemporaryDirectory() as tmp:
        w = World(Path(tmp))
        try:
            yield w
        finally:
            w.app.close()


def _id() -> str:
    return f"01JPROP{next(_ids):019d}"


@st.composite
def peer_line(draw: st.DrawFn, seq: int) -> bytes:
    kind = draw(st.sampled_from(["valid", "valid", "valid", "local", "newer", "envelope", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=80).filter(lambda b: b"\n" not in b))
    envelope: dict[str, Any] = {"seq": seq, "id": _id(), "ts": TS, "v": 1, "session": "quick"}
    if kind in ("valid", "local"):
        t = draw(st.sampled_from(TRAVELS if kind == "valid" else LOCAL))
        data = draw(payload(SCHEMA.types[t]))
        data.pop("origin", None) if draw(st.booleans()) else None
        return line_of({**envelope, "type": t, "data": data})
    if kind == "newer":
        return line_of({**envelope, "type": draw(st.from_regex(r"[a-z]{3,8}\.[a-z]{3,8}", fullmatch=True)),
                        "v": draw(st.integers(1, 5)), "data": draw(st.dictionaries(TEXT, JSON, max_size=3))})
    # any member may be any JSON
    member = draw(st.sampled_from(["seq", "id", "ts", "type", "v", "session", "data"]))
    return line_of({**envelope, "type": draw(st.sampled_from(TRAVELS)), "data": {"role": "user", "content": "x"},
                    member: draw(JSON)})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_arbitrary_peer_events_never_break_a_home(world: World, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 12))
    lines = [data.draw(peer_line(seq)) for seq in range(1, n + 1)]
    device = f"d{next(_devices):012x}"
    peer = HostilePeer(world.remote, world.root, device)
    peer.push(lines, last_seq=n)
    app = world.app
    assert app.sync is not None
    before = world.own()
    rep = app.sync.sync(str(world.remote))  # never raises: a peer's stream cannot stop this device's sync
    assert world.own() == before  # nothing local lost or changed
    assert "my own words" in contents(app)
    came = [r for r in app.store.log.records() if isinstance(r.data, dict)
            and isinstance(r.data.get("origin"), dict) and r.data["origin"].get("device") == device]
    event_refusals = [r for r in rep.refused if r["source"]["name"] == device
                      and not r["source"]["where"].startswith(("purge ", "its stream"))]
    # every line of the peer is imported or reported refused, none silently dropped
    assert len(came) + len(event_refusals) == n, (len(came), rep.refused, lines)
    assert rep.refusals == len(rep.refused)
    # the home keeps working
    findings = check(Home(app.home.root))
    assert not [f for f in findings if not f.ok and f.code not in ("lock", "provenance")], \
        [(f.title, f.detail) for f in findings if not f.ok]
    assert app.store.state.unfoldable_count == 0
    json.dumps(app.sync.status())
    app.write(lambda: state_digest(app.store))
