"""What memtray offers to run on this computer: the catalogue, each model with what it
would be like here (downloaded or not, speed and memory, whether it writes memory).

One view for every front end: ``memtray model list`` prints it (its ``--json`` is this
list), the first-run window shows it.
"""

from __future__ import annotations

from typing import Any

from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.llm import capability, catalogue, estimate, localmodel
from memtray.core.llm.download import part_path


def rows(home: Home, cfg: Config, *, measure: bool = False) -> list[dict[str, Any]]:
    """The catalogue for ``home`` under the settings ``cfg``; measures this computer's speed
    the first time (a few seconds: call it off any thread that must stay responsive)."""
    directory = catalogue.models_dir(home.root)
    ref = estimate.reference(home.state, measure=measure)
    hub = catalogue.hub(cfg.model_hub)
    current = cfg.model or (localmodel.MODEL if localmodel.available() else "")
    out = []
    for m in catalogue.models():
        path = localmodel.resolve(m.runs_as, directory)
        part = part_path(directory / m.file)
        verdict = capability.judge(m.runs_as, cfg.hold_consolidations)
        out.append({
            "id": m.id, "name": m.name, "params_b": m.params_b, "quant": m.quant, "size": m.size,
            "sha256": m.sha256, "url": m.url(hub), "license": m.license, "about": m.about,
            "recommended": m.recommended, "bundled": m.bundled,
            "downloaded": path is not None, "path": str(path) if path else None,
            "partial": part.stat().st_size if part.is_file() else 0,
            "in_use": current == m.runs_as, "model": m.runs_as,
            "writes_memory": verdict.unattended, "memory_note": verdict.reason,
            "estimate": estimate.estimate(m, ref).to_json(),
        })
    return out


__all__ = ["rows"]
