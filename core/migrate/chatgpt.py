"""Reading a ChatGPT data export: ``conversations.json`` (alone or inside the export zip).

The export is a JSON array of conversations, each ``{"id" | "conversation_id",
"title", "create_time", "current_node", "mapping"}``; ``mapping`` holds the
message tree: node id -> ``{"id", "parent", "children", "message"}``, a message
``{"author": {"role"}, "create_time", "content": {"content_type", "parts"}}``.
Editing a prompt or regenerating an answer makes a branch; the conversation as
the user last saw it is the path from ``current_node`` up to the root, and that
is what is imported (other branches are counted as skipped). System and tool
messages are skipped too; an image part becomes ``[image: <asset pointer>]``.

The file is streamed element by element (:mod:`.jsonstream`), so a 1 GB export
is never in memory whole. Anything that is not this format (another export
version without ``mapping``, a damaged file) is refused with where and why.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from memtray.core.base.infile import FileRefused, open_regular
from memtray.core.migrate.common import ImportProblem, Item
from memtray.core.migrate.jsonstream import NotAnArray, elements

ROLES = {"user": "user", "assistant": "assistant"}
MAX_EXPORT_BYTES = 64 << 30  # streamed, never read whole: only a sanity bound


def items(path: Path) -> Iterator[Item]:
    with ExitStack() as stack:
        said: list[str] = []
        stream = _open(path, stack, said)
        n = 0
        seen: dict[str, int] = {}
        try:
            for n, conv in enumerate(elements(stream), 1):
                item = conversation(conv, n)
                # Conversations that share an id stay apart: the second is "<id>#2", and so on,
                # in the file's order (so a rerun finds each under the key it had).
                seen[item.key] = count = seen.get(item.key, 0) + 1
                if count > 1:
                    item.notes.append(f"conversation {n} has the same id as an earlier one; imported as {item.key}#{count}")
                    item.key = f"{item.key}#{count}"
                item.notes += [s for s in said if s]
                said = []
                yield item
        except NotAnArray as exc:
            raise ImportProblem(f"{path.name} is not a ChatGPT conversations.json: {exc}",
                                hint="Use the conversations.json (or the whole .zip) from ChatGPT's "
                                     "Settings > Data controls > Export data.") from None
        if n == 0:
            raise ImportProblem(f"{path.name} holds no conversations")


def _open(path: Path, stack: ExitStack, notes: list[str]) -> IO[bytes]:
    """The bytes of conversations.json (inside the zip, if it is one); ``notes`` gets the
    file a symbolic link led to."""
    if not path.exists() and not path.is_symlink():
        raise ImportProblem(f"no such file: {path}")
    if path.is_dir():
        inner = path / "conversations.json"
        if not inner.exists() and not inner.is_symlink():
            raise ImportProblem(f"{path} has no conversations.json in it")
        path = inner
    try:  # a FIFO, a device or a socket is refused before it is read (or waited on)
        opened = open_regular(path, limit=MAX_EXPORT_BYTES, what="export")
    except FileRefused as exc:
        raise ImportProblem(str(exc), hint=exc.hint) from None
    stream = stack.enter_context(opened.stream)
    notes.append(opened.note())
    if zipfile.is_zipfile(stream):
        stream.seek(0)
        try:
            zf = stack.enter_context(zipfile.ZipFile(stream))
            names = [n for n in zf.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"]
            if not names:
                raise ImportProblem(f"{path.name} is a zip file without a conversations.json (not a ChatGPT export)")
            return stack.enter_context(zf.open(sorted(names, key=len)[0]))
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ImportProblem(f"{path.name} is a damaged zip file ({exc})") from None
    stream.seek(0)
    return stream


def conversation(conv: Any, n: int) -> Item:
    if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
        have = sorted(conv)[:6] if isinstance(conv, dict) else type(conv).__name__
        raise ImportProblem(
            f"conversation {n} is not in the ChatGPT export format this memtray reads (no 'mapping'; it has {have})",
            hint="If ChatGPT changed its export format, please report it with the first lines of the file.")
    mapping: dict[str, Any] = conv["mapping"]
    cid = str(conv.get("conversation_id") or conv.get("id") or f"#{n}")
    path = _main_path(mapping, conv.get("current_node"))
    messages: list[tuple[str, str, str | None]] = []
    skipped = 0
    on_path = set(path)
    for node_id in path:
        msg = (mapping.get(node_id) or {}).get("message")
        if not isinstance(msg, dict):
            continue
        role = ROLES.get(str((msg.get("author") or {}).get("role")))
        hidden = bool((msg.get("metadata") or {}).get("is_visually_hidden_from_conversation"))
        text = content_text(msg.get("content"))
        if role is None or hidden or not text.strip():
            skipped += 1
            continue
        messages.append((role, text, _when(msg.get("create_time"))))
    skipped += sum(1 for k, node in mapping.items()
                   if k not in on_path and isinstance(node, dict) and isinstance(node.get("message"), dict))
    title = conv.get("title") if isinstance(conv.get("title"), str) else None
    return Item(cid, "conversation", messages=messages, title=title, skipped=skipped)


def _main_path(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to ``current_node`` (or to the newest leaf when it is missing)."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        if not leaves:
            return []
        current = max(leaves, key=lambda k: _time_of(mapping[k]))
    path: list[str] = []
    seen: set[str] = set()
    node: str | None = current
    while isinstance(node, str) and node in mapping and node not in seen:
        seen.add(node)
        path.append(node)
        parent = (mapping[node] or {}).get("parent")
        node = parent if isinstance(parent, str) else None
    return path[::-1]


def _time_of(node: Any) -> float:
    msg = node.get("message") if isinstance(node, dict) else None
    t = msg.get("create_time") if isinstance(msg, dict) else None
    return float(t) if isinstance(t, int | float) else 0.0


def _when(t: Any) -> str | None:
    if isinstance(t, int | float) and 0 < t < 32503680000:
        return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return None


def content_text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    parts: list[str] = []
    for p in content.get("parts") or ():
        if isinstance(p, str):
            parts.append(p)
        elif isinstance(p, dict):
            if p.get("content_type") == "image_asset_pointer" or "asset_pointer" in p:
                parts.append(f"[image: {str(p.get('asset_pointer') or '?')[:200]}]")
            elif isinstance(p.get("text"), str):
                parts.append(p["text"])
    if not parts and isinstance(content.get("text"), str):  # code, execution output
        parts.append(content["text"])
    return "\n".join(parts)
