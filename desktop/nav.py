"""Navigation requests between views (the :class:`Navigator`), with nothing else imported.

Its own module so that the tray can be built before the rest of the desktop
(the bridge, the core services) is imported at all.
"""

from __future__ import annotations

from .qt import QObject, Signal


class Navigator(QObject):
    """Requests to open a view; the desktop controller routes them."""

    #: (page, argument): ("chat", session), ("memory", "memory:<rev>"), ("settings", ""), ...
    open = Signal(str, str)
    #: the quick chat asked to be hidden
    hide_popup = Signal()
