"""How fast an offline model would answer on this computer, and how much memory it takes.

Generating a token on a CPU reads the whole model once, so the speed of a
quantised model is about the memory bandwidth divided by its file size. memtray
measures it with what it has: the bundled SmolLM2 generates a few dozen tokens
(a second or two, at most about five, once per computer; the figure is kept in
``state/model-speed.json`` and measured again when the number of CPUs changes or
on ``memtray model list --measure``), and a model N times larger is taken to be N
times slower. A tiny model is slowed by per-token overhead more than by reading
its weights, so this errs on the slow side. Without the bundled model a rule
stands in: :data:`RULE_BYTES_PER_SECOND` of weights read per second, what a
two-channel DDR4 laptop sustains under llama.cpp. The memory a model needs is
its file plus the context's cache (:func:`ram_needed`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from memtray.core.base.fsutil import atomic_write
from memtray.core.llm import localmodel
from memtray.core.llm.catalogue import CatalogueModel

log = logging.getLogger(__name__)

CACHE_NAME = "model-speed.json"
#: the rule without a measurement: bytes of weights a CPU reads per second while generating
RULE_BYTES_PER_SECOND = 5e9
#: tokens generated to measure (the first is not timed: it includes the prompt)
MEASURE_TOKENS = 48
MEASURE_SECONDS = 5.0  # ... or fewer, on a very busy computer
PROMPT = "Write a short paragraph about the history of bicycles."
#: memory besides the weights: the context's cache and buffers, as a share of the file, plus a floor
CACHE_SHARE = 0.25
CACHE_FLOOR = 300 << 20


@dataclass(frozen=True)
class Reference:
    """Tokens per second of a model of ``size`` bytes on this computer."""

    tokens_per_second: float
    size: int
    basis: str  # "measured" (the bundled model here) or "rule"
    cpus: int


@dataclass(frozen=True)
class Estimate:
    tokens_per_second: float
    basis: str
    ram_needed: int
    ram_total: int | None

    @property
    def fits(self) -> bool | None:
        return None if self.ram_total is None else self.ram_needed <= self.ram_total

    def to_json(self) -> dict[str, object]:
        return {"tokens_per_second": round(self.tokens_per_second, 1), "basis": self.basis,
                "ram_needed": self.ram_needed, "ram_total": self.ram_total, "fits": self.fits}


def ram_needed(size: int) -> int:
    return int(size * (1 + CACHE_SHARE)) + CACHE_FLOOR


def ram_total() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def rule() -> Reference:
    return Reference(RULE_BYTES_PER_SECOND, 1, "rule", os.cpu_count() or 1)


def reference(state_dir: Path, *, measure: bool = False) -> Reference:
    """The measured speed of the bundled model here (measured now if there is none yet, the
    CPUs changed, or ``measure``), else :func:`rule`."""
    cpus = os.cpu_count() or 1
    path = state_dir / CACHE_NAME
    if not measure:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            ref = Reference(float(data["tokens_per_second"]), int(data["size"]), "measured", int(data["cpus"]))
            if ref.cpus == cpus and ref.tokens_per_second > 0 and ref.size > 0:
                return ref
        except (OSError, ValueError, KeyError, TypeError):
            pass
    gguf = localmodel.gguf_path()
    if gguf is None or localmodel.missing(check_disabled=False) is not None:
        return rule()
    try:
        tps = measure_tokens_per_second(gguf)
    except Exception as exc:  # llama.cpp refusing the file: the rule stands in, and the log says why
        log.warning("could not measure the offline model's speed: %s", exc)
        return rule()
    ref = Reference(tps, gguf.stat().st_size, "measured", cpus)
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"tokens_per_second": tps, "size": ref.size, "cpus": cpus,
                                       "model": gguf.name, "measured_at": int(time.time())}))
    except OSError as exc:
        log.info("could not keep the measured speed: %s", exc)
    return ref


def measure_tokens_per_second(gguf: Path) -> float:
    """Generate :data:`MEASURE_TOKENS` tokens with ``gguf`` and time all but the first."""
    from llama_cpp import Llama

    n = localmodel.threads()
    llama = Llama(model_path=str(gguf), n_ctx=256, n_threads=n, n_threads_batch=n, verbose=False)
    try:
        times: list[float] = []
        # generate() goes on past an end-of-text token (create_completion would stop there)
        for _token in llama.generate(llama.tokenize(PROMPT.encode()), temp=0.0):
            times.append(time.perf_counter())
            if len(times) >= MEASURE_TOKENS or (len(times) > 4 and times[-1] - times[0] > MEASURE_SECONDS):
                break
        return (len(times) - 1) / max(times[-1] - times[0], 1e-6)
    finally:
        llama.close()


def estimate(model: CatalogueModel, ref: Reference) -> Estimate:
    """``model``'s speed scaled from ``ref`` by file size, and the memory it needs."""
    tps = ref.tokens_per_second * ref.size / model.size
    return Estimate(tps, ref.basis, ram_needed(model.size), ram_total())


__all__ = ["CACHE_NAME", "RULE_BYTES_PER_SECOND", "Estimate", "Reference", "estimate", "measure_tokens_per_second",
           "ram_needed", "ram_total", "reference", "rule"]
