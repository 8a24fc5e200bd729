"""What every desktop view gets: the core App, the worker bridge, the theme, navigation.

Building a :class:`Context` makes the bridge follow the App's store, so every
view built with it receives the log's changes and the settings' (see :mod:`.bridge`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .bridge import Bridge
from .nav import Navigator
from .theme import Theme

if TYPE_CHECKING:  # imported for its type only: the tray shows before core's services load
    from memtray.core.app import App


@dataclass
class Context:
    app: App
    bridge: Bridge
    theme: Theme
    nav: Navigator

    def __post_init__(self) -> None:
        self.bridge.follow(self.app.store)
        self.bridge.follow_settings(self.app.settings)


__all__ = ["Context", "Navigator"]
