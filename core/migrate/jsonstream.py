"""The elements of a top-level JSON array, one at a time, from a byte stream of any size.

A ChatGPT ``conversations.json`` can be a gigabyte; it is never read whole. The
scanner tracks only string/escape state and nesting depth and hands each
complete element's bytes to ``json.loads``, so memory use is bounded by the
largest single element (capped by ``max_element``). Nesting is bounded too
(``max_depth``): an element nested deeper is refused with where it is, before the
parser's recursion would fail on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

CHUNK = 1 << 20
MAX_ELEMENT = 256 << 20
#: deepest nesting an element may have (a ChatGPT conversation nests about 8 deep)
MAX_DEPTH = 200


class NotAnArray(ValueError):
    """The stream is not a JSON array (or is damaged); the message says where."""


class _TooDeep(Exception):
    def __init__(self, at: int) -> None:
        self.at = at


def elements(stream: IO[bytes], *, chunk: int = CHUNK, max_element: int = MAX_ELEMENT,
             max_depth: int = MAX_DEPTH) -> Iterator[Any]:
    """Yield each element of the JSON array in ``stream``, parsed."""
    pos = 0  # bytes consumed before ``buf``
    buf = b""

    def more() -> bool:
        nonlocal buf
        data = stream.read(chunk)
        if not data:
            return False
        buf += data
        return True

    # the opening bracket (after a BOM / whitespace)
    while True:
        stripped = buf.lstrip(b" \t\r\n")
        if stripped.startswith(b"\xef\xbb\xbf"):
            stripped = stripped[3:]
        if stripped:
            break
        if not more():
            raise NotAnArray("the file is empty")
        if len(buf) > chunk * 2 and not buf.strip(b" \t\r\n\x00"):
            raise NotAnArray("the file holds no JSON (only blank or NUL bytes at the start)")
    pos += len(buf) - len(stripped)
    buf = stripped
    if buf[:1] != b"[":
        raise NotAnArray(f"the file does not start with a JSON array (found {buf[:20]!r})")
    buf = buf[1:]
    pos += 1
    i = 0
    expect_value = True
    while True:
        # skip whitespace and separators between elements
        while True:
            while i < len(buf) and buf[i] in b" \t\r\n":
                i += 1
            if i < len(buf):
                break
            pos += len(buf)
            buf, i = b"", 0
            if not more():
                raise NotAnArray(f"the array ends early at byte {pos:,} (the file is cut short)")
        c = buf[i]
        if c == ord("]"):
            return
        if c == ord(","):
            if expect_value:
                raise NotAnArray(f"an empty element at byte {pos + i:,}")
            expect_value = True
            i += 1
            continue
        if not expect_value:
            raise NotAnArray(f"a missing comma at byte {pos + i:,}")
        start = i
        end = _scan_at(buf, start, pos, max_depth)
        while end is None:
            if len(buf) - start > max_element:
                raise NotAnArray(f"one element at byte {pos + start:,} is larger than {max_element >> 20} MiB")
            # keep only the element being read
            pos += start
            buf, i, start = buf[start:], 0, 0
            if not more():
                raise NotAnArray(f"the array ends early at byte {pos + len(buf):,} (the file is cut short)")
            end = _scan_at(buf, start, pos, max_depth)
        try:
            value = json.loads(buf[start:end])
        except (ValueError, UnicodeDecodeError) as exc:
            raise NotAnArray(f"damaged element at byte {pos + start:,} ({exc})") from None
        except RecursionError:
            raise NotAnArray(f"the element at byte {pos + start:,} is nested too deep to read") from None
        yield value
        i = end
        expect_value = False


def _scan_at(buf: bytes, start: int, pos: int, max_depth: int) -> int | None:
    try:
        return _scan(buf, start, max_depth)
    except _TooDeep as deep:
        raise NotAnArray(f"the element at byte {pos + start:,} is nested more than {max_depth} deep "
                         f"(at byte {pos + deep.at:,}); no conversation is") from None


def _scan(buf: bytes, start: int, max_depth: int = MAX_DEPTH) -> int | None:
    """End (exclusive) of the JSON value starting at ``buf[start]``, or None if incomplete;
    raises :class:`_TooDeep` where the nesting passes ``max_depth``."""
    first = buf[start]
    if first not in b"{[":
        # a scalar element: up to the next separator
        for j in range(start, len(buf)):
            if buf[j] in b",] \t\r\n":
                return j
        return None
    depth = 0
    in_str = False
    j = start
    n = len(buf)
    while j < n:
        if in_str:
            # jump to the next quote or backslash
            q = buf.find(b'"', j)
            b = buf.find(b"\\", j, q if q >= 0 else n)
            if b >= 0:
                j = b + 2
                continue
            if q < 0:
                return None
            in_str = False
            j = q + 1
            continue
        c = buf[j]
        if c == 0x22:  # "
            in_str = True
        elif c in (0x7B, 0x5B):  # { [
            depth += 1
            if depth > max_depth:
                raise _TooDeep(j)
        elif c in (0x7D, 0x5D):  # } ]
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None
