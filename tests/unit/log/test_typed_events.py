"""Typed events: every type that is appended has one payload class, read back typed.

The scan tests read the source of core/ (the rule is about code, so they read code):
whatever a module appends is a payload object of a registered class (or a ``Verbatim``
of a type the registry knows), and no event type string is spelled anywhere but in its
class. The round-trip and upcast tests run every registered class through the codec.
"""

from __future__ import annotations

import ast
import dataclasses
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from memtray.core.base.home import Home
from memtray.core.log.events import (
    SCHEMA,
    BadPayload,
    ContextChanged,
    Message,
    Payload,
    Record,
    ReminderCancelled,
    ReminderScheduled,
    Schema,
    Verbatim,
    decode_raw,
    encode,
)
from memtray.core.log.projections import replay
from memtray.core.log.store import Store

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "core"
GOLDEN = ROOT / "tests" / "golden" / "events"
CLASSES = {cls.__name__: cls for cls in SCHEMA.types.values()}

#: string constants equal to an event type that are not event types
NOT_EVENT_TYPES = {
    ("core/search/index.py", "message"),  # a kind of search document
    ("core/search/ranking.py", "message"),  # a kind of search document
    ("core/llm/client.py", "message"),  # an exception's attribute
    ("core/llm/localmodel.py", "message"),  # the OpenAI reply's member
    ("core/llm/localprovider.py", "message"),  # the OpenAI reply's member
    ("core/migrate/chatgpt.py", "message"),  # a ChatGPT export's member
    ("core/memory/guard.py", "message"),  # a save_memory skipped entry's member
    ("core/memory/unsaid.py", "message"),  # a save_memory skipped entry's member
}


def _modules() -> Iterator[tuple[str, str, ast.Module]]:
    for path in sorted(CORE.rglob("*.py")):
        src = path.read_text(encoding="utf-8")
        yield path.relative_to(ROOT).as_posix(), src, ast.parse(src)


def _called(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _type_named(node: ast.expr) -> str | None:
    """The event type an expression names statically: a string, or ``Cls.TYPE``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr == "TYPE" and isinstance(node.value, ast.Name):
        cls = CLASSES.get(node.value.id)
        assert cls is not None, f"{node.value.id}.TYPE names no registered payload class"
        return cls.TYPE
    return None


def _appended(tree: ast.Module) -> Iterator[tuple[int, ast.expr]]:
    """What a module hands to ``store.append``/``append_many``: the payload expressions."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _called(node) not in ("append", "append_many") or not node.args:
            continue
        recv = node.func.value if isinstance(node.func, ast.Attribute) else None
        if recv is None or not ast.unparse(recv).endswith("store"):
            continue
        first = node.args[0]
        if _called(node) == "append":
            yield node.lineno, first
        elif isinstance(first, ast.List | ast.Tuple):
            for item in first.elts:
                if isinstance(item, ast.Tuple) and item.elts:
                    yield node.lineno, item.elts[0]


def test_every_type_any_module_appends_has_a_payload_class() -> None:
    seen: set[str] = set()
    problems: list[str] = []
    for where, _src, tree in _modules():
        for line, payload in _appended(tree):
            if isinstance(payload, ast.Call) and _called(payload) in CLASSES:
                seen.add(_called(payload))
            elif isinstance(payload, ast.Constant | ast.Dict | ast.JoinedStr):
                problems.append(f"{where}:{line}: appends {ast.unparse(payload)[:60]} (not a payload object)")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            named: str | None = None
            if _called(node) == "Verbatim" and node.args:
                named = _type_named(node.args[0])
            elif _called(node) == "Record" and len(node.args) >= 4:
                named = _type_named(node.args[3])
            if named is not None and named not in SCHEMA.types:
                problems.append(f"{where}:{node.lineno}: a {named!r} event has no payload class")
    assert not problems, "\n".join(problems)
    assert {"Message", "SessionReset", "SyncPulled", "SyncPurge", "MemoryPurged", "ReminderCancelled"} <= seen


def test_every_payload_class_in_core_is_registered_once() -> None:
    for where, _src, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "TYPE" \
                        and isinstance(stmt.value, ast.Constant):
                    cls = SCHEMA.types.get(stmt.value.value)
                    assert cls is not None and cls.__name__ == node.name, f"{where}: {node.name} is not registered"


def test_no_event_type_is_spelled_outside_its_class() -> None:
    types = set(SCHEMA.types)
    found: list[str] = []
    for where, _src, tree in _modules():
        declared = {id(stmt.value) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                    for stmt in node.body if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == "TYPE"}
        declared |= {id(node.args[0]) for node in ast.walk(tree)  # crash points are named after events
                     if isinstance(node, ast.Call) and _called(node) == "crash_point" and node.args}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in types and id(node) not in declared \
                    and (where, node.value) not in NOT_EVENT_TYPES:
                found.append(f"{where}:{node.lineno}: {node.value!r}")
    assert not found, "use the payload class's TYPE:\n" + "\n".join(found)


def _golden(version_of: dict[str, int]) -> Iterator[Record]:
    for path in sorted(GOLDEN.glob("v*.jsonl")):
        for line in path.read_bytes().split(b"\n"):
            if line:
                yield decode_raw(line)


def test_every_registered_class_round_trips_through_the_codec() -> None:
    done: set[str] = set()
    for rec in _golden(SCHEMA.versions):
        cls = SCHEMA.types[rec.type]
        payload = cls.of(rec)
        assert isinstance(payload, cls) and rec.payload == payload
        data = payload.to_data()
        assert cls.from_data(data) == payload
        again = decode_raw(encode(Record(rec.seq, rec.id, rec.ts, rec.type, cls.VERSION, rec.session, data))[:-1])
        assert cls.of(again) == payload and again.data == data
        built = cls(**{f.name: getattr(payload, f.name) for f in dataclasses.fields(cls)})  # type: ignore[arg-type]
        assert built == payload and built.to_data() == data
        done.add(rec.type)
    assert done == set(SCHEMA.types)


def test_every_member_is_declared_with_a_resolvable_type_and_no_factory() -> None:
    for cls in SCHEMA.types.values():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            assert f.name in hints and hints[f.name] is not typing.Any, (cls.__name__, f.name)
            assert f.default_factory is dataclasses.MISSING, (cls.__name__, f.name)
        assert {f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                                if f.default is dataclasses.MISSING} == cls.REQUIRED


def test_a_factory_default_or_a_second_class_for_a_type_is_refused() -> None:
    schema = Schema()

    @dataclass(frozen=True)
    class Listy(Payload):
        TYPE: ClassVar[str] = "test.listy"
        items: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="plain default"):
        schema.register(Listy)

    @dataclass(frozen=True)
    class Twice(Payload):
        TYPE: ClassVar[str] = "message"
        text: str = ""

    with pytest.raises(ValueError, match="registered twice"):
        SCHEMA.register(Twice)


def test_context_changed_v1_is_upcast_to_v2_and_v2_reads_as_written() -> None:
    old = next(r for r in _golden({}) if r.type == ContextChanged.TYPE and r.v == 1 and "format" not in r.data)
    up = ContextChanged.of(old)
    assert (up.format, up.redacted) == (1, False) and up.identity == "You are memtray."
    later_v1 = next(r for r in _golden({}) if r.type == ContextChanged.TYPE and r.v == 1 and "format" in r.data)
    assert ContextChanged.of(later_v1).format == later_v1.data["format"]  # a layout it names is kept
    v2 = next(r for r in _golden({}) if r.type == ContextChanged.TYPE and r.v == 2)
    assert (ContextChanged.of(v2).format, ContextChanged.of(v2).redacted) == (2, True)
    assert replay([old, Record(2, "x", "t", v2.type, 2, None, v2.data)]).context_digest == "b" * 64


def test_a_payload_without_a_required_member_is_skipped_by_the_fold_never_raised() -> None:
    scheduled = ReminderScheduled(reminder="r1", text="tea", kind="at", spec="2026-12-03T10:00:00+00:00", tz="UTC")
    recs = [
        Record(1, "a", "2026-12-03T09:00:00.000Z", ReminderScheduled.TYPE, 1, None, scheduled.to_data()),
        Record(2, "b", "2026-12-03T09:00:01.000Z", ReminderCancelled.TYPE, 1, None, {"reason": "user"}),
        Record(3, "c", "2026-12-03T09:00:02.000Z", Message.TYPE, 1, "s", {"content": "no role"}),
        Record(4, "d", "2026-12-03T09:00:03.000Z", Message.TYPE, 1, "s", {"role": "user", "content": "hi"}),
        # a newer device's version of a known type: kept, skipped, never a crash
        Record(5, "e", "2026-12-03T09:00:04.000Z", ReminderCancelled.TYPE, 9, None, {"reminder": "r1"}),
        Record(6, "f", "2026-12-03T09:00:05.000Z", Message.TYPE, 9, "s", {"role": "user", "content": "later"}),
    ]
    state = replay(recs)
    assert state.last_seq == 6 and state.reminders["r1"].active
    # a newer device's versions are counted and skipped; the unreadable ones are named (the
    # doctor repairs them), not counted as a newer device's types
    assert state.unknown == {f"{ReminderCancelled.TYPE} v9": 1, f"{Message.TYPE} v9": 1}
    assert state.unfoldable_count == 2 and sorted(state.unfoldable) == ["2", "3"]
    assert [m["content"] for m in state.sessions["s"].messages] == ["hi"]
    with pytest.raises(BadPayload, match="without reminder"):
        ReminderCancelled.of(recs[1])
    with pytest.raises(BadPayload, match="not a message"):
        Message.of(recs[0])


def test_the_store_appends_payloads_and_keeps_an_unknown_verbatim_type(tmp_path: Path) -> None:
    store = Store.open(Home.resolve(tmp_path / "home"))
    try:
        rec = store.append(Message(role="user", content="hello"), session="s")
        assert (rec.type, rec.v, dict(rec.data)) == (Message.TYPE, Message.VERSION, {"role": "user", "content": "hello"})
        assert Message.of(rec) == Message(role="user", content="hello") and rec.payload == Message.of(rec)
        future = store.append(Verbatim("future.thing", {"x": [1, 2]}))
        assert future.payload is None and store.state.unknown == {"future.thing": 1}
        ctx = store.append(ContextChanged(digest="d", model="m", tools=[], identity="i", bootstrap=[], skills=[],
                                          format=2, redacted=False))
        assert ctx.v == 2 and store.state.context_digest == "d"
    finally:
        store.close()
