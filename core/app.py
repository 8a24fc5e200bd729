"""The composition root: one object wiring store, config, LLM, agent and services.

The CLI, the headless daemon and the desktop all build an :class:`App` the same
way, so every front end runs the same core functions. The app owns the
:class:`~memtray.core.base.worker.Worker`; async work is run there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memtray.core.agent.loop import Agent
from memtray.core.base import config as configmod
from memtray.core.base.clock import Clock, IdGenerator
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.base.worker import Worker
from memtray.core.llm.client import LLMClient
from memtray.core.llm.tools import ToolRegistry
from memtray.core.log.store import Store

T = TypeVar("T")


@dataclass
class App:
    home: Home
    store: Store
    config: Config
    clock: Clock
    llm: LLMClient
    agent: Agent
    tools: ToolRegistry
    worker: Worker
    services: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(
        cls,
        home: Home,
        *,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        config: Config | None = None,
        llm: LLMClient | None = None,
        start_services: bool = True,
    ) -> App:
        clock = clock or Clock()
        cfg = config or configmod.load(home)
        store = Store.open(home, clock=clock, ids=ids)
        worker: Worker | None = None
        try:
            worker = Worker()
            llm = llm or LLMClient(cfg)
            tools = ToolRegistry()
            agent = Agent(store, llm, cfg, clock=clock, tools=tools)
            app = cls(home, store, cfg, clock, llm, agent, tools, worker)
            install_services(app, start=start_services)
            return app
        except BaseException:
            if worker is not None:
                worker.stop()
            store.close()
            raise

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self.worker.run(coro, timeout)

    def reconfigure(self, cfg: Config) -> None:
        """Apply new settings (from the settings window or `config set` via IPC)."""
        self.config = cfg
        self.llm.config = cfg
        self.agent.config = cfg
        for svc in self.services.values():
            hook = getattr(svc, "reconfigure", None)
            if hook is not None:
                hook(cfg)

    def close(self) -> None:
        for svc in reversed(list(self.services.values())):
            close = getattr(svc, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()
        self.worker.stop()
        self.store.close()

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def install_services(app: App, *, start: bool = True) -> None:
    """Wire the services (memory, consolidation, search, reminders) and idle maintenance."""
    import importlib

    for name in SERVICE_MODULES:
        importlib.import_module(f"memtray.core.{name}").install(app, start=start)
    reminders = app.services.get("reminders")
    if reminders is not None:
        add_maintenance(app, reminders)


#: Modules with an ``install(app, start=...)`` function, in dependency order.
SERVICE_MODULES: tuple[str, ...] = (
    "memory.service", "memory.consolidation", "search.index", "reminders.service",
)

IDLE_SWEEP_SECONDS = 300.0
GC_SECONDS = 6 * 3600.0


def add_maintenance(app: App, reminders: Any) -> None:
    """Idle-session consolidation and git gc, on the reminders' scheduler (daemon/desktop only)."""
    cons = app.services.get("consolidation")
    memory = app.services.get("memory")
    if cons is not None:
        reminders.add_maintenance("idle-consolidation", IDLE_SWEEP_SECONDS, cons.idle_sweep)
    if memory is not None and cons is not None:

        async def gc_when_idle() -> None:
            # git writes belong to the worker; skip while a consolidation is running
            if not cons.in_flight:
                memory.git.gc()

        reminders.add_maintenance("git-gc", GC_SECONDS, gc_when_idle)
