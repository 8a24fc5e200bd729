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
workspace at all is refused. Every file is opened as :mod:`memtray.core.base.infile`
opens what the user names: a FIFO, a device, a directory or a socket where a file
should be, or a file past its size limit, is stepped over with a note (never read,
never waited on), and the rest is imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memtray.core.base.infile import FileRefused, capped_lines, open_regular, read_capped
from memtray.core.migrate.common import ImportProblem, Item, read_jsonl

DEFAULT_WORKSPACE = Path("~/.nanobot/workspace")
ROLES = {"user": "user", "assistant": "assistant"}
_ENTRY = re.compile(r"^\[\d{4}-\d{2}-\d{2}[^\]]*\]", re.M)
MAX_MEMORY_BYTES = 8 << 20  # MEMORY.md (memtray's own limit on memory is far below)
MAX_HISTORY_BYTES = 256 << 20  # HISTORY.md, history.jsonl
MAX_SESSION_BYTES = 512 << 20  # one session file (its messages are held until it is written)
MAX_LINE_BYTES = 16 << 20  # one JSONL line (a message is cut to 100 000 characters anyway)


def session_dirs(workspace: Path, sessions: Path | None = None) -> list[Path]:
    """Where this workspace's session files may be, existing ones only, most specific first."""
    found: list[Path] = []
    if sessions is not None:
        found.append(sessions)
    found.append(workspace / "sessions")
    wid = workspace / ".nanobot" / "workspace-id"
    if wid.is_file():
        try:
            ident = read_capped(open_regular(wid, limit=4096), limit=4096).decode("utf-8", "replace").strip()
        except (FileRefused, OSError):
            ident = ""
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
    if mem.exists() or mem.is_symlink():
        try:
            text = read_capped(open_regular(mem, limit=MAX_MEMORY_BYTES, what="MEMORY.md"),
                               limit=MAX_MEMORY_BYTES, what="MEMORY.md").decode("utf-8", "replace")
        except (FileRefused, OSError) as exc:
            yield refused("MEMORY.md", exc)
        else:
            if text.strip():
                yield Item("memory", "memory", text=text)
    history_notes: list[str] = []
    entries = history_entries(workspace / "memory", history_notes)
    if entries or history_notes:
        yield Item("history", "history", entries=entries, notes=history_notes)
    seen: set[str] = set()
    for d in session_dirs(workspace, sessions):
        for path in sorted(d.glob("*.jsonl")):
            try:
                item = session(path)
            except (FileRefused, OSError) as exc:
                yield refused(path.name, exc)
                continue
            if item is None or item.key in seen:
                continue
            seen.add(item.key)
            yield item


def refused(name: str, exc: Exception) -> Item:
    """A file of the workspace that is stepped over: said in the summary, nothing imported."""
    reason = str(exc) if isinstance(exc, FileRefused) else f"cannot read {name}: {exc.strerror or exc}" \
        if isinstance(exc, OSError) else str(exc)
    return Item(name, "refused", notes=[f"{reason}; skipped"])


def history_entries(memory_dir: Path, notes: list[str] | None = None) -> list[str]:
    notes = [] if notes is None else notes
    out: list[str] = []
    legacy = memory_dir / "HISTORY.md"
    text = ""
    if legacy.exists() or legacy.is_symlink():
        try:
            text = read_capped(open_regular(legacy, limit=MAX_HISTORY_BYTES, what="HISTORY.md"),
                               limit=MAX_HISTORY_BYTES, what="HISTORY.md").decode("utf-8", "replace")
        except (FileRefused, OSError) as exc:
            notes.append(refused("HISTORY.md", exc).notes[0])
    if text:
        starts = [m.start() for m in _ENTRY.finditer(text)]
        if starts:
            starts[0] = 0
            out += [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
        else:
            out += [p.strip() for p in text.split("\n\n") if p.strip()]
    jsonl = memory_dir / "history.jsonl"
    if jsonl.exists() or jsonl.is_symlink():
        try:
            opened = open_regular(jsonl, limit=MAX_HISTORY_BYTES, what="history.jsonl")
        except (FileRefused, OSError) as exc:
            notes.append(refused("history.jsonl", exc).notes[0])
            return out
        long: list[int] = []
        with opened.stream as fh:
            for _n, obj in read_jsonl(capped_lines(fh, max_line=MAX_LINE_BYTES, skipped=long), "history.jsonl", notes):
                content = str(obj.get("content") or "").strip()
                if not content:
                    continue
                stamp = str(obj.get("timestamp") or "").strip()
                if stamp and not _ENTRY.match(content):
                    content = f"[{stamp}] {content}"
                out.append(content)
        notes += [f"history.jsonl line {n} is longer than {MAX_LINE_BYTES >> 20} MiB; skipped" for n in long]
    return out


def session(path: Path) -> Item | None:
    """One session file as an item (its key from the metadata line, else the file name)."""
    notes: list[str] = []
    key = path.stem
    messages: list[tuple[str, str, str | None]] = []
    skipped = 0
    long: list[int] = []
    opened = open_regular(path, limit=MAX_SESSION_BYTES, what="session file")
    if opened.link is not None:
        notes.append(opened.note())
    with opened.stream as fh:
        for n, obj in read_jsonl(capped_lines(fh, max_line=MAX_LINE_BYTES, skipped=long), path.name, notes):
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
            messages.append((role, text, sent_at(obj.get("timestamp"))))
    notes += [f"{path.name} line {n} is longer than {MAX_LINE_BYTES >> 20} MiB; skipped" for n in long]
    if not messages and not skipped:
        return None if not notes else Item(key, "refused", notes=notes)
    return Item(key, "session", messages=messages, skipped=skipped, notes=notes)


def sent_at(stamp: Any) -> str | None:
    """nanobot's message ``timestamp`` (``datetime.now().isoformat()``: the local time, no
    zone) as UTC ISO 8601; None when it is missing or not a time."""
    if not isinstance(stamp, str) or not stamp.strip():
        return None
    try:
        when = datetime.fromisoformat(stamp.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.astimezone()  # the local zone of this computer, where nanobot ran
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
