"""What every desktop view gets: the core App, the worker bridge, the theme, navigation.

Building a :class:`Context` makes the bridge follow the App's store, so every
view built with it receives the log's changes (see :mod:`.bridge`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .bridge import Bridge
from .qt import QObject, Signal
from .theme import Theme


class Navigator(QObject):
    """Requests to open a view; the desktop controller routes them."""

    #: (page, argument): ("chat", session), ("memory", "memory:<rev>"), ("settings", ""), ...
    open = Signal(str, str)
    #: the quick chat asked to be hidden
    hide_popup = Signal()


@dataclass
class Context:
    app: Any  # memtray.core.app.App
    bridge: Bridge
    theme: Theme
    nav: Navigator

    def __post_init__(self) -> None:
        self.bridge.follow(self.app.store)

