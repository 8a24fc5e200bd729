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
from dataclasses import fields
from typing import Any, ClassVar, TypeVar

from memtray.core.base.errors import UnknownEventVersion
from memtray.core.log.codec import Record

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
P = TypeVar("P", bound="Payload")


class Payload:
    """Base of typed event payloads (frozen dataclasses with TYPE and VERSION)."""

    TYPE: ClassVar[str]
    VERSION: ClassVar[int] = 1

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue  # optional members are omitted, keeping lines short
            out[f.name] = value
        return out

    @classmethod
    def from_data(cls: type[P], data: Mapping[str, Any]) -> P:
        kwargs = {f.name: data[f.name] for f in fields(cls) if f.name in data}  # type: ignore[arg-type]
        return cls(**kwargs)


class Schema:
    """Registry of payload types, their current versions and upcasters."""

    def __init__(self) -> None:
        self.types: dict[str, type[Payload]] = {}
        self.versions: dict[str, int] = {}
        self._upcasters: dict[tuple[str, int], Upcaster] = {}

    def register(self, cls: type[P]) -> type[P]:
        if cls.TYPE in self.types and self.types[cls.TYPE] is not cls:
            raise ValueError(f"event type {cls.TYPE!r} registered twice ({self.types[cls.TYPE].__name__}, {cls.__name__})")
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
        cls = self.types.get(rec.type)
        if cls is None:
            return None
        return cls.from_data(self.upcast(rec).data)


SCHEMA = Schema()
