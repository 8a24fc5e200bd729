"""Changing memory: every write of MEMORY.md is one ``memory.written`` event.

:meth:`MemoryService.write` appends the event (redacted, fact-diffed, with
any extra events in the same write); the git projection
(:mod:`memtray.core.memory.projection`) turns it into a commit. Restore,
rollback, the agent's remember/forget and the review queue are built on it.
Browsing comes from :class:`~memtray.core.memory.browse.MemoryBrowsing`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from datetime import date
from typing import Any, cast

from memtray.core.base.clock import Clock
from memtray.core.base.home import Home
from memtray.core.base.redact import redact, redact_obj
from memtray.core.base.worker import WriterThread, on_writer
from memtray.core.log.events import (
    ConsolidationCompleted,
    ImportItem,
    McpWrite,
    MemoryReviewed,
    MemoryRolledBack,
    MemoryWritten,
    MessageSpan,
    Payload,
    RebuildAdopted,
    Record,
    ReviewItem,
    ScopeMove,
)
from memtray.core.log.store import Entry, Store
from memtray.core.memory import factdiff, scopes, timing
from memtray.core.memory import facts as fact_ids
from memtray.core.memory.browse import SILENT_HELD, MemoryError_
from memtray.core.memory.dated import DatedOps
from memtray.core.memory.factdiff import Fact
from memtray.core.memory.factops import FactOps, UndoResult
from memtray.core.memory.facts import Ledger
from memtray.core.memory.gitrepo import GitRepo
from memtray.core.memory.items import review_item
from memtray.core.memory.ledgers import diff_by_id
from memtray.core.memory.merge import renamed
from memtray.core.memory.merging import PeerMerging, SyncFields
from memtray.core.memory.projection import GitProjection
from memtray.core.memory.review import ReviewOps
from memtray.core.memory.revisions import Revision
from memtray.core.memory.wording import clean_controls

log = logging.getLogger(__name__)

REASONS = ("consolidation", "agent", "user-edit", "restore", "rollback", "redo", "review", "adopt", "rebuild", "import", "undo",
           "merge", "expired", "move")
MAX_MEMORY_CHARS = 200_000

__all__ = ["MAX_MEMORY_CHARS", "REASONS", "SILENT_HELD", "MemoryError_", "MemoryService", "UndoResult"]


class MemoryService(ReviewOps, FactOps, PeerMerging, DatedOps):
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

    @on_writer
    def reconcile(self) -> None:
        self.projection.reconcile()

    @on_writer
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
        extra: Sequence[tuple[Payload, str | None]] | None = None,
        session: str | None = None,
        facts: Ledger | None = None,
        merged: dict[str, list[str]] | None = None,
        target: str | None = None,
        client: str | None = None,
        sync: SyncFields | None = None,
        reviewed: list[str] | None = None,
        reopened: list[str] | None = None,
        moved_reasons: dict[str, str] | None = None,
        placed: dict[str, str] | None = None,
    ) -> list[Record]:
        """Append ``memory.written`` (+ ``extra`` events) in one write; git follows.

        A hand edit still waiting in the work tree is recorded first (as its own
        ``user-edit``), so the checkout that follows this write never overwrites it
        unrecorded. Callers that build ``memory`` from the current text should call
        :meth:`check_worktree` before they read it. An ``extra`` payload with a
        ``memory_seq`` member gets the seq of this ``memory.written`` event.

        ``dropped_reasons`` gives a removed fact its reason, and a reworded one (by its id)
        the reason for the new words.

        ``facts`` names the ids of ``memory``'s facts (the consolidation guard's, a
        rollback's); without it they are attached from the current revision. The event
        records them (``facts``) and its fact diff is by id; ``merged`` (survivor id ->
        ids merged into it) gives those dropped ids their reason.

        Every event names its device and the revision it follows (``parents``); a merge
        gives its own (``sync``: event id, parents, writer, ids renamed since, events to
        log before it). ``reviewed`` names the merge conflicts this revision resolves (an
        accept or a restore): it travels with the revision, so they are resolved on every device;
        ``reopened`` names those an undo of such a choice holds for review again.

        Scopes (core/memory/scopes.py): a fact stays in the scope it was in, whatever the new
        text's order (a guard's put-back, an undo, a merge never moves one), except where
        ``placed`` (fact id -> scope: a new fact's scope, a move) says otherwise, or the user
        moved it by hand (``user-edit``), or the text stands as written (a rollback, a sync
        merge, an adopted rebuild). ``moved_reasons`` says why a fact moved.
        """
        if reason not in REASONS:
            raise MemoryError_(f"unknown memory change reason {reason!r}")
        if not self.projection.adopting and not self.store.readonly:
            self.projection.adopt_worktree()
        memory = clean_controls(redact(memory))  # facts are compared without control characters too
        if len(memory) > MAX_MEMORY_CHARS:
            raise MemoryError_(f"MEMORY.md would be {len(memory):,} characters; the limit is {MAX_MEMORY_CHARS:,}")
        reasons = {k: clean_controls(redact(v)) for k, v in (dropped_reasons or {}).items()}
        for survivor, ids in (merged or {}).items():
            for i in ids:
                reasons.setdefault(i, f"merged into {survivor}")
        memory = scopes.canonical(memory)
        before_scopes = scopes.scope_map(self.ledger(), self.store.state.memory)
        ledger, d = self.facts_for(memory, reason, facts)
        # a hand edit moves what the user moved; a sync merge's text is the same on every device
        # (its id is made of it); a rollback is a past revision, scopes and all: they stand as written
        # an adopted rebuild is the branch's memory whole, its scopes as the rebuild re-did them
        keep_scope = {} if (reason, source) == ("user-edit", "user") or reason in ("merge", "rollback", "adopt") else {
            i: before_scopes[i] for i in ledger.ids if i in before_scopes}
        want = {**keep_scope, **{k: scopes.check_name(v) for k, v in (placed or {}).items()}}
        memory, ledger = scopes.settle(memory, ledger, want)
        if sync is not None and sync.relabeled:
            d = diff_by_id(renamed(self.ledger(), sync.relabeled), ledger)
        if provenance:
            # callers that name facts by their content id (adopt, imports) get them on fact ids
            content_ids = {f.id: led.id for f, led in zip(factdiff.parse(memory), ledger.facts, strict=False)}
            live = set(ledger.ids)
            provenance = {k if k in live else content_ids.get(k, k): v for k, v in provenance.items()}
        diff_json = d.to_json()
        after_scopes = scopes.scope_map(ledger, memory)
        moved = _moves(ledger, before_scopes, after_scopes, moved_reasons or {}, reason)
        for fact in [*diff_json["added"], *(c["new"] for c in diff_json["changed"])]:
            if after_scopes.get(fact["id"], scopes.GLOBAL) != scopes.GLOBAL:
                fact["scope"] = after_scopes[fact["id"]]
        for fact in diff_json["dropped"]:
            if before_scopes.get(fact["id"], scopes.GLOBAL) != scopes.GLOBAL:
                fact["scope"] = before_scopes[fact["id"]]
        flagged = [_redact_item(i) for i in flagged or ()]
        held = {i["fact_id"] for i in flagged if i.get("kind") == "silent-drop"}
        for change in diff_json["changed"]:  # a rewording's reason (the user's edit) is kept with it
            if (why := reasons.get(change["new"]["id"])) is not None:
                change["reason"] = why
        for item in diff_json["dropped"]:
            # callers that name a dropped fact by its content id (adopt, imports) still give its reason
            by_text = factdiff.parse(f"- {item['text']}\n")
            given = reasons.get(item["id"]) or (reasons.get(by_text[0].id) if by_text else None)
            item["reason"] = given or (SILENT_HELD if item["id"] in held else reason)
        facts_json = ledger.to_json()
        if merged:
            facts_json["merged"] = merged
        if sync is not None and sync.renamed:
            facts_json["renamed"] = {k: dict(v) for k, v in sync.renamed.items()}
        span: MessageSpan | None = None
        if consolidation and (c := self.store.consolidation(consolidation)) is not None and c.first_seq is not None:
            # the messages it read, so another device can name them once it has imported them
            span = MessageSpan(session=c.session, first_seq=c.first_seq, last_seq=c.last_seq)
        before = list(sync.before) if sync is not None else []
        with self.store.locked():  # re-entrant: the seq read here is the one append_many gives
            if sync is not None and sync.parents is not None:
                parents = list(sync.parents)
            else:
                prev = self.head_id()
                parents = [prev] if prev else []
            ev = MemoryWritten(
                memory=memory, reason=reason, source=source,
                history_append=clean_controls(redact(history_append)) if history_append else None,
                history=clean_controls(redact(history)) if history is not None else None,
                consolidation=consolidation, model=model, diff=diff_json,
                flagged=cast(list[ReviewItem], flagged) or None, provenance=redact_obj(provenance), target=target,
                client=redact(client)[:80] if client else None, facts=facts_json,
                relabeled=dict(sync.relabeled) if sync is not None and sync.relabeled else None,
                reviewed=list(reviewed) if reviewed else None, messages=span,
                reopened=list(reopened) if reopened else None, moved=moved or None,
                device=sync.device if sync is not None and sync.device else self.device, parents=parents,
            )
            items: list[Entry] = [*before, (ev, session, sync.event_id if sync is not None else None)]
            seq = self.store.log.last_seq + 1 + len(before)
            items += [(_linked(p, seq), sess, None) for p, sess in extra or []]
            return self.store.append_many(items)

    # --- changing ---------------------------------------------------------------------

    def _find(self, rev: str, fact: str) -> tuple[Fact, str]:
        """The fact at ``rev``, or -- when ``rev`` is the revision that removed it, as
        `memory dropped` lists -- at its parent. Its id first, then its exact text, then a
        close match. Returns the fact (with its id) and the sha it is in."""
        sha = self.resolve(rev)
        parents = self.git.info(sha).parents
        places = [(sha, list(self.ledger_at(sha).facts))]
        if parents:
            places.append((parents[0], list(self.ledger_at(parents[0]).facts)))
        key = fact_ids.id_key(fact)
        for where, facts in places:
            hit = next((f for f in facts if f.id == key), None)
            if hit is not None:
                return hit, where
        for finder in (factdiff.find_fact, factdiff.match_fact):
            for where, facts in places:
                found = finder(facts, fact)
                if found is not None:
                    return found, where
        raise MemoryError_(f"no fact matching {fact!r} at {sha[:8]}", hint="See `memtray memory show REV`.")

    @on_writer
    def restore_fact(self, rev: str | None, fact: str) -> Revision:
        """Add a fact back as it was at ``rev`` (or, with ``rev`` None, a fact id as its
        newest revision had it), with its id."""
        self.projection.adopt_worktree()
        if rev is None:
            hit = self.find_fact_by_id(fact)
            if hit is None:
                raise MemoryError_(f"no fact {fact!r} in any revision",
                                   hint="Give REV FACT, or an id from `memtray memory dropped`.")
            rev = f"seq:{hit[1]}"
        f, src = self._find(rev, fact)
        current = self.store.state.memory
        led = self.ledger()
        was = scopes.scope_map(self.ledger_at(src), self.git.read_memory(src)).get(f.id, scopes.GLOBAL)
        # judged as its scope sees memory (the global facts and its own): the same words in
        # another scope are another fact, which neither stops it nor takes its id
        seen = scopes.facts_in(led, current, sorted({scopes.GLOBAL, was}))
        here = led.get(f.id) or next((x for _k, x in seen if x.norm == f.norm), None)
        if here is not None:
            raise MemoryError_(f"the fact is already in memory: [{here.id}] {here.text}")
        new = scopes.add_in(current, was, f.text, f.section or None)  # back in the scope it was in
        if new == current:
            raise MemoryError_(f"the fact is already in memory: {f.text}")
        self.write(new, reason="restore", source="user", provenance={f.id: {"restored_from": src}},
                   facts=_with_one_more(led, current, new, f.id), placed={f.id: was})
        return self.revision("HEAD")

    @on_writer
    def rollback(self, rev: str) -> Revision:
        self.projection.adopt_worktree()
        sha = self.resolve(rev)
        text = self.git.read_memory(sha)
        seq = self.store.state.memory_seq
        target = self.ledger_at(sha)
        self.write(text, reason="rollback", source="user", facts=Ledger(target.facts, self.ledger().next), target=sha,
                   extra=[(MemoryRolledBack(to_rev=sha, memory_seq=seq + 1), None)])
        return self.revision("HEAD")

    # --- agent tools ------------------------------------------------------------------

    @on_writer
    def remember(self, fact: str, section: str | None, *, model: str | None, source_seq: int | None,
                 scope: str = scopes.GLOBAL, when: timing.When | None = None) -> str:
        """The agent's ``remember``: ``fact`` added in the conversation's ``scope``, "already
        remembered" only when the conversation sees the same words (:func:`scopes.add_in`: the
        global memory and its scope; another scope's are neither told nor counted); ``when``
        (read by :func:`timing.read_members`) is its time, set on a fact the conversation sees
        with the same words if there is one (it keeps its id)."""
        fact = " ".join(clean_controls(fact).split())
        if not fact:
            raise MemoryError_("the fact is empty")
        from memtray.core.memory.poison import looks_like_instruction

        self.projection.adopt_worktree()
        if when is not None:
            fact = timing.with_when(fact, when)
        if looks_like_instruction(fact):
            item = review_item("instruction", fact, section or "General", None, "looks like an instruction")
            self.write(self.store.state.memory, reason="agent", source="model", model=model, flagged=[item])
            return "held for the user's review: it looks like an instruction rather than a fact"
        current = self.store.state.memory
        if when is not None:
            led = self.ledger()
            seen = scopes.facts_in(led, current, [scopes.GLOBAL, scope])
            hit = timing.same_words([f.text for _k, f in seen], fact)
            if hit is not None:
                k, found = seen[hit]
                if found.norm == factdiff.normalize(fact):
                    return "already remembered"
                new = factdiff.replace_fact(current, k, fact)
                self.write(new, reason="agent", source="model", model=model,
                           facts=Ledger.with_ids(new, led.ids, led.next), dropped_reasons={found.id: "time set"})
                return f"remembered: {fact} ({found.id}: its time set)"
        new = scopes.add_in(current, scopes.check_name(scope), fact, section)  # what the conversation sees
        if new == current:
            return "already remembered"
        led, d = self.facts_for(new, "agent", None)
        prov = {"source_seqs": [source_seq], "text": fact} if source_seq else None
        self.write(new, reason="agent", source="model", model=model, facts=led,
                   provenance={f.id: prov for f in d.added} if prov else None,
                   placed={f.id: scope for f in d.added})  # in the conversation's scope
        return f"remembered: {fact}"

    @on_writer
    def move_fact(self, fact_id: str, scope: str, why: str, *, source: str = "user",
                  client: str | None = None) -> Revision:
        """Move one fact, by id, into ``scope`` ("global" or a name): one revision (reason
        ``move``) that records the move and why; the fact keeps its id, words and history."""
        name = scopes.check_name(scope)
        why = " ".join(clean_controls(why).split())
        if not why:
            raise MemoryError_("say why the fact moves", hint="--reason '...'")
        led, found = self._fact_by_id(fact_id)
        current = self.store.state.memory
        if scopes.scope_map(led, current).get(found.id) == name:
            raise MemoryError_(f"{found.id} is in {name} already")
        new, new_led = scopes.place(current, led, {found.id: name})
        self.write(new, reason="move", source=source, facts=new_led, placed={found.id: name},
                   moved_reasons={found.id: why}, client=client)
        return self.revision("HEAD")

    @on_writer
    def forget(self, fact: str, why: str, *, model: str | None, scope: str = scopes.GLOBAL) -> str:
        """The agent's ``forget``: the fact ``fact`` names (its id or words) among those the
        conversation of ``scope`` is shown, the global memory and its scope's
        (:func:`scopes.find`, as an MCP client's ``forget``); another scope's fact is "no fact",
        as one that does not exist, and stays."""
        self.projection.adopt_worktree()
        led = self.ledger()
        name = scopes.check_name(scope)
        found = scopes.find(led, self.store.state.memory, sorted({scopes.GLOBAL, name}), fact)
        if found is None:
            return f"no fact in memory matches {fact!r}"
        self._remove(led, found, why or "asked to forget", reason="agent", source="model", model=model)
        return f"forgot: {found.text} ({why})"

    def _remove(self, led: Ledger, found: Fact, why: str, *, reason: str, source: str, model: str | None) -> None:
        current = self.store.state.memory
        new = factdiff.remove_fact(current, factdiff.parse(current)[led.facts.index(found)])
        self.write(new, reason=reason, source=source, model=model, dropped_reasons={found.id: why},
                   facts=Ledger(tuple(f for f in led.facts if f.id != found.id), led.next))

    # --- the user's own edits (memory browser, `memtray memory edit|forget`) --------------

    def _fact_by_id(self, fact_id: str) -> tuple[Ledger, Fact]:
        """The current fact with id ``fact_id`` (``F12``, ``f12``, ``#F12``): by id only,
        never by similar words, so a person's edit never lands on another fact."""
        self.projection.adopt_worktree()
        led = self.ledger()
        key = fact_ids.id_key(fact_id)
        found = led.get(key) if key else None
        if found is None:
            raise MemoryError_(f"no fact {fact_id!r} in memory now",
                               hint="`memtray memory facts` lists the facts with their ids.")
        return led, found

    @on_writer
    def forget_fact(self, fact_id: str, why: str = "") -> Revision:
        """The user removes one fact: one revision (``user-edit``), ``why`` its reason."""
        led, found = self._fact_by_id(fact_id)
        self._remove(led, found, " ".join(clean_controls(why).split()) or "removed by the user",
                     reason="user-edit", source="user", model=None)
        return self.revision("HEAD")

    @on_writer
    def edit_fact(self, fact_id: str, text: str, why: str = "") -> Revision:
        """The user rewords one fact in place, under its id: one revision (``user-edit``)."""
        led, found = self._fact_by_id(fact_id)
        text = " ".join(clean_controls(text).split())
        if not text:
            raise MemoryError_("the new text is empty", hint="To remove the fact, forget it instead.")
        if factdiff.normalize(text) == found.norm:
            raise MemoryError_(f"{found.id} already says that")
        if (unread := timing.problem(text)) is not None:  # kept as words, it would never expire
            raise MemoryError_(f"the time in the new text cannot be read: {unread}",
                               hint="Write it as (from YYYY-MM-DD until YYYY-MM-DD; check after YYYY-MM-DD).")
        current = self.store.state.memory
        new = factdiff.replace_fact(current, led.facts.index(found), text)
        self.write(new, reason="user-edit", source="user", facts=Ledger.with_ids(new, led.ids, led.next),
                   dropped_reasons={found.id: " ".join(clean_controls(why).split()) or "edited by the user"})
        return self.revision("HEAD")

    # --- review (the choices are core/memory/review.py's; each runs on the writer) -----------

    @on_writer
    def add_review(self, item_id: str) -> Revision:
        return ReviewOps.add_review(self, item_id)

    @on_writer
    def keep_out(self, item_id: str, why: str = "") -> None:
        ReviewOps.keep_out(self, item_id, why)

    @on_writer
    def keep_version(self, item_id: str, which: str) -> Revision:
        return ReviewOps.keep_version(self, item_id, which)

    @on_writer
    def accept_review(self, item_id: str) -> None:
        ReviewOps.accept_review(self, item_id)

    @on_writer
    def restore_review(self, item_id: str) -> Revision:
        return ReviewOps.restore_review(self, item_id)

    @on_writer
    def undo_review(self, item_id: str) -> Revision:
        return ReviewOps.undo_review(self, item_id)

    @on_writer
    def expire_ended(self, today: date) -> dict[str, Any] | None:
        return DatedOps.expire_ended(self, today)

    @on_writer
    def check_fact(self, fact_id: str, answer: str, today: date, text: str | None = None) -> Revision:
        return DatedOps.check_fact(self, fact_id, answer, today, text)

    @on_writer
    def undo(self, target: str, scope: str | None = None) -> UndoResult:
        """Undo one consolidation or revision by fact id (see :meth:`FactOps.undo_changes`);
        ``scope``: only its changes to that scope's facts."""
        self.projection.adopt_worktree()
        return self.undo_changes(target, scope=scope)

    def close(self) -> None:
        self.projection.close()


def _linked(p: Payload, seq: int) -> Payload:
    """``p`` naming the ``memory.written`` of its write by ``seq``, when it names one (a
    caller's placeholder ``memory_seq`` becomes the real one)."""
    if isinstance(p, ConsolidationCompleted | MemoryReviewed | MemoryRolledBack | McpWrite | ImportItem | RebuildAdopted) \
            and p.memory_seq is not None:
        return dataclasses.replace(p, memory_seq=seq)
    return p


def _with_one_more(led: Ledger, old: str, text: str, fact_id: str) -> Ledger:
    """The ledger of ``text``, ``led``'s ``old`` with one fact inserted: that fact named
    ``fact_id``, every other keeping its id (by place and scope, never by words alone, which
    another scope's fact may share)."""
    before = list(zip(scopes.of_facts(old), (f.norm for f in led.facts), strict=True))
    after = list(zip(scopes.of_facts(text), (f.norm for f in factdiff.parse(text)), strict=True))
    at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), len(before))
    return Ledger.with_ids(text, [*led.ids[:at], fact_id, *led.ids[at:]], led.next)


def _redact_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: redact(v) if k in ("text", "reason", "section") and isinstance(v, str) else v for k, v in item.items()}


def _moves(ledger: Ledger, before: dict[str, str], after: dict[str, str], reasons: dict[str, str],
           reason: str) -> list[ScopeMove]:
    """The facts of ``ledger`` that stand in another scope than before, with why."""
    out: list[ScopeMove] = []
    for f in ledger.facts:
        was, now = before.get(f.id), after.get(f.id, scopes.GLOBAL)
        if was is not None and was != now:
            out.append(ScopeMove(id=f.id, section=f.section, text=f.text, source=was, target=now,
                                 reason=clean_controls(redact(reasons.get(f.id) or reason))[:300]))
    return out
