"""Reading a nanobot workspace: MEMORY.md, the history diary and every session file.

nanobot (HKUDS/nanobot, ``nanobot-ai`` on PyPI) keeps, in its workspace
(``~/.nanobot/workspace`` by default): ``memory/MEMORY.md`` (long-term facts),
``memory/history.jsonl`` (one ``{"cursor", "timestamp", "content"}`` per diary
entry; older versions wrote ``memory/HISTORY.md``, paragraphs starting
``[YYYY-MM-DD HH:MM]``) and session files: one JSONL per chat, a first
``{"_type": "metadata", "key": ...}`` line then one ``{"role", "content",
"timestamp"}`` per message. Sessions live in ``WORKSPACE/sessions/`` (before
0.3), or in the runtime directory next to it, ``sessions/<workspace-id>/``
(the id is in ``WORKSPACE/.nanobot/workspace-id``), or in ``~/.nanobot/sessions``.

A torn or damaged line is stepped over with a note; a file that is not a nanobot
workspace at all is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memtray.core.migrate.common import ImportProblem, Item, read_jsonl

DEFAULT_WORKSPACE = Path("~/.nanobot/workspace")
ROLES = {"user": "user", "assistant": "assistant"}
_ENTRY = re.compile(r"^\[\d{4}-\d{2}-\d{2}[^\]]*\]", re.M)


def session_dirs(workspace: Path, sessions: Path | None = None) -> list[Path]:
    """Where this workspace's session files may be, existing ones only, most specific first."""
    found: list[Path] = []
    if sessions is not None:
        found.append(sessions)
    found.append(workspace / "sessions")
    wid = workspace / ".nanobot" / "workspace-id"
    if wid.is_file():
        ident = wid.read_text(encoding="utf-8", errors="replace").strip()
        if ident and "/" not in ident and ident not in (".", ".."):
            for root in (workspace.parent / "sessions", Path("~/.nanobot/sessions").expanduser()):
                found.append(root / ident)
    out: list[Path] = []
    for d in found:
        if d.is_dir() and d.resolve() not in {o.resolve() for o in out}:
            out.append(d)
    return out


def check(workspace: Path) -> None:
    if not workspace.exists():
        raise ImportProblem(f"no nanobot workspace at {workspace}",
                            hint="Give the workspace folder: memtray import nanobot ~/.nanobot/workspace")
    if not workspace.is_dir():
        raise ImportProblem(f"{workspace} is a file, not a nanobot workspace folder")
    marks = [workspace / "memory", workspace / "sessions", workspace / ".nanobot", workspace / "AGENTS.md"]
    if not any(m.exists() for m in marks):
        raise ImportProblem(f"{workspace} does not look like a nanobot workspace (no memory/ or sessions/ in it)")


def items(workspace: Path, sessions: Path | None = None) -> Iterator[Item]:
    """MEMORY.md, the diary, then each session file (sorted by name)."""
    workspace = workspace.expanduser()
    check(workspace)
    mem = workspace / "memory" / "MEMORY.md"
    if mem.is_file():
        text = mem.read_bytes().decode("utf-8", "replace")
        if text.strip():
            yield Item("memory", "memory", text=text)
    entries = history_entries(workspace / "memory")
    if entries:
        yield Item("history", "history", entries=entries)
    seen: set[str] = set()
    for d in session_dirs(workspace, sessions):
        for path in sorted(d.glob("*.jsonl")):
            item = session(path)
            if item is None or item.key in seen:
                continue
            seen.add(item.key)
            yield item


def history_entries(memory_dir: Path) -> list[str]:
    out: list[str] = []
    legacy = memory_dir / "HISTORY.md"
    if legacy.is_file():
        text = legacy.read_bytes().decode("utf-8", "replace")
        starts = [m.start() for m in _ENTRY.finditer(text)]
        if starts:
            starts[0] = 0
            out += [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
        else:
            out += [p.strip() for p in text.split("\n\n") if p.strip()]
    jsonl = memory_dir / "history.jsonl"
    if jsonl.is_file():
        notes: list[str] = []
        with jsonl.open("rb") as fh:
            for _n, obj in read_jsonl(iter(fh), "history.jsonl", notes):
                content = str(obj.get("content") or "").strip()
                if not content:
                    continue
                stamp = str(obj.get("timestamp") or "").strip()
                if stamp and not _ENTRY.match(content):
                    content = f"[{stamp}] {content}"
                out.append(content)
    return out


def session(path: Path) -> Item | None:
    """One session file as an item (its key from the metadata line, else the file name)."""
    notes: list[str] = []
    key = path.stem
    messages: list[tuple[str, str, str | None]] = []
    skipped = 0
    with path.open("rb") as fh:
        for n, obj in read_jsonl(iter(fh), path.name, notes):
            kind = obj.get("_type")
            if kind == "metadata":
                if n == 1 and isinstance(obj.get("key"), str) and obj["key"].strip():
                    key = obj["key"].strip()
                continue
            if kind is not None:
                continue  # provider state and other bookkeeping
            role = ROLES.get(str(obj.get("role")))
            text = content_text(obj.get("content"))
            if role is None or not text.strip():
                skipped += 1  # tool calls and results, system notes, empty turns
                continue
            stamp = obj.get("timestamp")
            messages.append((role, text, str(stamp) if stamp else None))
    if not messages and not skipped:
        return None
    return Item(key, "session", messages=messages, skipped=skipped, notes=notes)


def content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a multimodal list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict):
                if isinstance(p.get("text"), str):
                    parts.append(p["text"])
                elif p.get("type") in ("image_url", "image"):
                    parts.append("[image]")
        return "\n".join(parts)
    return ""
