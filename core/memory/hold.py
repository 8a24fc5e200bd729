"""A consolidation held for review: what a model below the bar proposed, kept out of memory.

When :func:`memtray.core.llm.capability.judge` says a model may not write memory
unattended (SmolLM2-135M wrote "Mia's baby Mia." for "I have a daughter called
Mia, she is 7"), its guarded proposal is not written. Memory and HISTORY.md stay
as they are and each change becomes an item of the one review queue (kind
``proposal``, in ``memory.written``'s ``flagged`` like every other held item):
a new fact, a rewording (restoring it replaces the old wording, by id), the
diary entry (restoring it appends it to HISTORY.md). A removal is not done and
is named in the notes: restoring a fact that is still there would mean nothing.
The consolidation still completes, so the same messages are not sent to the
model again and again; they stay in the log, searchable. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memtray.core.memory.facts import Ledger
from memtray.core.memory.items import review_item
from memtray.core.memory.ledgers import diff_by_id

KIND = "proposal"
HISTORY_SECTION = "History"


@dataclass
class Held:
    """What is written instead: the current memory, the items for review, notes for the user."""

    flagged: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.flagged)


def hold(current: Ledger, proposed: Ledger, history_entry: str, flagged: list[dict[str, Any]], why: str) -> Held:
    """Turn the proposal ``proposed`` (with its diary entry and the guard's own ``flagged``
    items, kept as they are) into review items against the memory ``current``."""
    d = diff_by_id(current, proposed)
    reason = f"not written: {why}"
    items = list(flagged)
    for f in d.added:
        items.append(review_item(KIND, f.text, f.section, None, f"a new fact the model proposed; {reason}"))
    for old, new in d.changed:
        item = review_item(KIND, new.text, new.section, old.id, f"the model's rewording of {old.id} "
                           f"({old.text!r}); {reason}")
        item["replaces"] = old.id
        items.append(item)
    entry = history_entry.strip()
    if entry:
        items.append(review_item(KIND, entry, HISTORY_SECTION, None, f"the diary entry for HISTORY.md; {reason}"))
    notes = [f"{why}: its proposal is held for review (`memtray memory review`), memory is unchanged"]
    notes += [f"the model would remove {f.id} ({f.text!r}); not done" for f in d.dropped]
    return Held(items, notes)


def is_history(item: dict[str, Any]) -> bool:
    """A held diary entry: restoring it appends to HISTORY.md, not to MEMORY.md."""
    return item.get("kind") == KIND and item.get("section") == HISTORY_SECTION and not item.get("replaces")


__all__ = ["HISTORY_SECTION", "KIND", "Held", "hold", "is_history"]
