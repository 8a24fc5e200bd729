"""The event codec: the record envelope, the line format, checksums and text validation.

A record is one line of JSON::

    {"seq":42,"id":"01J...","ts":"2026-11-30T09:15:02.123Z","type":"message","v":1,
     "session":"quick","data":{...},"crc":"1a2b3c4d"}

``crc`` is the CRC-32 (hex) of the line's own bytes with the ``,"crc":"…"`` member
removed, so a record is verified on its bytes alone, before any JSON parsing, and
re-encoding is never needed. ``type`` is a stable string (never a class path) and
``v`` the payload's schema version; old versions are upcast on read by a
:class:`~memtray.core.log.schema.Schema` registry (payload classes: core/log/payloads*.py,
one registry: :mod:`memtray.core.log.events`). Types this version does not know are
kept verbatim. :class:`Record` itself lives in :mod:`~memtray.core.log.schema` (it reads
its payload through the registry) and is re-exported here.
"""

from __future__ import annotations

import json
import operator
import re
import zlib
from collections.abc import Mapping
from typing import Any

import orjson
from memtray.core.base.errors import InvalidText
from memtray.core.log.schema import (
    Record as Record,  # re-exported: the envelope the codec reads and writes
)

_CRC_PREFIX = b',"crc":"'
_SUFFIX_LEN = len(_CRC_PREFIX) + 8 + 2  # ,"crc":"xxxxxxxx"}


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
