"""Provider presets for settings and onboarding (pure: a model string in, a form out)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Provider:
    id: str
    label: str
    prefix: str  # litellm provider prefix, with the slash
    models: tuple[str, ...]
    api_base: str = ""
    base_editable: bool = False
    needs_key: bool = True
    help: str = ""


PROVIDERS: tuple[Provider, ...] = (
    Provider("openai", "OpenAI", "openai/", ("gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1", "gpt-4o"),
             help="Keys: platform.openai.com → API keys."),
    Provider("anthropic", "Anthropic", "anthropic/",
             ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"),
             help="Keys: console.anthropic.com → API keys."),
    Provider("openrouter", "OpenRouter", "openrouter/",
             ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4.5", "meta-llama/llama-3.3-70b-instruct"),
             help="One key for many models: openrouter.ai → Keys."),
    Provider("ollama", "Ollama (on this computer)", "ollama_chat/", ("llama3.2", "qwen2.5", "mistral"),
             api_base="http://localhost:11434", base_editable=True, needs_key=False,
             help="No key needed. Start Ollama and pull a model first (ollama pull llama3.2)."),
    Provider("compatible", "OpenAI-compatible server", "openai/", (), api_base="http://localhost:8000/v1",
             base_editable=True, needs_key=False,
             help="LM Studio, vLLM, llama.cpp server, a company gateway… Enter its base URL and model name."),
    Provider("custom", "Other (any litellm model string)", "", (), base_editable=True,
             help="Write the full litellm model string, e.g. gemini/gemini-2.0-flash or groq/llama-3.3-70b."),
)
BY_ID = {p.id: p for p in PROVIDERS}


def detect(model: str, api_base: str) -> tuple[Provider, str]:
    """The preset a configured model belongs to, and the model name inside it."""
    if not model:
        return BY_ID["openai"], ""
    for p in PROVIDERS:
        if p.id in ("compatible", "custom"):
            continue
        if model.startswith(p.prefix):
            if p.id == "openai" and api_base:
                return BY_ID["compatible"], model[len(p.prefix):]
            return p, model[len(p.prefix):]
    if model.startswith("ollama/"):
        return BY_ID["ollama"], model.split("/", 1)[1]
    return BY_ID["custom"], model


def model_string(provider: Provider, name: str) -> str:
    name = name.strip()
    if not name or provider.id == "custom":
        return name
    if name.startswith(provider.prefix):
        return name
    return provider.prefix + name
