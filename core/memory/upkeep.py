"""The guard on memory upkeep the user did not ask for: a daily budget and a loop stop.

*Budget.* ``upkeep_daily_usd`` and ``upkeep_daily_tokens`` (0: no limit) cap what memory
upkeep spends in a day (the usage ledger's ``upkeep`` group today, in the user's zone:
consolidations, redos, embedding the history, rebuilds). Past either, background work
(a consolidation memtray starts by itself, except one the model's context window needs;
the background embedding) waits: until the next day, or until the user clicks "Run now"
(:meth:`UpkeepGuard.run_now`, which lifts the limit for the rest of that day). What the user asks for directly (``memtray consolidate``,
a redo, ``history embed``, ``/new``) always runs, and counts. The user is told once a day.

*Loops.* A session whose automatic consolidation failed :data:`MAX_TRIES` times in a row
(the log's ``consolidation.failed`` counts the attempts, so this survives a restart), or
whose consolidations completed :data:`MAX_TRIES` times in a row without changing anything
(no fact and no diary entry), is not consolidated by itself again until the user asks
(:meth:`UpkeepGuard.run_now`, or a consolidation they start), and they are told once why.
Nanobot's users saw a background memory pass loop for 23 minutes over 10 M tokens; here the
worst case is :data:`MAX_TRIES` calls per session and the day's budget.
"""

from __future__ import annotations

import logging
from datetime import date

from memtray.core.base.clock import Clock
from memtray.core.base.config import Settings
from memtray.core.base.notify import NotifierSlot
from memtray.core.log.store import Store
from memtray.core.log.usage import Totals, money, summarize, tokens, zone_of

log = logging.getLogger(__name__)

#: automatic tries of a session (failed, or changing nothing) before it waits for the user
MAX_TRIES = 3


class UpkeepGuard:
    """Says whether background upkeep may spend now; remembers who is stopped and why."""

    def __init__(self, store: Store, settings: Settings, clock: Clock, notifier: NotifierSlot) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.notifier = notifier
        self._lifted: date | None = None  # the day the user clicked "Run now"
        self._told: date | None = None  # the day the user was told the budget is spent
        self._fruitless: dict[str, int] = {}  # session -> completed consolidations in a row that changed nothing
        #: session -> why its automatic consolidation stopped (told once)
        self.halted: dict[str, str] = {}

    # --- the budget -------------------------------------------------------------------

    def today(self) -> date:
        cfg = self.settings.current
        return self.clock.now().astimezone(zone_of(cfg.timezone or self.clock.local_zone_name())).date()

    def spent(self) -> Totals:
        """What memory upkeep spent today (user's zone), from the usage ledger."""
        cfg = self.settings.current
        zone = zone_of(cfg.timezone or self.clock.local_zone_name())
        return summarize(self.store.state.usage, self.clock.now(), zone, 1).upkeep_today

    def over(self) -> str | None:
        """Why today's upkeep budget is spent ("$0.51 of $0.50"), or None while it is not
        (or there is none, or the user lifted it today)."""
        cfg = self.settings.current
        if not cfg.upkeep_daily_usd and not cfg.upkeep_daily_tokens:
            return None
        if self._lifted == self.today():
            return None
        spent = self.spent()
        if cfg.upkeep_daily_usd and spent.cost >= cfg.upkeep_daily_usd:
            return f"{money(spent)} of the ${cfg.upkeep_daily_usd:g} a day it may spend"
        if cfg.upkeep_daily_tokens and spent.tokens >= cfg.upkeep_daily_tokens:
            return f"{tokens(spent.tokens)} of the {tokens(cfg.upkeep_daily_tokens)} tokens a day it may use"
        return None

    def allows_background(self) -> bool:
        """Whether background upkeep may start a call now; the first refusal of a day tells
        the user (once) why, and how to go on."""
        why = self.over()
        if why is None:
            return True
        day = self.today()
        if self._told != day:
            self._told = day
            log.info("background memory upkeep paused: %s", why)
            if self.notifier.installed:
                self.notifier.notify(
                    "Memory upkeep paused for today",
                    f"Background memory upkeep has spent {why}. It goes on tomorrow, or now if you "
                    "choose Run now (Settings, or `memtray consolidate --all`); chat is not affected.",
                    kind="info", target="upkeep")
        return False

    def run_now(self) -> None:
        """The user's click: lift today's budget and every loop stop."""
        self._lifted = self.today()
        self.halted.clear()
        self._fruitless.clear()

    # --- loops ------------------------------------------------------------------------

    def may_start(self, session: str, trigger: str) -> bool:
        """Whether memtray may start a consolidation of ``session`` by itself now. One that
        keeps the conversation within the model's context window (trigger ``budget``) is
        the chat's own need, not upkeep: the day's budget does not hold it back."""
        return session not in self.halted and (trigger == "budget" or self.allows_background())

    def asked(self, session: str) -> None:
        """The user asked for a consolidation of ``session``: its loop stop is lifted."""
        self.halted.pop(session, None)
        self._fruitless.pop(session, None)

    def failed(self, session: str, attempt: int, reason: str) -> bool:
        """An automatic consolidation of ``session`` failed for the ``attempt``-th time in a row:
        True when that is the last try (it then waits for the user, who is told once)."""
        self._fruitless.pop(session, None)
        if attempt < MAX_TRIES:
            return False
        self._halt(session, f"it failed {attempt} times in a row (last: {reason})")
        return True

    def completed(self, session: str, changed: bool) -> None:
        """A consolidation of ``session`` completed; ``changed``: it changed memory or the diary, or
        held something for the user's review (a held proposal is work done, not a loop)."""
        if changed:
            self._fruitless.pop(session, None)
            self.halted.pop(session, None)
            return
        n = self._fruitless[session] = self._fruitless.get(session, 0) + 1
        if n >= MAX_TRIES:
            self._halt(session, f"its last {n} consolidations changed nothing")

    def restore(self, session: str, attempt: int) -> None:
        """At start: the log says the session's last ``attempt`` tries failed in a row."""
        if attempt >= MAX_TRIES:
            self.halted[session] = f"it failed {attempt} times in a row"

    def _halt(self, session: str, why: str) -> None:
        if session in self.halted:
            return
        self.halted[session] = why
        log.warning("automatic consolidation of %s stopped: %s", session, why)
        if self.notifier.installed:
            self.notifier.notify(
                "Memory consolidation stopped",
                f"memtray stopped consolidating conversation {session!r} by itself: {why}. Nothing was lost. "
                "It goes on when you ask: Run now, or `memtray consolidate --session "
                f"{session}`.", kind="failure", target="upkeep")
