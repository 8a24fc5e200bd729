"""What an append changed, in domain terms (core/log/changes.py): the one mapping from event
types to memory, reminders, MCP and spending that every desktop view follows."""

from __future__ import annotations

from memtray.core.log.changes import MCP, MEMORY, REMINDERS, Changes
from memtray.core.log.events import (
    SCHEMA,
    ConsolidationFailed,
    McpCall,
    MemoryWritten,
    Message,
    ReminderFired,
)


def test_every_registered_type_of_a_room_changes_that_room() -> None:
    """A new memory.* event type left out of MEMORY would leave the memory views stale."""
    types = set(SCHEMA.types)
    assert {t for t in types if t.startswith("memory.")} == MEMORY
    assert {t for t in types if t.startswith("reminder.")} == REMINDERS
    assert {t for t in types if t.startswith("mcp.")} == MCP


def test_changes_of_an_append() -> None:
    assert Changes.of([]) == Changes()
    assert Changes.of(["session.titled"]) == Changes()  # a rename changes none of these rooms
    assert Changes.of([MemoryWritten.TYPE, ConsolidationFailed.TYPE]) == Changes(
        memory=True, consolidation_failed=True, spending=True)
    assert Changes.of([ReminderFired.TYPE]) == Changes(reminders=True)
    assert Changes.of([McpCall.TYPE, Message.TYPE]) == Changes(mcp=True, mcp_calls=True, spending=True)
