"""Model servers already running on this computer: Ollama, a llama.cpp server, LM Studio.

:func:`detect` asks each on its default port on 127.0.0.1 (Ollama's ``/api/tags`` on
11434, the OpenAI-compatible ``/v1/models`` of llama.cpp's server on 8080 and of LM
Studio on 1234), all at once and with short timeouts, so it costs well under two
seconds when nothing runs. What a server answers is checked at the door: a reply
that is not the expected JSON, too large, or with odd model names is reported as a
problem, never trusted. Each model found comes with the litellm model string and
API base that use it (``memtray model use MODEL --api-base URL``).
``MEMTRAY_LOCAL_SERVERS`` (``kind=host:port,...``; kinds ``ollama``, ``llama.cpp``,
``lm-studio``) replaces the default places (a server on another port; the tests).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

ENV = "MEMTRAY_LOCAL_SERVERS"
TIMEOUT = 0.6  # per socket operation
DEADLINE = 1.5  # for all of them together
MAX_BYTES = 1 << 20
MAX_MODELS = 200
_NAME = re.compile(r"^[\w.:/@+\-]{1,200}$")
_PARAMS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([BM])\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Place:
    kind: str  # "ollama" | "llama.cpp" | "lm-studio"
    host: str
    port: int

    @property
    def label(self) -> str:
        return {"ollama": "Ollama", "llama.cpp": "llama.cpp server", "lm-studio": "LM Studio"}[self.kind]

    @property
    def api_base(self) -> str:
        root = f"http://{self.host}:{self.port}"
        return root if self.kind == "ollama" else root + "/v1"

    @property
    def probe(self) -> str:
        return f"http://{self.host}:{self.port}" + ("/api/tags" if self.kind == "ollama" else "/v1/models")


DEFAULT_PLACES = (Place("ollama", "127.0.0.1", 11434), Place("llama.cpp", "127.0.0.1", 8080),
                  Place("lm-studio", "127.0.0.1", 1234))


@dataclass(frozen=True)
class ServedModel:
    name: str  # as the server calls it
    model: str  # the litellm model string
    params_b: float | None = None  # when the server says (Ollama does)


@dataclass(frozen=True)
class Server:
    place: Place
    models: tuple[ServedModel, ...]

    def to_json(self) -> dict[str, object]:
        return {"kind": self.place.kind, "label": self.place.label, "api_base": self.place.api_base,
                "models": [{"name": m.name, "model": m.model, "params_b": m.params_b} for m in self.models]}


@dataclass
class Found:
    servers: list[Server] = field(default_factory=list)
    #: a server that answered, but not as its kind does (a sentence each)
    problems: list[str] = field(default_factory=list)


def places() -> tuple[Place, ...]:
    """Where to look: :data:`DEFAULT_PLACES`, or what ``MEMTRAY_LOCAL_SERVERS`` says."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_PLACES
    out = []
    for part in raw.split(","):
        kind, _, where = part.strip().partition("=")
        host, _, port = where.rpartition(":")
        if kind in ("ollama", "llama.cpp", "lm-studio") and host and port.isdigit() and 0 < int(port) < 65536:
            out.append(Place(kind, host, int(port)))
    return tuple(out)


def detect(where: tuple[Place, ...] | None = None, *, timeout: float = TIMEOUT, deadline: float = DEADLINE) -> Found:
    """Ask every place at once; what has not answered by ``deadline`` seconds is not there."""
    targets = places() if where is None else where
    results: dict[int, Server | str | None] = {}
    lock = threading.Lock()

    def ask(i: int, place: Place) -> None:
        try:
            outcome: Server | str | None = _ask(place, timeout)
        except Exception as exc:  # a hostile peer must never break the caller
            outcome = f"{place.label} at {place.host}:{place.port} answered oddly ({type(exc).__name__})"
        with lock:
            results[i] = outcome

    threads = [threading.Thread(target=ask, args=(i, p), name="memtray-detect", daemon=True)
               for i, p in enumerate(targets)]
    for t in threads:
        t.start()
    end = time.monotonic() + deadline
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    found = Found()
    with lock:
        for i in sorted(results):
            r = results[i]
            if isinstance(r, Server):
                found.servers.append(r)
            elif isinstance(r, str):
                found.problems.append(r)
    return found


def _ask(place: Place, timeout: float) -> Server | str | None:
    req = urllib.request.Request(place.probe, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        exc.close()
        return f"{place.label} at {place.host}:{place.port} answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError):
        return None  # nothing listens there (or not in time): not a problem to report
    where = f"{place.label} at {place.host}:{place.port}"
    if len(body) > MAX_BYTES:
        return f"{where} sent more than {MAX_BYTES} bytes; ignored"
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return f"{where} did not answer with JSON; ignored"
    entries = data.get("models") if place.kind == "ollama" and isinstance(data, dict) else (
        data.get("data") if isinstance(data, dict) else None)
    if not isinstance(entries, list):
        return f"{where} did not answer as {place.label} does; ignored"
    models = []
    for e in entries[:MAX_MODELS]:
        if not isinstance(e, dict):
            continue
        name = e.get("name") or e.get("model") if place.kind == "ollama" else e.get("id")
        if not isinstance(name, str) or not _NAME.match(name):
            continue
        if place.kind == "ollama":
            details = e.get("details")
            size = details.get("parameter_size") if isinstance(details, dict) else None
            models.append(ServedModel(name, "ollama_chat/" + name.removesuffix(":latest"), _params(size)))
        else:
            models.append(ServedModel(name, "openai/" + name))
    return Server(place, tuple(models))


def _params(value: object) -> float | None:
    """Ollama's ``parameter_size`` ("3.2B", "135M") in billions."""
    if not isinstance(value, str):
        return None
    m = _PARAMS.match(value)
    if m is None:
        return None
    n = float(m.group(1))
    return n / 1000.0 if m.group(2).upper() == "M" else n


__all__ = ["DEFAULT_PLACES", "ENV", "Found", "Place", "ServedModel", "Server", "detect", "places"]
