"""Events: the one registry of event types, and the names every reader imports.

The pieces live apart, each with one job, and this module puts them together so that
the registry is complete wherever the log is used:

* :mod:`~memtray.core.log.codec` -- the record envelope (:class:`Record`), the line
  format, checksums and the text rule every event passes;
* :mod:`~memtray.core.log.schema` -- :class:`Payload`, :class:`Schema` (versions and
  upcasters) and :data:`SCHEMA`;
* the payload classes, one per event type, per room: :mod:`~memtray.core.log.payloads`
  (conversation, consolidation, reminders, prompt context),
  :mod:`~memtray.core.log.payloads_memory`, :mod:`~memtray.core.log.payloads_audit`
  (rebuilds), :mod:`~memtray.core.log.payloads_sync` (sync, log repair) and
  :mod:`~memtray.core.log.integrations` (imports, MCP).

To add an event type: a frozen dataclass deriving from :class:`Payload` with ``TYPE``
(the stable string, written once, there) in the module of its room, ``@SCHEMA.register``,
and a golden record in a new file under tests/golden/events/. See docs/ARCHITECTURE.md
("Typed events").
"""

from __future__ import annotations

from memtray.core.log.codec import (
    BadRecord,
    check_text,
    count_verified,
    decode_many,
    decode_raw,
    encode,
    envelopes,
    find_invalid,
    legacy_line,
    scrub_obj,
    scrub_text,
    text_problem,
    verify_line,
)
from memtray.core.log.integrations import (
    ImportCompleted,
    ImportFailed,
    ImportItem,
    ImportStarted,
    McpCall,
    McpWrite,
)
from memtray.core.log.payloads import (
    CONSOLIDATION_TYPES,
    REMINDER_TYPES,
    AttachmentRef,
    Consolidation,
    ConsolidationCompleted,
    ConsolidationFailed,
    ConsolidationStarted,
    ContextChanged,
    FunctionCall,
    Message,
    OriginMark,
    Reminder,
    ReminderCancelled,
    ReminderFired,
    ReminderScheduled,
    SessionDeleted,
    SessionModel,
    SessionPinned,
    SessionReset,
    SessionRestored,
    SessionScope,
    SessionTitled,
    ToolCall,
    ToolFunctionSpec,
    ToolSpec,
    TurnFailed,
    Usage,
    UsageRecorded,
)
from memtray.core.log.payloads_audit import (
    RebuildAdopted,
    RebuildCompleted,
    RebuildDiscarded,
    RebuildFailed,
    RebuildProgress,
    RebuildStarted,
    SilentDrop,
)
from memtray.core.log.payloads_memory import (
    CheckinAsked,
    DiffChange,
    DiffFact,
    FactDiffData,
    FactLedger,
    MemoryPeerHead,
    MemoryPurged,
    MemoryReviewed,
    MemoryRolledBack,
    MemoryWritten,
    MessageSpan,
    Provenance,
    ProvenanceOrigin,
    ReviewItem,
    ScopeMove,
)
from memtray.core.log.payloads_sync import DeviceNamed, LogDamaged, SyncPulled, SyncPurge
from memtray.core.log.schema import (
    SCHEMA,
    BadPayload,
    P,
    Payload,
    Record,
    Schema,
    Upcaster,
    Verbatim,
)

__all__ = [
    "CONSOLIDATION_TYPES",
    "REMINDER_TYPES",
    "SCHEMA",
    "AttachmentRef",
    "BadPayload",
    "BadRecord",
    "CheckinAsked",
    "Consolidation",
    "ConsolidationCompleted",
    "ConsolidationFailed",
    "ConsolidationStarted",
    "ContextChanged",
    "DeviceNamed",
    "DiffChange",
    "DiffFact",
    "FactDiffData",
    "FactLedger",
    "FunctionCall",
    "ImportCompleted",
    "ImportFailed",
    "ImportItem",
    "ImportStarted",
    "LogDamaged",
    "McpCall",
    "McpWrite",
    "MemoryPeerHead",
    "MemoryPurged",
    "MemoryReviewed",
    "MemoryRolledBack",
    "MemoryWritten",
    "Message",
    "MessageSpan",
    "OriginMark",
    "P",
    "Payload",
    "Provenance",
    "ProvenanceOrigin",
    "RebuildAdopted",
    "RebuildCompleted",
    "RebuildDiscarded",
    "RebuildFailed",
    "RebuildProgress",
    "RebuildStarted",
    "Record",
    "Reminder",
    "ReminderCancelled",
    "ReminderFired",
    "ReminderScheduled",
    "ReviewItem",
    "Schema",
    "ScopeMove",
    "SessionDeleted",
    "SessionModel",
    "SessionPinned",
    "SessionReset",
    "SessionRestored",
    "SessionScope",
    "SessionTitled",
    "SilentDrop",
    "SyncPulled",
    "SyncPurge",
    "ToolCall",
    "ToolFunctionSpec",
    "ToolSpec",
    "TurnFailed",
    "Upcaster",
    "Usage",
    "UsageRecorded",
    "Verbatim",
    "check_text",
    "count_verified",
    "decode_many",
    "decode_raw",
    "encode",
    "envelopes",
    "find_invalid",
    "legacy_line",
    "payload_of",
    "scrub_obj",
    "scrub_text",
    "text_problem",
    "verify_line",
]


def payload_of(rec: Record, schema: Schema = SCHEMA) -> Payload | None:
    return schema.payload(rec)
