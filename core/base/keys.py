"""API keys: the OS keyring (service ``memtray``, username = provider), env overrides.

A provider's usual environment variable (``OPENAI_API_KEY``, ...) wins over the
keyring; in a running instance, the one a forwarded command brought wins for that
command (:mod:`memtray.core.base.cmdenv`). When no secure keyring backend exists we say so and refuse: a key is
never written in plaintext anywhere by memtray. Every key read or stored here is
also redacted exactly wherever it appears (:func:`redact.add_known_secret`).
"""

from __future__ import annotations

from memtray.core.base.cmdenv import getenv
from memtray.core.base.errors import KeyringError, NoSecureKeyring
from memtray.core.base.redact import add_known_secret

SERVICE = "memtray"

ENV_VARS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "ollama": "",
    "ollama_chat": "",
    "local": "",
}
#: Providers that run without any key.
KEYLESS = frozenset({"ollama", "ollama_chat", "local", "lm_studio", "hosted_vllm"})

_INSECURE_BACKENDS = ("fail.Keyring", "null.Keyring", "PlaintextKeyring", "EncryptedKeyring")


def provider_of(model: str) -> str:
    """The litellm provider prefix of a model string (``openai/gpt-4o`` -> ``openai``)."""
    if "/" in model:
        return model.split("/", 1)[0].lower()
    low = model.lower()
    if low.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return "openai"
    if low.startswith("claude"):
        return "anthropic"
    return "openai"


def backend_name() -> str:
    import keyring

    kr = keyring.get_keyring()
    return f"{type(kr).__module__}.{type(kr).__name__}"


def backend_is_secure() -> bool:
    import keyring

    kr = keyring.get_keyring()
    name = f"{type(kr).__module__}.{type(kr).__name__}"
    if any(name.endswith(bad) for bad in _INSECURE_BACKENDS):
        return False
    try:
        return float(getattr(kr, "priority", 0)) > 0
    except Exception:
        return False


def _require_secure() -> None:
    if not backend_is_secure():
        raise NoSecureKeyring(f"no secure keyring backend is available (found {backend_name()})")


def get_key(provider: str) -> str | None:
    """The key for ``provider``: its environment variable first, then the keyring."""
    var = ENV_VARS.get(provider, f"{provider.upper()}_API_KEY")
    value = getenv(var) if var else None
    if value:
        add_known_secret(value)
        return value
    if provider in KEYLESS:
        return None
    import keyring
    from keyring.errors import KeyringError as _KErr

    if not backend_is_secure():
        return None
    try:
        key = keyring.get_password(SERVICE, provider)
        add_known_secret(key)  # redacted exactly wherever it appears from now on
        return key
    except _KErr as exc:
        raise KeyringError(f"the keyring refused access: {exc}") from exc
    except Exception as exc:
        raise KeyringError(f"the keyring failed: {type(exc).__name__}: {exc}") from exc


def set_key(provider: str, secret: str) -> None:
    secret = secret.strip()
    if not secret:
        raise KeyringError("the key is empty; nothing was stored")
    _require_secure()
    import keyring

    add_known_secret(secret)
    try:
        keyring.set_password(SERVICE, provider, secret)
    except Exception as exc:
        raise KeyringError(f"the keyring refused to store the key: {type(exc).__name__}: {exc}") from exc


def delete_key(provider: str) -> bool:
    _require_secure()
    import keyring
    from keyring.errors import PasswordDeleteError

    try:
        keyring.delete_password(SERVICE, provider)
        return True
    except PasswordDeleteError:
        return False
    except Exception as exc:
        raise KeyringError(f"the keyring failed: {type(exc).__name__}: {exc}") from exc


def key_source(provider: str) -> str:
    """Where the key for ``provider`` would come from: env, keyring, none."""
    var = ENV_VARS.get(provider, f"{provider.upper()}_API_KEY")
    if var and getenv(var):
        return f"environment ({var})"
    if provider in KEYLESS:
        return "not needed"
    try:
        return "keyring" if get_key(provider) else "none"
    except KeyringError:
        return "keyring (unavailable)"
