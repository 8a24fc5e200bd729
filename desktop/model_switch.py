"""The per-chat model switch: which model this conversation's turns go to.

A combo box in the quick chat's header and above the Chats page's conversation. Its first entry is the configured model
("Default"); the others are the models the user has named (the fallback model, the
models marked "Reads images"), the preset's models of the configured provider and, for
a server the user runs (``api_base``), the models that server lists (``GET /v1/models``,
asked once per address when its view is first shown, off the GUI thread). Choosing one appends ``session.model``
(core/log/chats.py) on the worker; the agent then sends that conversation's turns to it,
and the choice is remembered per session across restarts. The switch follows the log,
so a choice made elsewhere (``memtray chats model``) shows at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from memtray.core.base.config import Config, split_models
from memtray.core.log import chats

from . import providers
from .bridge import Follower
from .context import Context
from .forms import error_text
from .qt import QComboBox, Qt, QWidget, Signal


def offered(cfg: Config, served: list[str]) -> list[str]:
    """The models to offer besides the default, in order, each once (the configured one left out)."""
    p, _name = providers.detect(cfg.model, cfg.api_base)
    names = [cfg.fallback_model, *split_models(cfg.vision_models), *(providers.model_string(p, m) for m in p.models),
             *(providers.model_string(p, m) for m in served)]
    out: list[str] = []
    for name in names:
        if name and name != cfg.model and name not in out:
            out.append(name)
    return out


class ModelSwitch(QComboBox):
    #: a choice was stored (the model, "" for the default)
    chosen = Signal(str)
    #: choosing failed: the words to show
    failed = Signal(str)

    def __init__(self, ctx: Context, session: Callable[[], str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.session = session
        self.setToolTip("The model this conversation's replies come from")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.setMinimumContentsLength(12)
        #: the model chosen for the session shown ("" = the configured one)
        self.current = ""
        #: a server's model list by address, asked once
        self._served: dict[str, list[str]] = {}
        self._asked = False
        self.activated.connect(self._activated)
        self.feed = Follower(ctx.bridge, self._query, self._show, name="session-model", parent=self,
                             wants=lambda change: self.session() in change.sessions)
        ctx.bridge.on_config_change(lambda _cfg: self._fill())
        self._fill()
        self.feed.request()

    def refresh(self) -> None:
        """Ask again which model the session uses (after the session shown changed)."""
        self.feed.request()

    def _query(self) -> Callable[[], str | None]:
        store, session = self.ctx.app.store, self.session()
        return lambda: chats.model_of(store.state, session)  # on the worker

    def _show(self, model: str | None) -> None:
        self.current = model or ""
        self._fill()

    def models(self) -> list[str]:
        """What the list offers, the default ("") first."""
        return [str(self.itemData(i)) for i in range(self.count())]

    def _fill(self) -> None:
        cfg = self.ctx.app.config
        names = offered(cfg, self._served.get(cfg.api_base, []))
        if self.current and self.current not in names and self.current != cfg.model:
            names.insert(0, self.current)  # chosen elsewhere: shown although no list has it
        self.blockSignals(True)
        try:
            self.clear()
            self.addItem(f"Default ({_short(cfg.model) or 'none set'})", "")
            self.setItemData(0, f"The configured model: {cfg.model or 'none yet'}", Qt.ItemDataRole.ToolTipRole)
            for name in names:
                self.addItem(_short(name), name)
                self.setItemData(self.count() - 1, name, Qt.ItemDataRole.ToolTipRole)
            self.setCurrentIndex(max(self.findData(self.current), 0))
        finally:
            self.blockSignals(False)
        if self._asked:
            self.ask_server()  # the address may have changed

    def ask_server(self) -> None:
        """Ask the configured server for its models, once per address (the quick chat calls
        this when it is first shown, so starting the app sends no request)."""
        self._asked = True
        base = self.ctx.app.config.api_base.strip()
        if not base or base in self._served:
            return
        self._served[base] = []  # asked: once per address, whatever the answer
        from memtray.core.base.keys import get_key, provider_of
        from memtray.core.llm.models import list_models

        model = self.ctx.app.config.model

        def ask() -> list[str]:  # the keyring and the network: in a thread, never the GUI thread or the worker's loop
            return list_models(base, get_key(provider_of(model)) if model else None)

        def got(ids: list[str]) -> None:
            self._served[base] = ids
            if self.ctx.app.config.api_base.strip() == base:
                self._fill()

        # a server that does not answer leaves the list as it is: the configured model still works
        self.ctx.bridge.submit(asyncio.to_thread(ask), name="list-models", on_result=got, on_error=lambda _e: None)

    def _activated(self, index: int) -> None:
        model = str(self.itemData(index) or "")
        if model == self.current:
            return
        store, session = self.ctx.app.store, self.session()

        def stored(_m: Any) -> None:
            self.current = model
            self.chosen.emit(model)

        def refused(exc: BaseException) -> None:
            self.setCurrentIndex(max(self.findData(self.current), 0))
            self.failed.emit(error_text(exc))

        self.ctx.bridge.call(chats.choose_model, store, session, model, name="choose-model",
                             on_result=stored, on_error=refused)


def _short(model: str) -> str:
    """A model's name without its provider (``openai/gpt-4o`` -> ``gpt-4o``), for the narrow header."""
    return model.split("/", 1)[1] if "/" in model else model
