"""Package data: prompt templates, skill texts, icons, the .desktop file.

Read through :func:`text` / :func:`path` so lookups work from a wheel, an
editable install or a frozen build alike.
"""

from __future__ import annotations

from importlib import resources as _res
from pathlib import Path


def text(name: str) -> str:
    """The UTF-8 text of resource ``name`` (e.g. ``"prompts/identity.md"``)."""
    return _res.files(__name__).joinpath(name).read_text(encoding="utf-8")


def path(name: str) -> Path:
    """A filesystem path for resource ``name`` (package data is unpacked on disk)."""
    return Path(str(_res.files(__name__).joinpath(name)))


def listdir(name: str) -> list[str]:
    return sorted(p.name for p in _res.files(__name__).joinpath(name).iterdir())
