"""LLM access through litellm: streaming, tool calls, timeouts, retries, fallback.

litellm is imported lazily (never on the start-up path) with its cost map and
offline mode forced local and its stdout chatter silenced. Every litellm error
is translated into a :class:`~memtray.core.base.errors.LLMError` subclass here, so
the rest of memtray never sees a provider's exception types.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
import random
import re
import threading
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from memtray.core.base.cmdenv import check_model_call
from memtray.core.base.config import Config, for_command
from memtray.core.base.errors import (
    LLMAuthError,
    LLMBadResponse,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMTimeout,
)
from memtray.core.base.keys import ENV_VARS, KEYLESS, get_key, provider_of
from memtray.core.llm import localmodel, localprovider
from memtray.core.llm.pricing import priced
from memtray.core.log.events import find_invalid, scrub_obj

log = logging.getLogger(__name__)

_litellm: ModuleType | None = None

DeltaCallback = Callable[[str], None]


_import_lock = threading.Lock()


def load_litellm() -> ModuleType:
    """Import litellm once, configured for offline, quiet, in-process use.

    Thread-safe: the desktop warms litellm up on the worker while a CLI command
    forwarded on another thread may need it too.
    """
    global _litellm
    if _litellm is not None:
        return _litellm
    with _import_lock:
        if _litellm is not None:
            return _litellm
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
        os.environ.setdefault("LITELLM_LOG", "ERROR")
        with warnings.catch_warnings():
            # pydantic warns about litellm's ReadOnly TypedDicts at import; not ours to fix
            warnings.simplefilter("ignore")
            import litellm

        # ... and again lazily inside its first call; users must not see pydantic's notes.
        warnings.filterwarnings("ignore", message=r".*ReadOnly.*qualifier", category=UserWarning)
        litellm.suppress_debug_info = True
        litellm.set_verbose = False  # type: ignore[attr-defined]
        litellm.telemetry = False
        litellm.drop_params = True
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
            logging.getLogger(name).setLevel(logging.ERROR)
        _litellm = litellm
    return _litellm


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model sent it

    def to_message(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class LLMResult:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    model: str = ""
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None


@dataclass
class Request:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    stream: bool = False
    model: str | None = None
    timeout: float | None = None
    max_tokens: int | None = None
    temperature: float | None = None


class LLMClient:
    """Calls the configured model; one instance per config."""

    def __init__(
        self,
        config: Config,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        key_lookup: Callable[[str], str | None] = get_key,
        models_dir: Path | None = None,
    ) -> None:
        self._config = config
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._key_lookup = key_lookup
        #: where downloaded offline models are (``local/<id>``, see catalogue.py)
        self.models_dir = models_dir

    @property
    def config(self) -> Config:
        """The settings of the request being made: a forwarded command's own model and API
        base (see :mod:`memtray.core.base.cmdenv`), else the instance's."""
        return for_command(self._config)

    @config.setter
    def config(self, cfg: Config) -> None:
        self._config = cfg

    @property
    def model(self) -> str:
        """The model a request without ``model`` goes to: the configured one, else the offline one."""
        if self.config.model:
            return self.config.model
        return localmodel.MODEL if localmodel.available() else ""

    @property
    def runs_here(self) -> bool:
        """Whether the model runs in this process (``local/...``: llama.cpp, no litellm)."""
        return localmodel.is_local(self.model)

    async def ready(self, model: str | None = None) -> None:
        """Load what a request to ``model`` needs (litellm's import), off the event loop.

        Called before a request whose time is limited, so the limit measures the provider's
        answer, not an import that takes seconds (a minute on a loaded machine).
        """
        if _litellm is None and not localmodel.is_local(model or self.model):
            await asyncio.to_thread(load_litellm)

    def preload(self) -> None:
        """Load the model now when it runs in-process (``local/...``), so the first request does
        not wait for it (blocking: the warm instance and the desktop call it on a thread)."""
        if localmodel.is_local(self.model):
            localmodel.preload(self.model, self.models_dir)

    def _kwargs(self, req: Request, model: str) -> dict[str, Any]:
        if not localmodel.is_local(model):
            check_model_call()  # a command whose provider environment the instance cannot take
        kw: dict[str, Any] = {
            "model": model,
            "messages": req.messages,
            "timeout": req.timeout or self.config.llm_timeout,
            "num_retries": 0,
            "max_tokens": req.max_tokens or self.config.max_tokens,
            "temperature": req.temperature if req.temperature is not None else self.config.temperature,
        }
        # The small offline model calls the first tool for anything unless one is forced.
        if req.tools and not (localmodel.is_local(model) and localmodel.forced_tool(req.tool_choice, req.tools) is None):
            kw["tools"] = req.tools
            if req.tool_choice is not None:
                kw["tool_choice"] = req.tool_choice
        if localmodel.is_local(model):
            path = localmodel.resolve(model, self.models_dir)
            if path is None:
                raise LLMError(localmodel.not_found(model),
                               hint="See `memtray model list`; `memtray model use ID` picks one that is there.")
            kw["api_base"] = str(path)  # the in-process provider runs this file
            return kw | ({"stream": True, "stream_options": {"include_usage": True}} if req.stream else {})
        if self.config.api_base:
            kw["api_base"] = self.config.api_base
        provider = provider_of(model)
        key = self._key_lookup(provider)
        if key:
            kw["api_key"] = key
        elif self.config.api_base:
            kw["api_key"] = "no-key"  # local OpenAI-compatible servers accept any key
        elif provider not in KEYLESS:
            err = LLMAuthError(f"no API key for {provider}")
            err.hint = f"Store one with `memtray key set {provider}` (or in Settings), or set {ENV_VARS.get(provider) or provider.upper() + '_API_KEY'}."
            raise err
        if req.stream:
            kw["stream"] = True
            kw["stream_options"] = {"include_usage": True}
        return kw

    async def complete(self, req: Request, on_delta: DeltaCallback | None = None) -> LLMResult:
        """Run ``req`` with retries and the fallback model. Raises LLMError subclasses."""
        model = req.model or self.model
        if not model:
            raise LLMError(
                "no model is configured",
                hint="Run `memtray config set model openai/gpt-4o-mini` (any litellm model string), "
                f"or open Settings in the app. For the small offline model: {localmodel.INSTALL_HINT}.",
            )
        if find_invalid(req.messages) is not None:
            # text older versions logged (a lone surrogate) cannot be encoded for any API:
            # send it made valid rather than fail every turn that includes it
            req = dataclasses.replace(req, messages=scrub_obj(req.messages))
        models = [model]
        if self.config.fallback_model and self.config.fallback_model != model and req.model is None:
            models.append(self.config.fallback_model)
        last: LLMError | None = None
        for m in models:
            try:
                return await self._with_retries(req, m, on_delta)
            except (LLMAuthError, LLMBadResponse) as exc:
                last = exc
                if isinstance(exc, LLMAuthError):
                    raise
            except LLMError as exc:
                last = exc
            if len(models) > 1 and m != models[-1]:
                log.warning("model %s failed (%s); trying fallback %s", m, last, models[-1])
        assert last is not None
        raise last

    async def _with_retries(self, req: Request, model: str, on_delta: DeltaCallback | None) -> LLMResult:
        attempt = 0
        while True:
            streamed_any = False

            def track(text: str) -> None:
                nonlocal streamed_any
                streamed_any = True
                if on_delta is not None:
                    on_delta(text)

            try:
                return await self._once(req, model, track if on_delta is not None else None)
            except LLMError as exc:
                retryable = isinstance(exc, LLMRateLimited | LLMTimeout | LLMConnectionError) or (
                    type(exc) is LLMError and getattr(exc, "status", 500) >= 500
                )
                # Never retry once text reached the user: they would see it twice.
                if not retryable or streamed_any or attempt >= self.config.llm_retries:
                    raise
                attempt += 1
                delay = min(30.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + self._rng.random())
                if isinstance(exc, LLMRateLimited) and exc.retry_after is not None:
                    delay = min(max(exc.retry_after, 0.0), 60.0)
                log.info("retrying %s in %.1fs after: %s", model, delay, exc)
                await self._sleep(delay)

    async def _once(self, req: Request, model: str, on_delta: DeltaCallback | None) -> LLMResult:
        if localmodel.is_local(model):  # in-process: no litellm to import (localprovider.py)
            return await self._local(req, model, on_delta)
        # off the event loop: the import takes seconds (a minute on a loaded machine), and the
        # worker's loop must keep logging and answering meanwhile
        litellm = _litellm if _litellm is not None else await asyncio.to_thread(load_litellm)
        kw = self._kwargs(req, model)
        try:
            if not req.stream:
                resp = await litellm.acompletion(**kw)
                return _priced(litellm, _from_response(resp, model), model)
            stream = await litellm.acompletion(**kw)
            try:
                return _priced(litellm, await _consume_stream(stream, model, on_delta), model)
            finally:
                with contextlib.suppress(Exception):
                    await stream.aclose()
        except LLMError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise translate(exc, model) from exc


    async def _local(self, req: Request, model: str, on_delta: DeltaCallback | None) -> LLMResult:
        kw = self._kwargs(req, model)
        engine = localmodel.engine_for(kw["api_base"])
        params: dict[str, Any] = {k: kw[k] for k in ("max_tokens", "temperature", "tools", "tool_choice") if k in kw}
        try:
            if not req.stream:
                resp = await asyncio.to_thread(localprovider.complete, engine, req.messages, params)
                chunks: Any = localprovider.chunks_of_response(resp)
                return _priced(None, _from_chunks(list(chunks), model), model)
            parts: list[dict[str, Any]] = []
            async for chunk in localprovider.stream(engine, req.messages, params):
                parts.append(chunk)
                if chunk["text"] and on_delta is not None:
                    on_delta(chunk["text"])
            return _priced(None, _from_chunks(parts, model), model)
        except (asyncio.CancelledError, LLMError):
            raise
        except (ValueError, RuntimeError, OSError) as exc:
            # llama.cpp: a prompt longer than the context window, a bad tool schema (ValueError); a
            # file it cannot load. The same request would fail again: no retry (status 400).
            err = LLMError(f"{model}: {exc}", hint="Start a new conversation (/new) or shorten the message."
                           if isinstance(exc, ValueError) else f"The offline model could not run; {localmodel.INSTALL_HINT}.")
            err.status = 400  # type: ignore[attr-defined]
            raise err from exc


def _priced(litellm: ModuleType | None, result: LLMResult, model: str) -> LLMResult:
    """The result with the call's cost in its usage (core/llm/pricing.py), priced by the
    model string the request went to (the one litellm's price list is keyed by)."""
    result.usage = priced(litellm, model, result.usage)
    return result


def _from_chunks(chunks: list[dict[str, Any]], model: str) -> LLMResult:
    """Plain chunks of the in-process model (localprovider.py) as one result."""
    calls = [ToolCall(c["tool_use"]["id"], c["tool_use"]["function"]["name"], c["tool_use"]["function"]["arguments"])
             for c in chunks if c.get("tool_use")]
    usage = next((_usage(c["usage"]) for c in reversed(chunks) if c.get("usage")), None)
    finish = next((c["finish_reason"] for c in reversed(chunks) if c.get("is_finished")), None)
    return LLMResult("".join(c["text"] for c in chunks), calls, model, usage, finish)


def _from_response(resp: Any, model: str) -> LLMResult:
    try:
        choice = resp.choices[0]
        msg = choice.message
        calls = []
        for i, tc in enumerate(getattr(msg, "tool_calls", None) or []):
            fn = tc.function
            args = fn.arguments if isinstance(fn.arguments, str) else json.dumps(fn.arguments)
            calls.append(ToolCall(tc.id or f"call_{i}", fn.name or "", args or ""))
        usage = _usage(getattr(resp, "usage", None))
        # the model string the request went to, as a streamed reply names it too (the provider's
        # own name, "gpt-4o-mini-2024-07-18", is not what litellm prices nor what the user chose)
        return LLMResult(msg.content or "", calls, model, usage, choice.finish_reason)
    except (AttributeError, IndexError, TypeError) as exc:
        raise LLMBadResponse(f"{model} sent a reply without a message: {exc}") from exc


async def _consume_stream(stream: Any, model: str, on_delta: DeltaCallback | None) -> LLMResult:
    parts: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage = None
    finish = None
    async for chunk in stream:
        u = getattr(chunk, "usage", None)
        if u:
            usage = _usage(u)
        if not getattr(chunk, "choices", None):
            continue
        choice = chunk.choices[0]
        finish = getattr(choice, "finish_reason", None) or finish
        delta = choice.delta
        text = getattr(delta, "content", None)
        if text:
            parts.append(text)
            if on_delta is not None:
                on_delta(text)
        for tc in getattr(delta, "tool_calls", None) or []:
            idx = getattr(tc, "index", None)
            if idx is None:
                idx = len(calls)
            slot = calls.setdefault(idx, {"id": None, "name": "", "args": []})
            if getattr(tc, "id", None):
                slot["id"] = tc.id
            fn = getattr(tc, "function", None)
            if fn is not None:
                if getattr(fn, "name", None):
                    slot["name"] = fn.name
                if getattr(fn, "arguments", None):
                    slot["args"].append(fn.arguments)
    tool_calls = [
        ToolCall(s["id"] or f"call_{i}", s["name"], "".join(s["args"])) for i, s in sorted(calls.items())
    ]
    return LLMResult("".join(parts), tool_calls, model, usage, finish)


def _usage(u: Any) -> dict[str, Any] | None:
    if u is None:
        return None
    out = {}
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        v = getattr(u, k, None) if not isinstance(u, dict) else u.get(k)
        if isinstance(v, int):
            out[k] = v
    return out or None


def _retry_after(exc: Any) -> float | None:
    for headers in (getattr(exc, "headers", None), getattr(getattr(exc, "response", None), "headers", None)):
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        if value:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    for prefix in ("litellm.", "OpenAIException - ", "APIConnectionError: "):
        text = text.replace(prefix, "")
    # litellm repeats the class name ("InternalServerError: InternalServerError: …"): the
    # words are said once, and the caller names the kind of failure itself
    text = _CLASS_PREFIX.sub("", " ".join(text.split()))
    return text[:300]


_CLASS_PREFIX = re.compile(r"^(?:[A-Z][A-Za-z]*(?:Error|Exception)\s*[:-]\s*)+")


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in out and len(out) < 10:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def translate(exc: BaseException, model: str) -> LLMError:
    """Map a litellm / httpx / openai exception to our error types."""
    litellm = load_litellm()
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    # litellm reports transport failures as "500 InternalServerError": look at the cause.
    chain = _chain(exc)
    text_all = " ".join(str(e) for e in chain).lower()
    connect_failed = any(type(e).__name__ in ("ConnectError", "ConnectTimeout") for e in chain)
    # A reply cut off after it started (a reset mid-body) surfaces as openai's generic
    # "Connection error." around a read error: it connected, so it is not a connect failure.
    if not connect_failed and (
        any(type(e).__name__ in ("ReadError", "ClientPayloadError", "TransferEncodingError") for e in chain)
        or "payload is not completed" in text_all
    ):
        return LLMBadResponse(f"{model}: the reply broke off mid-stream (connection closed)")
    malformed = any(isinstance(e, json.JSONDecodeError) for e in chain) or (
        "expecting property name" in text_all or "expecting value" in text_all
    )
    looks_unreachable = connect_failed or (
        "connection error" in text_all and not any(type(e).__name__ == "RemoteProtocolError" for e in chain)
        and "peer closed" not in text_all and "incomplete" not in text_all
    )
    if looks_unreachable and not any(isinstance(e, json.JSONDecodeError) for e in chain):
        return LLMConnectionError(f"{model}: cannot connect to the provider")
    if malformed:
        return LLMBadResponse(f"{model}: the provider sent malformed data that could not be read")
    if any(type(e).__name__ in ("RemoteProtocolError", "ReadError") for e in chain) or "peer closed" in text_all:
        return LLMBadResponse(f"{model}: the reply broke off mid-stream (connection closed)")
    if isinstance(exc, litellm.Timeout) or "Timeout" in name:
        return LLMTimeout(f"{model} did not answer in time")
    if isinstance(exc, litellm.AuthenticationError) or status == 401:
        err0 = LLMAuthError(f"{model}: the provider rejected the API key (401)")
        err0.hint = f"Set a valid key with `memtray key set {provider_of(model)}` (or in Settings)."
        return err0
    if isinstance(exc, litellm.PermissionDeniedError) or status == 403:
        return LLMAuthError(f"{model}: access denied (403): {_short(exc)}")
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return LLMRateLimited(f"{model}: rate limited (429)", retry_after=_retry_after(exc))
    if isinstance(exc, litellm.NotFoundError) or status == 404:
        err = LLMError(f"{model}: model or endpoint not found (404)")
        err.hint = "Check the model name and api_base (`memtray config get`)."
        return err
    if isinstance(exc, litellm.ContextWindowExceededError):
        return LLMError(f"{model}: the conversation is too long for the model's context window")
    if isinstance(exc, litellm.APIConnectionError) and status is None:
        text = _short(exc)
        if "connect" in text.lower() or "refused" in text.lower() or "resolve" in text.lower():
            return LLMConnectionError(f"{model}: cannot connect to the provider ({text})")
        err2 = LLMBadResponse(f"{model}: the reply broke off or could not be read ({text})")
        return err2
    if isinstance(exc, litellm.BadRequestError) or status == 400:
        return LLMError(f"{model}: the provider refused the request (400): {_short(exc)}")
    if status is not None and status >= 500:
        err3 = LLMError(f"{model}: the provider failed ({status}): {_short(exc)}")
        err3.status = status  # type: ignore[attr-defined]
        return err3
    if isinstance(exc, json.JSONDecodeError | ValueError):
        return LLMBadResponse(f"{model}: the provider sent malformed data ({_short(exc)})")
    if isinstance(exc, OSError | ConnectionError):
        return LLMConnectionError(f"{model}: connection failed ({_short(exc)})")
    return LLMError(f"{model}: the provider failed ({name}): {_short(exc)}")


def tool_spec(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def messages_for_log(messages: Sequence[dict[str, Any]]) -> str:
    return json.dumps(list(messages), ensure_ascii=False)[:2000]


@functools.lru_cache(maxsize=32)
def context_window(model: str) -> int:
    """The model's input window in tokens as litellm knows it (32 000 when it does not)."""
    if localmodel.is_local(model):
        return localmodel.CONTEXT_TOKENS
    try:
        info = load_litellm().get_model_info(model)
        return int(info.get("max_input_tokens") or info.get("max_tokens") or 32_000)
    except Exception:
        return 32_000
