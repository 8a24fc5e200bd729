"""The error hierarchy: one root, split into what the user can fix and bugs.

Errors from the OS, dulwich, litellm and keyring are translated into these at
the boundary of the module that calls them, so callers (CLI, desktop) can show
``str(error)`` as a plain one-line reason plus ``error.hint`` for what to do.
"""

from __future__ import annotations


class MemtrayError(Exception):
    """Root of every error memtray raises on purpose."""

    #: What the user can do about it (shown under the message).
    hint: str = ""
    #: Process exit status the CLI uses for this error.
    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class EnvironmentProblem(MemtrayError):
    """Something outside memtray the user can fix: disk full, no keyring, provider refused."""


class Bug(MemtrayError):
    """An internal invariant failed. Report it."""

    hint = "This is a bug in memtray; please report it with `memtray doctor` output."


# --- data home -------------------------------------------------------------------------


class AlreadyRunning(EnvironmentProblem):
    """Another process holds the data home's writer lock."""

    hint = "Close the other memtray (or use `memtray quit`), or point MEMTRAY_HOME elsewhere."


class UnsafePath(EnvironmentProblem):
    """A path inside the data home is a symlink or has unsafe permissions."""

    hint = "Run `memtray doctor --repair`: it removes links planted in the data home (never what they point to)."


# --- front ends ------------------------------------------------------------------------


class NoRenderer(EnvironmentProblem):
    """Charts are drawn by the desktop's toolkit (Qt), and it is not installed. Here, not in
    the CLI, because the desktop raises it and the desktop never imports the CLI."""

    hint = "Install PySide6 (pip install PySide6-Essentials; `pip install memtray` brings it), or leave out --plot."


# --- event log -------------------------------------------------------------------------


class LogError(MemtrayError):
    """Base of event-log errors."""


class LogWriteError(LogError, EnvironmentProblem):
    """An append could not be made durable (ENOSPC, EIO, ...). Nothing was acknowledged."""

    hint = "Free some disk space or check the disk, then try again; nothing was lost."


class LogCorrupt(LogError, EnvironmentProblem):
    """A record in the middle of the log is damaged; the log is opened read-only."""

    hint = "Run `memtray doctor` to see the damaged record and `memtray doctor --repair` to fix it."


class LogReadOnly(LogError, EnvironmentProblem):
    """A write was attempted on a log opened read-only (damaged, or opened for reading)."""

    hint = "Run `memtray doctor` for details."


class UnknownEventVersion(LogError, EnvironmentProblem):
    """An event was written by a newer memtray than this one."""

    hint = "Upgrade memtray; the event is kept untouched."


# --- configuration and secrets ---------------------------------------------------------


class ConfigError(EnvironmentProblem):
    """config.toml is unreadable or a value is invalid."""


class NoSecureKeyring(EnvironmentProblem):
    """No secure keyring backend is available; keys are never stored in plaintext."""

    hint = (
        "Install and unlock a keyring service (GNOME Keyring / KWallet via Secret Service, "
        "macOS Keychain, Windows Credential Locker), or set the provider's environment "
        "variable (e.g. OPENAI_API_KEY) instead."
    )


class KeyringError(EnvironmentProblem):
    """The keyring backend refused or failed."""


# --- LLM -------------------------------------------------------------------------------


class LLMError(EnvironmentProblem):
    """The model provider failed; the message says how."""

    hint = "Check the model, API base and key with `memtray config get` / `memtray key set`."


class LLMAuthError(LLMError):
    hint = "The provider rejected the API key: set a valid one with `memtray key set PROVIDER`."


class LLMRateLimited(LLMError):
    hint = "The provider is rate-limiting; wait a moment and try again."

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LLMTimeout(LLMError):
    hint = "The provider did not answer in time; try again or raise `llm_timeout` in config."


class LLMConnectionError(LLMError):
    hint = "Could not reach the provider: check `api_base`, your network, or that the local server runs."


class LLMBadResponse(LLMError):
    hint = "The provider sent a reply memtray could not read; try again or another model."


class LLMCancelled(MemtrayError):
    """The user stopped the reply."""


# --- text entering the log -------------------------------------------------------------


class InvalidText(MemtrayError):
    """A text meant for an event is not valid Unicode (a lone surrogate) or holds a NUL.

    Refused before anything is written: such text cannot be stored in git, searched,
    or sent to a model, so one of them would break every later command.
    """

    hint = "Nothing was written. Remove the invalid characters (or the undecodable bytes) and try again."
