"""A conversation's own model and the user's "reads images" override, through the real
litellm client over HTTP to the scripted server: the request names the model chosen for
that conversation (others keep the configured one), and an image reaches a model litellm
does not know to read images once the user says it does (nothing is sent or logged before)."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.agent.loop import NoVision
from memtray.core.app import App
from memtray.core.base import config as configmod
from memtray.core.base.config import Config
from memtray.core.base.errors import ConfigError
from memtray.core.base.home import Home
from memtray.core.log import chats
from memtray.core.log.attachments import prepare

from tests.fixtures.llm_server import ScriptedLLMServer, reply
from tests.fixtures.tiny_files import png

LOCAL_VISION = "openai/llava-v1.6-local"  # what LM Studio or Ollama would call it: unknown to litellm


def _open(home: Home, server: ScriptedLLMServer, **over: Any) -> App:
    cfg = Config(model="openai/configured", api_base=server.base_url, llm_retries=0, llm_timeout=10.0,
                 idle_consolidate_minutes=0, **over)
    return App.open(home, config=cfg, start_services=False)


def test_each_conversation_goes_to_its_own_model(home: Home, llm_server: ScriptedLLMServer) -> None:
    llm_server.script(reply("from the chosen one"), reply("from the configured one"), reply("configured again"))
    app = _open(home, llm_server)
    try:
        app.worker.call(lambda: chats.choose_model(app.store, "chat-a", "openai/chosen"))
        got = app.run(app.agent.turn("chat-a", "hi", stream=False))
        app.run(app.agent.turn("quick", "hi", stream=False))
        assert got.reply == "from the chosen one"
        app.worker.call(lambda: chats.choose_model(app.store, "chat-a", ""))  # back to the setting
        app.run(app.agent.turn("chat-a", "and now?", stream=False))
        ctx_models = [r.data["model"] for r in app.store.log.records() if r.type == "context.changed"]
    finally:
        app.close()
    assert [r["model"] for r in llm_server.requests] == ["chosen", "configured", "configured"]
    assert ctx_models[0] == "openai/chosen"  # the recorded prompt context names it (prompt time travel)


def test_the_choice_survives_a_restart(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _open(home, llm_server)
    try:
        app.worker.call(lambda: chats.choose_model(app.store, "chat-a", "openai/chosen"))
    finally:
        app.close()
    llm_server.script(reply("ok"))
    app = _open(home, llm_server)
    try:
        app.run(app.agent.turn("chat-a", "hi", stream=False))
    finally:
        app.close()
    assert llm_server.requests[-1]["model"] == "chosen"


def test_an_image_reaches_a_model_marked_reads_images(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = App.open(home, config=Config(model=LOCAL_VISION, api_base=llm_server.base_url, llm_retries=0,
                                       llm_timeout=10.0, idle_consolidate_minutes=0), start_services=False)
    try:
        with pytest.raises(NoVision):  # litellm's list does not know it: refused before anything is sent
            app.run(app.agent.turn("quick", "what is this?", stream=False, attachments=[prepare(png(), "a.png")]))
        assert llm_server.requests == [] and app.store.state.session("quick").count == 0
        app.config = Config(model=LOCAL_VISION, api_base=llm_server.base_url, llm_retries=0, llm_timeout=10.0,
                            idle_consolidate_minutes=0, vision_models=f"ollama/other, {LOCAL_VISION}")
        llm_server.script(reply("A red square."))
        got = app.run(app.agent.turn("quick", "what is this?", stream=False,
                                     attachments=[prepare(png(), "a.png")]))
    finally:
        app.close()
    assert got.reply == "A red square."
    parts = [m for m in llm_server.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_the_setting_is_checked(home: Home) -> None:
    cfg = configmod.set_value(home, "vision_models", " ollama/llava ,,openai/x, ollama/llava")
    assert cfg.vision_models == "ollama/llava,openai/x"
    assert cfg.vision_model_list == {"ollama/llava", "openai/x"}
    with pytest.raises(ConfigError, match="is not a model name"):
        configmod.set_value(home, "vision_models", "ollama/llava, two words")
    assert configmod.load(home).vision_models == "ollama/llava,openai/x"  # the refused value wrote nothing
