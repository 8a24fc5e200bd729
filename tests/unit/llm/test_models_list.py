"""GET /v1/models of a server the user runs: the ids, and every bad answer said in words."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from memtray.core.base.errors import LLMAuthError, LLMBadResponse, LLMConnectionError
from memtray.core.llm.models import list_models, models_url

from tests.fixtures.llm_server import ScriptedLLMServer


def test_the_scripted_server_lists_its_models(llm_server: ScriptedLLMServer) -> None:
    llm_server.models = ["qwen2.5-7b-instruct", "llava-1.6", "qwen2.5-7b-instruct"]
    assert list_models(llm_server.base_url) == ["llava-1.6", "qwen2.5-7b-instruct"]
    assert list_models(llm_server.base_url.removesuffix("/v1")) == ["llava-1.6", "qwen2.5-7b-instruct"]  # Ollama-style


def test_urls() -> None:
    assert models_url("http://localhost:11434") == "http://localhost:11434/v1/models"
    assert models_url("http://localhost:8000/v1/") == "http://localhost:8000/v1/models"
    with pytest.raises(LLMConnectionError):
        models_url("file:///etc/passwd")


class _Hostile(http.server.BaseHTTPRequestHandler):
    reply: tuple[int, bytes] = (200, b"")

    def do_GET(self) -> None:
        status, body = type(self).reply
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_a: Any) -> None:
        pass


@pytest.fixture
def hostile() -> Iterator[tuple[str, type[_Hostile]]]:
    handler = type("H", (_Hostile,), {})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", handler
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize(("status", "body", "error", "words"), [
    (200, b"<html>not json</html>", LLMBadResponse, "not JSON"),
    (200, b'{"data": "nope"}', LLMBadResponse, "no model list"),
    (200, b"[1, 2, 3]", LLMBadResponse, "no model list"),
    (401, b"", LLMAuthError, "refused the key"),
    (500, b"", LLMBadResponse, "answered 500"),
])
def test_bad_answers_are_errors_in_words(hostile: tuple[str, Any], status: int, body: bytes, error: type,
                                         words: str) -> None:
    base, handler = hostile
    handler.reply = (status, body)
    with pytest.raises(error, match=words):
        list_models(base)


def test_odd_items_are_skipped_and_ollama_tags_read(hostile: tuple[str, Any]) -> None:
    base, handler = hostile
    handler.reply = (200, b'{"data": [{"id": "ok"}, {"id": 5}, "x", {"id": ""}, {"name": "also-ok"}]}')
    assert list_models(base) == ["also-ok", "ok"]
    handler.reply = (200, b'{"models": [{"name": "llama3.2:latest"}]}')
    assert list_models(base) == ["llama3.2:latest"]


def test_nobody_listening() -> None:
    with pytest.raises(LLMConnectionError, match="cannot reach"):
        list_models("http://127.0.0.1:9/v1", timeout=2)
