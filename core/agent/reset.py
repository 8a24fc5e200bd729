"""``/new``: archive a session into memory, then start it over.

The one implementation behind ``memtray new``, ``/new`` in ``memtray chat``
and the desktop's "New chat": everything unconsolidated is consolidated first
(so nothing the user said is lost), then a ``session.reset`` is logged. If the
archiving fails, the error propagates and the session is kept as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtray.core.agent.loop import Agent
from memtray.core.log.events import Record

if TYPE_CHECKING:
    from memtray.core.memory.consolidation import ConsolidationService


async def new_session(agent: Agent, consolidation: ConsolidationService | None, session: str) -> Record:
    """Archive ``session`` through ``consolidation`` (when there is one), then reset it.

    Runs on the worker. Returns the ``session.reset`` record.
    """
    if consolidation is not None:
        await consolidation.archive(session)  # raises (and keeps the session) if archiving fails
    return agent.new_session(session)


__all__ = ["new_session"]
