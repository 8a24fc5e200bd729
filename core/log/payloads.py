"""Payloads of the conversation: messages, sessions, turns, consolidations, reminders, context.

One frozen dataclass per event type, registered in the one
:data:`~memtray.core.log.schema.SCHEMA`; the nested shapes a payload holds are the
``TypedDict`` value classes beside it, so every member is declared with its type and the
validating door checks an event against its class. Annotations are real objects here
(no ``from __future__ import annotations``): ``typing.get_type_hints`` and the
TypedDicts' required keys read them directly.

Events that travel between devices (:data:`~memtray.core.log.origin.EXPORTED`) carry an
``origin`` mark once imported (:class:`OriginMark`).
"""

import re
from dataclasses import dataclass
from typing import Any, ClassVar, NotRequired, TypedDict

from memtray.core.log.schema import SCHEMA, Payload

# --- value shapes -------------------------------------------------------------------------


class SkippedStatement(TypedDict):
    """One thing a consolidation chose not to keep, as ``save_memory``'s ``skipped`` said it
    (core/memory/unsaid.py ``parse_skipped``): the message's number in the prompt, the
    user's words, why, and the message's log seq."""

    message: int
    quote: str
    reason: str
    seq: NotRequired[int]


class OriginMark(TypedDict):
    """Where an imported event was made: its device, its seq and time there (core/log/origin.py)."""

    device: str
    seq: int
    ts: str


class FunctionCall(TypedDict):
    name: str
    arguments: str  # JSON text, as the model wrote it


class ToolCall(TypedDict):
    """One tool call of an assistant message (the OpenAI shape litellm gives and takes)."""

    id: str
    type: str  # "function"
    function: FunctionCall


class Usage(TypedDict, total=False):
    """Token counts of a provider call (core/llm/client.py keeps only these) and, where
    litellm knows the model's price, what it cost in US dollars (core/llm/usage.py)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float


class AttachmentRef(TypedDict):
    """A message's reference to an attachment in the content-addressed store
    (core/log/attachments.py ``Ref``); never the bytes themselves."""

    sha256: str
    mime: str
    name: str
    size: int
    kind: str  # image | text


class ToolFunctionSpec(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]  # a JSON schema: its shape is the tool's own


class ToolSpec(TypedDict):
    """A tool offered to the model (core/llm/client.py ``tool_spec``)."""

    type: str  # "function"
    function: ToolFunctionSpec


# --- conversation -------------------------------------------------------------------------


@SCHEMA.register
@dataclass(frozen=True)
class Message(Payload):
    """A chat message: user, assistant (with optional tool calls) or tool result."""

    TYPE: ClassVar[str] = "message"
    role: str  # user | assistant | tool
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    model: str | None = None
    usage: Usage | None = None
    #: sha256 of the exact request an assistant message answered (prompt time travel).
    request_hash: str | None = None
    #: the runtime context prefixed to a user message when it was sent.
    context: str | None = None
    #: set on an assistant message that ended early ("cancelled", "tool-limit").
    stop: str | None = None
    #: the log seq an assistant message's request was built from (prompt time travel).
    basis_seq: int | None = None
    #: on a user message: the quoted past snippets it was sent with (recall; see sessions.render)
    recall: str | None = None
    #: the seqs of the past messages quoted in ``recall`` (on the user message and its replies)
    recalled: list[int] | None = None
    #: on a user message: references to its attachments in the content-addressed store
    attachments: list[AttachmentRef] | None = None
    #: an imported message (``memtray import``): when it was sent in its source (ISO time)
    sent_at: str | None = None
    #: on a user message: its prompt starts over from memory now (prompt layout 3: a re-base,
    #: core/log/promptbase.py); absent: the prompt keeps its memory snapshot and history start
    rebase: bool | None = None
    #: imported from another device (sync)
    origin: OriginMark | None = None

    def to_session(self) -> dict[str, Any]:
        """The message as its session holds it (and the prompt replays it): the members of
        :data:`SESSION_KEYS` that are set. One pass over the instance's own members, since
        the fold makes one of these per message of the log."""
        return {k: v for k, v in self.__dict__.items() if k in SESSION_KEYS and v is not None}


#: the members of a message that are replayed into its session and sent to the model
SESSION_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "context", "stop", "recall",
                          "recalled", "attachments"})


@SCHEMA.register
@dataclass(frozen=True)
class SessionReset(Payload):
    """`/new`: the session starts over (after everything was archived)."""

    TYPE: ClassVar[str] = "session.reset"
    reason: str = "user"  # user | import | ...
    origin: OriginMark | None = None


@SCHEMA.register
@dataclass(frozen=True)
class SessionTitled(Payload):
    """The user named a conversation: the Chats list shows it instead of the first line
    (written by ``transcript.rename``; local to this device)."""

    TYPE: ClassVar[str] = "session.titled"
    title: str


@SCHEMA.register
@dataclass(frozen=True)
class SessionDeleted(Payload):
    """The user deleted a conversation: it leaves the Chats list for "Recently deleted".
    Nothing is erased: its messages stay in the log, so ``session.restored`` brings it back
    whole, until ``memtray purge`` removes their text (``transcript.delete``; local)."""

    TYPE: ClassVar[str] = "session.deleted"
    reason: str = "user"


@SCHEMA.register
@dataclass(frozen=True)
class SessionRestored(Payload):
    """A deleted conversation is back in the Chats list (``transcript.restore``; local)."""

    TYPE: ClassVar[str] = "session.restored"


@SCHEMA.register
@dataclass(frozen=True)
class SessionPinned(Payload):
    """The user pinned (or unpinned) a conversation: pinned ones head the Chats list
    (``transcript.pin``; local)."""

    TYPE: ClassVar[str] = "session.pinned"
    pinned: bool = True


@SCHEMA.register
@dataclass(frozen=True)
class SessionModel(Payload):
    """The model this conversation's turns go to, chosen for it ("" again: the configured
    model) (``transcript.choose_model``; local: another device may not have it)."""

    TYPE: ClassVar[str] = "session.model"
    model: str = ""


@SCHEMA.register
@dataclass(frozen=True)
class SessionScope(Payload):
    """The memory scope this conversation belongs to ("global" again: the global memory
    only) (``transcript.choose_scope``, core/memory/scopes.py). A conversation without one
    is global: every conversation before scopes existed."""

    TYPE: ClassVar[str] = "session.scope"
    scope: str = "global"


#: a memory scope's name as an event holds it (a slug: it becomes a file name); "global" (or
#: "") is the global memory. core/memory/scopes.py checks names by it; the door checks a peer's.
#: ASCII only: ``re`` reads ``[a-z]`` as those 26 letters, and a caller checks the text as typed,
#: before any lower-casing (``"\u212a".lower()`` is the ASCII "k").
SCOPE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
#: :data:`SCOPE_NAME` in words, the same wherever a name is refused
SCOPE_NAME_RULE = "1-32 lower-case ASCII letters, digits, '-' or '_', the first a letter or digit"


@SCHEMA.register
@dataclass(frozen=True)
class TurnFailed(Payload):
    """A turn ended with a provider error; the user's message stays in the log."""

    TYPE: ClassVar[str] = "turn.failed"
    error: str
    kind: str = "provider"
    model: str | None = None


# --- consolidation ------------------------------------------------------------------------


@SCHEMA.register
@dataclass(frozen=True)
class ConsolidationStarted(Payload):
    TYPE: ClassVar[str] = "consolidation.started"
    consolidation: str
    start: int  # index into the session's messages (absolute)
    end: int
    model: str
    first_seq: int | None = None
    last_seq: int | None = None
    trigger: str = "window"
    redo_of: str | None = None
    #: the conversation's memory scope, where its new facts go (absent before scopes: global)
    scope: str = "global"


@SCHEMA.register
@dataclass(frozen=True)
class ConsolidationCompleted(Payload):
    TYPE: ClassVar[str] = "consolidation.completed"
    consolidation: str
    end: int
    memory_seq: int | None = None
    added: int = 0
    removed: int = 0
    changed: int = 0
    kept: int = 0
    flagged: int = 0
    #: what the model call cost (absent in events written before the usage ledger)
    usage: Usage | None = None
    #: what the model said it chose not to keep (``save_memory``'s ``skipped``, checked at the door)
    skipped: list[SkippedStatement] | None = None
    #: things the user said about themselves that nothing kept (review items of kind not-remembered)
    not_remembered: int = 0


@SCHEMA.register
@dataclass(frozen=True)
class ConsolidationFailed(Payload):
    TYPE: ClassVar[str] = "consolidation.failed"
    consolidation: str
    reason: str
    attempt: int = 1
    retry_after: float | None = None
    #: what the model call cost when it answered (a reply without save_memory costs too)
    usage: Usage | None = None
    #: the budget guard stopped retrying: "budget" (the day's limit) or "loop" (replies that changed nothing)
    halted: str | None = None


@SCHEMA.register
@dataclass(frozen=True)
class UsageRecorded(Payload):
    """A provider call that writes no event of its own (embedding the history, a recall's or
    a search's query, a rebuild's consolidation): its tokens and cost for the usage ledger
    (core/log/usage.py). Local to the device that paid for it."""

    TYPE: ClassVar[str] = "llm.usage"
    kind: str  # embedding | recall | search | rebuild
    model: str
    usage: Usage
    calls: int = 1


# --- reminders ----------------------------------------------------------------------------


@SCHEMA.register
@dataclass(frozen=True)
class ReminderScheduled(Payload):
    TYPE: ClassVar[str] = "reminder.scheduled"
    reminder: str
    text: str
    kind: str  # at | every | cron
    spec: str
    tz: str
    mode: str = "notify"  # notify | agent
    origin: OriginMark | None = None


@SCHEMA.register
@dataclass(frozen=True)
class ReminderFired(Payload):
    TYPE: ClassVar[str] = "reminder.fired"
    reminder: str
    occurrence: str  # ISO time of the scheduled occurrence (idempotency key)
    late: bool = False
    reply: str | None = None
    origin: OriginMark | None = None


@SCHEMA.register
@dataclass(frozen=True)
class ReminderCancelled(Payload):
    TYPE: ClassVar[str] = "reminder.cancelled"
    reminder: str
    reason: str = "user"  # user | expired
    origin: OriginMark | None = None


#: a reminder's events: each names the reminder it is about
Reminder = ReminderScheduled | ReminderFired | ReminderCancelled
REMINDER_TYPES = frozenset({ReminderScheduled.TYPE, ReminderFired.TYPE, ReminderCancelled.TYPE})
#: a consolidation's events: each names the consolidation it is about
Consolidation = ConsolidationStarted | ConsolidationCompleted | ConsolidationFailed
CONSOLIDATION_TYPES = frozenset({ConsolidationStarted.TYPE, ConsolidationCompleted.TYPE, ConsolidationFailed.TYPE})


# --- prompt context (prompt time travel, docs/AUDIT.md) -----------------------------------


@SCHEMA.register
@dataclass(frozen=True)
class ContextChanged(Payload):
    """What a prompt depends on besides the log: model, tools, identity, bootstrap files, skills.

    The agent appends one before a request whenever this differs from the last one
    (``digest`` is the sha256 of the other members), so any past request can be rebuilt.

    v2: ``format`` and ``redacted`` are always written (v1 events of the first prompt
    layout have neither: :func:`_context_v1` says what they were).
    """

    TYPE: ClassVar[str] = "context.changed"
    VERSION: ClassVar[int] = 2
    digest: str
    model: str
    tools: list[ToolSpec]
    identity: str
    bootstrap: list[list[str]]  # [name, text] pairs, in prompt order
    skills: list[list[str]]  # [name, summary] pairs, in prompt order
    format: int  # layout of the system prompt (context.system_prompt)
    #: a bootstrap file held a secret: it was redacted here, so reconstruction is not byte-exact
    redacted: bool


@SCHEMA.upcaster(ContextChanged.TYPE, 1)
def _context_v1(d: dict[str, Any]) -> dict[str, Any]:
    """v1 -> v2: a context recorded before prompt layout 2 names no layout (it was layout 1)
    and, before bootstrap files were redacted, no redaction (there was none)."""
    return {"format": 1, "redacted": False, **d}
