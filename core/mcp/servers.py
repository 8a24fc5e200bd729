"""The MCP servers memtray itself may use: ``mcp.toml`` in the data home, and the user's consent.

One table per server::

    [servers.time]
    command = "uvx"
    args = ["mcp-server-time"]
    env = { TZ = "Europe/Paris" }   # optional
    allowed = true                   # set by `memtray mcp allow time`
    timeout = 30                     # seconds per call (optional)

    [servers.docs]
    url = "http://127.0.0.1:9000/mcp"

The list is its own file rather than part of config.toml because ``config set``
rewrites config.toml from the typed settings; nothing rewrites this file except
``memtray mcp allow/deny``, which change only the ``allowed`` member.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
from memtray.core.base.errors import ConfigError
from memtray.core.base.fsutil import atomic_write
from memtray.core.base.home import Home

FILE = "mcp.toml"
NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
CALL_TIMEOUT = 30.0


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    allowed: bool = False
    timeout: float = CALL_TIMEOUT

    def describe(self) -> str:
        return self.url or " ".join([self.command, *self.args])


def path(home: Home) -> Path:
    return home.root / FILE


def _read(home: Home) -> dict[str, Any]:
    try:
        raw = path(home).read_bytes()
    except FileNotFoundError:
        return {}
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path(home)} is not valid TOML: {exc}", hint="Fix the file; no MCP server is used until then.") from None
    return data


def load(home: Home) -> list[ServerSpec]:
    """Every server in mcp.toml (none when there is no file), checked."""
    servers = _read(home).get("servers") or {}
    if not isinstance(servers, dict):
        raise ConfigError(f"{path(home)}: `servers` must be a table of [servers.NAME] tables")
    return [_spec(name, body, home) for name, body in servers.items()]


def _spec(name: str, body: Any, home: Home) -> ServerSpec:
    where = f"{path(home)} [servers.{name}]"
    if not NAME.match(name):
        raise ConfigError(f"{where}: a server name is 1-32 letters, digits, - or _")
    if not isinstance(body, dict):
        raise ConfigError(f"{where} must be a table")
    command, url = body.get("command", ""), body.get("url", "")
    args, env = body.get("args", []), body.get("env", {})
    if not isinstance(command, str) or not isinstance(url, str) or bool(command) == bool(url):
        raise ConfigError(f"{where}: give either `command` (with `args`) or `url`")
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: `url` must be an http(s) URL")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: `args` must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ConfigError(f"{where}: `env` must be a table of strings")
    timeout = body.get("timeout", CALL_TIMEOUT)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not 0.1 <= timeout <= 3600:
        raise ConfigError(f"{where}: `timeout` is seconds, 0.1 to 3600")
    return ServerSpec(name, command, tuple(args), dict(env), url, body.get("allowed") is True, float(timeout))


def allowed_now(home: Home, name: str) -> bool:
    """The consent as the file says now (``memtray mcp allow`` takes effect without a restart)."""
    try:
        return any(s.name == name and s.allowed for s in load(home))
    except ConfigError:
        return False


def set_allowed(home: Home, name: str, allowed: bool) -> ServerSpec:
    data = _read(home)
    servers = data.get("servers") or {}
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none"
        raise ConfigError(f"no MCP server named {name!r} in {path(home)}", hint=f"Servers listed there: {known}.")
    servers[name]["allowed"] = allowed
    atomic_write(path(home), tomli_w.dumps(data))
    return _spec(name, servers[name], home)
