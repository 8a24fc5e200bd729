"""The desktop's longer user-facing texts, read from ``resources/desktop/texts.toml``."""

from __future__ import annotations

import functools
import tomllib
from typing import Any

from memtray import resources


@functools.cache
def _all() -> dict[str, Any]:
    return tomllib.loads(resources.text("desktop/texts.toml"))


def text(key: str, **fmt: str) -> str:
    """The text at ``section.key``, formatted with ``fmt`` when given."""
    section, _, name = key.partition(".")
    value = str(_all()[section][name])
    return value.format(**fmt) if fmt else value
