"""What a notification offers besides its click, and what its buttons do.

* "memory updated": Undo (the browser at that revision, then the undo with its
  confirmation) and, when the consolidation held facts, Review;
* "still true?" for a fact due for a check: Yes and No longer (a revision each), Edit
  (the quick chat's check-in line, which has the field);
* a reminder: Snooze (10 minutes: ``ReminderService.snooze``) and Done (a one-shot
  still waiting is cancelled as done; a fired one needs nothing more).

:meth:`NotificationActions.offered` runs on the thread that notifies (the worker for
memory and reminders) and reads only what it is given; :meth:`invoke` runs on the GUI
thread and sends every change to the worker through the bridge.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memtray.core.memory.dated import local_day

from .bridge import Bridge
from .forms import error_text

if TYPE_CHECKING:
    from memtray.core.app import App

log = logging.getLogger(__name__)

SNOOZE_LABEL = "Snooze 10 min"


class NotificationActions:
    """The extra actions of notifications (see the module's docstring)."""

    def __init__(self, app: App, bridge: Bridge, window: Callable[[], Any],
                 say: Callable[[str, str, str], None]) -> None:
        self.app = app
        self.bridge = bridge
        self.window = window  # the main window, built on first use
        self.say = say  # (title, body, kind): a notification, to report what an action did

    def offered(self, kind: str, target: str) -> list[tuple[str, str]]:
        if kind == "reminder" and target.startswith("reminder:"):
            return [("snooze", SNOOZE_LABEL), ("done", "Done")]
        if kind == "memory" and target.startswith("check:"):  # "Still true?" (core/memory/dated.py)
            return [("yes", "Yes"), ("no-longer", "No longer"), ("edit", "Edit…")]
        if kind != "memory" or not target.startswith(("consolidation:", "memory:")):
            return []
        actions = [("undo", "Undo")]
        if self._held_by(target):
            actions.append(("review", "Review"))
        return actions

    def _held_by(self, target: str) -> bool:
        """Whether the consolidation of ``target`` held facts for review (still waiting)."""
        kind, _, ident = target.partition(":")
        state = self.app.store.state
        try:
            c = state.consolidations.get(ident) if kind == "consolidation" else None
            waiting = list(state.review.values())
        except RuntimeError:  # changed while read (a write on the worker): no Review button
            return False
        if c is None:
            return bool(waiting)
        return any(int(i.get("seq") or 0) >= c.started_seq for i in waiting)

    def invoke(self, action: str, target: str) -> None:
        if target.startswith("reminder:"):
            self._reminder(action, target.partition(":")[2])
            return
        if target.startswith("check:"):
            self._check(action, target.partition(":")[2])
            return
        window = self.window()
        window.open("memory", target)
        browser = window.memory
        if action == "review":
            browser.tabs.setCurrentWidget(browser.review_tab)
            return
        if action == "undo":
            browser.undo(target.partition(":")[2])  # a revision or a consolidation id

    def _reminder(self, action: str, rid: str) -> None:
        svc = self.app.reminders

        def failed(exc: BaseException) -> None:
            self.say("Reminder", error_text(exc), "failure")

        if action == "snooze":
            self.bridge.call(svc.snooze, rid, name="reminder-snooze", on_error=failed)
        elif action == "done":
            def done() -> None:  # on the worker
                r = svc.find(rid)
                if r.active and r.kind == "at":  # shown before it was recorded as fired: done now
                    svc.cancel(r.id, reason="done")

            self.bridge.call(done, name="reminder-done", on_error=failed)

    def _check(self, action: str, fact_id: str) -> None:
        """Yes / No longer from a check-in notification: a revision, said in a notification."""
        if action not in ("yes", "no-longer"):
            return
        app = self.app

        def check() -> Any:  # on the worker
            return app.memory.check_fact(fact_id, action, local_day(app.clock.now(), app.agent.zone()))

        def done(_rev: Any) -> None:
            self.say("Memory", "Still true: noted." if action == "yes" else "Removed: no longer true.", "memory")

        self.bridge.call(check, name="check-in", on_result=done,
                         on_error=lambda exc: self.say("Memory", error_text(exc), "failure"))
