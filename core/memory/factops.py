"""Memory operations by fact id: the ids of a write, undo, restore, dropped, why, review.

:class:`FactOps` is the part of :class:`~memtray.core.memory.service.MemoryService`
that works on fact ids (see :mod:`facts` for where they live). Every write gets the
ids of its facts (:meth:`FactOps.facts_for`): given by the consolidation guard, or
attached from the previous revision (a hand edit keeps the ids of the facts it
edited in place). The fact diff of every ``memory.written`` is by id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from memtray.core.log.events import MemoryWritten, Provenance, ProvenanceOrigin, Record, ScopeMove
from memtray.core.memory import factdiff, facts, scopes, timing, unsaid
from memtray.core.memory.browse import SILENT_HELD, MemoryBrowsing, MemoryError_, msg_json, said
from memtray.core.memory.factdiff import Fact, FactDiff
from memtray.core.memory.facts import Ledger
from memtray.core.memory.ledgers import Ledgers, diff_by_id, find_in_history
from memtray.core.memory.merge import renamed
from memtray.core.memory.peers import imported_seqs
from memtray.core.memory.revisions import Revision
from memtray.core.memory.undo import Undone
from memtray.core.memory.undo import changes as fact_changes
from memtray.core.memory.undo import undo as undo_changes

ACROSS_SCOPES = "it is in another memory scope now, or it came from one; undo it without --scope"


def undo_in_scope(name: str, before: Ledger, after: Ledger, text: str, current: Ledger,
                  where: tuple[dict[str, str], dict[str, str], dict[str, str]], moves: Iterable[ScopeMove]) -> Undone:
    """The undo of one revision (``before`` -> ``after``) through the scope ``name`` alone, on
    the current memory (``text``, ``current``): what a client limited to that scope may undo.

    A change is the scope's when the fact stands in ``name`` everywhere it stands (``where``:
    fact id -> scope before the revision, after it, and now); only those are undone, on the
    scope's own part of memory, then put back beside the other scopes, untouched. A change
    that crosses into another scope (a move, a fact moved away since or brought in) is not
    undone: a scoped undo would write into that scope, or tell what it holds. It is listed
    as not undone, with the words the scope saw and :data:`ACROSS_SCOPES`, the same for any
    other scope (which one is not said). Changes of facts never in ``name`` are left out."""
    was, at, here = where
    mine: set[str] = set()
    across: dict[str, str] = {}  # id -> the words this scope saw
    touched = [(ch.id, ch.before, ch.after) for ch in fact_changes(before, after)]
    touched += [(m["id"], before.get(m["id"]), after.get(m["id"])) for m in moves]
    for fid, old, new in touched:
        places = {p for p in (was.get(fid), at.get(fid), here.get(fid)) if p is not None}
        if name not in places:
            continue
        if places == {name} and not any(m["id"] == fid for m in moves):
            mine.add(fid)
            continue
        seen = old if was.get(fid) == name else new if at.get(fid) == name else current.get(fid)
        across.setdefault(fid, seen.text if seen is not None else "")
    # the scope's own text, without its marker line (a fact put back lands under its heading)
    part = scopes.only(text, name)
    out = undo_changes(Ledger(tuple(f for f in before.facts if f.id in mine), before.next),
                       Ledger(tuple(f for f in after.facts if f.id in mine), after.next),
                       part, scopes.sub_ledger(current, text, [name]))
    out.memory, out.ledger = scopes.merge_back(text, current, [name], out.memory, out.ledger)
    out.not_done += [{"id": i, "text": t, "why": ACROSS_SCOPES} for i, t in across.items()]
    return out


@dataclass
class UndoResult:
    """What ``memtray memory undo`` did: the new revision (None when there was nothing to
    undo), the revision undone, and fact by fact what was and was not undone."""

    revision: Revision | None
    target: Revision
    done: list[dict[str, Any]] = field(default_factory=list)
    not_done: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision.to_json() if self.revision else None, "undone": self.target.to_json(),
                "done": self.done, "not_done": self.not_done}


class FactOps(MemoryBrowsing):
    """Id-based operations; needs ``write`` from the service."""

    _ledgers: Ledgers | None = None

    @property
    def ledgers(self) -> Ledgers:
        if self._ledgers is None:
            self._ledgers = Ledgers(self.store)
        return self._ledgers

    #: the service's write (see :meth:`MemoryService.write`)
    write: Callable[..., list[Record]]
    #: the held changes kept out in review (see :meth:`ReviewOps.kept_out`)
    kept_out: Callable[[], list[dict[str, Any]]]
    #: this device's id (see :attr:`PeerMerging.device`)
    device: str

    def ledger(self) -> Ledger:
        """The current memory's facts with their ids."""
        return self.ledgers.current()

    def current_facts(self) -> list[dict[str, Any]]:
        """The facts in memory now, in document order: id, section, text, and who wrote them
        (``by``: a chat, you, an MCP client by name, an import, another device by the name the
        user gave it, else its id; from the provenance trace of the log, so it reads the log's
        memory events once), and its ``receipt`` (:meth:`receipts`: stated or inferred, with the
        quote; None without one), and its memory ``scope``."""
        from memtray.core.memory.provenance import trace

        _text, origins = trace(self.store.log.records())
        names = self.store.state.device_names
        receipts = self.receipts()
        out = []
        where = scopes.scope_map(self.ledger(), self.store.state.memory)
        for f in self.ledger().facts:
            o = origins.get(f.id)
            name = names.get(o.device) if o is not None and o.device else None
            out.append({"id": f.id, "section": f.section, "text": f.text,
                        "by": name if name else o.written_by() if o is not None else "unknown",
                        "device_name": name,
                        "reason": o.reason if o is not None else None, "client": o.client if o is not None else None,
                        "device": o.device if o is not None else None,
                        "event_seq": o.event_seq if o is not None else None,
                        "edited": bool(o.via) if o is not None else False, "receipt": receipts.get(f.id),
                        "scope": where.get(f.id, scopes.GLOBAL)})
        return out

    def moves(self, rev: str) -> list[ScopeMove]:
        """The facts revision ``rev`` moved between memory scopes (id, words, from, to, why)."""
        rec = self.ledgers.record(self.revision(rev).event_seq)
        return list(MemoryWritten.of(rec).moved or []) if rec is not None and rec.type == MemoryWritten.TYPE else []

    def ledger_at(self, rev: str) -> Ledger:
        return self.ledgers.at_seq(self.revision(rev).event_seq)

    def facts_for(self, memory: str, reason: str, given: Ledger | None) -> tuple[Ledger, FactDiff]:
        """The ids of a write's facts and its diff by id. ``given`` (the guard's, or a rollback's
        target) is used when it names exactly ``memory``'s facts (redaction may have changed one)."""
        old = self.ledger()
        new_facts = factdiff.parse(memory)
        if given is not None and [f.norm for f in given.facts] == [f.norm for f in new_facts]:
            led = Ledger(tuple(f2.__class__(g.id, f2.section, f2.text, f2.norm) for g, f2 in zip(
                given.facts, new_facts, strict=True)), max(given.next, old.next))
        else:
            keep = {f.norm: f.id for f in given.facts} if given is not None else {}
            if reason in ("adopt", "rebuild", "review", "restore", "rollback", "undo"):
                # a fact that comes back gets back the id it left with
                live, live_norms = set(old.ids), {f.norm for f in old.facts}
                for fid, norm in self._dropped_norms():
                    if fid not in live and norm not in live_norms:
                        keep.setdefault(norm, fid)
            led = facts.attach(old, memory, in_place=reason == "user-edit", keep=keep)
        return led, diff_by_id(old, led)

    def _dropped_norms(self) -> list[tuple[str, str]]:
        """(id, normalised text) of every fact a revision dropped, newest first."""
        out: list[tuple[str, str]] = []
        for rec in self.memory_events():
            diff = MemoryWritten.of(rec).diff
            for item in diff["dropped"] if diff else []:
                out.append((item["id"], factdiff.normalize(item["text"])))
        return out[::-1]

    # --- undo -------------------------------------------------------------------------

    def undo_changes(self, target: str, *, flagged: list[dict[str, Any]] | None = None,
                     reopened: list[str] | None = None, scope: str | None = None) -> UndoResult:
        """Undo exactly the fact changes of one revision (a consolidation id or a revision):
        re-add what it dropped, restore what it reworded, remove what it added, move back what
        it moved between scopes, as one new revision that keeps everything after it. Says what
        it could not undo and why. ``flagged`` / ``reopened`` go with that revision (the undo of
        a review choice holds its item again). ``scope``: only the changes of that scope's facts
        (see :func:`undo_in_scope`: nothing of another scope is written or shown)."""
        sha = self.resolve(target)
        rev = self.revision(sha)
        parents = self.git.info(sha).parents
        before_seq = self.revision(parents[0]).event_seq if parents else 0
        before = self.ledgers.at_seq(before_seq) if parents else Ledger(())
        after = self.ledgers.at_seq(rev.event_seq)
        rec = self.ledgers.record(rev.event_seq)
        written = MemoryWritten.of(rec) if rec is not None else None
        relabeled = written.relabeled if written is not None else None
        if relabeled:  # a merge renumbered some of this device's ids
            before = renamed(before, relabeled)
        prev = self.ledgers.record(before_seq)
        was = scopes.scope_map(before, MemoryWritten.of(prev).memory) if prev is not None else {}
        now_in = scopes.scope_map(after, written.memory) if written is not None else {}
        current = self.ledger()
        here = scopes.scope_map(current, self.store.state.memory)
        moves = (written.moved if written is not None else None) or []
        if scope is not None:
            out = undo_in_scope(scopes.check_name(scope), before, after, self.store.state.memory, current,
                                (was, now_in, here), moves)
            back: dict[str, str] = {}
        else:
            out = undo_changes(before, after, self.store.state.memory, current)
            back = {m["id"]: m["source"] for m in moves if here.get(m["id"]) == m["target"]}
        out.done += [{"id": m["id"], "text": m["text"], "action": "moved back", "scope": m["source"]}
                     for m in moves if m["id"] in back]
        if not out.done:
            return UndoResult(None, rev, [], out.not_done)
        reasons = {d["id"]: f"undo of {rev.short}" for d in out.done if d["action"] == "removed"}
        prov = {d["id"]: {"restored_from": parents[0] if parents else None} for d in out.done
                if d["action"] in ("restored", "reverted")}
        placed = {d["id"]: was.get(d["id"], scopes.GLOBAL) for d in out.done if d["action"] == "restored"}
        self.write(out.memory, reason="undo", source="user", dropped_reasons=reasons, provenance=prov or None,
                   facts=out.ledger, flagged=flagged, reopened=reopened, placed={**placed, **back},
                   moved_reasons={i: f"undo of {rev.short}" for i in back})
        return UndoResult(self.revision("HEAD"), rev, out.done, out.not_done)

    # --- by id ------------------------------------------------------------------------

    def diff(self, rev_a: str | None = None, rev_b: str | None = None) -> FactDiff:
        """The fact diff between two revisions (default: ``rev_b``'s parent), by id: a fact
        reworded under its id is "changed" whatever its words, two facts with other ids are
        never paired. A revision against its parent is the diff its event recorded when it
        was written (what the notification, the guard and the log said; nothing is matched
        again); any other pair is diffed between their ledgers. Revisions written before ids
        existed are diffed by their words."""
        b = self.resolve(rev_b or "HEAD")
        parents = self.git.info(b).parents
        a = (parents[0] if parents else None) if rev_a is None else self.resolve(rev_a)
        if len(parents) <= 1 and a == (parents[0] if parents else None):
            recorded = self.recorded_diff(b)
            if recorded is not None:
                return recorded
        seqs = [self.revision(a).event_seq if a else 0, self.revision(b).event_seq]
        recs = [self.ledgers.record(seq) for seq in seqs]
        leds = [self.ledgers.at_seq(seq) for seq in seqs]
        texts = [self.git.read_memory(a) if a else "", self.git.read_memory(b)]
        named = all([f.norm for f in led.facts] == [f.norm for f in factdiff.parse(t)] for led, t in zip(
            leds, texts, strict=True))
        written = [MemoryWritten.of(r) if r is not None else None for r in recs]
        with_ids = any(w is not None and w.facts is not None for w in written)
        if not named or not with_ids:
            return super().diff(rev_a, rev_b)
        relabeled = written[1].relabeled if written[1] is not None else None
        if relabeled and parents and a == parents[0]:
            # a merge renumbered some of this device's ids: the same facts, not changes
            return diff_by_id(renamed(leds[0], relabeled), leds[1])
        return diff_by_id(leds[0], leds[1])

    def recorded_diff(self, rev: str) -> FactDiff | None:
        """The fact diff the ``memory.written`` of ``rev`` recorded against the revision before
        it, by id; None when it recorded none by id (written before ids, a rebuild branch's
        revision) or a merge renumbered ids (the same facts under new ids: see :meth:`diff`)."""
        rec = self.ledgers.record(self.revision(rev).event_seq)
        if rec is None or rec.type != MemoryWritten.TYPE:
            return None
        w = MemoryWritten.of(rec)
        if w.facts is None or w.diff is None or w.relabeled or len(w.parents or ()) > 1:
            return None
        return FactDiff.from_json(w.diff)

    def find_fact_by_id(self, fact_id: str) -> tuple[Fact, int] | None:
        key = facts.id_key(fact_id)
        return find_in_history(self.ledgers, key) if key else None

    def dropped(self) -> list[dict[str, Any]]:
        """Every fact ever removed: by which revision, why, and whether it is back now (by id)."""
        live = set(self.ledger().ids)
        norms = {f.norm for f in self.ledger().facts}
        shas = {info.trailers.get("Event-Seq"): info.sha for info in self.git.walk()}
        out = []
        for rec in self.memory_events():
            w = MemoryWritten.of(rec)
            listed = set()
            by_id = w.facts is not None
            for item in w.diff["dropped"] if w.diff else []:
                listed.add(item["id"])
                present = item["id"] in live if by_id else factdiff.normalize(item["text"]) in norms
                out.append({
                    "id": item["id"], "text": item["text"], "section": item["section"],
                    "rev": shas.get(str(rec.seq)), "event_seq": rec.seq, "time": rec.ts,
                    "reason": item.get("reason") or "silent", "by": w.reason,
                    "present_now": present,
                })
            for held in w.flagged or []:
                if held["kind"] == "silent-drop" and held["fact_id"] not in listed:
                    out.append({
                        "id": held["fact_id"], "text": held["text"], "section": held["section"],
                        "rev": shas.get(str(rec.seq)), "event_seq": rec.seq, "time": rec.ts,
                        "reason": SILENT_HELD, "by": w.reason,
                        "present_now": held["fact_id"] in live or factdiff.normalize(held["text"]) in norms,
                    })
        return sorted(out + self.kept_out(), key=lambda r: r["event_seq"])

    def pending_review(self) -> list[dict[str, Any]]:
        """Items held for review that are still pending: derived from the state, so a fact
        that is back in memory (a rollback, an undo, a hand edit) is no longer listed."""
        return [unsaid.listed(i) for i in waiting(self.store.state.review.values(), self.ledger())]

    def merge_conflicts(self) -> list[dict[str, Any]]:
        """The merge conflicts of sync still waiting for review (kind ``merge-conflict``), now:
        not the last sync's list, so one resolved since (on any front end, or by a hand edit)
        no longer counts. The tray's sync line and ``memtray sync --status`` count these."""
        return [i for i in self.pending_review() if i.get("kind") == "merge-conflict"]

    def receipts(self) -> dict[str, dict[str, Any]]:
        """The receipt of each fact of the current memory that has one (issue 27): the quote the
        consolidating model gave for its present words, ``stated`` (a user message says it) or
        not (only the assistant's words: an inferred fact), and the seqs of the messages it
        is in. Facts written before receipts, by hand or by the agent have none."""
        live = {f.id: f for f in self.ledger().facts}
        out: dict[str, dict[str, Any]] = {}
        for rec in self.memory_events():
            for fid, prov in (MemoryWritten.of(rec).provenance or {}).items():
                f = live.get(fid)
                if f is None or "quote" not in prov:
                    continue
                if _words(prov.get("text", "")) == _words(f.text):  # a new time (a check, a date) is no new words
                    out[fid] = {"quote": prov["quote"], "stated": prov.get("stated", True),
                                "source_seqs": sorted(prov.get("source_seqs", []))}
                else:
                    out.pop(fid, None)  # reworded since: that receipt was for other words
        return out

    def why(self, fact: str) -> dict[str, Any]:
        """Where a fact of the current memory came from: the revision that gave it its present
        words and the messages it names as sources (by id; also after rollback and restore),
        the name the user gave the device it came from (``device_name``, None: no name) and its
        ``receipt`` (:meth:`receipts`; None when it has none)."""
        info = self._why(fact)
        info["device_name"] = self.store.state.device_names.get(str(info.get("device")))
        info["receipt"] = self.receipts().get(info["fact"]["id"])
        return info

    def _why(self, fact: str) -> dict[str, Any]:
        led = self.ledger()
        key = facts.id_key(fact)
        target = led.get(key) if key else None
        if target is None:
            target = factdiff.match_fact(list(led.facts), fact)
        if target is None:
            raise MemoryError_(f"no fact in current memory matches {fact!r}",
                               hint="See `memtray memory show` for the facts and their words.")
        found: tuple[Record, MemoryWritten, Provenance] | None = None
        exact = False
        here = self.device
        for rec in self.memory_events():
            w = MemoryWritten.of(rec)
            prov = (w.provenance or {}).get(target.id)
            if prov is None or not (prov.get("source_seqs") or "origin" in prov):
                continue
            if not prov.get("source_seqs") and prov.get("origin", ProvenanceOrigin()).get("device") == here:
                continue  # another device's merge restating this device's own: the revision here that made it
            same = _words(prov.get("text", "")) == _words(target.text)
            if same or not exact:  # the newest that gave it these words, else the newest at all
                found, exact = (rec, w, prov), same
        if found is None or not exact:  # ids are per device: another fact's F3 says nothing of this one
            traced = self._why_traced(target)
            if traced is not None:
                if traced["device"] in (None, here):  # this device's own: no other device's revision
                    traced.pop("device_revision", None)
                return {**traced, "device": traced["device"] or here}
        if found is None:  # no recorded sources (a hand edit, an old event): the revision that wrote it
            info = super().why(target.text)
            info["fact"] = {"id": target.id, "section": target.section, "text": target.text}
            return {**info, "device": here}
        rec, w, prov = found
        org_of = prov.get("origin", ProvenanceOrigin())
        peer = org_of.get("device") if org_of.get("device") not in (None, here) else None
        seqs = sorted(prov.get("source_seqs", []))
        if not seqs and "origin" in prov:  # merged from another device: its messages here
            if org_of.get("device") == here:  # this device's own, back through another's merge: seqs of this log
                seqs = sorted(org_of.get("seqs", ()))
            else:
                seqs = imported_seqs(self.store.log.records(), org_of)
        messages = [msg_json(r) for r in self.store.log.records(seqs[0] - 1) if r.seq in set(seqs)] if seqs else []
        sha = next((i.sha for i in self.git.walk() if i.trailers.get("Event-Seq") == str(rec.seq)), None)
        return {
            "fact": {"id": target.id, "section": target.section, "text": target.text},
            "revision": self.revision(sha).to_json() if sha else None,
            "source": w.source,
            "consolidation": w.consolidation or org_of.get("consolidation"),
            "messages": messages,
            "device": peer or here,
            **({"device_revision": org_of.get("revision")} if peer else {}),
        }

    def _why_traced(self, target: Fact) -> dict[str, Any] | None:
        """``why`` from :func:`~memtray.core.memory.provenance.trace`: the consolidation that
        introduced the fact (here, or on another device), through any merges and renumberings,
        and the messages it read that name it best. None when the trace knows no more."""
        from memtray.core.memory.provenance import trace

        _memory, origins = trace(self.store.log.records())
        o = origins.get(target.id)
        if o is None or not (o.device or o.first_seq is not None or o.message_seqs):
            return None
        if o.message_seqs:
            pool = set(o.message_seqs)
        elif o.first_seq is not None and o.last_seq is not None and o.device is None:
            pool = set(range(o.first_seq, o.last_seq + 1))
        else:
            pool = set(o.candidate_seqs)
        cands = [(r, text) for r in self.store.log.records(min(pool) - 1) if r.seq in pool
                 and (o.session is None or o.device is not None or r.session == o.session)
                 and (text := said(r))] if pool else []
        if o.message_seqs:
            chosen = [r for r, _t in cands]
        else:
            ranked = sorted(cands, key=lambda c: -factdiff.similarity(c[1], target.text))
            top = [r for r, t in ranked[:5] if factdiff.similarity(t, target.text) > 0.05]
            chosen = sorted(top or [r for r, _t in ranked[:3]], key=lambda r: r.seq)
        sha = next((i.sha for i in self.git.walk() if i.trailers.get("Event-Seq") == str(o.event_seq)), None)
        return {
            "fact": {"id": target.id, "section": target.section, "text": target.text},
            "revision": self.revision(sha).to_json() if sha else None,
            "source": o.source,
            "consolidation": o.consolidation,
            "messages": [msg_json(r) for r in chosen],
            "device": o.device,
            "device_revision": o.revision,
        }


def waiting(review: Iterable[dict[str, Any]], led: Ledger) -> list[dict[str, Any]]:
    """Of the review items ``review``, those still pending against the memory ``led``."""
    live = set(led.ids)
    norms = {f.norm for f in led.facts}
    texts = {f.id: f.norm for f in led.facts}
    items = [i for i in review
             if (_conflict_open(i, texts) if i.get("kind") == "merge-conflict" else
                 not (i.get("kind") == "silent-drop" and i.get("fact_id") in live)
                 and factdiff.normalize(str(i.get("text", ""))) not in norms)]
    return sorted(items, key=lambda i: i["seq"])


def _conflict_open(item: dict[str, Any], texts: dict[str, str]) -> bool:
    """A merge conflict waits while its fact is in memory (and, for two wordings, while the
    other wording is not the one memory holds): removing or rewording it by hand resolves it."""
    now = texts.get(str(item.get("fact_id")))
    if now is None:
        return False
    return item.get("conflict") == "removed-reworded" or now != factdiff.normalize(str(item.get("text", "")))


__all__ = ["FactOps", "UndoResult", "waiting"]


def _words(text: str) -> str:
    """A fact's words, normalised, without its time: its receipt and sources stay its own
    when a check or a new date changes only the time (core/memory/timing.py)."""
    return factdiff.normalize(timing.body(text))
