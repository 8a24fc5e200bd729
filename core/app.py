"""The composition root: the one place that builds memtray's object graph.

The CLI, the headless daemon, the desktop and the MCP server all build an
:class:`App` the same way, so every front end runs the same core functions.
Each service is built here from the collaborators it needs (the store, the git
projection, the LLM client, the clock, the live settings, the worker, the
notifier slot), never from the App itself, and is a typed attribute of the App.

The App owns the :class:`~memtray.core.base.worker.Worker`, the single writer:
every append to the log and every git write runs on it (the store and the git
writer check), whichever front end asked; and the
:class:`~memtray.core.base.scheduler.Scheduler`, the one timer: the maintenance
chores are registered on it here (:func:`add_maintenance`), and the reminder
service is given it for its own timer.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from memtray.core.agent.loop import Agent
from memtray.core.base import config as configmod
from memtray.core.base.clock import Clock, IdGenerator
from memtray.core.base.config import Config, Settings
from memtray.core.base.home import Home
from memtray.core.base.notify import NotifierSlot
from memtray.core.base.scheduler import Scheduler
from memtray.core.base.worker import Worker
from memtray.core.llm import catalogue
from memtray.core.llm.client import LLMClient
from memtray.core.llm.tools import ToolRegistry
from memtray.core.log.store import Store
from memtray.core.memory import tools as memory_tools
from memtray.core.memory.consolidation import ConsolidationService
from memtray.core.memory.dated import CheckIns, local_day
from memtray.core.memory.service import MemoryService
from memtray.core.reminders.service import ReminderService
from memtray.core.reminders.tools import register_tools as register_reminder_tools
from memtray.core.sync.service import SyncService

if TYPE_CHECKING:
    from memtray.core.mcp.client import McpTools
    from memtray.core.search.service import SearchService

T = TypeVar("T")
log = logging.getLogger(__name__)

IDLE_SWEEP_SECONDS = 300.0
GC_SECONDS = 6 * 3600.0
SETTINGS_SECONDS = 2.0  # how soon a running instance sees a hand edit of config.toml
EMBED_SECONDS = 60.0  # how often a delivering instance makes sure the history embedding runs
CHECKIN_SECONDS = 900.0  # how often facts past their end leave memory and due checks are asked about
SYNC_CHECK_SECONDS = 60.0  # how often the instance asks whether an automatic sync is due


@dataclass
class App:
    home: Home
    store: Store
    settings: Settings
    clock: Clock
    llm: LLMClient
    agent: Agent
    tools: ToolRegistry
    worker: Worker
    notifier: NotifierSlot
    memory: MemoryService
    consolidation: ConsolidationService
    search: SearchService | None  # None when the index cannot open
    reminders: ReminderService
    scheduler: Scheduler  # the one timer: reminders and the maintenance chores (add_maintenance)
    mcp: McpTools | None = None  # other MCP servers' tools, from the first turn
    sync: SyncService | None = None  # sync with the user's other devices through a git remote

    @property
    def config(self) -> Config:
        """The settings in force now (see :class:`~memtray.core.base.config.Settings`)."""
        return self.settings.current

    @config.setter
    def config(self, cfg: Config) -> None:
        self.settings.replace(cfg)

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
            store.writer = worker
            settings = Settings(home, cfg, env=config is None)
            app = worker.call(lambda: _build(home, store, settings, clock, worker, llm, start_services))
            return app
        except BaseException:
            if worker is not None:
                worker.stop()
            store.close()
            raise

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self.worker.run(coro, timeout)

    def write(self, fn: Callable[[], T]) -> T:
        """Run a mutation ``fn`` on the worker (the single writer) and return its result."""
        return self.worker.call_here(fn)

    def searcher(self) -> SearchService:
        """The history search, or a SearchError saying it is unavailable (every door says the same)."""
        if self.search is None:
            from memtray.core.search.text import SearchError

            raise SearchError("history search is unavailable", hint=f"See the log in {self.home.logs} for why.")
        return self.search

    def start_background(self) -> None:
        """Start what only a long-lived instance runs (the daemon, the warm instance, the
        desktop): embedding the history for search by meaning. A one-shot command never
        calls it, so that work neither delays nor outlives the command. Idempotent."""
        if self.search is not None:
            self.search.start_embedding()

    def reconfigure(self, cfg: Config) -> list[str]:
        """Apply new settings (the Settings window, `config set` in or through the instance)."""
        return self.settings.replace(cfg)

    def refresh_settings(self) -> list[str]:
        """Pick up a hand edit of config.toml made since it was last read."""
        return self.settings.refresh()

    def close(self) -> None:
        # the timer first: no reminder job or chore starts while the services close
        for close in (self.mcp and self.mcp.close, self.scheduler.close, self.reminders.close,
                      self.consolidation.close, self.memory.close, self.search and self.search.close):
            if close:
                with contextlib.suppress(Exception):
                    close()
        self.worker.stop()
        self.store.close()

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _build(
    home: Home, store: Store, settings: Settings, clock: Clock, worker: Worker,
    llm: LLMClient | None, start: bool,
) -> App:
    """Wire every service (on the worker: start-up catch-up writes to the log and git)."""
    cfg = settings.current
    llm = llm or LLMClient(cfg, models_dir=catalogue.models_dir(home.root))
    tools = ToolRegistry()
    agent = Agent(store, llm, cfg, clock=clock, tools=tools)
    notifier = NotifierSlot()

    def follow(_old: Config, new: Config) -> None:
        llm.config = new
        agent.config = new

    settings.subscribe(follow)
    # Learn the configured provider's key now (queued on the worker, so before any turn's
    # redaction runs, and not on the way to the window): a key that lives only in the
    # keyring is then redacted exactly even in the first message of a fresh process.
    worker.call_soon(_prime_key, cfg)
    agent.before_turn.append(settings.refresh)  # a hand edit of config.toml counts from the next turn

    memory = MemoryService(store, home, clock)
    memory.projection.bind_writer(worker)
    if not store.readonly:
        memory.start()
    memory_tools.register(tools, memory, store, settings, today=lambda: local_day(clock.now(), agent.zone()))

    consolidation = ConsolidationService(store, memory, llm, settings, clock, worker, notifier, agent)
    if not store.readonly:
        consolidation.recover()
    consolidation.restore_backoff()  # after recover: an interrupted consolidation is a failed attempt too
    agent.after_turn.append(consolidation.after_turn)

    search = _build_search(home, store, settings, worker, tools, agent, start=start)
    if search is not None:
        search.may_spend = consolidation.upkeep.allows_background  # the daily budget of background upkeep
        consolidation.similarities = search.similarities  # the receipt check weighs rewordings by meaning too

    scheduler = Scheduler(worker)
    reminders = ReminderService(store, settings, clock, worker, notifier, agent, scheduler, can_start=start)
    register_reminder_tools(tools, reminders)

    from memtray.core.mcp.client import McpTools

    mcp = McpTools(home, tools, store, worker)  # starts mcp.toml's servers at the first turn
    agent.before_turn.append(mcp.before_turn)

    # facts past their end leave memory (a revision) before a turn builds its prompt
    checkins = CheckIns(memory, clock, agent.zone, notifier, lambda: store.readonly)
    agent.before_turn.append(checkins.expire)

    sync = SyncService(home, store, memory, settings, clock)
    app = App(home, store, settings, clock, llm, agent, tools, worker, notifier,
              memory, consolidation, search, reminders, scheduler, mcp, sync)
    add_maintenance(app)
    return app


def _prime_key(cfg: Config) -> None:
    if not cfg.model:
        return
    from memtray.core.base import keys

    try:
        keys.get_key(keys.provider_of(cfg.model))
    except Exception as exc:  # no keyring, a locked one: the turn that needs the key says so
        log.info("could not read the API key at start (%s); redaction learns it at first use", exc)


def _build_search(
    home: Home, store: Store, settings: Settings, worker: Worker, tools: ToolRegistry, agent: Agent,
    *, start: bool,
) -> SearchService | None:
    """The history search service with its tool (and recall for the agent); None when
    its index cannot be opened: search then says so, nothing else is affected."""
    from memtray.core.search.service import build

    # build() also makes a change of embedding_model start its backfill (a Settings listener)
    return build(home, store, tools, start=start, settings=settings, submit=worker.submit, agent=agent)


def add_maintenance(app: App) -> None:
    """Idle-session consolidation, settings refresh, git gc, dated facts, embedding and sync,
    on the App's timer (it runs only once delivery starts it: the daemon and the desktop)."""
    cons, memory, timer = app.consolidation, app.memory, app.scheduler
    timer.add_maintenance("idle-consolidation", IDLE_SWEEP_SECONDS, cons.idle_sweep)

    async def gc_when_idle() -> None:
        # git writes belong to the worker; skip while a consolidation is running
        if not cons.in_flight:
            memory.git.gc()

    timer.add_maintenance("git-gc", GC_SECONDS, gc_when_idle)
    timer.add_maintenance("settings", SETTINGS_SECONDS, app.settings.refresh)
    checkins = CheckIns(memory, app.clock, app.agent.zone, app.notifier, lambda: app.store.readonly)

    async def dated_facts() -> None:  # memory writes belong to the worker
        checkins.sweep()

    timer.add_maintenance("dated-facts", CHECKIN_SECONDS, dated_facts)
    # a delivering instance is long-lived (the desktop, the daemon): it embeds the history;
    # the later runs restart a backfill whose back-off after a failure is over
    timer.add_maintenance("embedding", EMBED_SECONDS, app.start_background)
    if app.sync is not None:  # runs off the worker: the network never blocks a write
        timer.add_maintenance("sync", SYNC_CHECK_SECONDS, app.sync.tick)
        app.settings.subscribe(lambda old, new: _sync_settings_changed(app, old, new))


SYNC_SETTINGS = ("sync_enabled", "sync_remote", "sync_interval_minutes")


def _sync_settings_changed(app: App, old: Config, new: Config) -> None:
    """A sync setting changed in a running desktop or daemon (Settings, `config set`): the
    automatic sync that is due under the new settings runs now, not at the next check; on a
    thread of its own (this listener runs on the thread that saved, often the worker)."""
    sync = app.sync
    if sync is None or not app.scheduler.running or not new.sync_enabled or not new.sync_remote:
        return
    if all(getattr(old, k) == getattr(new, k) for k in SYNC_SETTINGS):
        return
    import threading

    threading.Thread(target=sync.tick, name="memtray-sync", daemon=True).start()
