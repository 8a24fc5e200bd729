"""Event payloads about a conversation as a whole (not its messages): its name.

Registered in the one :data:`~memtray.core.log.events.SCHEMA` registry like every other
payload (imported by the package, as :mod:`.integrations` is), kept apart so events.py
stays within its size. The Chats list folds them (``projections.apply``) and
:func:`~memtray.core.log.transcript.rename` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memtray.core.log.events import SCHEMA, Payload


@SCHEMA.register
@dataclass(frozen=True)
class SessionTitled(Payload):
    """The user named a conversation: the Chats list shows it instead of the first line."""

    TYPE: ClassVar[str] = "session.titled"
    title: str
