"""The folded records of consolidations and reminders (one each, by id), kept in the state
(:class:`~memtray.core.log.projections.State`; projections.py re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ConsolidationState:
    id: str
    session: str
    start: int
    end: int
    model: str
    status: str = "started"  # started | completed | failed
    reason: str | None = None
    attempts: int = 0
    started_seq: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    redo_of: str | None = None
    memory_seq: int | None = None
    ts: str | None = None  # when it last changed status
    #: of a failure: the session's consecutive failed attempt and the backoff before the next
    failed_attempt: int | None = None
    retry_after: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ConsolidationState:
        return cls(**obj)


@dataclass
class ReminderState:
    id: str
    text: str
    kind: str
    spec: str
    tz: str
    mode: str
    scheduled_seq: int
    scheduled_ts: str
    active: bool = True
    fired: list[str] = field(default_factory=list)  # occurrence keys, newest last (bounded)
    last_fired: str | None = None
    #: the device that owns it when it was imported from a peer (only the owner fires it)
    device: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ReminderState:
        return cls(**obj)
