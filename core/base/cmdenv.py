"""The environment of one forwarded command: its model, API base and provider keys.

A command forwarded to the running instance (:mod:`memtray.core.base.ipc`) carries
the variables that choose its model and credentials: ``MEMTRAY_MODEL``,
``MEMTRAY_API_BASE`` and every ``*_API_KEY`` it has. The instance uses them for that
command only: they live in a context variable of the thread that serves the command
(and of the tasks it starts on the worker, which copy it), read by
:func:`memtray.core.base.config.for_command` and :func:`memtray.core.base.keys.get_key`
through :func:`getenv`; they are never put into the instance's ``os.environ``, never
logged (a key is added to the redaction list as it arrives) and never written. What a
command does not set comes from the instance's own environment; the background
instance is started without any of them (:func:`without_carried`), so there the
command's own environment is all there is.

Other provider variables litellm reads from the process itself (``OPENAI_BASE_URL``,
``AZURE_API_VERSION``: any ``*_API_BASE``, ``*_BASE_URL``, ``*_API_VERSION``) cannot
change for one command. The command sends a digest of each it has; the instance
compares them with its own (:func:`compare`). A command that needs the model is
declined before it starts when they differ, so it can run on its own instead; any
other command that reaches the model with them differing fails there, naming them
(:func:`check_model_call`). Never a silent substitution.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field

#: Settings a command may set for itself (see config.ENV_OVERRIDES).
MODEL_VARS = ("MEMTRAY_MODEL", "MEMTRAY_API_BASE")
_KEY_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,62}_API_KEY$")
_PROCESS_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,62}_(?:API_BASE|BASE_URL|API_VERSION)$")
MAX_VALUE = 8192
MAX_NAMES = 64


def carried(name: str) -> bool:
    """A variable a forwarded command carries and the instance uses for that command."""
    return name in MODEL_VARS or bool(_KEY_NAME.match(name))


def process_only(name: str) -> bool:
    """A provider variable litellm reads from the process: it cannot change for one command."""
    return name not in MODEL_VARS and bool(_PROCESS_NAME.match(name))


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


class BadCommandEnv(ValueError):
    """A request's ``cmdenv`` is not what a memtray command sends."""


@dataclass(frozen=True)
class CommandEnv:
    """What a forwarded command brought: values it set, digests of the process-only ones,
    and (filled in by the instance) which of those differ from the instance's own."""

    values: Mapping[str, str] = field(default_factory=dict)
    digests: Mapping[str, str] = field(default_factory=dict)
    uses_model: bool = False
    differs: tuple[str, ...] = ()

    def describe_differs(self) -> str:
        names = ", ".join(self.differs)
        one = len(self.differs) == 1
        return (f"{names} {'is' if one else 'are'} not the same for this command as for the running memtray, "
                f"and litellm reads {'it' if one else 'them'} from the instance's own environment: "
                f"{'it' if one else 'they'} cannot change for one command")


def collect(environ: Mapping[str, str] | None = None, *, uses_model: bool) -> dict[str, object]:
    """What a command sends along (the request's ``cmdenv``)."""
    env = os.environ if environ is None else environ
    values = {k: v for k, v in env.items() if v and carried(k)}
    digests = {k: digest(v) for k, v in env.items() if v and process_only(k)}
    return {"set": values, "digests": digests, "model": uses_model}


def parse(raw: object) -> CommandEnv:
    """Validate a request's ``cmdenv`` at the door (:class:`BadCommandEnv` when it is not
    one); a key it carries is redacted wherever it appears from now on."""
    from memtray.core.base.redact import add_known_secret

    if raw is None:
        return CommandEnv()
    if not isinstance(raw, dict):
        raise BadCommandEnv("cmdenv is not an object")
    values, digests, model = raw.get("set", {}), raw.get("digests", {}), raw.get("model", False)
    if not isinstance(values, dict) or not isinstance(digests, dict) or not isinstance(model, bool):
        raise BadCommandEnv("cmdenv has the wrong shape")
    if len(values) > MAX_NAMES or len(digests) > MAX_NAMES:
        raise BadCommandEnv("cmdenv names too many variables")
    for name, value in values.items():
        if not isinstance(name, str) or not carried(name):
            raise BadCommandEnv(f"cmdenv may not set {str(name)[:64]!r}")
        if not isinstance(value, str) or not value or len(value) > MAX_VALUE or "\0" in value:
            raise BadCommandEnv(f"cmdenv's value of {name} is not a usable string")
    for name, value in digests.items():
        if not isinstance(name, str) or not process_only(name):
            raise BadCommandEnv(f"cmdenv may not compare {str(name)[:64]!r}")
        if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
            raise BadCommandEnv(f"cmdenv's digest of {name} is not a SHA-256")
    for name, value in values.items():
        if name.endswith("_API_KEY"):
            add_known_secret(value)
    return CommandEnv(dict(values), dict(digests), model)


def compare(env: CommandEnv, *, strict: bool, environ: Mapping[str, str] | None = None) -> CommandEnv:
    """``env`` with :attr:`CommandEnv.differs` filled in against this process's environment.

    A variable the command sets must have the instance's value; ``strict`` (the background
    instance, whose environment is whichever command's started it) also counts one only
    the instance has."""
    own = os.environ if environ is None else environ
    mine = {k: digest(v) for k, v in own.items() if v and process_only(k)}
    differs = {n for n, d in env.digests.items() if mine.get(n) != d}
    if strict:
        differs |= {n for n in mine if n not in env.digests}
    return CommandEnv(env.values, env.digests, env.uses_model, tuple(sorted(differs)))


_current: ContextVar[CommandEnv | None] = ContextVar("memtray_command_env", default=None)


@contextlib.contextmanager
def scope(env: CommandEnv) -> Iterator[None]:
    """Run this thread's command (and the tasks it starts) with ``env``."""
    token = _current.set(env)
    try:
        yield
    finally:
        _current.reset(token)


def command_value(name: str) -> str | None:
    """The value the command being served set for ``name`` (None: it set none, or this
    is not a forwarded command)."""
    env = _current.get()
    return env.values.get(name) if env is not None else None


def getenv(name: str) -> str | None:
    """``name`` as the current command sees it: its own value, else this process's."""
    return command_value(name) or os.environ.get(name) or None


def check_model_call() -> None:
    """Raise when the command being served may not reach the model from this instance
    (its process-only provider variables differ from the instance's)."""
    env = _current.get()
    if env is not None and env.differs:
        from memtray.core.base.errors import LLMError

        err = LLMError(env.describe_differs())
        err.hint = ("Set them the same way for both, use `memtray config set api_base …`, "
                    "or quit the running memtray (`memtray quit`) and run the command again.")
        raise err


def without_carried(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without what a command carries (the background instance's environment:
    each command brings its own)."""
    return {k: v for k, v in environ.items() if not carried(k)}
