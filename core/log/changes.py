"""What an append changed, in domain terms (Anki's ``OpChanges``): memory, reminders,
MCP, spending. Views ask ``change.memory``, never an event type's string; the mapping
from event types to what they change is written once, here, beside the types.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memtray.core.log.events import (
    CONSOLIDATION_TYPES,
    ConsolidationFailed,
    McpCall,
    McpWrite,
    MemoryPeerHead,
    MemoryPurged,
    MemoryReviewed,
    MemoryRolledBack,
    MemoryWritten,
    Message,
    ReminderCancelled,
    ReminderFired,
    ReminderScheduled,
    UsageRecorded,
)

#: a revision of memory, a peer's head, a review choice, a rollback, a purge of memory's text
MEMORY = frozenset({MemoryWritten.TYPE, MemoryPeerHead.TYPE, MemoryReviewed.TYPE, MemoryRolledBack.TYPE,
                    MemoryPurged.TYPE})
REMINDERS = frozenset({ReminderScheduled.TYPE, ReminderFired.TYPE, ReminderCancelled.TYPE})
MCP = frozenset({McpWrite.TYPE, McpCall.TYPE})
#: the events that carry a call's usage (what today's cost counts)
SPENDING = frozenset({Message.TYPE, UsageRecorded.TYPE, *CONSOLIDATION_TYPES})


@dataclass(frozen=True)
class Changes:
    """What one append changed."""

    memory: bool = False
    #: a consolidation failed (the memory browser lists failed redos)
    consolidation_failed: bool = False
    reminders: bool = False
    #: an MCP client wrote, or the agent called another server's tool
    mcp: bool = False
    #: the agent called another MCP server's tool (a consent may be waiting)
    mcp_calls: bool = False
    #: something that costs: a message, a consolidation, an embedding's usage
    spending: bool = False

    @classmethod
    def of(cls, types: Iterable[str]) -> Changes:
        t = frozenset(types)
        return cls(memory=bool(t & MEMORY), consolidation_failed=ConsolidationFailed.TYPE in t,
                   reminders=bool(t & REMINDERS), mcp=bool(t & MCP), mcp_calls=McpCall.TYPE in t,
                   spending=bool(t & SPENDING))


__all__ = ["MCP", "MEMORY", "REMINDERS", "SPENDING", "Changes"]
