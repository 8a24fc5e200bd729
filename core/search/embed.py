"""Embeddings through litellm (``litellm.aembedding``) from the user's provider.

Owns :class:`Embedder`: the configured ``embedding_model`` (any litellm embedding
model string: ``openai/text-embedding-3-small``, ``ollama/nomic-embed-text``, an
OpenAI-compatible server's model with ``embedding_api_base``), its key from the
keyring like the chat model's, and the translation of provider errors into
:class:`~memtray.core.base.errors.LLMError`. With no embedding model configured
there is no semantic search: search and recall are keyword-only and say so.

The offline llama.cpp model is a chat model; it is not used for embeddings (a
135M chat model's hidden states make poor retrieval vectors), so offline use is
keyword-only unless a local embedding server (Ollama) is configured.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Any

from memtray.core.base.config import Config
from memtray.core.base.errors import LLMAuthError, LLMBadResponse, LLMError
from memtray.core.base.keys import ENV_VARS, KEYLESS, get_key, provider_of
from memtray.core.llm.client import load_litellm, translate

#: characters of a document sent for embedding (models take a few thousand tokens)
MAX_CHARS = 6000
SETUP_HINT = (
    "Set one with `memtray config set embedding_model openai/text-embedding-3-small` "
    "(any litellm embedding model; ollama/nomic-embed-text works offline)."
)


class Embedder:
    """Turns texts into vectors with the configured embedding model."""

    def __init__(self, config: Callable[[], Config], *, key_lookup: Callable[[str], str | None] = get_key) -> None:
        self._config = config  # read at each use: settings change while the app runs
        self._key_lookup = key_lookup

    @property
    def config(self) -> Config:
        return self._config()

    @property
    def model(self) -> str:
        return self.config.embedding_model.strip()

    @property
    def available(self) -> bool:
        return bool(self.model)

    def _kwargs(self, texts: list[str]) -> dict[str, Any]:
        model = self.model
        kw: dict[str, Any] = {
            "model": model, "input": texts, "timeout": self.config.llm_timeout, "num_retries": 0,
        }
        base = self.config.embedding_api_base
        if not base and self.config.api_base and provider_of(self.config.model) == provider_of(model):
            base = self.config.api_base  # the same provider's server as the chat model's
        if base:
            kw["api_base"] = base
        provider = provider_of(model)
        key = self._key_lookup(provider)
        if key:
            kw["api_key"] = key
        elif base:
            kw["api_key"] = "no-key"
        elif provider not in KEYLESS:
            err = LLMAuthError(f"no API key for {provider} (embedding model {model})")
            err.hint = (f"Store one with `memtray key set {provider}`, or set "
                        f"{ENV_VARS.get(provider) or provider.upper() + '_API_KEY'}.")
            raise err
        return kw

    async def prepare(self) -> None:
        """Import litellm (seconds, once per process) so that a timed call does not count it."""
        await asyncio.to_thread(load_litellm)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Raises :class:`LLMError` subclasses.

        OpenAI-compatible providers are called through the openai SDK, which retries a
        429 or 5xx twice by itself (litellm 1.110 turns ``max_retries=0`` back into its
        default for embeddings); the backfill's own back-off comes after that."""
        if not self.available:
            raise LLMError("no embedding model is configured", hint=SETUP_HINT)
        if not texts:
            return []
        batch = [(t[:MAX_CHARS] if t.strip() else "-") for t in texts]
        kw = self._kwargs(batch)
        try:
            litellm = await asyncio.to_thread(load_litellm)
            # Shielded: litellm builds the request in an executor and awaits it after; a
            # cancel landing in between would leave its coroutine never awaited. A cancelled
            # call finishes (or times out) on its own and its outcome is dropped.
            call = asyncio.ensure_future(litellm.aembedding(**kw))
            try:
                resp = await asyncio.shield(call)
            except asyncio.CancelledError:
                call.add_done_callback(_drop)
                raise
        except LLMError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise translate(exc, self.model) from exc
        return _vectors(resp, len(batch), self.model)


def _drop(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()  # retrieved, so asyncio does not report it


def _vectors(resp: Any, n: int, model: str) -> list[list[float]]:
    try:
        data = list(resp.data if hasattr(resp, "data") else resp["data"])
        items = sorted(data, key=lambda d: int(d["index"] if isinstance(d, dict) else d.index))
        out = [[float(x) for x in (d["embedding"] if isinstance(d, dict) else d.embedding)] for d in items]
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise LLMBadResponse(f"{model}: the embedding reply could not be read ({exc})") from exc
    if len(out) != n or not out or any(len(v) != len(out[0]) or not v for v in out):
        raise LLMBadResponse(f"{model}: the embedding reply has {len(out)} vectors of mixed sizes for {n} texts")
    if any(not math.isfinite(x) for v in out for x in v):
        raise LLMBadResponse(f"{model}: the embedding reply holds values that are not numbers")
    return out
