"""What every hotkey backend provides, and the errors they report."""

from __future__ import annotations

from memtray.core.base.errors import EnvironmentProblem

from ..qt import QObject, Signal
from .keyspec import HotkeySpec


class HotkeyError(EnvironmentProblem):
    """The hotkey could not be registered."""

    def __init__(self, message: str, *, conflict: bool = False, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.conflict = conflict


class Backend(QObject):
    """One way of getting a global hotkey. Subclasses set ``name`` and ``label``."""

    name = "base"
    label = "base"
    activated = Signal()
    #: asynchronous registration outcome (backends whose ``register`` returns False)
    registered = Signal()
    failed = Signal(object)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why this backend cannot work here, or None if it may."""
        return None

    def register(self, spec: HotkeySpec) -> bool:
        """Grab ``spec``. True: done. False: pending (``registered``/``failed`` follow).

        Raises :class:`HotkeyError` when it fails at once.
        """
        raise NotImplementedError

    def unregister(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.unregister()
