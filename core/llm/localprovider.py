"""Running a request on an in-process llama.cpp model (``local/...``), without litellm.

The client (:mod:`memtray.core.llm.client`) sends a ``local/...`` request here instead
of through litellm: importing litellm takes seconds (half a minute on two busy
cores), and the offline path needs none of it, so its first token waits only for the
model. :func:`complete` runs a whole request; :func:`stream` runs the engine on a
thread of its own and yields its chunks to the event loop through a queue, so a
cancelled reply stops generating and frees the model. The policy (tools only when one
is forced, token caps, grammar-bounded schemas) is the engine's
(:mod:`memtray.core.llm.localmodel`); what comes back is llama.cpp's OpenAI-shaped
answer, read into plain chunks ``{"text", "tool_use", "is_finished", "finish_reason",
"usage"}``. Nothing here imports :mod:`localmodel` (it is handed the engine).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any


def complete(engine: Any, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """The whole answer (blocking). llama.cpp's ValueError (a prompt longer than the context
    window, a bad tool schema) goes to the caller."""
    with engine.lock:
        return dict(engine.call(messages, params, stream=False))


async def stream(engine: Any, messages: list[dict[str, Any]], params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    """The answer as chunks, generated on a thread of its own (module doc)."""
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
                made = 0
                for chunk in result:
                    if stop.is_set():  # cancelled: stop generating, free the model
                        with contextlib.suppress(Exception):
                            result.close()
                        return
                    made += 1
                    for c in generic_chunks(chunk):
                        put("chunk", c)
                # llama.cpp's stream carries no usage: the context now holds prompt + reply
                held = engine.tokens_in_context()
                if held is not None:
                    done = max(0, made - 2)  # one chunk for the role, one for the finish
                    put("chunk", {"text": "", "tool_use": None, "is_finished": False, "finish_reason": "", "index": 0,
                                  "usage": {"prompt_tokens": max(0, held - done), "completion_tokens": done,
                                            "total_tokens": held}})
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
                raise item
            yield item
    finally:
        stop.set()


def generic_chunks(chunk: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """One llama.cpp stream chunk as plain chunks."""
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        finish = choice.get("finish_reason")
        text = delta.get("content") or ""
        if text or finish:
            yield {"text": text, "tool_use": None, "is_finished": bool(finish),
                   "finish_reason": finish or "", "usage": chunk.get("usage"), "index": 0}


def chunks_of_response(resp: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A whole (tool-call) response as chunks: the forced tool is never token-streamed."""
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


__all__ = ["chunks_of_response", "complete", "generic_chunks", "stream"]
