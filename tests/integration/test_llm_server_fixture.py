"""Tests for tests/fixtures/llm_server.py, driven through the *real* litellm client."""

from __future__ import annotations

import os

# Must happen before litellm is imported anywhere.
_no_proxy = {h for h in os.environ.get("NO_PROXY", "").split(",") if h}
os.environ["NO_PROXY"] = os.environ["no_proxy"] = ",".join(
    sorted(_no_proxy | {"127.0.0.1", "localhost"})
)
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_OFFLINE_MODE"] = "true"

import http.client  # noqa: E402
import json  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from typing import Any  # noqa: E402

import litellm  # noqa: E402
import openai  # noqa: E402
import pytest  # noqa: E402

from tests.fixtures.llm_server import (  # noqa: E402
    ScriptedLLMServer,
    delay,
    error,
    hang,
    huge_reply,
    last_user_text,
    malformed_sse,
    reply,
    reset_mid_stream,
    run_async,
    tool_call,
    tool_calls,
)

litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout

# Warnings litellm 1.110.2 emits that we cannot avoid. Muted for this module only (marks
# take precedence over a command-line ``-W error``, which overrides pyproject's ignores):
# * pydantic._internal._generate_schema, UserWarning, raised while litellm lazily imports
#   litellm.llms.github_copilot.{authenticator,per_user_auth} on the first (a)completion:
#   "Item(s) '...' on TypedDict class '_DeviceCode' / '_CopilotUserPayload' /
#   '_GithubUserPayload' is/are using the `ReadOnly` qualifier. Pydantic will not protect
#   items from any mutation on dictionary instances."
# * litellm.litellm_core_utils.model_response_utils:18, PydanticDeprecatedSince211
#   (a DeprecationWarning) on a usage-only stream chunk (stream_options.include_usage):
#   "Accessing the 'model_computed_fields' / 'model_fields' attribute on the instance is
#   deprecated. Instead, you should access this attribute from the model class..."
pytestmark = [
    pytest.mark.filterwarnings(
        "ignore:.*on TypedDict class .* using the `ReadOnly` qualifier:UserWarning"
    ),
    pytest.mark.filterwarnings(
        "ignore:Accessing the 'model_.*' attribute on the instance is deprecated:DeprecationWarning"
    ),
]

MESSAGES = [
    {"role": "system", "content": "You are memtray."},
    {"role": "user", "content": "hello there"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "save_memory",
            "description": "Remember a fact about the user.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    }
]


@pytest.fixture
def server():
    with ScriptedLLMServer() as srv:
        yield srv
    assert not [t for t in threading.enumerate() if t.name.startswith("scripted-llm")]


def complete(server: ScriptedLLMServer, **kw: Any) -> Any:
    kw.setdefault("messages", MESSAGES)
    kw.setdefault("timeout", 2)
    return litellm.completion(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-test",
        num_retries=0,
        **kw,
    )


def stream_text(server: ScriptedLLMServer, **kw: Any) -> tuple[str, list[Any]]:
    chunks = list(complete(server, stream=True, **kw))
    text = "".join((c.choices[0].delta.content or "") for c in chunks if c.choices)
    return text, chunks


def raw_http(server: ScriptedLLMServer, path: str, data: bytes | None = None) -> tuple[int, Any]:
    url = server.base_url.rsplit("/v1", 1)[0] + path
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=2) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


# -- basics ----------------------------------------------------------------------------


def test_base_url_and_lifecycle() -> None:
    srv = ScriptedLLMServer()
    srv.start()
    try:
        assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
        assert srv.port > 0
    finally:
        srv.stop()
    assert not srv.running
    srv.stop()  # idempotent


def test_non_stream_reply_and_request_recording(server: ScriptedLLMServer) -> None:
    server.script(reply("Hi! I'm memtray.", usage={"prompt_tokens": 11, "completion_tokens": 5}))
    resp = complete(server, temperature=0.2)
    assert resp.choices[0].message.content == "Hi! I'm memtray."
    assert resp.choices[0].finish_reason == "stop"
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (11, 5)
    assert resp.usage.total_tokens == 16

    (req,) = server.requests
    assert req.method == "POST"
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req["model"] == "test-model"
    assert req["messages"] == MESSAGES
    assert not req.stream
    assert req["temperature"] == 0.2


def test_estimated_usage_when_not_given(server: ScriptedLLMServer) -> None:
    resp = complete(server)
    assert resp.usage.prompt_tokens > 0
    assert resp.usage.completion_tokens > 0


def test_stream_reply_is_chunked(server: ScriptedLLMServer) -> None:
    server.script(reply("The quick brown fox jumps.", chunk_size=3))
    text, chunks = stream_text(server)
    assert text == "The quick brown fox jumps."
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) >= 8
    assert server.requests[0].stream is True
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finish == ["stop"]


def test_stream_include_usage(server: ScriptedLLMServer) -> None:
    server.script(reply("counted", usage={"prompt_tokens": 7, "completion_tokens": 3}))
    chunks = list(complete(server, stream=True, stream_options={"include_usage": True}))
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    usages = [u for c in chunks if (u := getattr(c, "usage", None)) is not None]
    assert usages
    assert (usages[-1].prompt_tokens, usages[-1].completion_tokens) == (7, 3)


def test_default_echo_and_fifo_order(server: ScriptedLLMServer) -> None:
    server.script(reply("one"), reply("two"))
    assert server.pending == 2
    assert complete(server).choices[0].message.content == "one"
    assert stream_text(server)[0] == "two"
    assert server.pending == 0
    # queue empty -> default echo
    assert complete(server).choices[0].message.content == "echo: hello there"
    assert stream_text(server)[0] == "echo: hello there"


def test_custom_default_and_callable_script_items(server: ScriptedLLMServer) -> None:
    server.default = lambda req: reply(f"default saw {len(req['messages'])} messages")
    server.script(lambda req: reply(last_user_text(req).upper()))
    assert complete(server).choices[0].message.content == "HELLO THERE"
    assert complete(server).choices[0].message.content == "default saw 2 messages"


def test_responder_forgetful_model(server: ScriptedLLMServer) -> None:
    """A responder computing a save_memory call from the request, then acknowledging."""

    def forgetful(req: dict[str, Any]) -> Any:
        if req["messages"][-1]["role"] == "tool":
            return reply("Saved.")
        return tool_call("save_memory", {"text": f"user said: {last_user_text(req)}"})

    server.responder = forgetful
    server.script(reply("never used"))  # responder takes precedence over the queue
    resp = complete(server, tools=TOOLS)
    (call,) = resp.choices[0].message.tool_calls
    assert call.function.name == "save_memory"
    assert json.loads(call.function.arguments) == {"text": "user said: hello there"}

    follow_up = [
        *MESSAGES,
        resp.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "ok"},
    ]
    assert complete(server, messages=follow_up, tools=TOOLS).choices[0].message.content == "Saved."
    assert server.pending == 1


# -- tool calls ------------------------------------------------------------------------


def test_non_stream_tool_call(server: ScriptedLLMServer) -> None:
    server.script(tool_call("save_memory", {"text": "likes tea"}, id="call_abc"))
    resp = complete(server, tools=TOOLS, tool_choice="auto")
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.id == "call_abc"
    assert call.function.name == "save_memory"
    assert json.loads(call.function.arguments) == {"text": "likes tea"}

    req = server.requests[0]
    assert req["tools"] == TOOLS
    assert req["tool_choice"] == "auto"


def test_stream_tool_call_split_arguments(server: ScriptedLLMServer) -> None:
    args = {"text": "the user's cat is called Miso", "tags": ["pet", "cat"]}
    server.script(tool_call("save_memory", args, split=5))
    chunks = list(complete(server, stream=True, tools=TOOLS))

    fragments = [
        tc.function.arguments
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
        for tc in c.choices[0].delta.tool_calls
        if tc.function and tc.function.arguments
    ]
    assert len(fragments) > 5  # really split across chunks
    assert json.loads("".join(fragments)) == args

    built = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    (call,) = built.choices[0].message.tool_calls
    assert call.function.name == "save_memory"
    assert json.loads(call.function.arguments) == args
    assert built.choices[0].finish_reason == "tool_calls"


def test_stream_several_tool_calls_with_text(server: ScriptedLLMServer) -> None:
    server.script(
        tool_calls(
            [("save_memory", {"text": "a"}), ("save_memory", {"text": "b"})],
            text="Saving two things.",
        )
    )
    chunks = list(complete(server, stream=True, tools=TOOLS))
    built = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    msg = built.choices[0].message
    assert msg.content == "Saving two things."
    assert [json.loads(c.function.arguments) for c in msg.tool_calls] == [
        {"text": "a"},
        {"text": "b"},
    ]
    assert len({c.id for c in msg.tool_calls}) == 2


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_tool_arguments_passed_through(server: ScriptedLLMServer, stream: bool) -> None:
    raw = '{"text": "truncated'
    server.script(tool_call("save_memory", raw))
    resp = complete(server, stream=stream, tools=TOOLS)
    if stream:
        resp = litellm.stream_chunk_builder(list(resp), messages=MESSAGES)
    assert resp.choices[0].message.tool_calls[0].function.arguments == raw


# -- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_401_authentication_error(server: ScriptedLLMServer, stream: bool) -> None:
    server.script(error(401))
    with pytest.raises(litellm.AuthenticationError) as exc_info:
        complete(server, stream=stream)
    assert exc_info.value.status_code == 401
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_429_rate_limit_error_with_retry_after(server: ScriptedLLMServer, stream: bool) -> None:
    server.script(error(429, headers={"Retry-After": "7"}))
    with pytest.raises(litellm.RateLimitError) as exc_info:
        complete(server, stream=stream)
    assert exc_info.value.status_code == 429
    assert len(server.requests) == 1  # num_retries=0: no hidden SDK retries
    response = exc_info.value.response
    assert response is not None and response.headers["retry-after"] == "7"


@pytest.mark.parametrize("stream", [False, True])
def test_500_internal_server_error(server: ScriptedLLMServer, stream: bool) -> None:
    server.script(error(500))
    with pytest.raises(litellm.InternalServerError) as exc_info:
        complete(server, stream=stream)
    assert exc_info.value.status_code == 500
    assert len(server.requests) == 1


def test_503_and_custom_error_body(server: ScriptedLLMServer) -> None:
    server.script(error(503, body={"error": {"message": "overloaded right now", "type": "x"}}))
    with pytest.raises(litellm.ServiceUnavailableError, match="overloaded right now"):
        complete(server)


# -- timing ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_hang_times_out(server: ScriptedLLMServer, stream: bool) -> None:
    server.script(hang())
    start = time.monotonic()
    with pytest.raises(litellm.Timeout):
        complete(server, stream=stream, timeout=0.5)
    assert time.monotonic() - start < 2
    # the server keeps answering other requests while one handler hangs
    assert complete(server).choices[0].message.content == "echo: hello there"


def test_hang_after_some_stream_chunks(server: ScriptedLLMServer) -> None:
    server.script(hang(text_before="partial answer"))
    received: list[str] = []
    with pytest.raises(openai.APIError):  # observed: litellm.Timeout (or a wrapper)
        for c in complete(server, stream=True, timeout=0.5):
            received.append(c.choices[0].delta.content or "")
    assert "".join(received) == "partial answer"


def test_delay_then_reply(server: ScriptedLLMServer) -> None:
    server.script(delay(0.3, reply("slow but fine")), delay(0.05))
    start = time.monotonic()
    assert complete(server).choices[0].message.content == "slow but fine"
    assert time.monotonic() - start >= 0.3
    assert stream_text(server)[0] == "echo: hello there"  # delay() w/o then -> default


def test_delay_longer_than_timeout(server: ScriptedLLMServer) -> None:
    server.script(delay(5, reply("too late")))
    with pytest.raises(litellm.Timeout):
        complete(server, timeout=0.3)


def test_stop_is_prompt_with_hanging_requests() -> None:
    srv = ScriptedLLMServer().start()
    srv.script(hang(), hang())
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            complete(srv, timeout=10)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 2
    while len(srv.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(srv.requests) == 2
    start = time.monotonic()
    srv.stop()
    assert time.monotonic() - start < 1
    for t in threads:
        t.join(3)
        assert not t.is_alive()
    assert len(errors) == 2
    assert all(isinstance(e, openai.APIError) for e in errors)
    assert not [t for t in threading.enumerate() if t.name.startswith("scripted-llm")]


# -- broken streams --------------------------------------------------------------------


def test_reset_mid_stream_raises_while_iterating(server: ScriptedLLMServer) -> None:
    server.script(reset_mid_stream("Once upon a time"))
    received: list[str] = []
    # observed with litellm 1.110.2: litellm.MidStreamFallbackError
    # (a ServiceUnavailableError) wrapping "APIConnectionError ... Connection error."
    with pytest.raises(openai.APIError):
        for c in complete(server, stream=True):
            received.append(c.choices[0].delta.content or "")
    assert "".join(received) == "Once upon a time"


def test_reset_mid_stream_with_rst(server: ScriptedLLMServer) -> None:
    server.script(reset_mid_stream("abc", rst=True))
    with pytest.raises(openai.APIError):
        list(complete(server, stream=True))


def test_reset_mid_body_non_stream(server: ScriptedLLMServer) -> None:
    server.script(reset_mid_stream())
    # observed: litellm.InternalServerError("... Connection error.")
    with pytest.raises(openai.APIError):
        complete(server)


def test_malformed_sse(server: ScriptedLLMServer) -> None:
    server.script(malformed_sse())
    # observed: litellm raises litellm.MidStreamFallbackError (ServiceUnavailableError,
    # status 503) wrapping "APIConnectionError: ... Expecting value: line 1 column 1"
    # -- the JSONDecodeError of the first non-JSON data line; nothing is yielded.
    with pytest.raises(litellm.ServiceUnavailableError, match="Expecting value"):
        list(complete(server, stream=True))


def test_malformed_non_stream_body(server: ScriptedLLMServer) -> None:
    server.script(malformed_sse())
    # observed: litellm.InternalServerError wrapping the JSONDecodeError
    with pytest.raises(openai.APIError):
        complete(server)


# -- big payloads ----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_huge_reply_round_trip(server: ScriptedLLMServer, stream: bool) -> None:
    n = 5_000_000
    server.script(huge_reply(n))
    if stream:
        text, _ = stream_text(server, timeout=10)
    else:
        text = complete(server, timeout=10).choices[0].message.content
    assert len(text) == n
    assert text.startswith("memtray lorem ipsum")


# -- async -----------------------------------------------------------------------------


def test_async_streaming_acompletion(server: ScriptedLLMServer) -> None:
    server.script(reply("async hello", chunk_size=2), tool_call("save_memory", {"text": "x"}))

    async def main() -> tuple[str, Any]:
        try:
            resp = await litellm.acompletion(
                model="openai/test-model",
                api_base=server.base_url,
                api_key="sk-test",
                messages=MESSAGES,
                stream=True,
                timeout=2,
                num_retries=0,
            )
            parts = [c.choices[0].delta.content or "" async for c in resp if c.choices]
            resp2 = await litellm.acompletion(
                model="openai/test-model",
                api_base=server.base_url,
                api_key="sk-test",
                messages=MESSAGES,
                tools=TOOLS,
                stream=True,
                timeout=2,
                num_retries=0,
            )
            chunks = [c async for c in resp2]
            return "".join(parts), litellm.stream_chunk_builder(chunks, messages=MESSAGES)
        finally:
            # cached async clients are bound to this loop: close them before it goes away
            await litellm.close_litellm_async_clients()

    text, built = run_async(main())
    assert text == "async hello"
    assert json.loads(built.choices[0].message.tool_calls[0].function.arguments) == {"text": "x"}
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert server.requests[0].stream


# -- raw HTTP --------------------------------------------------------------------------


def test_models_endpoint_and_unknown_paths(server: ScriptedLLMServer) -> None:
    status, body = raw_http(server, "/v1/models")
    assert status == 200
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["test-model"]

    status, body = raw_http(server, "/v1/nope")
    assert status == 404 and "error" in body

    status, body = raw_http(server, "/v1/chat/completions", data=b"not json")
    assert status == 400 and "error" in body

    # /chat/completions without the /v1 prefix is accepted too
    payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": "yo"}]}).encode()
    status, body = raw_http(server, "/chat/completions", data=payload)
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "echo: yo"
    assert [r.path for r in server.requests][-1] == "/chat/completions"
    assert len(server.chat_requests) == 2


def test_keep_alive_mode_reuses_connection_and_stops_cleanly() -> None:
    srv = ScriptedLLMServer(keep_alive=True).start()
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=2)
    try:
        payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": "a"}]})
        for _ in range(2):
            conn.request("POST", "/v1/chat/completions", body=payload)
            resp = conn.getresponse()
            assert resp.getheader("Connection") is None
            assert json.loads(resp.read())["choices"][0]["message"]["content"] == "echo: a"
        # the handler thread is now parked on the idle keep-alive connection
        start = time.monotonic()
        srv.stop()
        assert time.monotonic() - start < 1
    finally:
        conn.close()
        srv.stop()
    assert not [t for t in threading.enumerate() if t.name.startswith("scripted-llm")]
