"""Changing memory: every write of MEMORY.md is one ``memory.written`` event.

:meth:`MemoryService.write` appends the event (redacted, fact-diffed, with
any extra events in the same write); the git projection
(:mod:`memtray.core.memory.projection`) turns it into a commit. Restore,
rollback, the agent's remember/forget and the review queue are built on it.
Browsing comes from :class:`~memtray.core.memory.browse.MemoryBrowsing`.
"""

from __future__ import annotations

import logging
from typing import Any

from memtray.core.base.clock import Clock
from memtray.core.base.home import Home
from memtray.core.base.redact import redact
from memtray.core.base.worker import WriterThread, on_writer
from memtray.core.log.events import MemoryReviewed, MemoryRolledBack, MemoryWritten, Record
from memtray.core.log.store import Store
from memtray.core.memory import factdiff
from memtray.core.memory.browse import SILENT_HELD, MemoryBrowsing, MemoryError_
from memtray.core.memory.factdiff import Fact, FactDiff
from memtray.core.memory.gitrepo import GitRepo
from memtray.core.memory.guard import review_item
from memtray.core.memory.projection import GitProjection
from memtray.core.memory.revisions import Revision

log = logging.getLogger(__name__)

REASONS = ("consolidation", "agent", "user-edit", "restore", "rollback", "redo", "review", "adopt", "rebuild", "import")
MAX_MEMORY_CHARS = 200_000

__all__ = ["MAX_MEMORY_CHARS", "REASONS", "SILENT_HELD", "MemoryError_", "MemoryService"]


class MemoryService(MemoryBrowsing):
    def __init__(self, store: Store, home: Home, clock: Clock) -> None:
        self.store = store
        self.projection = GitProjection(store, home, clock, self.write)

    @property
    def git(self) -> GitRepo:
        return self.projection.git

    @property
    def writer(self) -> WriterThread | None:
        """Mutations run on this thread (see :func:`~memtray.core.base.worker.on_writer`)."""
        return self.projection.writer

    @property
    def problems(self) -> list[str]:
        return self.projection.problems

    @property
    def commits_made_on_start(self) -> int:
        return self.projection.commits_made_on_start

    def start(self) -> None:
        """Reconcile git with the log, then follow new events (see :class:`GitProjection`)."""
        self.projection.start()

    def reconcile(self) -> None:
        self.projection.reconcile()

    def check_worktree(self) -> bool:
        return self.projection.check_worktree()

    def head_seq(self) -> int:
        return self.projection.head_seq()

    # --- writing ----------------------------------------------------------------------

    @on_writer
    def write(
        self,
        memory: str,
        *,
        reason: str,
        source: str = "memtray",
        model: str | None = None,
        consolidation: str | None = None,
        history_append: str | None = None,
        history: str | None = None,
        flagged: list[dict[str, Any]] | None = None,
        provenance: dict[str, Any] | None = None,
        dropped_reasons: dict[str, str] | None = None,
        extra: list[tuple[str, dict[str, Any], str | None]] | None = None,
        session: str | None = None,
    ) -> list[Record]:
        """Append ``memory.written`` (+ ``extra`` events) in one write; git follows.

        A hand edit still waiting in the work tree is recorded first (as its own
        ``user-edit``), so the checkout that follows this write never overwrites it
        unrecorded. Callers that build ``memory`` from the current text should call
        :meth:`check_worktree` before they read it. An ``extra`` payload with a
        ``memory_seq`` member gets the seq of this ``memory.written`` event.
        """
        if reason not in REASONS:
            raise MemoryError_(f"unknown memory change reason {reason!r}")
        if not self.projection.adopting and not self.store.readonly:
            self.projection.adopt_worktree()
        memory = redact(memory)
        if len(memory) > MAX_MEMORY_CHARS:
            raise MemoryError_(f"MEMORY.md would be {len(memory):,} characters; the limit is {MAX_MEMORY_CHARS:,}")
        old = self.store.state.memory
        reasons = {k: redact(v) for k, v in (dropped_reasons or {}).items()}
        d = factdiff.diff(old, memory)
        if reasons and d.changed:
            # A fact removed with a reason is a removal even when the fuzzy diff pairs it
            # with a new fact ("lives in London" -> "lives in Lyon"): record it as dropped.
            moved = [(o, n) for o, n in d.changed if o.id in reasons]
            d = FactDiff(d.added + [n for _o, n in moved], d.dropped + [o for o, _n in moved],
                         [(o, n) for o, n in d.changed if o.id not in reasons], d.unchanged)
        if d.dropped:
            # one of two copies of a fact going is not the fact leaving memory
            still = {f.norm for f in factdiff.parse(memory)}
            d = FactDiff(d.added, [f for f in d.dropped if f.norm not in still], d.changed, d.unchanged)
        diff_json = d.to_json()
        flagged = [_redact_item(i) for i in flagged or ()]
        held = {i["fact_id"] for i in flagged if i.get("kind") == "silent-drop"}
        for item in diff_json["dropped"]:
            item["reason"] = reasons.get(item["id"]) or (SILENT_HELD if item["id"] in held else reason)
        ev = MemoryWritten(
            memory=memory, reason=reason, source=source, history_append=redact(history_append) if history_append else None,
            history=redact(history) if history is not None else None, consolidation=consolidation, model=model,
            diff=diff_json, flagged=flagged or None, provenance=provenance,
        )
        items: list[tuple[str, dict[str, Any], str | None, str | None]] = [(MemoryWritten.TYPE, ev.to_data(), session, None)]
        with self.store.locked():  # re-entrant: the seq read here is the one append_many gives
            seq = self.store.log.last_seq + 1
            for t, data, sess in extra or []:
                items.append((t, {**data, "memory_seq": seq} if "memory_seq" in data else data, sess, None))
            return self.store.append_many(items)

    # --- changing ---------------------------------------------------------------------

    def _find(self, rev: str, fact: str) -> tuple[Fact, str]:
        """The fact at ``rev``, or -- when ``rev`` is the revision that removed it, as
        `memory dropped` lists -- at its parent. An exact match (id, id prefix, text) at
        either wins over a fuzzy one. Returns the fact and the sha it is in."""
        sha = self.resolve(rev)
        parents = self.git.info(sha).parents
        places = [(sha, factdiff.parse(self.git.read(sha, "MEMORY.md")))]
        if parents:
            places.append((parents[0], factdiff.parse(self.git.read(parents[0], "MEMORY.md"))))
        for finder in (factdiff.find_fact, factdiff.match_fact):
            for where, facts in places:
                found = finder(facts, fact)
                if found is not None:
                    return found, where
        raise MemoryError_(f"no fact matching {fact!r} at {sha[:8]}", hint="See `memtray memory show REV`.")

    @on_writer
    def restore_fact(self, rev: str, fact: str) -> Revision:
        self.projection.adopt_worktree()
        f, src = self._find(rev, fact)
        current = self.store.state.memory
        if any(x.norm == f.norm for x in factdiff.parse(current)):
            raise MemoryError_(f"the fact is already in memory: {f.text}")
        new = factdiff.add_fact(current, f.text, f.section or None)
        self.write(new, reason="restore", source="user", provenance={f.id: {"restored_from": src}})
        return self.revision("HEAD")

    @on_writer
    def rollback(self, rev: str) -> Revision:
        self.projection.adopt_worktree()
        sha = self.resolve(rev)
        text = self.git.read(sha, "MEMORY.md")
        seq = self.store.state.memory_seq
        self.write(text, reason="rollback", source="user",
                   extra=[(MemoryRolledBack.TYPE, MemoryRolledBack(to_rev=sha, memory_seq=seq + 1).to_data(), None)])
        return self.revision("HEAD")

    # --- agent tools ------------------------------------------------------------------

    @on_writer
    def remember(self, fact: str, section: str | None, *, model: str | None, source_seq: int | None) -> str:
        fact = " ".join(fact.split())
        if not fact:
            raise MemoryError_("the fact is empty")
        from memtray.core.memory.poison import looks_like_instruction

        self.projection.adopt_worktree()
        if looks_like_instruction(fact):
            item = review_item("instruction", fact, section or "General", None, "looks like an instruction")
            self.write(self.store.state.memory, reason="agent", source="model", model=model, flagged=[item])
            return "held for the user's review: it looks like an instruction rather than a fact"
        current = self.store.state.memory
        new = factdiff.add_fact(current, fact, section)
        if new == current:
            return "already remembered"
        prov = {"source_seqs": [source_seq]} if source_seq else None
        added = factdiff.diff(current, new).added
        self.write(new, reason="agent", source="model", model=model,
                   provenance={f.id: prov for f in added} if prov else None)
        return f"remembered: {fact}"

    @on_writer
    def forget(self, fact: str, why: str, *, model: str | None) -> str:
        self.projection.adopt_worktree()
        current = self.store.state.memory
        found = factdiff.match_fact(factdiff.parse(current), fact)
        if found is None:
            return f"no fact in memory matches {fact!r}"
        new = factdiff.remove_fact(current, found)
        self.write(new, reason="agent", source="model", model=model, dropped_reasons={found.id: why or "asked to forget"})
        return f"forgot: {found.text} ({why})"

    # --- review -----------------------------------------------------------------------

    def pending_review(self) -> list[dict[str, Any]]:
        return sorted(self.store.state.review.values(), key=lambda i: i["seq"])

    @on_writer
    def accept_review(self, item_id: str) -> None:
        """The change stands (a silent drop stays dropped; an instruction stays out)."""
        item = self._review(item_id)
        self.store.append(MemoryReviewed.TYPE, MemoryReviewed(item=item["id"], action="accept").to_data())

    @on_writer
    def restore_review(self, item_id: str) -> Revision:
        """Put the held fact (back) into memory."""
        item = self._review(item_id)
        self.projection.adopt_worktree()
        new = factdiff.add_fact(self.store.state.memory, item["text"], item.get("section") or None)
        self.write(new, reason="review", source="user",
                   extra=[(MemoryReviewed.TYPE, MemoryReviewed(item=item["id"], action="restore",
                                                               memory_seq=self.store.state.memory_seq + 1).to_data(), None)])
        return self.revision("HEAD")

    def _review(self, item_id: str) -> dict[str, Any]:
        items = self.store.state.review
        if item_id in items:
            return items[item_id]
        matches = [k for k in items if k.startswith(item_id)]
        if len(matches) == 1:
            return items[matches[0]]
        raise MemoryError_(f"no review item {item_id!r}", hint="See `memtray memory review`.")

    def close(self) -> None:
        self.projection.close()


def _redact_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: redact(v) if k in ("text", "reason", "section") and isinstance(v, str) else v for k, v in item.items()}
