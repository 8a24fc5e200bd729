"""The prompt: system prompt (identity, skills, bootstrap files, memory) + history.

The system prompt depends only on files and memory, never on the time, so it
is byte-identical across turns while memory is unchanged and provider prompt
caches keep hitting. The current time goes into a runtime-context line at the
start of the newest user message instead.

Its parts come in the order of how rarely they change (layout
:data:`PROMPT_FORMAT` 2): the identity prompt (a memtray release), skills and
bootstrap files (the user's own edits), and memory last, since every
consolidation changes it: a provider's prompt cache keeps serving everything
before it. Memory is framed as quoted data (``resources/prompts/memory_frame.v2.md``):
every line is quoted with ``> `` between markers, so no text in it can pass
for part of the instructions. Layout 1 (identity, bootstrap, memory, skills)
is kept for rebuilding past requests (``memtray prompt at``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memtray import resources

BOOTSTRAP_FILES = ("AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md")


@dataclass(frozen=True)
class Skill:
    name: str
    summary: str


def _skill_summary(text: str, fallback: str) -> Skill:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    name = fallback
    if lines and lines[0].startswith("#"):
        name = lines.pop(0).lstrip("# ").strip() or fallback
    return Skill(name, lines[0] if lines else "")


def load_skills(user_dir: Path | None) -> list[Skill]:
    skills = [
        _skill_summary(resources.text(f"skills/{n}"), n.removesuffix(".md"))
        for n in resources.listdir("skills")
        if n.endswith(".md")
    ]
    if user_dir is not None and user_dir.is_dir():
        for p in sorted(user_dir.glob("*.md")):
            if not p.is_symlink():
                skills.append(_skill_summary(p.read_text(encoding="utf-8", errors="replace"), p.stem))
    return skills


def load_bootstrap(home_root: Path | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if home_root is None:
        return out
    for name in BOOTSTRAP_FILES:
        p = home_root / name
        if p.is_file() and not p.is_symlink():
            text = p.read_text(encoding="utf-8", errors="replace").strip()
            if text:
                out.append((name, text))
    return out


def identity_text() -> str:
    text: str = resources.text("prompts/identity.md")
    return text.strip()


#: Bump when :func:`system_prompt`'s layout changes, and keep the old layout for
#: reconstructing past prompts (memtray prompt at; see docs/AUDIT.md). The memory
#: frame of layout N is ``prompts/memory_frame.vN.md``: a new wording is a new layout.
PROMPT_FORMAT = 3
#: Every layout :func:`system_prompt` can render (3: 2's order, memory as a snapshot the
#: history's notes bring up to date: core/agent/layout.py).
PROMPT_FORMATS = (1, 2, 3)
MEMORY_BEGIN = "<<<MEMORY"
MEMORY_END = "MEMORY>>>"


def memory_block(memory: str, format: int = PROMPT_FORMAT) -> str:
    """Memory as quoted data: the frame, then every line quoted with "> " between markers."""
    frame: str = resources.text(f"prompts/memory_frame.v{format}.md").strip()
    quoted = "\n".join(f"> {line}".rstrip() for line in memory.strip().split("\n"))
    return f"{frame}\n\n{MEMORY_BEGIN}\n{quoted}\n{MEMORY_END}"


def system_prompt(
    memory: str, bootstrap: list[tuple[str, str]], skills: list[Skill], identity: str | None = None,
    *, format: int = PROMPT_FORMAT,
) -> str:
    """The system prompt in layout ``format``; ``identity`` defaults to the resource."""
    if format not in PROMPT_FORMATS:
        raise ValueError(f"unknown prompt format {format}")
    parts = [identity if identity is not None else identity_text()]
    files = [f"## {name}\n\n{text}" for name, text in bootstrap]
    skill_part = []
    if skills:
        lines = "\n".join(f"- **{s.name}**: {s.summary}" for s in skills)
        skill_part.append(f"# Skills\n\n{lines}")
    if format == 1:
        parts += files
        if memory.strip():
            parts.append(f"# Memory\n\n{memory.strip()}")
        parts += skill_part
    else:
        parts += skill_part + files
        if memory.strip():
            parts.append(memory_block(memory, format))
    return "\n\n---\n\n".join(parts)


@dataclass(frozen=True)
class PromptContext:
    """Everything a request depends on that is not in the log: model, tools and the
    system prompt's parts other than memory. Recorded as ``context.changed`` events."""

    model: str
    tools: list[dict[str, Any]]
    identity: str
    bootstrap: list[tuple[str, str]]
    skills: list[Skill]

    def digest(self) -> str:
        body = json.dumps(
            {
                "format": PROMPT_FORMAT, "model": self.model, "tools": self.tools, "identity": self.identity,
                "bootstrap": [list(b) for b in self.bootstrap], "skills": [[s.name, s.summary] for s in self.skills],
            },
            sort_keys=True, ensure_ascii=False,
        )
        return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()

    def system_prompt(self, memory: str, *, format: int = PROMPT_FORMAT) -> str:
        return system_prompt(memory, self.bootstrap, self.skills, self.identity, format=format)


def zone_of(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def runtime_context(now: datetime, zone: str) -> str:
    """The line prefixed to a user message: local date, time and zone."""
    tz = zone_of(zone)
    local = now.astimezone(tz)
    off = local.strftime("%z")
    offset = f"{off[:3]}:{off[3:]}" if off else "+00:00"
    template: str = resources.text("prompts/runtime_context.txt").strip()
    return template.format(
        weekday=local.strftime("%A"),
        date=local.strftime("%Y-%m-%d"),
        time=local.strftime("%H:%M"),
        zone=getattr(tz, "key", zone) or "UTC",
        offset=offset,
    )


def build_messages(system: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system}, *history]
