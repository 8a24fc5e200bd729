"""Events: the envelope, the line codec, payload types and schema upcasting.

A record is one line of JSON::

    {"seq":42,"id":"01J...","ts":"2026-11-30T09:15:02.123Z","type":"message","v":1,
     "session":"quick","data":{...},"crc":"1a2b3c4d"}

``crc`` is the CRC-32 (hex) of the line's own bytes with the ``,"crc":"…"`` member
removed, so a record is verified on its bytes alone, before any JSON parsing, and
re-encoding is never needed. ``type`` is a stable string (never a class path) and
``v`` the payload's schema version; old versions are upcast on read by a
:class:`Schema` registry. Types this version does not know are kept verbatim.
"""

from __future__ import annotations

import json
import operator
import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, NamedTuple, TypeVar

import orjson
from memtray.core.base.errors import InvalidText, UnknownEventVersion

_CRC_PREFIX = b',"crc":"'
_SUFFIX_LEN = len(_CRC_PREFIX) + 8 + 2  # ,"crc":"xxxxxxxx"}


class Record(NamedTuple):
    """One event as stored: the envelope plus its (upcast) payload dict.

    A named tuple rather than a frozen dataclass: replay builds a million of
    these, and tuple construction is several times cheaper.
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


class BadRecord(ValueError):
    """A line that is not a valid record (torn, corrupt checksum, bad JSON)."""


# --- text validation: the one door every event goes through ------------------------------

_SURROGATES = re.compile("[\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """Why ``text`` may not enter an event (a NUL, a lone surrogate), or None if it may.

    Every string of an event must be a sequence of Unicode scalar values without NUL:
    a lone surrogate cannot be encoded as UTF-8 (git, SQLite and every model API then
    fail on it) and a NUL ends strings in C libraries (FTS5, git commit messages).
    """
    nul = text.find("\x00")
    m = _SURROGATES.search(text)
    if m is not None and (nul < 0 or m.start() < nul):
        return f"a lone surrogate (U+{ord(m.group()):04X}) at character {m.start():,}"
    if nul >= 0:
        return f"a NUL character at character {nul:,}"
    return None


def find_invalid(obj: Any, path: str = "") -> tuple[str, str] | None:
    """The first (path, problem) of a string (value or key) in ``obj`` that may not enter
    an event, or None. ``path`` reads like ``data.tool_calls[0].function.arguments``."""
    if isinstance(obj, str):
        problem = text_problem(obj)
        return (path or "text", problem) if problem else None
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (problem := text_problem(key)):
                return f"{path or 'data'} (a key)", problem
            found = find_invalid(value, where)
            if found:
                return found
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            found = find_invalid(value, f"{path}[{i}]")
            if found:
                return found
    return None


def check_text(obj: Any, what: str = "the text") -> None:
    """Raise :class:`InvalidText` if any string in ``obj`` may not enter an event.

    For friendly checks where the user typed the text (the codec checks every event
    again, so nothing can bypass the rule)."""
    found = find_invalid(obj)
    if found is not None:
        where, problem = found
        what = what if isinstance(obj, str) else f"{what} ({where})"
        raise InvalidText(f"{what} contains {problem}; memtray stores only valid Unicode text")


def scrub_text(text: str) -> str:
    """``text`` made storable: undecodable bytes (surrogate escapes) and other lone
    surrogates become U+FFFD, NULs are dropped. For text memtray itself must keep (a
    user's message, a model's reply), where refusing would lose it."""
    return _SURROGATES.sub("\ufffd", text).replace("\x00", "")


def scrub_obj(obj: Any) -> Any:
    """:func:`scrub_text` applied to every string (values and keys) in ``obj``."""
    if isinstance(obj, str):
        return scrub_text(obj)
    if isinstance(obj, Mapping):
        return {scrub_text(k) if isinstance(k, str) else k: scrub_obj(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [scrub_obj(v) for v in obj]
    return obj


def _dumps(obj: Any) -> bytes:
    try:
        body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        body = b""  # a lone surrogate somewhere: find_invalid says where
    if not body or b"\\u0000" in body:  # json writes NUL as \u0000 (or it is an escaped backslash)
        found = find_invalid(obj.get("data", obj)) if isinstance(obj, dict) else find_invalid(obj)
        if found is None and isinstance(obj, dict):
            found = find_invalid({k: v for k, v in obj.items() if k != "data"})
        if found is not None:
            where, problem = found
            kind = obj.get("type", "an event") if isinstance(obj, dict) else "an event"
            raise InvalidText(f"refused to log {kind}: {where} contains {problem}")
    return body


def legacy_line(rec: Record) -> bytes:
    """The line of a record already in the log, re-encoded (a repair or a purge rewriting
    it): text older versions accepted (escaped lone surrogates) is kept exactly. Never
    for new events, which go through :func:`encode`."""
    obj = rec.to_json()
    try:
        body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        body = json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    crc = zlib.crc32(body)
    return body[:-1] + _CRC_PREFIX + f"{crc:08x}".encode() + b'"}\n'


def encode(rec: Record) -> bytes:
    """The record's line, newline-terminated, with its checksum.

    Raises :class:`InvalidText` (before anything is written) if any text of the event
    is not valid Unicode or holds a NUL: this is the one door every new event passes.
    """
    body = _dumps(rec.to_json())
    crc = zlib.crc32(body)
    return body[:-1] + _CRC_PREFIX + f"{crc:08x}".encode() + b'"}\n'


def verify_line(line: bytes) -> bool:
    """True if ``line`` (without its newline) carries a matching checksum."""
    if len(line) <= _SUFFIX_LEN or not line.endswith(b'"}'):
        return False
    cut = len(line) - _SUFFIX_LEN
    if line[cut : cut + len(_CRC_PREFIX)] != _CRC_PREFIX:
        return False
    try:
        want = int(line[cut + len(_CRC_PREFIX) : -2], 16)
    except ValueError:
        return False
    return zlib.crc32(b"}", zlib.crc32(line[:cut])) == want


def decode_raw(line: bytes) -> Record:
    """Parse one line (without newline) into a Record, payload not upcast."""
    if not verify_line(line):
        raise BadRecord("checksum mismatch or torn record")
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        # orjson refuses lone surrogates that json accepts (\udcxx escapes from argv)
        try:
            obj = json.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRecord(f"malformed record: {exc}") from exc
    try:
        return Record(
            obj["seq"], obj["id"], obj["ts"], obj["type"], obj["v"], obj.get("session"), obj["data"]
        )
    except (KeyError, TypeError) as exc:
        raise BadRecord(f"malformed record: {exc}") from exc


def count_verified(lines: list[bytes]) -> int:
    """How many leading ``lines`` carry a matching checksum (:func:`verify_line`, inlined).

    The bulk path of replay: one tight loop instead of a call per line.
    """
    crc32 = zlib.crc32
    prefix, plen, suffix = _CRC_PREFIX, len(_CRC_PREFIX), _SUFFIX_LEN
    for i, line in enumerate(lines):
        cut = len(line) - suffix
        if cut <= 0 or line[cut : cut + plen] != prefix or not line.endswith(b'"}'):
            return i
        try:
            want = int(line[cut + plen : -2], 16)
        except ValueError:
            return i
        if crc32(b"}", crc32(line[:cut])) != want:
            return i
    return len(lines)


_SEQ_PREFIX = b'{"seq":'
_ID_MARK = b',"id":"'


def envelopes(lines: list[bytes]) -> tuple[list[int], list[str]] | None:
    """Seqs and ids of checksum-verified ``lines``, read without parsing JSON.

    :func:`encode` always writes ``seq`` then ``id`` first, so both sit at fixed
    places; a line that does not look exactly like that (an escape in the id, an
    odd number) makes this return None and the caller decodes properly. Used by
    recovery, which needs only the seqs and ids of the last segment.
    """
    seqs: list[int] = []
    ids: list[str] = []
    for line in lines:
        if not line.startswith(_SEQ_PREFIX):
            return None
        j = line.find(_ID_MARK, 7)
        k = line.find(b'"', j + 7)
        if j < 0 or k < 0:
            return None
        seq, ident = line[7:j], line[j + 7 : k]
        if not seq.isdigit() or b"\\" in ident:
            return None
        seqs.append(int(seq))
        try:
            ids.append(ident.decode("ascii"))
        except UnicodeDecodeError:
            return None
    return seqs, ids


_ENVELOPE = operator.itemgetter("seq", "id", "ts", "type", "v", "session", "data")
_new_record = tuple.__new__


def decode_many(lines: list[bytes]) -> list[Record] | None:
    """Records of checksum-verified ``lines`` parsed in bulk, or None if any needs
    :func:`decode_raw` (lone surrogates, a missing member, ...): the caller then
    decodes line by line, which also says exactly which line is bad.
    """
    try:  # one comprehension, no call per line of ours (faster than one big JSON array)
        return [_new_record(Record, _ENVELOPE(o)) for o in map(orjson.loads, lines)]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


# --- payload types and schema versions ---------------------------------------------------

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


@SCHEMA.register
@dataclass(frozen=True)
class Message(Payload):
    """A chat message: user, assistant (with optional tool calls) or tool result."""

    TYPE: ClassVar[str] = "message"
    role: str
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    #: sha256 of the exact request an assistant message answered (prompt time travel).
    request_hash: str | None = None
    #: the runtime context prefixed to a user message when it was sent.
    context: str | None = None
    #: set on an assistant message that ended early ("cancelled", "error: ...").
    stop: str | None = None
    #: the log seq an assistant message's request was built from (prompt time travel).
    basis_seq: int | None = None
    #: on a user message: the quoted past snippets it was sent with (recall; see sessions.render)
    recall: str | None = None
    #: the seqs of the past messages quoted in ``recall`` (on the user message and its replies)
    recalled: list[int] | None = None
    #: on a user message: references to its attachments in the content-addressed store
    #: (core/log/attachments.py: sha256, mime, name, size, kind); never the bytes themselves
    attachments: list[dict[str, Any]] | None = None


@SCHEMA.register
@dataclass(frozen=True)
class SessionReset(Payload):
    """`/new`: the session starts over (after everything was archived)."""

    TYPE: ClassVar[str] = "session.reset"
    reason: str = "user"


@SCHEMA.register
@dataclass(frozen=True)
class TurnFailed(Payload):
    """A turn ended with a provider error; the user's message stays in the log."""

    TYPE: ClassVar[str] = "turn.failed"
    error: str
    kind: str = "provider"
    model: str | None = None


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


@SCHEMA.register
@dataclass(frozen=True)
class ConsolidationFailed(Payload):
    TYPE: ClassVar[str] = "consolidation.failed"
    consolidation: str
    reason: str
    attempt: int = 1
    retry_after: float | None = None


@SCHEMA.register
@dataclass(frozen=True)
class MemoryWritten(Payload):
    """A new MEMORY.md (and optionally HISTORY.md entry); one git commit each."""

    TYPE: ClassVar[str] = "memory.written"
    memory: str
    reason: str  # consolidation | agent | user-edit | restore | rollback | redo | adopt
    source: str = "memtray"  # memtray | user | model
    history_append: str | None = None
    #: full HISTORY.md text, only when the diary itself was edited by hand
    history: str | None = None
    consolidation: str | None = None
    model: str | None = None
    diff: dict[str, Any] | None = None
    flagged: list[dict[str, Any]] | None = None
    provenance: dict[str, Any] | None = None
    #: the program that asked for the write (an MCP client's name), when not memtray itself
    client: str | None = None
    #: the id of every fact of ``memory`` in document order, and the next id number:
    #: ``{"ids": [...], "next": N, "merged": {survivor: [ids]}}`` (absent before fact ids existed)
    facts: dict[str, Any] | None = None
    #: a rollback's: the revision (sha) memory went back to, named in the commit message
    target: str | None = None
    #: sync: the device that wrote it, and the memory.written event ids it follows (two or more
    #: for a merge); absent in older events = the previous memory.written of the same log
    device: str | None = None
    parents: list[str] | None = None


@SCHEMA.register
@dataclass(frozen=True)
class MemoryPeerHead(Payload):
    """A memory revision another device wrote (``data`` verbatim), kept for the memory merge."""

    TYPE: ClassVar[str] = "memory.peer"
    device: str
    event_id: str
    ts: str
    data: dict[str, Any]
    redacted: bool | None = None  # True: secrets were cut from ``data`` here (it is not verbatim)


@SCHEMA.register
@dataclass(frozen=True)
class MemoryReviewed(Payload):
    """The user resolved a flagged item: ``accept`` (the change stands) or ``restore``."""

    TYPE: ClassVar[str] = "memory.reviewed"
    item: str
    action: str  # accept | restore
    memory_seq: int | None = None


@SCHEMA.register
@dataclass(frozen=True)
class MemoryRolledBack(Payload):
    TYPE: ClassVar[str] = "memory.rolled_back"
    to_rev: str
    memory_seq: int


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


@SCHEMA.register
@dataclass(frozen=True)
class ReminderFired(Payload):
    TYPE: ClassVar[str] = "reminder.fired"
    reminder: str
    occurrence: str  # ISO time of the scheduled occurrence (idempotency key)
    late: bool = False
    reply: str | None = None


@SCHEMA.register
@dataclass(frozen=True)
class ReminderCancelled(Payload):
    TYPE: ClassVar[str] = "reminder.cancelled"
    reminder: str
    reason: str = "user"


def payload_of(rec: Record, schema: Schema = SCHEMA) -> Payload | None:
    return schema.payload(rec)


# --- audit: prompt time travel and rebuilds (see docs/AUDIT.md) ---------------------------


@SCHEMA.register
@dataclass(frozen=True)
class ContextChanged(Payload):
    """What a prompt depends on besides the log: model, tools, identity, bootstrap files, skills.

    The agent appends one before a request whenever this differs from the last one
    (``digest`` is the sha256 of the other members), so any past request can be rebuilt.
    """

    TYPE: ClassVar[str] = "context.changed"
    digest: str
    model: str
    tools: list[dict[str, Any]]
    identity: str
    bootstrap: list[list[str]]  # [name, text] pairs, in prompt order
    skills: list[list[str]]  # [name, summary] pairs, in prompt order
    format: int = 1  # layout of the system prompt (context.system_prompt)
    #: a bootstrap file held a secret: it was redacted here, so reconstruction is not byte-exact
    redacted: bool = False


@SCHEMA.register
@dataclass(frozen=True)
class RebuildStarted(Payload):
    """A re-consolidation of the log onto the branch ``rebuild/<name>`` began (or resumed)."""

    TYPE: ClassVar[str] = "rebuild.started"
    rebuild: str
    name: str
    model: str
    base_seq: int  # the log seq the plan was made at
    steps: int
    start_memory_seq: int = 0  # the memory.written the branch forks from (0: empty memory)
    since: str | None = None
    exclude: list[str] | None = None
    prompt: str | None = None  # a custom consolidation prompt template
    resumed: bool = False


@SCHEMA.register
@dataclass(frozen=True)
class RebuildProgress(Payload):
    """One step of a rebuild: the branch's MEMORY.md after it (one commit on the branch)."""

    TYPE: ClassVar[str] = "rebuild.progress"
    rebuild: str
    step: int
    source_seq: int  # the memory.written on main this step re-does
    kind: str  # consolidation | patch
    memory: str
    history_append: str | None = None
    diff: dict[str, Any] | None = None
    #: facts the model removed, listed with a reason: fact id -> reason
    reasons: dict[str, str] | None = None
    #: facts the model dropped without a reason (before the guard kept them)
    silent: list[dict[str, Any]] | None = None
    flagged: list[dict[str, Any]] | None = None
    message_seqs: list[int] | None = None
    model: str | None = None
    #: the id of every fact of ``memory``, as in ``memory.written`` (absent before rebuilds kept ids)
    facts: dict[str, Any] | None = None


@SCHEMA.register
@dataclass(frozen=True)
class RebuildCompleted(Payload):
    TYPE: ClassVar[str] = "rebuild.completed"
    rebuild: str
    steps: int
    base_seq: int


@SCHEMA.register
@dataclass(frozen=True)
class RebuildFailed(Payload):
    """A rebuild stopped (model error, Ctrl-C); its progress stays and it can be resumed."""

    TYPE: ClassVar[str] = "rebuild.failed"
    rebuild: str
    reason: str
    step: int = 0


@SCHEMA.register
@dataclass(frozen=True)
class RebuildDiscarded(Payload):
    TYPE: ClassVar[str] = "rebuild.discarded"
    rebuild: str


@SCHEMA.register
@dataclass(frozen=True)
class RebuildAdopted(Payload):
    """A rebuild became the current memory (the ``memory.written`` with reason ``adopt``)."""

    TYPE: ClassVar[str] = "rebuild.adopted"
    rebuild: str
    memory_seq: int
