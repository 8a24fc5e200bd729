"""Whether a model may write memory unattended: the bar a consolidating model must pass.

A consolidation decides what memtray remembers about its user in every later
prompt; a model too small to judge facts invents and garbles them. The bar and the
sizes of model families are data (``resources/models/capability.toml``); a model's
size is read from the catalogue (``local/ID``), from its name ("qwen2.5:1.5b",
"Qwen2.5-3B-Instruct", "smollm2:135m") or from its family's default size. A model
whose size cannot be told this way (a hosted one) is trusted. The setting
``hold_consolidations`` (``auto`` | ``always`` | ``never``) overrides the rule;
:mod:`memtray.core.memory.consolidation` holds the results of a model below it for
review (:mod:`memtray.core.memory.hold`). Pure apart from reading the resource.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from memtray import resources
from memtray.core.llm import catalogue

POLICIES = ("auto", "always", "never")
#: "1.5b", "3B", "135m", "0.5b" as a word of the name (also "8x7b": the first size counts)
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z0-9])", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """May ``model`` write memory without review, and why (one sentence for the user)."""

    model: str
    unattended: bool
    params_b: float | None  # what the size was taken to be (None: not known)
    reason: str


@functools.cache
def _rules() -> dict[str, Any]:
    return tomllib.loads(resources.text("models/capability.toml"))


def min_params_b() -> float:
    return float(_rules()["min_params_b"])


def params_of(model: str) -> float | None:
    """The model's size in billions of parameters, or None when it cannot be told (module doc)."""
    entry = catalogue.lookup(model) if catalogue.is_local(model) else None
    if entry is not None:
        return entry.params_b
    name = model.split("/", 1)[1] if "/" in model else model
    name = name.rsplit("/", 1)[-1].lower()  # openrouter/meta-llama/llama-3.2-3b-instruct -> llama-3.2-3b-instruct
    for number, unit in _SIZE.findall(name):
        value = float(number)
        return value / 1000.0 if unit.lower() == "m" else value
    families: dict[str, float] = {k.lower(): float(v) for k, v in _rules().get("families", {}).items()}
    base = name.split(":", 1)[0]
    if base in families:
        return families[base]
    return None


def judge(model: str, policy: str = "auto") -> Verdict:
    """The verdict for ``model`` under the setting ``hold_consolidations`` = ``policy``."""
    if policy == "always":
        return Verdict(model, False, params_of(model), "every consolidation is held for review (hold_consolidations = always)")
    if policy == "never":
        return Verdict(model, True, params_of(model), "consolidations are written without review (hold_consolidations = never)")
    size = params_of(model)
    bar = min_params_b()
    if size is not None and size < bar:
        shown = f"{size * 1000:.0f}M" if size < 1 else f"{size:g}B"
        return Verdict(model, False, size,
                       f"{_label(model)} ({shown} parameters) is too small to judge facts on its own "
                       f"(memtray's bar: {bar:g}B)")
    why = f"{_label(model)} is at or above memtray's bar of {bar:g}B parameters" if size is not None else (
        f"{_label(model)} is not known to be small")
    return Verdict(model, True, size, why)


def _label(model: str) -> str:
    entry = catalogue.lookup(model) if catalogue.is_local(model) else None
    return entry.name if entry is not None else model


__all__ = ["POLICIES", "Verdict", "judge", "min_params_b", "params_of"]
