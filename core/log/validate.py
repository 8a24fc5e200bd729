"""Validation of events against their payload classes: the checks of the one door.

Whatever enters the log from outside (a peer's stream, an import, an MCP write)
is checked here before it is appended (:mod:`memtray.core.log.door` runs these
checks and decides what happens to a refusal). Nothing here knows an event type
by name: the checks of a payload are compiled once per class from its dataclass
field annotations (``str``, ``int``, ``bool``, ``float``, ``X | None``,
``list[X]``, ``dict[str, X]``, ``Literal``, nested dataclasses and ``TypedDict``
shapes, ``Any``), so a class that declares a field declares its check.

* **envelope**: ``seq`` a positive int, ``id`` of the event-id form, ``ts`` an
  RFC 3339 time within :data:`YEARS`, ``type`` a type name, ``v`` a small
  positive int, ``session`` absent or of the session-name form, ``data`` an object;
* **payload**: every declared field of its type, every required one present;
  members the class does not declare (a newer device's field) are kept, but only
  with a field-like name and as plain JSON within the limits (see
  docs/ARCHITECTURE.md, "The one door");
* **limits** (:class:`Limits`): the whole line, each string, nesting depth.

The time range is fixed, not relative to this device's clock, so every device
makes the same decision about the same event and they converge.

Checks raise :class:`Invalid` with a path (``data.tool_calls[0].function``) and
the problem; they never raise anything else on any JSON value.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Union

from memtray.core.base.errors import MemtrayError

#: what a checker is: ``check(value, path, depth_left)``; raises :class:`Invalid`
Check = Callable[[Any, str, int], None]


class Invalid(MemtrayError):
    """An event that does not pass the door's checks; ``str()`` says where and why."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class Limits:
    """How large and deep an event from outside may be."""

    #: the whole encoded line, bytes (a 150 MB "event" is refused before it is parsed)
    event_bytes: int = 1 << 20
    #: one string (value or key), characters
    string_chars: int = 512 * 1024
    #: nesting of objects and arrays inside ``data``
    depth: int = 32
    #: members of ``data`` a class does not declare (a newer device's fields)
    extra_fields: int = 32


LIMITS = Limits()

#: an event id: what :class:`~memtray.core.base.clock.IdGenerator` makes (26 Crockford
#: base32 characters), a merge revision's ``M`` + 25 hex digits, a reminder firing's
#: ``reminder.fired:<id>:<time>``: letters and digits first, then ASCII without spaces,
#: quotes, slashes or backslashes, at most 128 characters
EVENT_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z._:+\-]{0,127}\Z")
#: an event type: ``message``, ``reminder.cancelled``, ``x.y_z`` (a newer device's too)
EVENT_TYPE = re.compile(r"[a-z][a-z0-9_]{0,31}(\.[a-z][a-z0-9_]{0,31}){0,3}\Z")
#: a member name a class does not declare (a newer device's field)
FIELD_NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}\Z")
#: a time as the codec writes it (``2026-11-30T09:15:02.123Z``), or with an offset
TIMESTAMP = re.compile(r"(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d"
                       r"(\.\d{1,6})?(Z|[+-]\d\d:\d\d)\Z")
#: the years an event may be dated in (fixed: the same decision on every device)
YEARS = (2000, 2199)
#: a session name: printable, no control characters, at most 256 characters
SESSION = re.compile(r"[^\x00-\x1f\x7f]{1,256}\Z")
#: the newest schema version an event may claim
MAX_VERSION = 1000


# --- envelope -----------------------------------------------------------------------------


def check_envelope(seq: Any, ident: Any, ts: Any, type_: Any, v: Any, session: Any) -> None:
    """Raise :class:`Invalid` unless the envelope's members have their forms."""
    if type(seq) is not int or seq < 1:
        raise Invalid("seq", f"must be a positive integer, not {_show(seq)}")
    check_event_id(ident)
    check_timestamp(ts, "ts")
    if type(type_) is not str or not EVENT_TYPE.match(type_):
        raise Invalid("type", f"is not an event type name: {_show(type_)}")
    if type(v) is not int or not 1 <= v <= MAX_VERSION:
        raise Invalid("v", f"must be an integer from 1 to {MAX_VERSION}, not {_show(v)}")
    if session is not None:
        check_session(session)


def check_event_id(ident: Any, path: str = "id") -> None:
    if type(ident) is not str or not EVENT_ID.match(ident):
        raise Invalid(path, f"is not an event id: {_show(ident)}")


def check_session(name: Any, path: str = "session") -> None:
    if type(name) is not str or not SESSION.match(name):
        raise Invalid(path, f"is not a session name (1-256 characters, no control characters): {_show(name)}")


def check_timestamp(ts: Any, path: str) -> None:
    m = TIMESTAMP.match(ts) if type(ts) is str else None
    if m is None:
        raise Invalid(path, f"is not an RFC 3339 time: {_show(ts)}")
    if m.group(3) > "28":  # the pattern takes every month's days up to 28: the rest by the calendar
        try:
            datetime.fromisoformat(ts.replace("Z", "+00:00"))
        except ValueError:
            raise Invalid(path, f"is not a valid time: {_show(ts)}") from None
    if not YEARS[0] <= int(m.group(1)) <= YEARS[1]:
        raise Invalid(path, f"is outside the years {YEARS[0]}-{YEARS[1]}: {_show(ts)}")


# --- payloads ----------------------------------------------------------------------------


class PayloadChecker:
    """The compiled checks of one payload class (see the module docstring)."""

    def __init__(self, cls: type, limits: Limits = LIMITS) -> None:
        self.cls = cls
        self.limits = limits
        self.fields, self.required = _members(cls, limits)

    def __call__(self, data: Any, path: str = "data") -> None:
        _check_object(self.fields, self.required, self.limits, data, path, self.limits.depth)


def check_json(value: Any, path: str, depth: int, limits: Limits = LIMITS) -> None:
    """Any JSON value within the limits (strings, numbers, booleans, null, arrays, objects)."""
    t = type(value)
    if t is str:
        if len(value) > limits.string_chars:
            raise Invalid(path, f"a text of {len(value):,} characters (at most {limits.string_chars:,})")
        return
    if t is int or t is bool or value is None:
        return
    if t is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise Invalid(path, "not a finite number")
        return
    if depth <= 0 and (t is list or t is dict):
        raise Invalid(path, f"nested deeper than {limits.depth} levels")
    if t is list:
        for i, item in enumerate(value):
            check_json(item, f"{path}[{i}]", depth - 1, limits)
        return
    if t is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise Invalid(path, f"a member name that is not a string: {_show(key)}")
            if len(key) > limits.string_chars:
                raise Invalid(path, "a member name too long")
            check_json(item, f"{path}.{key}", depth - 1, limits)
        return
    raise Invalid(path, f"not a JSON value ({t.__name__})")


_CHECKERS: dict[tuple[type, Limits], PayloadChecker] = {}


def checker(cls: type, limits: Limits = LIMITS) -> PayloadChecker:
    """The (cached) checker of payload class ``cls``."""
    key = (cls, limits)
    found = _CHECKERS.get(key)
    if found is None:
        found = _CHECKERS[key] = PayloadChecker(cls, limits)
    return found


def _members(cls: type, limits: Limits) -> tuple[dict[str, Check], frozenset[str]]:
    """(field name -> check, required names) of a dataclass or TypedDict ``cls``."""
    hints = typing.get_type_hints(cls)
    if dataclasses.is_dataclass(cls):
        out: dict[str, Check] = {}
        required = set()
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            out[f.name] = _compile(hints[f.name], limits)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.add(f.name)
        return out, frozenset(required)
    if _is_typeddict(cls):
        out = {name: _compile(_strip_required(tp), limits) for name, tp in hints.items()}
        return out, frozenset(getattr(cls, "__required_keys__", frozenset()))
    raise TypeError(f"{cls!r} is neither a dataclass nor a TypedDict")


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _strip_required(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Required, typing.NotRequired):
        return typing.get_args(tp)[0]
    return tp


def _check_object(fields: Mapping[str, Check], required: frozenset[str], limits: Limits, data: Any,
                  path: str, depth: int) -> None:
    if type(data) is not dict:
        raise Invalid(path, f"must be an object, not {_kind(data)}")
    if depth <= 0:
        raise Invalid(path, f"nested deeper than {limits.depth} levels")
    extra = 0
    for key, value in data.items():
        check = fields.get(key)
        if check is not None:
            check(value, f"{path}.{key}", depth - 1)
            continue
        # a member this version does not know (a newer device's): kept, as plain JSON
        extra += 1
        if extra > limits.extra_fields:
            raise Invalid(path, f"more than {limits.extra_fields} members this version does not know")
        if type(key) is not str or not FIELD_NAME.match(key):
            raise Invalid(path, f"an unknown member with a name no field has: {_show(key)}")
        check_json(value, f"{path}.{key}", depth - 1, limits)
    if not required <= data.keys():
        missing = sorted(required - data.keys())
        raise Invalid(path, f"missing required field(s): {', '.join(missing)}")


def _compile(tp: Any, limits: Limits) -> Check:
    """The check of one annotation."""
    if tp is Any or tp is object:
        return lambda v, p, d: check_json(v, p, d, limits)
    if tp is str:
        most = limits.string_chars

        def check_str(v: Any, p: str, d: int) -> None:
            if type(v) is not str:
                raise Invalid(p, f"must be a text, not {_kind(v)}")
            if len(v) > most:
                raise Invalid(p, f"a text of {len(v):,} characters (at most {most:,})")

        return check_str
    if tp is bool:

        def check_bool(v: Any, p: str, d: int) -> None:
            if type(v) is not bool:
                raise Invalid(p, f"must be true or false, not {_kind(v)}")

        return check_bool
    if tp is int:

        def check_int(v: Any, p: str, d: int) -> None:
            if type(v) is not int:
                raise Invalid(p, f"must be an integer, not {_kind(v)}")

        return check_int
    if tp is float:

        def check_float(v: Any, p: str, d: int) -> None:
            if type(v) is int:
                return
            if type(v) is not float or v != v or v in (float("inf"), float("-inf")):
                raise Invalid(p, f"must be a number, not {_kind(v)}")

        return check_float
    if tp is type(None):

        def check_none(v: Any, p: str, d: int) -> None:
            if v is not None:
                raise Invalid(p, f"must be null, not {_kind(v)}")

        return check_none
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        optional = type(None) in args
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            inner = _compile(rest[0], limits)

            def check_optional(v: Any, p: str, d: int) -> None:
                if v is None and optional:
                    return
                inner(v, p, d)

            return check_optional
        options = [_compile(a, limits) for a in rest]

        def check_union(v: Any, p: str, d: int) -> None:
            if v is None and optional:
                return
            first: Invalid | None = None
            for option in options:
                try:
                    option(v, p, d)
                    return
                except Invalid as exc:
                    first = first or exc
            assert first is not None
            raise first

        return check_union
    if origin is Literal:
        allowed = frozenset(args)

        def check_literal(v: Any, p: str, d: int) -> None:
            if type(v) not in (str, int, bool) or v not in allowed:
                raise Invalid(p, f"must be one of {sorted(map(str, allowed))}, not {_show(v)}")

        return check_literal
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        item = _compile(args[0], limits) if args else _compile(Any, limits)

        def check_list(v: Any, p: str, d: int) -> None:
            if type(v) is not list:
                raise Invalid(p, f"must be a list, not {_kind(v)}")
            if d <= 0:
                raise Invalid(p, f"nested deeper than {limits.depth} levels")
            for i, x in enumerate(v):
                item(x, f"{p}[{i}]", d - 1)

        return check_list
    if origin in (dict, typing.Mapping) or tp is dict:
        value = _compile(args[1], limits) if len(args) == 2 else _compile(Any, limits)
        most = limits.string_chars

        def check_dict(v: Any, p: str, d: int) -> None:
            if type(v) is not dict:
                raise Invalid(p, f"must be an object, not {_kind(v)}")
            if d <= 0:
                raise Invalid(p, f"nested deeper than {limits.depth} levels")
            for key, x in v.items():
                if type(key) is not str or len(key) > most:
                    raise Invalid(p, f"a member name that is not a text: {_show(key)}")
                value(x, f"{p}.{key}", d - 1)

        return check_dict
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or _is_typeddict(tp)):
        fields, required = _members(tp, limits)

        def check_nested(v: Any, p: str, d: int) -> None:
            _check_object(fields, required, limits, v, p, d)

        return check_nested
    raise TypeError(f"the door cannot check the annotation {tp!r}")


# --- what an error says --------------------------------------------------------------------


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "true/false", int: "an integer", float: "a number", str: "a text", list: "a list",
            dict: "an object"}.get(type(v), type(v).__name__)


def _show(v: Any) -> str:
    """A short, safe rendering of a hostile value for a refusal's reason."""
    if isinstance(v, str):
        text = v if len(v) <= 40 else v[:40] + "…"
        return repr(text)
    if isinstance(v, bool | int | float) or v is None:
        text = repr(v)
        return text if len(text) <= 40 else text[:40] + "…"
    return _kind(v)
