"""The litellm custom provider ``local/...``: llama.cpp models run in this process.

litellm calls it like any provider; it hands each request to the engine that runs the
model's GGUF file (:mod:`memtray.core.llm.localmodel` owns the engines and the policy:
tools only when one is forced, token caps, grammar-bounded schemas) and turns
llama.cpp's OpenAI-shaped answers and stream chunks into litellm's. Streaming runs the
engine on a thread of its own and feeds the event loop through a queue, so a
cancelled reply stops generating and frees the model. Nothing here imports
:mod:`localmodel` (it is handed what it needs), nor litellm before it is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

#: (the client's api_base: a GGUF path or None, the default engine) -> the engine to use
EngineFor = Callable[[Any, Any], Any]


def handler_class(litellm: ModuleType, engine_for: EngineFor, default: Any, name: str, provider: str) -> type:
    """The CustomLLM subclass over ``default`` (the bundled model's engine) and ``engine_for``
    (the engine of another GGUF file, by the ``api_base`` the client sets), built only once
    litellm is imported (core never imports it eagerly)."""
    from litellm.llms import custom_llm

    base: Any = custom_llm.CustomLLM
    error: Any = custom_llm.CustomLLMError

    class LocalLLM(base):  # type: ignore[misc]
        def __init__(self, engine: Any = default) -> None:
            super().__init__()
            self.engine = engine

        def _engine(self, kw: dict[str, Any]) -> Any:
            return engine_for(kw.get("api_base"), self.engine)

        def _blocking(self, engine: Any, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
            with engine.lock:
                try:
                    return dict(engine.call(messages, params, stream=False))
                except ValueError as exc:  # llama.cpp: prompt longer than the context window, bad tool
                    raise error(status_code=400, message=f"{name}: {exc}") from exc

        def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kw: Any) -> Any:
            params = dict(kw.get("optional_params") or {})
            return to_model_response(litellm, self._blocking(self._engine(kw), messages, params), model, provider)

        async def acompletion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kw: Any) -> Any:
            params = dict(kw.get("optional_params") or {})
            resp = await asyncio.to_thread(self._blocking, self._engine(kw), messages, params)
            return to_model_response(litellm, resp, model, provider)

        def streaming(self, model: str, messages: list[dict[str, Any]], *args: Any, **kw: Any) -> Iterator[Any]:
            params = dict(kw.get("optional_params") or {})
            engine = self._engine(kw)
            with engine.lock:
                result = engine.call(messages, params, stream=True)
                if isinstance(result, dict):
                    yield from chunks_of_response(result)
                    return
                for chunk in result:
                    yield from generic_chunks(chunk)

        async def astreaming(
            self, model: str, messages: list[dict[str, Any]], *args: Any, **kw: Any
        ) -> AsyncIterator[Any]:
            params = dict(kw.get("optional_params") or {})
            engine = self._engine(kw)
            loop = asyncio.get_running_loop()
            queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
            stop = threading.Event()

            def put(kind: str, item: Any) -> None:
                with contextlib.suppress(RuntimeError):  # the loop closed: nobody is listening
                    loop.call_soon_threadsafe(queue.put_nowait, (kind, item))

            def produce() -> None:
                try:
                    with engine.lock:
                        result = engine.call(messages, params, stream=True)
                        if isinstance(result, dict):
                            for c in chunks_of_response(result):
                                put("chunk", c)
                            return
                        for chunk in result:
                            if stop.is_set():  # cancelled: stop generating, free the model
                                with contextlib.suppress(Exception):
                                    result.close()
                                return
                            for c in generic_chunks(chunk):
                                put("chunk", c)
                except BaseException as exc:
                    put("error", exc)
                finally:
                    put("end", None)

            thread = threading.Thread(target=produce, name="memtray-local-model", daemon=True)
            thread.start()
            try:
                while True:
                    kind, item = await queue.get()
                    if kind == "end":
                        return
                    if kind == "error":
                        if isinstance(item, ValueError):
                            raise error(status_code=400, message=f"{name}: {item}") from item
                        raise item
                    yield item
            finally:
                stop.set()

    return LocalLLM


def to_model_response(litellm: ModuleType, resp: dict[str, Any], model: str, provider: str) -> Any:
    """llama.cpp's OpenAI-shaped response as litellm's ModelResponse for ``provider/model``."""
    choice = resp["choices"][0]
    msg = choice.get("message") or {}
    tool_calls = [
        {"id": tc.get("id") or f"call_{i}", "type": "function",
         "function": {"name": tc["function"]["name"], "arguments": tc["function"]["arguments"]}}
        for i, tc in enumerate(msg.get("tool_calls") or [])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return litellm.ModelResponse(
        id=resp.get("id") or f"chatcmpl-{uuid.uuid4().hex}",
        created=int(resp.get("created") or time.time()),
        model=model if model.startswith(provider + "/") else f"{provider}/{model}",
        object="chat.completion",
        choices=[{"index": 0, "message": message,
                  "finish_reason": "tool_calls" if tool_calls else (choice.get("finish_reason") or "stop")}],
        usage=resp.get("usage"),
    )


def generic_chunks(chunk: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """One llama.cpp stream chunk as litellm GenericStreamingChunk dicts."""
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        finish = choice.get("finish_reason")
        text = delta.get("content") or ""
        if text or finish:
            yield {"text": text, "tool_use": None, "is_finished": bool(finish),
                   "finish_reason": finish or "", "usage": None, "index": 0}


def chunks_of_response(resp: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A whole (tool-call) response as stream chunks: the forced tool is never token-streamed."""
    choice = resp["choices"][0]
    msg = choice.get("message") or {}
    calls = msg.get("tool_calls") or []
    for i, tc in enumerate(calls):
        yield {"text": "", "is_finished": False, "finish_reason": "", "usage": None, "index": 0,
               "tool_use": {"id": tc.get("id") or f"call_{i}", "type": "function", "index": i,
                            "function": {"name": tc["function"]["name"], "arguments": tc["function"]["arguments"]}}}
    yield {"text": "" if calls else (msg.get("content") or ""), "tool_use": None, "is_finished": True,
           "finish_reason": "tool_calls" if calls else (choice.get("finish_reason") or "stop"),
           "usage": resp.get("usage"), "index": 0}


__all__ = ["EngineFor", "chunks_of_response", "generic_chunks", "handler_class", "to_model_response"]
