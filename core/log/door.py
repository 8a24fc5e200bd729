"""The one door: whatever enters the log from outside passes here first.

A peer device's stream, an import, an MCP write: each hands its input to a
:class:`Door` and gets back either something to append or a :class:`Refusal`
with its reason. The door

1. refuses a line larger than the event limit before parsing it (a caller that
   streams can hand over only its first bytes and the size: :meth:`Door.line`),
2. checks the line's checksum and decodes it (a parse error, nesting beyond what
   the parser takes: a refusal, never a traceback),
3. checks the envelope and the payload against its class
   (:mod:`memtray.core.log.validate`): types, required fields, sizes, depth, id
   and time format, session name; an older version is upcast first,
4. redacts every text with the rules local input goes through
   (:func:`memtray.core.base.redact.redact_obj`), except for the types the caller
   names as ``verbatim`` (they are checked against something else: a memory
   revision by the memory merge, which redacts and records that it did; a purge
   tombstone against the events it names).

An event of a type this version does not know, or of a newer version of a known
type (a newer device's), is kept verbatim after the generic checks (plain JSON
within the limits): the fold counts and skips it.

What is refused is kept by :class:`Quarantine` (``<home>/quarantine/``, see
docs/ARCHITECTURE.md, "The one door"): the reason, where it came from, when, and
at most :data:`KEEP_BYTES` of the raw bytes (redacted); ``memtray doctor`` lists it.

API for the doors (sync, import, MCP)::

    door = Door()                                   # SCHEMA, LIMITS
    got = door.line(raw_line, Source("peer", "d1a2…", "segments/…jsonl line 3"))
    got = door.record(record, source)               # a Record built elsewhere
    got = door.event("message", data, session, source)   # no envelope: an import's event
    if isinstance(got, Refusal): quarantine.put(got)      # and say so
    else: store.append(got.payload(), session=got.session)
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from memtray.core.base.clock import Clock, format_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.base.fsutil import atomic_write
from memtray.core.base.redact import find_secrets, is_secret_name, redact, redact_obj
from memtray.core.log.attachments import is_hash
from memtray.core.log.events import (
    SCHEMA,
    DeviceNamed,
    Message,
    Payload,
    Record,
    Schema,
    SessionScope,
    find_invalid,
    verify_line,
)
from memtray.core.log.payloads import SCOPE_NAME, SCOPE_NAME_RULE
from memtray.core.log.payloads_sync import DEVICE_ID, DEVICE_NAME_MAX
from memtray.core.log.validate import (
    LIMITS,
    Invalid,
    Limits,
    check_envelope,
    check_json,
    check_session,
    checker,
)

log = logging.getLogger(__name__)

#: raw bytes of a refused event kept in the quarantine (the rest is only counted)
KEEP_BYTES = 4096
#: quarantine entries kept; beyond this a refusal is still reported but not stored
MOST_ENTRIES = 1000


@dataclass(frozen=True)
class Source:
    """Where input came from: ``kind`` (peer, import, mcp), ``name`` (a device id, a file,
    a client) and ``where`` inside it (a segment and line, an item)."""

    kind: str
    name: str
    where: str = ""

    def describe(self) -> str:
        what = {"peer": "device"}.get(self.kind, self.kind)
        return f"{what} {self.name}" + (f" ({self.where})" if self.where else "")

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "where": self.where}


@dataclass(frozen=True)
class Refusal:
    """Input the door did not let in, and why."""

    source: Source
    reason: str
    raw: bytes = b""
    size: int = 0  # the whole input's size in bytes (``raw`` holds at most KEEP_BYTES of it)
    seq: int | None = None
    id: str | None = None
    type: str | None = None

    def describe(self) -> str:
        what = f"event {self.id}" if self.id else f"event seq {self.seq}" if self.seq else "an event"
        return f"{what} from {self.source.describe()} refused: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source.to_json(), "reason": self.reason, "size": self.size, "seq": self.seq,
                "id": self.id, "type": self.type}


@dataclass(frozen=True)
class Admitted:
    """An event without envelope (an import's, an MCP write's) the door let in: append
    ``(admitted.payload(), admitted.session, None)``."""

    type: str
    data: dict[str, Any]
    session: str | None

    def payload(self, schema: Schema = SCHEMA) -> Payload:
        """The typed payload (its class's declared fields; the door checked them all)."""
        return schema.types[self.type].from_data(self.data)


class Door:
    """The checks every event from outside passes (see the module docstring)."""

    def __init__(self, schema: Schema = SCHEMA, limits: Limits = LIMITS,
                 verbatim: Collection[str] = ()) -> None:
        self.schema = schema
        self.limits = limits
        self.verbatim = frozenset(verbatim)

    # --- the three ways in -------------------------------------------------------------

    def line(self, line: bytes, source: Source, size: int | None = None) -> Record | Refusal:
        """A log line as a peer's stream holds it (checksum included, no newline). ``size``:
        the line's real length when ``line`` is only its first bytes (a streaming reader
        that did not keep a line past the limit)."""
        total = len(line) if size is None else size
        if total > self.limits.event_bytes:
            return self._refuse(source, f"an event of {total:,} bytes (at most {self.limits.event_bytes:,})",
                                line, total)
        if not verify_line(line):
            return self._refuse(source, "damaged (checksum mismatch)", line, total)
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            said = str(exc)
            why = "nested too deep to read" if "depth" in said or "ecursion" in said else f"not valid JSON ({said[:80]})"
            return self._refuse(source, why, line, total)
        if type(obj) is not dict:
            return self._refuse(source, "not a JSON object", line, total)
        get = obj.get  # any JSON in any member: the checks below say what is wrong
        rec = Record._make((get("seq"), get("id"), get("ts"), get("type"), get("v"), get("session"), get("data")))
        checked = self._check(rec, source, nul=b"\\u0000" in line)
        if isinstance(checked, Refusal):
            return Refusal(source, checked.reason, line[:KEEP_BYTES], total, *_ident(rec))
        return checked

    def record(self, rec: Record, source: Source) -> Record | Refusal:
        """A record built elsewhere (a decoded line, a hand-made event)."""
        checked = self._check(rec, source, nul=True)
        if isinstance(checked, Refusal):
            raw = _raw(rec)
            return Refusal(source, checked.reason, raw[:KEEP_BYTES], len(raw), *_ident(rec))
        return checked

    def event(self, type_: str, data: Any, session: str | None, source: Source) -> Admitted | Refusal:
        """An event to append without an envelope yet (an import's, an MCP write's): the
        payload and session are checked and redacted; the store gives it seq, id and time."""
        try:
            if session is not None:
                check_session(session)
            if type(data) is not dict:
                raise Invalid("data", "must be an object")
            cls = self.schema.types.get(type_)
            if cls is None:
                raise Invalid("type", f"{type_!r} is not an event type this version knows")
            checker(cls, self.limits)(data)
            _FORMATS.get(type_, _no_format)(data)
            _check_text({"session": session, "data": data})
        except Invalid as exc:
            raw = json.dumps({"type": type_, "session": session, "data": data}, default=str,
                             ensure_ascii=False).encode("utf-8", "replace")
            return Refusal(source, str(exc), raw[:KEEP_BYTES], len(raw), None, None, type_)
        redacted = data if type_ in self.verbatim or not _may_hold_secrets(data, session) else redact_obj(data)
        return Admitted(type_, redacted, redact(session) if session else session)

    # --- the checks ------------------------------------------------------------------------

    def _check(self, rec: Record, source: Source, *, nul: bool) -> Record | Refusal:
        try:
            check_envelope(rec.seq, rec.id, rec.ts, rec.type, rec.v, rec.session)
            data = rec.data
            if type(data) is not dict:
                raise Invalid("data", f"must be an object, not {type(data).__name__}")
            current = self.schema.versions.get(rec.type)
            cls = self.schema.types.get(rec.type)
            if cls is None or current is None or rec.v > current:
                # a type or version this memtray does not know (a newer device's): kept
                # verbatim after the generic checks; the fold counts and skips it
                check_json(data, "data", self.limits.depth, self.limits)
            else:
                try:
                    upcast = self.schema.upcast(rec)
                except MemtrayError as exc:
                    raise Invalid("data", f"cannot be read as {rec.type} v{rec.v}: {exc}") from None
                except Exception as exc:  # an upcaster meeting a shape it never expected
                    raise Invalid("data", f"cannot be upcast from v{rec.v}: {type(exc).__name__}") from None
                checker(cls, self.limits)(upcast.data)
                _FORMATS.get(rec.type, _no_format)(upcast.data)
            if nul:
                _check_text(data)
        except Invalid as exc:
            return Refusal(source, str(exc), seq=rec.seq if type(rec.seq) is int else None)
        if rec.type in self.verbatim or not _may_hold_secrets(data, rec.session):
            return rec
        session = redact(rec.session) if rec.session else rec.session
        return Record(rec.seq, rec.id, rec.ts, rec.type, rec.v, session, redact_obj(data))

    def _refuse(self, source: Source, reason: str, raw: bytes, size: int) -> Refusal:
        return Refusal(source, reason, raw[:KEEP_BYTES], size)


#: member names recur (a payload class has a dozen): the rule is checked once per name
_secret_name = functools.lru_cache(maxsize=4096)(is_secret_name)


def _may_hold_secrets(data: Any, session: str | None) -> bool:
    """Whether redaction could change ``data`` or ``session``: one scan of all their texts
    together (most events hold none, and one scan costs what one string's does), and the
    member names (a value under ``api_key`` goes whole whatever it looks like)."""
    texts: list[str] = [session] if session else []
    stack: list[Any] = [data]
    while stack:
        item = stack.pop()
        if type(item) is str:
            texts.append(item)
        elif type(item) is dict:
            for key, value in item.items():
                if type(key) is str:
                    if _secret_name(key):
                        return True
                    texts.append(key)
                stack.append(value)
        elif type(item) is list:
            stack.extend(item)
    return bool(texts) and bool(find_secrets("\n".join(texts)))


def _attachment_refs(data: Mapping[str, Any]) -> None:
    """A message's attachment references name files by hash: anything else could name a path."""
    for i, ref in enumerate(data.get("attachments") or ()):
        if not is_hash(ref["sha256"]):
            raise Invalid(f"data.attachments[{i}].sha256", "is not a sha256 hash")
        if ref["size"] < 0:
            raise Invalid(f"data.attachments[{i}].size", "is negative")


def _device_name(data: Mapping[str, Any]) -> None:
    """A device's name is shown where its id was: a short line, for a real device id."""
    if not DEVICE_ID.fullmatch(data["device"]):
        raise Invalid("data.device", "is not a device id")
    name = data["name"]
    if len(name) > DEVICE_NAME_MAX or any(c < " " or c == "\x7f" for c in name) or DEVICE_ID.fullmatch(name.strip()):
        raise Invalid("data.name", f"is not a device name (one line, at most {DEVICE_NAME_MAX} characters, no id)")


def _scope_name(data: Mapping[str, Any]) -> None:
    """A conversation's memory scope becomes a file name and a prompt's part: a scope name as
    this version writes it (lower case, no path), or the global memory."""
    scope = data.get("scope", "global")  # absent: the class's default
    if scope not in ("", "global") and not SCOPE_NAME.fullmatch(scope):
        raise Invalid("data.scope", f"is not a scope name ({SCOPE_NAME_RULE})")


def _no_format(data: Mapping[str, Any]) -> None:
    return None


#: what a type's annotations cannot say (a text that must be a hash), checked after them
_FORMATS: dict[str, Callable[[Mapping[str, Any]], None]] = {Message.TYPE: _attachment_refs,
                                                             DeviceNamed.TYPE: _device_name,
                                                             SessionScope.TYPE: _scope_name}


def _check_text(data: Any) -> None:
    found = find_invalid(data, "data")
    if found is not None:
        where, problem = found
        raise Invalid(where, f"contains {problem}")


def _ident(rec: Record) -> tuple[int | None, str | None, str | None]:
    seq = rec.seq if type(rec.seq) is int else None
    ident = rec.id if type(rec.id) is str and len(rec.id) <= 128 else None
    kind = rec.type if type(rec.type) is str and len(rec.type) <= 64 else None
    return seq, ident, kind


def _raw(rec: Record) -> bytes:
    try:
        return json.dumps(rec.to_json(), ensure_ascii=False, default=str).encode("utf-8", "replace")
    except (TypeError, ValueError, RecursionError):
        return repr(rec)[: KEEP_BYTES * 2].encode("utf-8", "replace")


# --- the quarantine -----------------------------------------------------------------------------


@dataclass
class Quarantine:
    """Refused input kept for the user (``<home>/quarantine/``), one JSON file per refusal.

    Not in ``state/`` (derived and deletable) nor in the log (which must not hold the
    hostile bytes, and travels): a folder of its own, private like the rest of the home.
    The same refusal (source, event, reason) is one file however often it is seen."""

    root: Path
    clock: Clock = field(default_factory=Clock)

    @property
    def dir(self) -> Path:
        return self.root / "quarantine"

    def put(self, refusal: Refusal) -> Path | None:
        """Keep ``refusal``; None when the quarantine is full (it is still reported)."""
        key = json.dumps([refusal.source.to_json(), refusal.seq, refusal.id, refusal.reason], sort_keys=True)
        name = hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:20] + ".json"
        path = self.dir / name
        if path.exists():
            return path
        try:
            self.dir.mkdir(mode=0o700, exist_ok=True)
            if sum(1 for _ in os.scandir(self.dir)) >= MOST_ENTRIES:
                return None
            body = {**refusal.to_json(), "time": format_ts(self.clock.now()),
                    "raw": redact(refusal.raw.decode("utf-8", "replace"))}
            atomic_write(path, json.dumps(body, ensure_ascii=False, indent=1) + "\n")
        except (OSError, MemtrayError) as exc:
            log.warning("could not keep a refused event in the quarantine: %s", exc)
            return None
        return path

    def put_all(self, refusals: Iterable[Refusal]) -> int:
        return sum(self.put(r) is not None for r in refusals)

    def entries(self) -> list[dict[str, Any]]:
        """Every kept refusal, oldest first (an unreadable file is listed as such)."""
        out: list[dict[str, Any]] = []
        if not self.dir.is_dir():
            return out
        for path in sorted(self.dir.glob("*.json")):
            try:
                body = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(body, Mapping):
                    raise ValueError("not an object")
                out.append({**body, "file": path.name})
            except (OSError, ValueError) as exc:
                out.append({"file": path.name, "reason": f"unreadable quarantine entry ({exc})", "time": "",
                            "source": {"kind": "?", "name": "?", "where": ""}})
        out.sort(key=lambda e: str(e.get("time", "")))
        return out
