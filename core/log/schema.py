"""The payload registry: payload classes, their schema versions and upcasters.

Every event type has exactly one payload class: a frozen dataclass deriving from
:class:`Payload` with a stable ``TYPE`` string and a ``VERSION``, registered in the one
:data:`SCHEMA` with ``@SCHEMA.register``. The classes live per room in
core/log/payloads*.py (and core/log/integrations.py); :mod:`memtray.core.log.events`
imports them all, so the registry is complete wherever the log is used. A field whose
shape is known is typed precisely (nested value shapes are ``TypedDict`` classes beside
the payload), so the validating door can check an event against its class.

Evolution: a change that old events cannot satisfy bumps ``VERSION`` and registers an
upcaster ``fn(data_at_v) -> data_at_v+1`` beside the class (``@SCHEMA.upcaster(TYPE, v)``);
readers never default a missing member themselves. A golden fixture of every version
lives in tests/golden/ and is never edited.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, NamedTuple, Self, TypeVar

from memtray.core.base.errors import UnknownEventVersion

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
P = TypeVar("P", bound="Payload")

_new = object.__new__
_set = object.__setattr__


class BadPayload(ValueError):
    """A record whose payload does not fit its class (a required member is missing, or the
    record is of another type than the class asked for)."""


class Record(NamedTuple):
    """One event as stored: the envelope plus its (upcast) payload dict.

    A named tuple rather than a frozen dataclass: replay builds a million of
    these, and tuple construction is several times cheaper. Readers take the payload
    typed: ``MemoryWritten.of(rec)`` (the class says which), or :attr:`payload` (the
    registry says which; None for a type this version does not know).
    """

    seq: int
    id: str
    ts: str
    type: str
    v: int
    session: str | None
    data: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "id": self.id,
            "ts": self.ts,
            "type": self.type,
            "v": self.v,
            "session": self.session,
            "data": dict(self.data),
        }

    @property
    def payload(self) -> Payload | None:
        """The typed payload (upcast to the current version), or None for an event type this
        version does not know (kept verbatim, skipped). Raises :class:`BadPayload` for a
        payload that lacks a required member, :class:`UnknownEventVersion` for a newer one."""
        cls = SCHEMA.types.get(self.type)
        return None if cls is None else cls.of(self)


class Payload:
    """Base of typed event payloads (frozen dataclasses with TYPE and VERSION).

    Every field has either no default (required) or a plain default (``None``, a number,
    a string, a bool): never a ``default_factory``. Reading a payload back
    (:meth:`from_data`) then costs one object and no ``__init__``: the record's dict is
    the instance's ``__dict__`` and a member the event omits falls back to the class
    attribute, which is its default. Replay reads a million of these.
    """

    TYPE: ClassVar[str]
    VERSION: ClassVar[int] = 1
    #: the members without a default (filled in by :meth:`Schema.register`)
    REQUIRED: ClassVar[frozenset[str]] = frozenset()

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue  # optional members are omitted, keeping lines short
            out[f.name] = value
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        """The payload of ``data`` (a current-version payload dict), shared, not copied.

        Members this version does not declare (a newer device's) are carried along unread.
        Raises :class:`BadPayload` if a required member is missing."""
        if not data.keys() >= cls.REQUIRED:
            missing = ", ".join(sorted(cls.REQUIRED - data.keys()))
            raise BadPayload(f"a {cls.TYPE} event without {missing}")
        obj = _new(cls)
        _set(obj, "__dict__", data if type(data) is dict else dict(data))
        return obj

    @classmethod
    def of(cls, rec: Record) -> Self:
        """The typed payload of ``rec``, which must be a ``cls.TYPE`` event (upcast if older)."""
        if rec.type != cls.TYPE:
            raise BadPayload(f"event seq {rec.seq} is a {rec.type}, not a {cls.TYPE}")
        return cls.from_data(rec.data if rec.v == cls.VERSION else SCHEMA.upcast(rec).data)


@dataclass(frozen=True)
class Verbatim:
    """An event to append as it came, not built from a payload class: another device's
    event (sync imports its payload byte for byte, plus the origin mark), whose type this
    version may not even know. The one way to append without a payload class."""

    type: str
    data: Mapping[str, Any]
    #: the schema version its device wrote it in (None: this version's)
    v: int | None = None

    def to_data(self) -> dict[str, Any]:
        return dict(self.data)


class Schema:
    """Registry of payload types, their current versions and upcasters."""

    def __init__(self) -> None:
        self.types: dict[str, type[Payload]] = {}
        self.versions: dict[str, int] = {}
        self._upcasters: dict[tuple[str, int], Upcaster] = {}

    def register(self, cls: type[P]) -> type[P]:
        if cls.TYPE in self.types and self.types[cls.TYPE] is not cls:
            raise ValueError(f"event type {cls.TYPE!r} registered twice ({self.types[cls.TYPE].__name__}, {cls.__name__})")
        required = set()
        for f in fields(cls):  # type: ignore[arg-type]
            if f.default_factory is not MISSING:
                raise TypeError(f"{cls.__name__}.{f.name}: a payload field takes a plain default, not a factory")
            if f.default is MISSING:
                required.add(f.name)
        cls.REQUIRED = frozenset(required)
        self.types[cls.TYPE] = cls
        self.versions[cls.TYPE] = cls.VERSION
        return cls

    def add_version(self, type_: str, version: int) -> None:
        """Declare a type/version known without a payload class (tests, raw types)."""
        self.versions[type_] = version

    def upcaster(self, type_: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        """Register ``fn(data_at_v) -> data_at_v+1``."""

        def deco(fn: Upcaster) -> Upcaster:
            self._upcasters[(type_, from_version)] = fn
            return fn

        return deco

    def is_known(self, rec: Record) -> bool:
        return rec.type in self.versions and rec.v <= self.versions[rec.type]

    def upcast(self, rec: Record) -> Record:
        """Bring ``rec`` to the current version of its type. Unknown types pass through."""
        current = self.versions.get(rec.type)
        if current is None or rec.v == current:
            return rec
        if rec.v > current:
            raise UnknownEventVersion(
                f"event seq {rec.seq} ({rec.type} v{rec.v}) is newer than this memtray knows (v{current})"
            )
        data = dict(rec.data)
        v = rec.v
        while v < current:
            fn = self._upcasters.get((rec.type, v))
            if fn is None:
                raise UnknownEventVersion(f"no upcaster for {rec.type} v{v} -> v{v + 1}")
            data = fn(data)
            v += 1
        return Record(rec.seq, rec.id, rec.ts, rec.type, v, rec.session, data)

    def payload(self, rec: Record) -> Payload | None:
        """``rec``'s typed payload by this registry (None for a type it does not know)."""
        cls = self.types.get(rec.type)
        if cls is None:
            return None
        return cls.from_data(self.upcast(rec).data)


SCHEMA = Schema()
