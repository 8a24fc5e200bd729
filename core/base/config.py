"""Settings: ``config.toml`` in the data home, typed, validated, with env overrides.

Secrets never live here (see :mod:`memtray.core.base.keys`). ``MEMTRAY_MODEL`` and
``MEMTRAY_API_BASE`` override the file for one process, and for one command forwarded
to a running instance (:func:`for_command`).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import tomli_w
from memtray.core.base import cmdenv
from memtray.core.base.errors import ConfigError
from memtray.core.base.fsutil import atomic_write, describe_oserror
from memtray.core.base.home import Home


@dataclass(frozen=True)
class Config:
    model: str = ""
    api_base: str = ""
    fallback_model: str = ""
    llm_timeout: float = 60.0
    llm_retries: int = 2
    max_tokens: int = 4096
    temperature: float = 0.7
    max_tool_iterations: int = 10
    memory_window: int = 100
    context_tokens: int = 0  # 0: ask litellm for the model's window
    drop_policy: str = "keep"  # keep | review
    #: a fact only the assistant's own words support (its receipt quotes no user message):
    #: hold for the user's confirmation (review kind "inferred"), or write it marked inferred
    inferred_facts: str = "hold"  # hold | write
    #: auto: a model too small to judge facts (resources/models/capability.toml) has its
    #: consolidations held for review; always: every model's; never: none (core/llm/capability.py)
    hold_consolidations: str = "auto"
    #: MEMORY.md size (characters) past which consolidation is asked to merge facts; never truncated
    memory_budget: int = 12_000
    idle_consolidate_minutes: int = 30
    consolidation_timeout: float = 120.0
    #: a day's limit for memory upkeep the user did not ask for (background consolidation,
    #: embedding the history): in US dollars where litellm knows the price, and in tokens
    #: (0: no limit). Past either, background upkeep waits for the next day or "Run now".
    upkeep_daily_usd: float = 0.0
    upkeep_daily_tokens: int = 0
    hotkey: str = "Ctrl+Alt+Space"
    timezone: str = ""  # empty: the system's
    reminder_grace_hours: float = 24.0
    launch_at_login: bool = False
    warm_instance: bool = True  # CLI commands that need the model start a background instance
    warm_instance_idle_minutes: float = 15.0  # ...which exits after this long without a request
    onboarded: bool = False
    #: embeddings for search by meaning: a litellm embedding model, "local" (the offline model of
    #: the [local] extra), "none" (keywords only), or "" (the offline model when it is installed)
    embedding_model: str = ""
    embedding_api_base: str = ""  # empty: api_base when the provider is the chat model's
    recall: bool = False  # give each turn a few relevant past messages
    recall_limit: int = 3
    #: sync (docs/SYNC.md): the git remote (a path, ssh or https address; never a password in it)
    sync_remote: str = ""
    sync_enabled: bool = False  # sync automatically while the desktop or daemon runs
    sync_interval_minutes: float = 15.0
    #: a new remote is encrypted: a device without sync keys makes them (in the OS keyring) at its
    #: first sync with a remote that holds nothing of memtray's; false: new remotes are in clear, as
    #: `memtray sync --clear` asks for one sync (docs/SYNC.md, "Encrypted remotes")
    sync_encrypt: bool = True
    #: where `memtray model download` fetches from (empty: https://huggingface.co; a mirror)
    model_hub: str = ""
    #: models that read images whatever litellm's list says (a local vision model through
    #: api_base: LM Studio, Ollama's llava or qwen-vl), comma-separated litellm model strings
    vision_models: str = ""

    @property
    def vision_model_list(self) -> frozenset[str]:
        """The models of :attr:`vision_models`."""
        return frozenset(split_models(self.vision_models))


def split_models(text: str) -> list[str]:
    """The model strings of a comma-separated list, in order, blanks and repeats dropped."""
    out: list[str] = []
    for name in text.split(","):
        name = name.strip()
        if name and name not in out:
            out.append(name)
    return out


_CHOICES = {"drop_policy": ("keep", "review"), "hold_consolidations": ("auto", "always", "never"),
            "inferred_facts": ("hold", "write")}
_RANGES: dict[str, tuple[float, float]] = {
    "llm_timeout": (1, 3600),
    "llm_retries": (0, 10),
    "max_tokens": (16, 1_000_000),
    "temperature": (0, 2),
    "max_tool_iterations": (1, 100),
    "memory_window": (4, 100_000),
    "memory_budget": (1_000, 190_000),
    "context_tokens": (0, 10_000_000),
    "idle_consolidate_minutes": (0, 100_000),
    "consolidation_timeout": (1, 3600),
    "upkeep_daily_usd": (0, 100_000),
    "upkeep_daily_tokens": (0, 10_000_000_000),
    "reminder_grace_hours": (0, 24 * 365),
    "warm_instance_idle_minutes": (0.01, 7 * 24 * 60),
    "recall_limit": (1, 20),
    "sync_interval_minutes": (1, 7 * 24 * 60),
}
log = logging.getLogger(__name__)
_USERINFO = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^/@\s:]+:[^/@\s]+@")

ENV_OVERRIDES = {"model": "MEMTRAY_MODEL", "api_base": "MEMTRAY_API_BASE"}


def keys() -> list[str]:
    return [f.name for f in fields(Config)]


def coerce(key: str, value: Any) -> Any:
    """Convert and validate one setting (strings from the CLI included)."""
    types = {f.name: f.type for f in fields(Config)}
    if key not in types:
        raise ConfigError(f"unknown setting {key!r}", hint=f"Known settings: {', '.join(keys())}")
    kind = types[key]
    try:
        if kind == "bool":
            if isinstance(value, str):
                low = value.strip().lower()
                if low not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    raise ValueError(value)
                out: Any = low in ("true", "1", "yes", "on")
            else:
                out = bool(value)
        elif kind == "int":
            if isinstance(value, bool):
                raise ValueError(value)
            out = int(value)
        elif kind == "float":
            out = float(value)
        else:
            out = str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be a {kind}, not {value!r}") from None
    if key in _CHOICES and out not in _CHOICES[key]:
        raise ConfigError(f"{key} must be one of {', '.join(_CHOICES[key])}, not {out!r}")
    if key in _RANGES:
        lo, hi = _RANGES[key]
        if not lo <= out <= hi:
            raise ConfigError(f"{key} must be between {lo:g} and {hi:g}, not {out}")
    if key == "sync_remote" and out and _USERINFO.search(out):
        raise ConfigError("sync_remote must not hold a password",
                          hint="Leave credentials out of the address; git's credential helper or ssh-agent "
                          "provides them.")
    if key == "model_hub" and out and not out.startswith(("https://", "http://")):
        raise ConfigError("model_hub must be an http(s) address", hint="e.g. https://huggingface.co or a mirror.")
    if key == "vision_models" and out:
        names = split_models(out)
        bad = next((n for n in names if len(n) > 200 or any(c.isspace() for c in n) or not n.isprintable()), None)
        if bad is not None:
            raise ConfigError(f"vision_models: {bad[:60]!r} is not a model name",
                              hint="Comma-separated litellm model strings, e.g. openai/llava,ollama/qwen2.5vl.")
        out = ",".join(names)
    if key == "timezone" and out:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(out)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"unknown time zone {out!r}", hint="Use an IANA name like Europe/Berlin.") from None
    return out


def load(home: Home, *, env: bool = True, command: bool = True) -> Config:
    """config.toml, typed and checked; ``env``: with this process's MEMTRAY_MODEL and
    MEMTRAY_API_BASE, and (``command``) those of the forwarded command being served
    (:func:`for_command`; live settings read without them, see :class:`Settings`)."""
    data: dict[str, Any] = {}
    try:
        raw = home.config.read_bytes()
    except FileNotFoundError:
        raw = b""
    except OSError as exc:
        raise ConfigError(f"cannot read {home.config}: {describe_oserror(exc)}") from exc
    if raw:
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{home.config} is not valid TOML: {exc}", hint="Fix or delete the file; defaults are used then."
            ) from exc
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key in keys():
            values[key] = coerce(key, value)
    cfg = Config(**values)
    if env:
        over: dict[str, Any] = {k: os.environ[v] for k, v in ENV_OVERRIDES.items() if os.environ.get(v)}
        if over:
            cfg = replace(cfg, **over)
        if command:
            cfg = for_command(cfg)
    return cfg


def for_command(cfg: Config) -> Config:
    """``cfg`` as the command being served sees it: with the ``MEMTRAY_MODEL`` and
    ``MEMTRAY_API_BASE`` it was forwarded with (see :mod:`memtray.core.base.cmdenv`);
    ``cfg`` itself outside a forwarded command."""
    over: dict[str, Any] = {k: v for k, var in ENV_OVERRIDES.items() if (v := cmdenv.command_value(var))}
    return replace(cfg, **over) if over else cfg


def save(home: Home, cfg: Config) -> None:
    """Write ``cfg`` (the settings that differ from the defaults) in one atomic write; the text
    is read back before it replaces the file, so config.toml is never left torn or unreadable."""
    default = Config()
    body = {f.name: getattr(cfg, f.name) for f in fields(Config) if getattr(cfg, f.name) != getattr(default, f.name)}
    text = tomli_w.dumps(body)
    if tomllib.loads(text) != body:  # tomli_w wrote something it cannot read back: a bug, never a write
        raise ConfigError(f"refusing to write {home.config}: the settings did not survive a round trip")
    home.create()
    atomic_write(home.config, text)


def set_value(home: Home, key: str, value: Any) -> Config:
    return set_values(home, {key: value})


def set_values(home: Home, values: Mapping[str, Any]) -> Config:
    """Merge ``values`` onto config.toml as it is now on disk (what another door wrote meanwhile
    stays), validated as a whole before one atomic write."""
    cfg = replace(load(home, env=False), **{key: coerce(key, value) for key, value in values.items()})
    save(home, cfg)
    return cfg


#: settings a running instance does not apply live (the desktop registers the hotkey and
#: the login item from its Settings window); ``config set`` says a restart is needed
RESTART_NEEDED: frozenset[str] = frozenset({"hotkey", "launch_at_login"})

Listener = Callable[[Config, Config], None]


class Settings:
    """The live settings of one App. Services keep this object and read
    :attr:`current` when they act, so a change made through any door (the CLI,
    a forwarded command, the Settings window, a hand edit of config.toml picked
    up by :meth:`refresh`) takes effect at once. Listeners hear of every change.
    A forwarded command that brought its own model or API base sees them in
    :attr:`current` (:func:`for_command`); the instance's settings stay as they are.
    """

    def __init__(self, home: Home, current: Config, *, env: bool = True) -> None:
        self.home = home
        self._current = current
        self._env = env
        self._stamp = self._file_stamp()
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    @property
    def current(self) -> Config:
        """The settings in force for whoever reads them now (a forwarded command's own model)."""
        return for_command(self._current)

    def subscribe(self, fn: Listener) -> None:
        self._listeners.append(fn)

    def replace(self, cfg: Config) -> list[str]:
        """Use ``cfg`` from now on; returns the names of the settings that changed."""
        with self._lock:
            old, self._current = self._current, cfg
            self._stamp = self._file_stamp()
        changed = [f.name for f in fields(Config) if getattr(old, f.name) != getattr(cfg, f.name)]
        if changed:
            for fn in list(self._listeners):
                fn(old, cfg)
        return changed

    def refresh(self) -> list[str]:
        """Reload config.toml if it changed on disk since it was last read (a hand edit,
        or `config set` from a process that does not serve this one)."""
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return []
        try:
            # the instance's own settings, never the command's that may be reading them now
            cfg = load(self.home, env=self._env, command=False)
        except ConfigError:
            self._stamp = stamp  # a broken edit: keep what runs, say it once
            log.warning("config.toml changed but cannot be read; keeping the running settings")
            return []
        return self.replace(cfg)

    def _file_stamp(self) -> bytes | None:
        # the content itself (a few hundred bytes): two edits within the file system's
        # timestamp granularity, of the same size, are still told apart
        try:
            return self.home.config.read_bytes()
        except OSError:
            return None
