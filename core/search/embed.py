"""Embeddings for search by meaning: from the user's provider through litellm
(``litellm.aembedding``), or offline from the bundled llama.cpp model.

Owns :class:`Embedder` and what the ``embedding_model`` setting means:

* a litellm embedding model string (``openai/text-embedding-3-small``,
  ``ollama/nomic-embed-text``, an OpenAI-compatible server's model with
  ``embedding_api_base``), its key from the keyring like the chat model's, and the
  translation of provider errors into :class:`~memtray.core.base.errors.LLMError`;
* ``local``: the offline model of the ``[local]`` extra
  (:class:`memtray.core.llm.localmodel.Embeddings`), in-process, no network;
* empty (the default): ``local`` when the ``[local]`` extra is installed (and not
  switched off with ``MEMTRAY_NO_LOCAL_MODEL``), otherwise none;
* ``none``: no embeddings, whatever is installed.

Without an embedding model there is no semantic search: search and recall are
keyword-only and say so (:func:`keyword_only_reason`, the one wording the CLI,
doctor and the desktop use). The offline model is a 135M chat model whose vectors
are weak (bench/BENCHMARKS.md), so it is marked not :attr:`Embedder.strong`: hybrid
search keeps the keyword matches in their places and recall never quotes a
passage for its vector alone.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Any

from memtray.core.base.cmdenv import check_model_call
from memtray.core.base.config import Config
from memtray.core.base.errors import LLMAuthError, LLMBadResponse, LLMError
from memtray.core.base.keys import ENV_VARS, KEYLESS, get_key, provider_of
from memtray.core.llm import localmodel
from memtray.core.llm.client import load_litellm, translate
from memtray.core.llm.pricing import priced
from memtray.core.log.events import Usage
from memtray.core.log.usage import as_usage

#: characters of a document sent for embedding (models take a few thousand tokens)
MAX_CHARS = 6000
SETUP_HINT = (
    "Set one with `memtray config set embedding_model openai/text-embedding-3-small` "
    "(any litellm embedding model; ollama/nomic-embed-text works offline), or install the "
    "offline model (pip install 'memtray[local]') and set embedding_model to local."
)
#: texts per embedding call (:attr:`Embedder.batch_size`)
PROVIDER_BATCH = 64
LOCAL_BATCH = 8
#: ``embedding_model`` values that choose the offline model, and those that choose none
LOCAL_VALUES = ("local", localmodel.EMBED_MODEL)
NONE_VALUES = ("none", "off")


def backend_of(setting: str) -> str:
    """``provider``, ``local`` or ``""`` (none) for an ``embedding_model`` value (module doc)."""
    value = setting.strip().lower()
    if value in NONE_VALUES:
        return ""
    if value in LOCAL_VALUES:
        return "local" if localmodel.missing(check_disabled=False) is None else ""
    if not value:
        return "local" if localmodel.missing() is None else ""
    return "provider"


def keyword_only_reason(setting: str) -> str | None:
    """Why search runs by keywords only with this ``embedding_model``, said plainly (None: it
    does not). The same sentence in `history search`, `history embed`, doctor and Settings."""
    value = setting.strip().lower()
    if backend_of(setting):
        return None
    if value in NONE_VALUES:
        return f"embeddings are switched off (embedding_model = {value}): search is by keywords only"
    if value in LOCAL_VALUES:
        why = localmodel.missing(check_disabled=False) or "it is not installed"
        return f"the offline embedding model cannot be used ({why}): search is by keywords only"
    why = localmodel.missing() or ""
    offline = (f"switched off ({localmodel.DISABLE_ENV} is set)" if why.startswith("disabled")
               else "not installed (pip install 'memtray[local]')")
    return f"no embedding model is configured and the offline model is {offline}: search is by keywords only"


def describe(setting: str) -> str:
    """One line on how search finds past messages with this ``embedding_model`` (Settings, doctor)."""
    reason = keyword_only_reason(setting)
    if reason is not None:
        return (reason[0].upper() + reason[1:]
                + " (past messages are found by their words, not by their meaning).")
    if backend_of(setting) == "local":
        return (f"Offline embeddings from {localmodel.NAME} (made in the background on this computer; "
                "a small model, so they only add to the keyword matches).")
    return "Past messages are found by their words and by their meaning (embeddings are made in the background)."


class Embedder:
    """Turns texts into vectors with the configured embedding model."""

    def __init__(self, config: Callable[[], Config], *, key_lookup: Callable[[str], str | None] = get_key,
                 local: localmodel.Embeddings | None = None) -> None:
        self._config = config  # read at each use: settings change while the app runs
        self._key_lookup = key_lookup
        self._local = local or localmodel.embeddings()
        self._backend: tuple[str, str] = ("\0", "")  # (setting, backend): find_spec is not free

    @property
    def config(self) -> Config:
        return self._config()

    @property
    def backend(self) -> str:
        """``provider``, ``local`` or ``""``: what makes the vectors now."""
        setting = self.config.embedding_model
        if self._backend[0] != setting:
            self._backend = (setting, backend_of(setting))
        return self._backend[1]

    @property
    def model(self) -> str:
        """The model's name as shown (``local/smollm2`` for the offline one); "" for none."""
        backend = self.backend
        if backend == "local":
            return localmodel.EMBED_MODEL
        return self.config.embedding_model.strip() if backend else ""

    @property
    def identity(self) -> str:
        """What stored vectors belong to; another identity means embedding everything again."""
        return self._local.identity() if self.backend == "local" else self.model

    @property
    def available(self) -> bool:
        return bool(self.backend)

    @property
    def strong(self) -> bool:
        """Whether the vectors are good enough to find a passage on their own (module doc)."""
        return self.backend == "provider"

    @property
    def batch_size(self) -> int:
        """Texts per call: the offline model takes about a second per few texts, and a
        search's query waits for the batch in progress, so its batches are small."""
        return LOCAL_BATCH if self.backend == "local" else PROVIDER_BATCH

    @property
    def keyword_only_reason(self) -> str | None:
        return keyword_only_reason(self.config.embedding_model)

    def _kwargs(self, texts: list[str]) -> dict[str, Any]:
        check_model_call()  # a forwarded command whose provider environment the instance cannot take
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
        """Import litellm, or load the offline model (seconds, once per process), so that a
        timed call does not count it."""
        if self.backend == "local":
            try:
                await asyncio.to_thread(self._local.load)
            except (RuntimeError, ValueError, OSError) as exc:
                raise LLMError(f"the offline embedding model could not be loaded: {exc}",
                               hint=localmodel.INSTALL_HINT) from exc
            return
        await asyncio.to_thread(load_litellm)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Raises :class:`LLMError` subclasses."""
        return (await self.embed_counted(texts))[0]

    async def embed_counted(self, texts: Sequence[str]) -> tuple[list[list[float]], Usage | None]:
        """One vector per text, in order, and what the call cost as the provider reported it
        (priced by litellm where it knows the model; None from the offline model, which
        counts no tokens). Raises :class:`LLMError` subclasses.

        OpenAI-compatible providers are called through the openai SDK, which retries a
        429 or 5xx twice by itself (litellm 1.110 turns ``max_retries=0`` back into its
        default for embeddings); the backfill's own back-off comes after that."""
        if not self.available:
            raise LLMError(self.keyword_only_reason or "no embedding model is configured", hint=SETUP_HINT)
        if not texts:
            return [], None
        batch = [(t[:MAX_CHARS] if t.strip() else "-") for t in texts]
        if self.backend == "local":
            try:
                out = await asyncio.to_thread(self._local.embed, batch)
            except (RuntimeError, ValueError, OSError) as exc:
                raise LLMError(f"the offline embedding model failed: {exc}") from exc
            return _checked(out, len(batch), self.model), None
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
        raw = getattr(resp, "usage", None)
        counts = {k: v for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                  if type(v := (raw.get(k) if isinstance(raw, dict) else getattr(raw, k, None))) is int}
        return _vectors(resp, len(batch), self.model), as_usage(priced(litellm, self.model, counts, embedding=True))


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
    return _checked(out, n, model)


def _checked(out: list[list[float]], n: int, model: str) -> list[list[float]]:
    if len(out) != n or not out or any(len(v) != len(out[0]) or not v for v in out):
        raise LLMBadResponse(f"{model}: the embedding reply has {len(out)} vectors of mixed sizes for {n} texts")
    if any(not math.isfinite(x) for v in out for x in v):
        raise LLMBadResponse(f"{model}: the embedding reply holds values that are not numbers")
    return out
