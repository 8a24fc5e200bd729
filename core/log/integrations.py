"""Event payloads of the integrations: imports (``import.*``) and MCP (``mcp.*``).

Registered in the one :data:`~memtray.core.log.schema.SCHEMA` registry like every
other payload (:mod:`memtray.core.log.events` imports this module, so the types are
known wherever the log is); the payload modules of the other rooms are
core/log/payloads*.py. See docs/INTEGRATIONS.md for what each import and MCP call writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memtray.core.log.schema import SCHEMA, Payload


@SCHEMA.register
@dataclass(frozen=True)
class ImportStarted(Payload):
    """``memtray import SOURCE PATH`` began (or resumed: items already imported are skipped)."""

    TYPE: ClassVar[str] = "import.started"
    import_id: str
    source: str  # nanobot | chatgpt
    path: str


@SCHEMA.register
@dataclass(frozen=True)
class ImportItem(Payload):
    """One source item (a session file, a conversation, MEMORY.md, HISTORY.md) is in the log.

    ``key`` names the item in its source and ``digest`` its content, so importing
    again skips it; it is appended in the same write as the item's messages.
    """

    TYPE: ClassVar[str] = "import.item"
    import_id: str
    source: str
    key: str
    kind: str  # session | conversation | memory | history
    digest: str
    session: str | None = None
    messages: int = 0
    #: messages the source kept (system prompts, tool chatter, other branches) that were not imported
    skipped: int = 0
    title: str | None = None
    memory_seq: int | None = None


@SCHEMA.register
@dataclass(frozen=True)
class ImportCompleted(Payload):
    TYPE: ClassVar[str] = "import.completed"
    import_id: str
    source: str
    items: int
    messages: int
    skipped_items: int = 0


@SCHEMA.register
@dataclass(frozen=True)
class ImportFailed(Payload):
    """The import stopped (damaged file, interrupted); what was imported stays and a rerun resumes."""

    TYPE: ClassVar[str] = "import.failed"
    import_id: str
    source: str
    reason: str
    items: int = 0


@SCHEMA.register
@dataclass(frozen=True)
class McpWrite(Payload):
    """An MCP client changed memory through ``memtray mcp`` (in the same write as its
    ``memory.written``, whose source is ``mcp``): which client, with which tool."""

    TYPE: ClassVar[str] = "mcp.write"
    client: str
    tool: str  # remember | forget
    memory_seq: int | None = None


@SCHEMA.register
@dataclass(frozen=True)
class McpCall(Payload):
    """The agent called a tool of an MCP server (arguments and result redacted and cut)."""

    TYPE: ClassVar[str] = "mcp.call"
    server: str
    tool: str
    status: str  # ok | error | timeout | refused | cancelled
    arguments: str = ""
    result: str = ""
    call_id: str | None = None
