"""Provider errors are said once, in words: litellm's repeated class names never reach the user."""

from __future__ import annotations

from memtray.core.llm.client import load_litellm, translate


def test_a_server_error_is_said_once() -> None:
    litellm = load_litellm()
    exc = litellm.InternalServerError(
        message="InternalServerError: InternalServerError: OpenAIException - the upstream model crashed",
        llm_provider="openai", model="qwen")
    text = str(translate(exc, "openai/qwen"))
    assert text.count("InternalServerError") <= 1
    assert text.count("the upstream model crashed") == 1
    assert "InternalServerError: InternalServerError" not in text and "OpenAIException" not in text


def test_an_unknown_failure_names_its_kind_once() -> None:
    class WeirdError(Exception):
        pass

    text = str(translate(WeirdError("WeirdError: WeirdError: something odd"), "openai/qwen"))
    assert text == "openai/qwen: the provider failed (WeirdError): something odd"
