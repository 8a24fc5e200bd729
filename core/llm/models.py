"""The models an OpenAI-compatible server offers: ``GET {api_base}/models``.

LM Studio, llama.cpp's server, vLLM, Ollama (``/v1/models``) and most gateways answer
it; litellm's own list knows only hosted providers' models, so for a server the user
runs, the Settings' model list comes from here. One plain HTTP request (the standard
library's, no new dependency), validated at the door: a reply that is not the expected
shape is an error in words, never a crash, and at most :data:`MAX_MODELS` ids are kept.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from memtray.core.base.errors import LLMAuthError, LLMBadResponse, LLMConnectionError

MAX_MODELS = 500
MAX_BYTES = 2 * 1024 * 1024


def models_url(api_base: str) -> str:
    """``…/v1/models`` for an api_base with or without the ``/v1`` (Ollama's has none)."""
    base = api_base.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise LLMConnectionError(f"{api_base!r} is not an http(s) address")
    return f"{base}/models" if base.endswith("/v1") else f"{base}/v1/models"


def list_models(api_base: str, key: str | None = None, *, timeout: float = 5.0) -> list[str]:
    """The model ids the server at ``api_base`` lists, sorted. Raises LLMError subclasses."""
    url = models_url(api_base)
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        exc.close()  # it holds the connection: left to the GC, the socket leaks (ResourceWarning)
        if exc.code in (401, 403):
            raise LLMAuthError(f"{url}: the server refused the key ({exc.code})") from None
        raise LLMBadResponse(f"{url}: the server answered {exc.code} instead of its model list") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise LLMConnectionError(f"cannot reach {url} ({reason})") from None
    if len(raw) > MAX_BYTES:
        raise LLMBadResponse(f"{url}: the model list is larger than {MAX_BYTES // 1024 // 1024} MiB")
    return _ids(raw, url)


def _ids(raw: bytes, url: str) -> list[str]:
    try:
        body: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise LLMBadResponse(f"{url}: the reply is not JSON") from None
    items = body.get("data") if isinstance(body, dict) else None
    if items is None and isinstance(body, dict):
        items = body.get("models")  # Ollama's own /api/tags shape, which some proxies pass on
    if not isinstance(items, list):
        raise LLMBadResponse(f"{url}: the reply has no model list (expected {{\"data\": [{{\"id\": …}}]}})")
    ids = set()
    for item in items[:MAX_MODELS]:
        name = item.get("id") or item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name.strip() and len(name) <= 200:
            ids.add(name.strip())
    return sorted(ids)
