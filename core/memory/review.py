"""The review queue's choices, named for their effect, each recorded and undoable.

A held change (a fact the guard would not write, a small model's proposal, an
instruction-like line, a silent drop) is either **added to memory** (a revision,
reason ``review``) or **kept out** (a ``memory.reviewed`` event with the user's
reason: `memory dropped` and the browser list it). A sync merge conflict is
settled with **keep this version** (the words memory holds now stand: a revision
that names it ``reviewed``, so every device has it resolved) or **keep the other**
(the other device's words, or its removal: a revision).

Every choice records the item as it was (``MemoryReviewed.entry``), so it can be
undone: the undo is a revision (reason ``undo``) that reverts what the choice
wrote and holds the item for review again (``flagged``; a merge conflict also
``reopened``, so a later sync does not settle it again from the old choice).
The old names stay as aliases: ``accept`` = keep out / keep this version,
``restore`` = add / keep the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from memtray.core.log.events import (
    MemoryReviewed,
    MemoryWritten,
    Message,
    Payload,
    Record,
    ReviewItem,
)
from memtray.core.log.store import Store
from memtray.core.memory import factdiff, scopes, unsaid
from memtray.core.memory import facts as fact_ids
from memtray.core.memory import hold as held
from memtray.core.memory.browse import MemoryError_, msg_json, said
from memtray.core.memory.factops import UndoResult
from memtray.core.memory.facts import Ledger
from memtray.core.memory.ledgers import Ledgers
from memtray.core.memory.merge import CONFLICT
from memtray.core.memory.projection import GitProjection
from memtray.core.memory.revisions import Revision
from memtray.core.memory.wording import clean_controls

#: the actions a held change offers, and those of a merge conflict (``memtray memory review``)
HELD_ACTIONS = ("add", "keep-out")
CONFLICT_ACTIONS = ("keep-this", "keep-other")
#: the actions that can be undone, and what an older event's name means
UNDOABLE = ("add", "keep-out", "keep-this", "keep-other", "accept", "restore")
KEPT_OUT = "kept out in review"


def actions(item: dict[str, Any]) -> list[str]:
    """The choices an item offers (``memtray memory review --json``'s ``actions``)."""
    return list(CONFLICT_ACTIONS if item.get("kind") == CONFLICT else HELD_ACTIONS)


def versions(item: dict[str, Any], now: str | None) -> dict[str, Any]:
    """A merge conflict's two versions: ``this`` (the words memory holds now, ``now``) and
    ``other`` (the other choice: other words, or None for the removal), each with the device
    that had it (None: not known). The conflict view shows them side by side."""
    words: dict[str, str | None] = dict(item.get("words") or {})
    other: str | None = None if item.get("conflict") == "removed-reworded" else str(item.get("text", ""))
    this = now if now is not None else str(item.get("text", "")) if other is None else None

    def who(text: str | None) -> str | None:
        norm = factdiff.normalize(text) if text is not None else None
        return next((d for d, w in words.items() if (factdiff.normalize(w) if w is not None else None) == norm), None)

    return {"this": {"text": this, "device": who(this)}, "other": {"text": other, "device": who(other)}}


def scope_of(item: dict[str, Any]) -> str:
    """The memory scope adding ``item`` writes it into: the one it was held in
    (``scope``, :func:`memtray.core.memory.scopereply.with_scope`), else global."""
    return scopes.check_name(str(item.get("scope") or scopes.GLOBAL))


def _entry(item: dict[str, Any]) -> ReviewItem:
    return cast(ReviewItem, {k: v for k, v in item.items() if k != "seq"})


class ReviewOps:
    """The review choices of :class:`~memtray.core.memory.service.MemoryService`."""

    store: Store
    projection: GitProjection
    write: Callable[..., list[Record]]
    ledger: Callable[[], Ledger]
    revision: Callable[[str], Revision]
    undo_changes: Callable[..., UndoResult]
    ledgers: Ledgers
    device: str
    pending_review: Callable[[], list[dict[str, Any]]]

    # --- choosing ---------------------------------------------------------------------

    def add_review(self, item_id: str) -> Revision:
        """Write a held change into memory (a proposal's rewording replaces its fact's words,
        its diary entry goes to HISTORY.md)."""
        item = self._review(item_id)
        if item.get("kind") == CONFLICT:
            raise MemoryError_(f"{item['id']} is a merge conflict: choose a version",
                               hint=f"`memtray memory review keep {item['id']} --version this|other`.")
        self.projection.adopt_worktree()
        done: list[tuple[Payload, str | None]] = [(MemoryReviewed(
            item=item["id"], action="add", memory_seq=self.store.state.memory_seq + 1, entry=_entry(item)), None)]
        if item.get("kind") == held.KIND or item.get("replaces"):  # a held rewording replaces its fact's words
            return self._take_proposal(item, done)
        where = scope_of(item)
        new = scopes.add_in(self.store.state.memory, where, item["text"], item.get("section") or None)
        keep = {factdiff.normalize(item["text"]): item["fact_id"]} if item.get("kind") == "silent-drop" else None
        before = self.ledger()
        led = fact_ids.attach(before, new, keep=keep)
        # a not-remembered item's fact is written with the user's sentence as its receipt
        self.write(new, reason="review", source="user", facts=led, provenance=unsaid.provenance(item, led), extra=done,
                   placed={i: where for i in led.ids if before.get(i) is None})  # the scope it was held in
        return self.revision("HEAD")

    def keep_out(self, item_id: str, why: str = "") -> None:
        """Leave a held change out of memory, with the user's reason (``memory dropped`` lists it)."""
        item = self._review(item_id)
        if item.get("kind") == CONFLICT:
            raise MemoryError_(f"{item['id']} is a merge conflict: choose a version",
                               hint=f"`memtray memory review keep {item['id']} --version this|other`.")
        why = " ".join(clean_controls(why).split())[:500]
        self.store.append(MemoryReviewed(item=item["id"], action="keep-out", entry=_entry(item), why=why or None))

    def keep_version(self, item_id: str, which: str) -> Revision:
        """Settle a merge conflict: ``this`` (the words memory holds now) or ``other``."""
        if which not in ("this", "other"):
            raise MemoryError_(f"unknown version {which!r}", hint="Give --version this or --version other.")
        item = self._review(item_id)
        if item.get("kind") != CONFLICT:
            raise MemoryError_(f"{item['id']} is not a merge conflict",
                               hint=f"`memtray memory review add {item['id']}` or `keep-out {item['id']}`.")
        self.projection.adopt_worktree()
        seq = self.store.state.memory_seq + 1
        done = MemoryReviewed(item=item["id"], action=f"keep-{which}", memory_seq=seq, entry=_entry(item))
        if which == "this":  # the merge's choice stands on every device: a revision that syncs
            self.write(self.store.state.memory, reason="review", source="user", facts=self.ledger(),
                       reviewed=[item["id"]], extra=[(done, None)])
            return self.revision("HEAD")
        led = self.ledger()
        fact = led.get(str(item["fact_id"]))
        if fact is None:
            raise MemoryError_(f"fact {item['fact_id']} is no longer in memory; nothing to resolve",
                               hint=f"Keep this version: `memtray memory review keep {item['id']} --version this`.")
        k = led.facts.index(fact)
        current = self.store.state.memory
        if item.get("conflict") == "removed-reworded":
            new = factdiff.remove_fact(current, factdiff.parse(current)[k])
            self.write(new, reason="review", source="user",
                       dropped_reasons={fact.id: str(item.get("reason", "merge conflict"))},
                       facts=Ledger(tuple(f for f in led.facts if f.id != fact.id), led.next),
                       extra=[(done, None)], reviewed=[item["id"]])
        else:
            new = factdiff.replace_fact(current, k, str(item["text"]))
            ids = Ledger.with_ids(new, led.ids, led.next) if len(factdiff.parse(new)) == len(led.facts) else None
            self.write(new, reason="review", source="user", facts=ids, extra=[(done, None)], reviewed=[item["id"]])
        return self.revision("HEAD")

    def accept_review(self, item_id: str) -> None:
        """The old name of "the change stands": keep out, or keep this version."""
        item = self._review(item_id)
        if item.get("kind") == CONFLICT:
            self.keep_version(item["id"], "this")
        else:
            self.keep_out(item["id"])

    def restore_review(self, item_id: str) -> Revision:
        """The old name of "put it in memory": add, or keep the other version."""
        item = self._review(item_id)
        if item.get("kind") == CONFLICT:
            return self.keep_version(item["id"], "other")
        return self.add_review(item["id"])

    def _take_proposal(self, item: dict[str, Any], done: list[tuple[Payload, str | None]]) -> Revision:
        """A held proposal of a small model (or a rewording by id the receipt check held), made
        the user's: the diary entry goes to HISTORY.md, a rewording replaces its fact's words
        (by id), a new fact is added."""
        current, led = self.store.state.memory, self.ledger()
        if held.is_history(item):
            self.write(current, reason="review", source="user", history_append=str(item["text"]), facts=led, extra=done)
            return self.revision("HEAD")
        fact = led.get(str(item.get("replaces") or ""))
        if fact is None:  # a new fact, or one whose fact has gone since: added, in the scope it was held in
            where = scope_of(item)
            new = scopes.add_in(current, where, item["text"], item.get("section") or None)
            ids = fact_ids.attach(led, new)
            self.write(new, reason="review", source="user", facts=ids, extra=done,
                       placed={i: where for i in ids.ids if led.get(i) is None})
        else:
            new = factdiff.replace_fact(current, led.facts.index(fact), str(item["text"]))
            same = Ledger.with_ids(new, led.ids, led.next) if len(factdiff.parse(new)) == len(led.facts) else None
            self.write(new, reason="review", source="user", facts=same, extra=done)
        return self.revision("HEAD")

    def _review(self, item_id: str) -> dict[str, Any]:
        items = self.store.state.review
        if item_id in items:
            return dict(items[item_id])
        matches = [k for k in items if k.startswith(item_id)]
        if len(matches) == 1:
            return dict(items[matches[0]])
        raise MemoryError_(f"no review item {item_id!r}", hint="See `memtray memory review`.")

    # --- what the review shows ---------------------------------------------------------

    def review_view(self) -> dict[str, Any]:
        """Everything the review shows, in one read (the browser calls it on the worker): the
        items waiting (each with its ``actions``, its candidate ``sources`` -- the messages it
        cites, else the user's messages of the consolidation that held it closest to its words --
        and, for a merge conflict, its two ``versions``), the device names, and what was kept out."""
        led = self.ledger()
        items = []
        for it in self.pending_review():
            row = {**it, "actions": actions(it), "sources": self.review_sources(it)}
            if it.get("kind") == CONFLICT:
                now = led.get(str(it.get("fact_id")))
                row["versions"] = versions(it, now.text if now is not None else None)
            items.append(row)
        return {"items": items, "kept_out": self.kept_out(), "device": self.device,
                "device_names": dict(self.store.state.device_names)}

    def review_sources(self, item: dict[str, Any], limit: int = 3) -> list[dict[str, Any]]:
        """The messages a held item comes from: those it cites (``messages``, or ``source_seqs`` of
        a fact the receipt check held), else the user's
        messages of the consolidation whose revision held it, those closest to its words first
        (at most ``limit``), in the order they were said."""
        cited = {int(m) for m in item.get("messages") or item.get("source_seqs") or ()}
        if cited:
            return [msg_json(r) for r in self.store.log.records(min(cited) - 1) if r.seq in cited
                    and r.type == Message.TYPE][:20]
        rec = self.ledgers.record(int(item.get("seq", 0))) if item.get("seq") else None
        if rec is None or rec.type != MemoryWritten.TYPE:
            return []
        w = MemoryWritten.of(rec)
        span = w.messages
        first, last, session = (span["first_seq"], span["last_seq"], span["session"]) if span else (None, None, None)
        if first is None and w.consolidation and (c := self.store.consolidation(w.consolidation)) is not None:
            first, last, session = c.first_seq, c.last_seq, c.session
        if first is None:
            return []
        end = last if last is not None else rec.seq
        cands = [(r, t) for r in self.store.log.records(first - 1) if r.seq <= end and r.session == session
                 and (t := said(r)) and Message.of(r).role == "user"]
        if len(cands) > 200:
            cands = cands[-200:]
        ranked = sorted(cands, key=lambda c: -factdiff.similarity(c[1], str(item.get("text", ""))))[:limit]
        return [msg_json(r) for r, _t in sorted(ranked, key=lambda c: c[0].seq)]

    # --- undoing ----------------------------------------------------------------------

    def review_choices(self) -> dict[str, tuple[Record, MemoryReviewed]]:
        """The last choice made for each review item (item id -> its event)."""
        out: dict[str, tuple[Record, MemoryReviewed]] = {}
        for rec in self.store.log.records():
            if rec.type == MemoryReviewed.TYPE:
                p = MemoryReviewed.of(rec)
                if p.action in UNDOABLE:
                    out[p.item] = (rec, p)
        return out

    def undo_review(self, item_id: str) -> Revision:
        """Undo the last review choice of ``item_id``: what it wrote is reverted and the item
        waits for review again (one revision, reason ``undo``)."""
        choices = self.review_choices()
        key = item_id if item_id in choices else None
        if key is None:
            found = [k for k in choices if k.startswith(item_id)]
            if len(found) != 1:
                raise MemoryError_(f"no review choice for {item_id!r} to undo" if not found else
                                   f"{item_id!r} names {len(found)} review items; give more of the id",
                                   hint="`memtray memory review` lists the items; `memory dropped` the kept-out ones.")
            key = found[0]
        _rec, p = choices[key]
        if key in self.store.state.review:
            raise MemoryError_(f"{key} is waiting for review already; nothing to undo")
        if p.entry is None:
            raise MemoryError_(f"{key} was reviewed by an older version that did not keep the item; it cannot be undone here",
                               hint="`memtray memory undo REV` undoes the revision it wrote, `memory restore-fact` brings a fact back.")
        entry = dict(p.entry)
        conflict = entry.get("kind") == CONFLICT
        reopen = {"reopened": [key]} if conflict else {}
        self.projection.adopt_worktree()
        wrote = p.action in ("add", "restore", "keep-other")
        if wrote and p.memory_seq is not None:
            written = self.ledgers.record(p.memory_seq)
            w = MemoryWritten.of(written) if written is not None else None
            head = self.projection.git.head()
            if w is not None and w.history_append and held.is_history(entry) and head is not None:
                self.write(self.store.state.memory, reason="undo", source="user", facts=self.ledger(),
                           history=_without(self.projection.git.read(head, "HISTORY.md"), w.history_append),
                           flagged=[entry], **reopen)
                return self.revision("HEAD")
            if w is not None and w.diff and (w.diff["added"] or w.diff["dropped"] or w.diff["changed"]):
                out = self.undo_changes(f"seq:{p.memory_seq}", flagged=[entry], **reopen)
                if out.revision is None:
                    why = "; ".join(f"{d['text']} ({d['why']})" for d in out.not_done)
                    raise MemoryError_(f"undoing the choice for {key} changes nothing in memory now: {why}",
                                       hint="Its fact was changed again since; edit it in `memtray memory facts`.")
                return out.revision
        self.write(self.store.state.memory, reason="undo", source="user", facts=self.ledger(), flagged=[entry], **reopen)
        return self.revision("HEAD")

    def kept_out(self) -> list[dict[str, Any]]:
        """The held changes kept out of memory, as ``memory dropped`` lists them (the newest
        choice of each item; one undone, or waiting again, is not listed)."""
        norms = {f.norm for f in self.ledger().facts}
        out = []
        for key, (rec, p) in self.review_choices().items():
            if p.entry is None or key in self.store.state.review:
                continue
            if p.action not in ("keep-out", "accept") or p.entry.get("kind") == CONFLICT:
                continue
            e = p.entry
            out.append({"id": e["fact_id"], "text": e["text"], "section": e.get("section", ""), "rev": None,
                        "event_seq": rec.seq, "time": rec.ts, "reason": p.why or KEPT_OUT, "by": "review",
                        "present_now": factdiff.normalize(e["text"]) in norms, "review": key, "kind": e["kind"]})
        return out


def _without(history: str, entry: str) -> str:
    """``history`` without the last occurrence of ``entry`` (a diary entry added by a review)."""
    k = history.rfind(entry.strip())
    if k < 0:
        return history
    return (history[:k].rstrip() + "\n" + history[k + len(entry.strip()):].lstrip("\n")).strip("\n") + "\n"


__all__ = ["CONFLICT_ACTIONS", "HELD_ACTIONS", "KEPT_OUT", "ReviewOps", "actions", "scope_of", "versions"]
