"""The consolidation protocol on fact ids: what a ``save_memory`` reply does to memory (pure).

A reply is either the whole new MEMORY.md (``memory_update``, nanobot's form: each
kept or reworded fact keeps its ``[ID]`` marker, new facts come without one and
cite the messages they come from, ``[#3, #5]``) or a list of ``edits``
(``update`` / ``add`` / ``remove`` / ``merge`` by id), so that changing k facts of
an n-fact memory costs output tokens in k, not n. ``removed_facts`` names ids (or,
as before, the facts' text), each with a reason.

:func:`apply_reply` resolves every fact of the reply to an id and applies the
guard on ids (a :class:`Verdict` per fact says what happened to it):

* an id that stays may carry any wording (``reworded``); an id given twice is one
  fact (the second bullet is a ``duplicate`` or, if it says something else, a
  ``split`` part with a new id); a bullet with several ids is a ``merge``;
* ids the model invented, ids of facts no longer in memory and ids of the wrong
  form are ignored with a note, and such bullets are matched like bullets without
  an id: by :func:`facts.pair`, which never pairs facts that differ in a name,
  number, date or place;
* a current id that disappears without being listed is a silent drop: put back
  (policy ``keep``) or held for review (``review``), unless another bullet says
  everything it said (a merge without ids, recorded on the survivor);
* a new bullet that restates a live fact is a ``duplicate`` and is not written;
* a new fact, and a changed one, must come with a receipt (:mod:`receipts`): message
  numbers and a verbatim quote, which :func:`receiptcheck.check` finds in the messages and
  the fact must follow from; one without, or whose quote is not there or says something
  else, is held for review (``unsupported``, with the reason), never written. A rewording
  by id without a receipt is written when it changes no name, number, date, place or
  negation of the fact it rewords. A fact only the assistant's words support is
  ``inferred``: held for review (``inferred``) or, under policy ``write``, written and
  marked so;
* instruction-like text is held for review; an empty memory, or silent drops of
  more than half of the facts, make the reply unusable (``ValueError``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memtray.core.memory import factdiff, facts, subjects, timing
from memtray.core.memory.factdiff import Fact
from memtray.core.memory.facts import Ledger
from memtray.core.memory.items import review_item
from memtray.core.memory.poison import hold_flagged, looks_like_instruction, why_flagged
from memtray.core.memory.receiptcheck import Check, check
from memtray.core.memory.receipts import FactReceipt, Receipt, find_receipt, read_receipt

SHRINK_LIMIT = 0.5  # silently dropping more than half of the facts is a broken reply, not a policy case
MERGE_LIMIT = 4  # a bullet without ids that "merges" more facts than this is a paragraph dump
MAX_HELD = 50  # unsupported facts held for review per reply; the rest are discarded with a note
EDIT_OPS = ("update", "add", "remove", "merge")
INFERRED_POLICIES = ("hold", "write")


@dataclass(frozen=True)
class Verdict:
    """What the guard decided for one fact of the current memory or of the reply."""

    #: kept reworded added removed merged split silent-kept silent-held duplicate unsupported inferred instruction
    kind: str
    id: str | None
    text: str
    into: str | None = None  # merged / duplicate: the id of the fact that now holds it

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "text": self.text, "into": self.into}


@dataclass
class Applied:
    memory: str
    ledger: Ledger
    verdicts: list[Verdict]
    flagged: list[dict[str, Any]]
    reasons: dict[str, str]  # removed id -> reason
    merged: dict[str, list[str]]  # survivor id -> ids merged into it
    sources: dict[str, list[int]]  # added / changed id -> message numbers that support it
    notes: list[str] = field(default_factory=list)
    #: added / changed id -> its checked receipt (where the quote is, the quote, stated or inferred)
    receipts: dict[str, Check] = field(default_factory=dict)

    def of(self, kind: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.kind == kind]


# --- receipts --------------------------------------------------------------------------

@dataclass(frozen=True)
class Judge:
    """What the receipt check needs of a reply: the messages (role, text), numbered from 1,
    the reply's top-level receipts, the ``inferred_facts`` policy and, when an embedding model
    is at hand, a similarity of two texts (0..1)."""

    messages: Sequence[tuple[str, str]]
    receipts: Sequence[FactReceipt] = ()
    inferred: str = "hold"
    similarity: Callable[[str, str], float | None] | None = None
    names: frozenset[str] = frozenset()  # the names memory says the user goes by ("Name: Sam")

    def new(self, text: str, receipt: Receipt | None, ids: Sequence[str] = ()) -> Check:
        """A new fact: on its own receipt, or the top-level one that names it. Its time
        (:mod:`timing`) is checked apart from its words: the quote must say when."""
        words, when = timing.split(text)
        if receipt is None:  # the receipt may name the fact with its time or without it
            receipt = find_receipt(self.receipts, text, ids) or find_receipt(self.receipts, words)
        c = check(words, receipt, self.messages, similarity=self.similarity, names=self.names)
        return self._time(c, when, receipt, ())

    def change(self, text: str, receipt: Receipt | None, old: Sequence[str], ids: Sequence[str] = ()) -> Check:
        """A fact reworded or merged by id: what it said before counts as said (its time too)."""
        words, when = timing.split(text)
        if receipt is None:  # the receipt may name the fact with its time or without it
            receipt = find_receipt(self.receipts, text, ids) or find_receipt(self.receipts, words)
        olds = [timing.split(o) for o in old]
        c = check(words, receipt, self.messages, known=[w for w, _ in olds], reworded=True,
                  similarity=self.similarity, names=self.names)
        return self._time(c, when, receipt, [w for _, w in olds if w is not None])

    def _time(self, c: Check, when: timing.When | None, receipt: Receipt | None,
              before: Sequence[timing.When]) -> Check:
        """``c`` held when the fact's time is new and its receipt's quote does not say it."""
        if c.kind == "held" or when is None or (when.start is None and when.until is None and when.checked is None):
            return c
        key = (when.start, when.until, when.checked)
        if any((b.start, b.until, b.checked) == key for b in before):
            return c  # the same time as before (only the review date may have moved)
        quote, where = c.quote, c.messages
        if not quote:  # the words were known already: the receipt must still be there for the time
            if receipt is None:
                return Check("held", "no receipt says when the fact holds")
            q = check(receipt.quote, receipt, self.messages)
            if q.kind == "held":
                return Check("held", q.reason, q.messages, q.quote)
            quote, where = q.quote, q.messages
        why = timing.supports(quote, when)
        return Check("held", f"its time: {why}", where, quote) if why else replace(c, messages=where, quote=quote)

    def held(self, c: Check) -> str | None:
        """The review kind a checked fact is held as, or None when it is written."""
        if c.kind == "held":
            return "unsupported"
        if c.kind == "inferred" and self.inferred != "write":
            return "inferred"
        return None


def held_item(kind: str, text: str, section: str, fact_id: str | None, c: Check) -> dict[str, Any]:
    """The review item of a fact the receipt check held: the reason, and the quote and the
    messages it cites, so the review can show them."""
    reason = c.reason if kind == "unsupported" else (
        "only the assistant said this" + (f" (message #{c.messages[0]})" if c.messages else ""))
    item = review_item(kind, text, section, fact_id, reason)
    if c.quote:
        item["quote"] = c.quote
    if c.messages:
        item["messages"] = list(c.messages)
    return item


def with_seqs(item: dict[str, Any], seq_of: Sequence[int | None]) -> dict[str, Any]:
    """A review item as the log keeps it: the message numbers of :func:`held_item` (1-based,
    as the prompt numbered them) become the messages' seqs (``source_seqs``)."""
    nums = item.get("messages")
    if not isinstance(nums, list):
        return item
    out = {k: v for k, v in item.items() if k != "messages"}
    seqs = [s for n in nums if isinstance(n, int) and 1 <= n <= len(seq_of) and (s := seq_of[n - 1]) is not None]
    if seqs:
        out["source_seqs"] = seqs
    return out


# --- the reply -------------------------------------------------------------------------

def _without(text: str, drop: set[int]) -> str:
    """``text`` without the facts whose indexes are in ``drop`` (one pass: a reply can hold
    hundreds of bullets the guard does not write)."""
    if not drop:
        return text
    lines = text.split("\n")
    gone: set[int] = set()
    for k, (_f, first, end) in enumerate(factdiff.spans(text)):
        if k in drop:
            gone.update(range(first, end))
    return "\n".join(line for n, line in enumerate(lines) if n not in gone)


def _nothing_new(text: str, live: Sequence[str]) -> bool:
    """Whether a new bullet only restates memory: it says the same as a live fact (one covers
    the other) and every word it has is already said somewhere in memory."""
    norm = factdiff.normalize(text)
    if not any(factdiff.normalize(t) == norm or facts.covers(t, text) or facts.covers(text, t) for t in live):
        return False
    words = frozenset(w for t in live for w in facts.content(t) | facts.anchors(t))
    return all(facts.has_word(w, words) for w in facts.content(text) | facts.anchors(text))


@dataclass
class _Plan:
    """The fact ids the final text's facts must get, by normalised text."""

    by_norm: dict[str, str] = field(default_factory=dict)

    def put(self, norm: str, fid: str) -> None:
        self.by_norm.setdefault(norm, fid)


def _resolve_removed(removed: Sequence[Mapping[str, str]], current: Ledger,
                     notes: list[str]) -> dict[str, str]:
    reasons: dict[str, str] = {}
    for item in removed:
        name = str(item.get("id") or item.get("fact") or "")
        reason = str(item.get("reason") or "") or "removed by the model"
        key = facts.id_key(name)
        hit = current.get(key) if key else None
        if hit is None:
            hit = factdiff.find_fact(list(current.facts), name)
        if hit is None and name.strip():
            pairs = facts.pair(list(current.facts), factdiff.parse(f"- {name}"))
            hit = current.facts[pairs[0]] if 0 in pairs else None
        if hit is None:
            notes.append(f"removed_facts names a fact not in memory: {name[:80]!r}")
            continue
        reasons[hit.id] = reason
    return reasons


def apply_reply(
    current: Ledger,
    current_text: str,
    *,
    memory_update: str | None,
    edits: Sequence[Mapping[str, Any]] | None,
    removed: Sequence[Mapping[str, str]],
    messages: Sequence[str],
    policy: str = "keep",
    also: Sequence[Fact] = (),
    roles: Sequence[str] = (),
    receipts: Sequence[FactReceipt] = (),
    inferred: str = "hold",
    similarity: Callable[[str, str], float | None] | None = None,
) -> Applied:
    """Apply a ``save_memory`` reply to the current memory, on ids. Pure.

    ``messages`` are the consolidated messages' texts, numbered from 1 as the prompt
    shows them, ``roles`` their roles (``user`` where not given). ``receipts``: the reply's
    top-level receipts (an edit carries its own as ``receipt``, a :class:`Receipt`).
    ``inferred``: the policy for facts only the assistant's words support (``hold`` or
    ``write``). ``also`` are facts no longer in memory that the reply may keep by id
    (a redo shows the memory before the consolidation it redoes); leaving them out is
    not a silent drop. Raises ValueError when the reply is unusable.
    """
    notes: list[str] = []
    reasons = _resolve_removed(removed, current, notes)
    said = [(roles[n] if n < len(roles) else "user", t) for n, t in enumerate(messages)]
    judge = Judge(said, receipts, inferred, similarity, subjects.names_in_memory(current_text))
    if edits or (edits is not None and memory_update is None):  # no edits, no memory: only removed_facts
        out = _apply_edits(current, current_text, edits, reasons, judge, notes)
    elif memory_update is None:
        raise ValueError("save_memory needs memory_update or edits")
    else:
        out = _apply_full(current, memory_update, reasons, judge, policy, notes, also)
    return _finish(out, current, current_text)


def _apply_full(current: Ledger, update: str, reasons: dict[str, str], judge: Judge,
                policy: str, notes: list[str], also: Sequence[Fact] = ()) -> Applied:
    marked = facts.read_markers(update)
    new = marked.facts
    if current.facts and not new:
        raise ValueError("memory_update is empty: it would erase every fact")
    by_id = {f.id: f for f in also} | {f.id: f for f in current.facts}
    verdicts: list[Verdict] = []
    assign: list[str | None] = [None] * len(new)
    drop: set[int] = set()  # reply bullets not written
    split_of: dict[int, str] = {}
    merged: dict[str, list[str]] = {}
    sources: dict[str, list[int]] = {}
    claimed: dict[str, int] = {}
    extra_ids: dict[int, list[str]] = {}
    unknown: list[str] = []
    for j, f in enumerate(new):
        valid = [i for i in marked.ids[j] if i in by_id]
        unknown += [i for i in marked.ids[j] if i not in by_id] + marked.bad_ids[j]
        if not valid:
            continue
        first = next((i for i in valid if i not in claimed), None)
        if first is None:  # every id on it is already some other bullet's
            holder = new[claimed[valid[0]]]
            if f.norm == holder.norm or facts.covers(holder.text, f.text):
                drop.add(j)
                verdicts.append(Verdict("duplicate", None, f.text, valid[0]))
            else:
                split_of[j] = valid[0]
            continue
        claimed[first] = j
        assign[j] = first
        extra_ids[j] = [i for i in valid if i != first]
    if unknown:
        notes.append("ignored ids not in memory: " + ", ".join(sorted(set(unknown))[:20]))
    # several ids on one bullet: a merge, unless an id also has a bullet of its own
    for j, extra in extra_ids.items():
        for i in extra:
            if i not in claimed and i not in reasons:
                merged.setdefault(str(assign[j]), []).append(i)
                claimed[i] = j
    # bullets without a usable id: the precise matcher
    free_old = [f for f in current.facts if f.id not in claimed and f.id not in reasons]
    todo = [j for j in range(len(new)) if assign[j] is None and j not in drop and j not in split_of]
    for k, oi in facts.pair(free_old, [new[j] for j in todo]).items():
        j = todo[k]
        assign[j] = free_old[oi].id
        claimed[free_old[oi].id] = j
    # current facts no bullet claims: merged into a bullet that says it all, removed, or silent
    silent: list[Fact] = []
    absorbed: dict[int, list[Fact]] = {}
    for f in current.facts:
        if f.id in claimed:
            continue
        if f.id in reasons:
            continue
        keeper = next((j for j in range(len(new)) if j not in drop and facts.covers(new[j].text, f.text)), None)
        if keeper is not None:
            absorbed.setdefault(keeper, []).append(f)
        else:
            silent.append(f)
    for j, olds in absorbed.items():
        if len(olds) > MERGE_LIMIT:
            notes.append(f"a bullet restated {len(olds)} facts at once; they stay apart")
            silent += olds
            if assign[j] is None:
                drop.add(j)
                verdicts.append(Verdict("duplicate", None, new[j].text))
            continue
        if assign[j] is None:
            assign[j] = olds[0].id
            claimed[olds[0].id] = j
            olds = olds[1:]
        for f in olds:
            merged.setdefault(str(assign[j]), []).append(f.id)
            claimed[f.id] = j
    for i in reasons:
        if i in claimed:
            notes.append(f"{i} is listed as removed but the reply still has it; it stays")
    reasons = {i: r for i, r in reasons.items() if i not in claimed}
    if current.facts and len(silent) > SHRINK_LIMIT * len(current.facts) and len(silent) > 2:
        raise ValueError(f"memory_update silently drops {len(silent)} of {len(current.facts)} facts; "
                         "refusing a shrunken memory")
    # what is left of the reply: duplicates, split parts, new facts
    live = [new[j].text for j in range(len(new)) if assign[j] is not None and j not in drop]
    kept_back = silent if policy == "keep" else []
    live += [f.text for f in kept_back]
    held: list[tuple[str, Fact, Check]] = []
    checked: dict[str, Check] = {}
    nxt = current.next
    flagged_early: list[dict[str, Any]] = []
    for j, f in enumerate(new):
        if assign[j] is not None or j in drop:
            continue
        if looks_like_instruction(f.text):
            drop.add(j)
            verdicts.append(Verdict("instruction", None, f.text))
            flagged_early.append(review_item("instruction", f.text, f.section, None, why_flagged(f.text)))
            continue
        if j not in split_of and _nothing_new(f.text, live):
            drop.add(j)
            verdicts.append(Verdict("duplicate", None, f.text))
            continue
        parent = split_of.get(j) or next(
            (o.id for o in current.facts if o.id in claimed and facts.covers(o.text, f.text)), None)
        c = (judge.change(f.text, None, [by_id[parent].text], marked.ids[j]) if parent is not None
             else judge.new(f.text, None, marked.ids[j]))
        kind = judge.held(c)
        if kind is not None:
            drop.add(j)
            held.append((kind, f, c))
            verdicts.append(Verdict(kind, None, f.text))
            continue
        assign[j] = facts.new_id(nxt)
        nxt += 1
        if c.messages:
            sources[str(assign[j])] = list(c.messages)
            checked[str(assign[j])] = c
        verdicts.append(Verdict("split", assign[j], f.text, parent) if parent is not None
                        else Verdict("added", assign[j], f.text))
        live.append(f.text)
    # a rewording by id that does not restate the fact's time keeps it (a time is never dropped
    # by leaving it out; a fact that ended is removed, with its reason)
    retimed: dict[int, str] = {}
    for j, f in enumerate(new):
        old = by_id.get(str(assign[j])) if j not in drop and assign[j] is not None else None
        if old is not None and timing.split(f.text)[1] is None and (w := timing.split(old.text)[1]) is not None:
            retimed[j] = timing.with_when(f.text, w)
            new[j] = replace(f, text=retimed[j], norm=factdiff.normalize(retimed[j]))
    # a fact reworded (or merged) by id: the receipt check, and the old wording back if it fails
    revert: dict[int, Fact] = {}
    for j, f in enumerate(new):
        old = by_id.get(str(assign[j])) if j not in drop and assign[j] is not None else None
        if old is None or old.norm == f.norm:
            continue
        gone = [by_id[i].text for i in merged.get(old.id, []) if i in by_id]
        c = judge.change(f.text, None, [old.text, *gone], [old.id, *marked.ids[j]])
        # instruction-like text is held by _finish, which says what it is
        if judge.held(c) is not None and not looks_like_instruction(f.text):
            revert[j] = old
            flagged_early.append({**held_item("unsupported", f.text, f.section, old.id, c), "replaces": old.id})
        elif c.messages:
            sources[old.id] = list(c.messages)
            checked[old.id] = c
    # the text: the reply without dropped bullets, plus what the guard puts back
    text = _without(marked.text, drop)
    kept_j = [j for j in range(len(new)) if j not in drop]
    for j, words in retimed.items():
        if j not in revert:
            text = factdiff.replace_fact(text, kept_j.index(j), words)
    back: list[Fact] = []  # a held merge takes nothing with it: the facts it merged stay as they were
    for j, old in revert.items():
        text = factdiff.replace_fact(text, kept_j.index(j), old.text)
        back += [by_id[i] for i in merged.pop(old.id, []) if i in by_id]
    for f in back:
        text = factdiff.add_fact(text, f.text, f.section or None)
    plan = _Plan()
    for f in back:
        plan.put(f.norm, f.id)
        verdicts.append(Verdict("kept", f.id, f.text))
    for j, f in enumerate(new):
        if j not in drop and assign[j] is not None:
            old = by_id.get(str(assign[j]))
            if j in revert and old is not None:
                plan.put(old.norm, old.id)
                verdicts.append(Verdict("kept", old.id, old.text))
                continue
            plan.put(f.norm, str(assign[j]))
            if old is not None:
                verdicts.append(Verdict("kept" if old.norm == f.norm else "reworded", old.id, f.text))
    for f in silent:
        if policy == "keep":
            text = factdiff.add_fact(text, f.text, f.section or None)
            plan.put(f.norm, f.id)
            verdicts.append(Verdict("silent-kept", f.id, f.text))
        else:
            verdicts.append(Verdict("silent-held", f.id, f.text))
    for survivor, ids in merged.items():
        verdicts += [Verdict("merged", i, by_id[i].text, survivor) for i in ids]
    verdicts += [Verdict("removed", i, by_id[i].text) for i in reasons]
    flagged: list[dict[str, Any]] = flagged_early + [
        review_item("silent-drop", f.text, f.section, f.id, "dropped without a reason")
        for f in silent if policy != "keep"
    ]
    flagged += [held_item(kind, f.text, f.section, None, c) for kind, f, c in held[:MAX_HELD]]
    if len(held) > MAX_HELD:
        notes.append(f"{len(held) - MAX_HELD} more facts no receipt supports were discarded")
    return Applied(text, _ledger(text, plan, nxt), verdicts, flagged, reasons, merged, sources, notes, checked)


def _finish(out: Applied, current: Ledger, current_text: str) -> Applied:
    """Hold instruction-like facts and text; ``out.ledger`` names the ids of ``out.memory``."""
    by_id = {f.id: f for f in current.facts}
    text = out.memory
    ledger = out.ledger
    plan = _Plan({f.norm: f.id for f in ledger.facts})
    nxt = ledger.next
    for f in reversed(ledger.facts):
        old = by_id.get(f.id)
        if old is not None and old.norm == f.norm:
            continue
        if looks_like_instruction(f.text):
            index = ledger.facts.index(f)
            if old is not None:
                text = factdiff.replace_fact(text, index, old.text)
                plan.by_norm[old.norm] = old.id
            else:
                text = factdiff.remove_fact(text, factdiff.parse(text)[index])
            out.flagged.append(review_item("instruction", f.text, f.section, f.id, why_flagged(f.text)))
            out.verdicts = [Verdict("kept", v.id, old.text) if old is not None and v.id == f.id and v.kind == "reworded"
                            else v for v in out.verdicts]
            out.verdicts.append(Verdict("instruction", f.id if old is not None else None, f.text))
            out.sources.pop(f.id, None)
            out.receipts.pop(f.id, None)
    text, held = hold_flagged(current_text, text)
    out.flagged += [review_item("instruction", h.text, "", None, h.reason) for h in held]
    out.memory = text
    out.ledger = _ledger(text, plan, nxt)
    live = set(out.ledger.ids)
    out.sources = {k: v for k, v in out.sources.items() if k in live}
    out.receipts = {k: v for k, v in out.receipts.items() if k in live}
    return out


def _ledger(text: str, plan: _Plan, nxt: int) -> Ledger:
    ids: list[str] = []
    seen: set[str] = set()
    for f in factdiff.parse(text):
        fid = plan.by_norm.get(f.norm)
        if fid is None or fid in seen:
            fid = facts.new_id(nxt)
            nxt += 1
        seen.add(fid)
        ids.append(fid)
    return Ledger.with_ids(text, ids, nxt)


# --- edits -----------------------------------------------------------------------------

def _apply_edits(current: Ledger, text: str, edits: Sequence[Mapping[str, Any]], reasons: dict[str, str],
                 judge: Judge, notes: list[str]) -> Applied:
    ledger = current
    verdicts: list[Verdict] = []
    merged: dict[str, list[str]] = {}
    sources: dict[str, list[int]] = {}
    checked: dict[str, Check] = {}
    held: list[dict[str, Any]] = []
    nxt = current.next
    by_id = {f.id: f for f in current.facts}

    def index_of(fid: str) -> int | None:
        return next((k for k, f in enumerate(ledger.facts) if f.id == fid), None)

    def relabel(new_text: str, ids: dict[str, str]) -> Ledger:
        plan = _Plan(dict(ids))
        for f in ledger.facts:
            plan.put(f.norm, f.id)
        return _ledger(new_text, plan, nxt)

    ops = list(edits) + [{"op": "remove", "id": i, "reason": r} for i, r in reasons.items()]
    for n, op in enumerate(ops, 1):
        kind = str(op.get("op") or op.get("action") or "").lower()
        raw_id = str(op.get("id") or "")
        fid = facts.id_key(raw_id) if raw_id else None
        new_text = " ".join(str(op.get("text") or "").split())
        section = str(op.get("section") or "") or None
        receipt = op.get("receipt")
        if not isinstance(receipt, Receipt):  # an edit that did not come through parse_reply
            receipt = read_receipt(receipt, sources=op.get("sources"))
        if kind not in EDIT_OPS:
            notes.append(f"edit {n}: unknown op {kind!r}, skipped")
            continue
        when, bad_time = timing.read_members(op)
        if bad_time and kind != "remove":
            # a time the door cannot read holds the change with the reason: nothing is lost
            shown = new_text or " . ".join(g.text for i in [fid, *(op.get("ids") or [])]
                                          if i and (g := ledger.get(facts.id_key(str(i)) or "")) is not None)
            held.append(review_item("unsupported", shown or "(no text)", section or "", fid,
                                    f"its time: {bad_time}"))
            verdicts.append(Verdict("unsupported", fid, shown))
            notes.append(f"edit {n}: {kind} held: {bad_time}")
            continue
        if kind == "add":
            if not new_text:
                notes.append(f"edit {n}: add without text, skipped")
                continue
            if when is not None:
                new_text = timing.with_when(new_text, when)
            if any(f.norm == factdiff.normalize(new_text) or facts.covers(f.text, new_text) for f in ledger.facts):
                verdicts.append(Verdict("duplicate", None, new_text))
                continue
            c = judge.new(new_text, receipt)
            hold = judge.held(c)
            if hold is not None:
                held.append(held_item(hold, new_text, section or "", None, c))
                verdicts.append(Verdict(hold, None, new_text))
                continue
            text = factdiff.add_fact(text, new_text, section)
            fresh = facts.new_id(nxt)
            nxt += 1
            ledger = relabel(text, {factdiff.normalize(new_text): fresh})
            sources[fresh] = list(c.messages)
            checked[fresh] = c
            verdicts.append(Verdict("added", fresh, new_text))
            continue
        if kind == "remove":
            target = fid or facts.id_key(str(op.get("fact") or ""))
            k = index_of(target) if target else None
            if k is None and op.get("fact"):
                hit = factdiff.find_fact(list(ledger.facts), str(op["fact"]))
                k = index_of(hit.id) if hit else None
            if k is None and target in reasons and target not in ledger.ids:
                continue  # removed already (by an edit and again in removed_facts)
            if k is None:
                notes.append(f"edit {n}: remove names no fact in memory ({raw_id or op.get('fact')!r}), skipped")
                continue
            f = ledger.facts[k]
            text = factdiff.remove_fact(text, factdiff.parse(text)[k])
            reasons[f.id] = str(op.get("reason") or "") or "removed by the model"
            ledger = relabel(text, {})
            continue
        ids = [facts.id_key(str(x)) for x in op.get("ids") or []] if kind == "merge" else [fid]
        ids_ok = [i for i in ids if i and index_of(i) is not None]
        if not ids_ok or (kind == "update" and not new_text and when is None):
            notes.append(f"edit {n}: {kind} names no fact in memory ({raw_id or op.get('ids')!r}), skipped")
            continue
        survivor = ids_ok[0]
        k = index_of(survivor)
        assert k is not None
        old = ledger.facts[k]
        if when is not None:  # a new time over the old one: what the edit does not name stays
            before = timing.split(old.text)[1] or timing.When()
            when = timing.When(when.start or before.start, when.until or before.until,
                               when.review or before.review, before.checked)
            new_text = timing.with_when(new_text or old.text, when)
        elif new_text and timing.split(new_text)[1] is None and (kept := timing.split(old.text)[1]) is not None:
            new_text = timing.with_when(new_text, kept)  # a rewording keeps the time it does not restate
        if (new_text and factdiff.normalize(new_text) != old.norm) or kind == "merge":
            olds = [g.text for i in ids_ok if (g := ledger.get(i)) is not None]
            c = judge.change(new_text or " . ".join(olds), receipt, olds, ids_ok)
            if judge.held(c) is not None and not looks_like_instruction(new_text):  # _finish holds that one
                item = held_item("unsupported", new_text or " . ".join(olds), section or old.section, survivor, c)
                if kind != "merge":  # taken, a rewording replaces its fact's words (a merge is added)
                    item["replaces"] = survivor
                held.append(item)
                notes.append(f"edit {n}: {kind} of {survivor} held: {c.reason}")
                continue
            if c.messages:
                sources[survivor] = list(c.messages)
                checked[survivor] = c
        if kind == "merge":
            for other in ids_ok[1:]:
                ko = index_of(other)
                if ko is not None:
                    text = factdiff.remove_fact(text, factdiff.parse(text)[ko])
                    ledger = relabel(text, {})
                    merged.setdefault(survivor, []).append(other)
            k = index_of(survivor)
            assert k is not None
            new_text = new_text or old.text
        if section and factdiff.normalize(section) != factdiff.normalize(old.section):
            text = factdiff.add_fact(factdiff.remove_fact(text, factdiff.parse(text)[k]), new_text, section)
        else:
            text = factdiff.replace_fact(text, k, new_text)
        ledger = relabel(text, {factdiff.normalize(new_text): survivor})
    for f in current.facts:
        now = next((g for g in ledger.facts if g.id == f.id), None)
        if now is not None:
            verdicts.append(Verdict("kept" if now.norm == f.norm else "reworded", f.id, now.text))
    for survivor, gone_ids in merged.items():
        verdicts += [Verdict("merged", i, by_id[i].text, survivor) for i in gone_ids if i in by_id]
    live = set(ledger.ids)
    for i in list(reasons):
        if i in by_id and i not in live:
            verdicts.append(Verdict("removed", i, by_id[i].text))
        else:
            reasons.pop(i)
    flagged = held[:MAX_HELD]
    if len(held) > MAX_HELD:
        notes.append(f"{len(held) - MAX_HELD} more facts no receipt supports were discarded")
    return Applied(text, ledger, verdicts, flagged, reasons, merged, sources, notes, checked)
