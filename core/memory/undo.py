"""Fact changes by id, carried onto another revision: undo one consolidation, rebase a reply (pure).

A change set is what happened to each fact id between two ledgers: added, removed,
reworded (or moved). :func:`undo` applies the inverse of one revision's change set to
the current memory, keeping everything that happened after it, and says, fact by
fact, what it could not undo and why (the fact was changed or removed again since).
:func:`carry` applies the changes made between two revisions onto a third (a
consolidation reply made from an older memory), so a ``remember``, ``forget`` or a
hand edit made while the model worked is neither undone nor doubled; when a sync's
memory merge renumbered this device's ids meanwhile (its ``relabeled`` maps),
:func:`translate` first puts the reply on the ids of now. :func:`replay`
applies one revision's change set onto another line of revisions (a rebuild branch),
keeping every id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memtray.core.memory import factdiff
from memtray.core.memory.factdiff import Fact
from memtray.core.memory.facts import Ledger, pair


@dataclass(frozen=True)
class Change:
    id: str
    before: Fact | None  # None: the fact was added
    after: Fact | None  # None: the fact was removed

    @property
    def kind(self) -> str:
        return "added" if self.before is None else "removed" if self.after is None else "changed"


def changes(before: Ledger, after: Ledger) -> list[Change]:
    """What happened to each fact id from ``before`` to ``after`` (unchanged ids left out;
    a fact that only moved to another section is unchanged)."""
    a = {f.id: f for f in before.facts}
    b = {f.id: f for f in after.facts}
    out = [Change(i, a[i], None) for i in a if i not in b]
    # a fact that only moved section is not a change: undo reverts words, not layout
    out += [Change(i, a[i], b[i]) for i in a if i in b and a[i].norm != b[i].norm]
    out += [Change(i, None, b[i]) for i in b if i not in a]
    return out


@dataclass
class Undone:
    memory: str
    ledger: Ledger
    done: list[dict[str, Any]] = field(default_factory=list)  # {id, text, action}
    not_done: list[dict[str, Any]] = field(default_factory=list)  # {id, text, why}


def _index(ledger: Ledger, fid: str) -> int | None:
    return next((k for k, f in enumerate(ledger.facts) if f.id == fid), None)


def _relabel(text: str, ledger: Ledger, ids: dict[str, str]) -> Ledger:
    """Ids for ``text`` after one edit of the text ``ledger`` names: by normalised text, ``ids``
    (norm -> id) first."""
    plan = dict(ids)
    for f in ledger.facts:
        plan.setdefault(f.norm, f.id)
    out: list[str] = []
    nxt = ledger.next
    seen: set[str] = set()
    for f in factdiff.parse(text):
        fid = plan.get(f.norm)
        if fid is None or fid in seen:
            fid = f"F{nxt}"
            nxt += 1
        seen.add(fid)
        out.append(fid)
    return Ledger.with_ids(text, out, nxt)


def _put(text: str, ledger: Ledger, fact: Fact) -> tuple[str, Ledger]:
    new = factdiff.add_fact(text, fact.text, fact.section or None)
    return new, _relabel(new, ledger, {fact.norm: fact.id})


def _drop(text: str, ledger: Ledger, fid: str) -> tuple[str, Ledger]:
    k = _index(ledger, fid)
    assert k is not None
    new = factdiff.remove_fact(text, factdiff.parse(text)[k])
    return new, _relabel(new, Ledger(tuple(f for f in ledger.facts if f.id != fid), ledger.next), {})


def _set(text: str, ledger: Ledger, fid: str, fact: Fact) -> tuple[str, Ledger]:
    k = _index(ledger, fid)
    assert k is not None
    new = factdiff.replace_fact(text, k, fact.text)  # where it stands now, in its section of now
    return new, _relabel(new, Ledger(tuple(f for f in ledger.facts if f.id != fid), ledger.next), {fact.norm: fid})


def undo(before: Ledger, after: Ledger, text: str, current: Ledger) -> Undone:
    """Revert the fact changes from ``before`` to ``after`` (one revision) in the current
    memory (``text``, ``current``): re-add what it removed, restore what it reworded,
    remove what it added. A fact changed again since is left as it is, and said so."""
    out = Undone(text, current)
    for ch in changes(before, after):
        now = current_fact = out.ledger.get(ch.id)
        if ch.kind == "added":
            assert ch.after is not None
            if now is None:
                out.not_done.append({"id": ch.id, "text": ch.after.text, "why": "already gone"})
            elif current_fact is not None and current_fact.norm != ch.after.norm:
                out.not_done.append({"id": ch.id, "text": now.text,
                                     "why": "changed by a later revision; left in memory"})
            else:
                out.memory, out.ledger = _drop(out.memory, out.ledger, ch.id)
                out.done.append({"id": ch.id, "text": ch.after.text, "action": "removed"})
        elif ch.kind == "removed":
            assert ch.before is not None
            if now is not None:
                out.not_done.append({"id": ch.id, "text": now.text, "why": "already back in memory"})
            elif any(f.norm == ch.before.norm for f in out.ledger.facts):
                out.not_done.append({"id": ch.id, "text": ch.before.text,
                                     "why": "the same words are in memory under another id"})
            else:
                out.memory, out.ledger = _put(out.memory, out.ledger, ch.before)
                out.done.append({"id": ch.id, "text": ch.before.text, "action": "restored"})
        else:
            assert ch.before is not None and ch.after is not None
            if now is None:
                out.not_done.append({"id": ch.id, "text": ch.after.text,
                                     "why": "removed by a later revision; not brought back"})
            elif now.norm != ch.after.norm:
                out.not_done.append({"id": ch.id, "text": now.text, "why": "changed again by a later revision"})
            else:
                out.memory, out.ledger = _set(out.memory, out.ledger, ch.id, ch.before)
                out.done.append({"id": ch.id, "text": ch.before.text, "action": "reverted",
                                 "from": ch.after.text})
    return out


@dataclass
class Translated:
    """A reply's ledgers on the ids of now (see :func:`translate`)."""

    base: Ledger
    text: str  # the reply's text, without the unmapped facts
    proposed: Ledger
    ids: dict[str, str]  # id in the reply (or its base) -> id now, for every id that changed
    unmapped: list[Fact]  # the reply's facts (as it left them) whose id could not be followed
    lost: set[str] = field(default_factory=set)  # base ids that could not be followed


def translate(base: Ledger, text: str, proposed: Ledger, relabels: Sequence[Mapping[str, str]],
              now: Ledger) -> Translated:
    """``base`` (what the model was shown) and ``proposed`` (its reply on ``base``'s ids)
    with ``base``'s ids followed through ``relabels`` (the ``relabeled`` maps of the merges
    written since, oldest first), and the reply's new ids renumbered after ``now``'s, so
    :func:`carry` pairs each fact with itself. Ids two facts would share are not followed;
    such a fact is the one fact of ``now`` with its words, if there is one, else it leaves
    both ledgers (``now`` keeps its own version of it), its id is in ``lost`` and the reply's
    version of it in ``unmapped``, for review."""
    def follow(fid: str) -> str:
        for m in relabels:
            fid = str(m.get(fid, fid))
        return fid

    known = {f.id: follow(f.id) for f in base.facts}
    hits: dict[str, int] = {}
    for target in known.values():
        hits[target] = hits.get(target, 0) + 1
    lost = {old for old, target in known.items() if hits[target] > 1}
    used = {target for old, target in known.items() if old not in lost}
    for f in base.facts:  # then by its words: the one fact of now that has them, if no other id went there
        same = [g.id for g in now.facts if g.norm == f.norm]
        if f.id in lost and len(same) == 1 and same[0] not in used:
            known[f.id] = same[0]
            used.add(same[0])
            lost.discard(f.id)
    ids = {old: target for old, target in known.items() if old not in lost and target != old}
    unmapped = [f for f in proposed.facts if f.id in lost]
    for f in unmapped:
        text, proposed = _drop(text, proposed, f.id)
    nxt = max(now.next, proposed.next)
    facts: list[Fact] = []
    for f in proposed.facts:
        if f.id not in known:  # new in the reply: after every id in use now
            ids[f.id] = f"F{nxt}"
            nxt += 1
        facts.append(Fact(ids.get(f.id, f.id), f.section, f.text, f.norm))
    shown = tuple(Fact(ids.get(f.id, f.id), f.section, f.text, f.norm) for f in base.facts if f.id not in lost)
    # base.next == now.next tells carry the reply's new ids are already after now's
    return Translated(Ledger(shown, now.next), text, Ledger(tuple(facts), nxt), ids, unmapped, lost)


def carry(base: Ledger, now: Ledger, text: str, proposed: Ledger) -> tuple[str, Ledger, dict[str, str]]:
    """Apply the changes made from ``base`` to ``now`` onto ``proposed`` (made from ``base``):
    facts removed meanwhile stay removed, rewordings stay, additions are kept once (a new
    fact of ``proposed`` that restates one added meanwhile, by :func:`pair`, is that fact).
    The ids ``proposed`` gave its new facts are renumbered after ``now``'s (returned: old -> new)."""
    renames: dict[str, str] = {}
    nxt = max(now.next, proposed.next)
    known = {f.id for f in base.facts}
    facts = []
    for f in proposed.facts:
        if f.id not in known and base.next != now.next:
            renames[f.id] = f"F{nxt}"
            nxt += 1
            f = Fact(renames[f.id], f.section, f.text, f.norm)
        facts.append(f)
    led = Ledger(tuple(facts), nxt)
    for ch in changes(base, now):
        have = led.get(ch.id)
        if ch.kind == "removed":
            if have is not None:
                text, led = _drop(text, led, ch.id)
        elif ch.kind == "added":
            assert ch.after is not None
            fresh = [f for f in led.facts if f.id not in known and now.get(f.id) is None] if have is None else []
            if fresh and (same := pair([ch.after], fresh)):
                text, led = _drop(text, led, fresh[next(iter(same))].id)  # the reply's restatement of it
            if have is None and not any(f.norm == ch.after.norm for f in led.facts):
                text, led = _put(text, led, ch.after)
        else:
            assert ch.after is not None
            if have is not None:
                text, led = _set(text, led, ch.id, ch.after)
    return text, Ledger(led.facts, max(led.next, now.next)), renames


def replay(base: Ledger, now: Ledger, text: str, ledger: Ledger) -> tuple[str, Ledger, list[str]]:
    """Apply the change set ``base`` -> ``now`` (one revision of main) onto ``text`` /
    ``ledger`` (another line of revisions, a rebuild branch), by id. Returns the new text,
    its ledger, and the ids it removed.

    A removal removes that id; a rewording gives that id its new words; an addition adds
    the fact with its id. When the target lacks the id (its line wrote the fact under
    another one), the fact is found by :func:`~memtray.core.memory.facts.pair` (same words, or the same names
    and numbers reworded); an addition whose fact is there already is not doubled, and one
    whose id the target uses for another fact gets a new id.
    """
    removed: list[str] = []

    def find(fact: Fact) -> Fact | None:
        hit = ledger.get(fact.id)
        if hit is not None:
            return hit
        same = next((f for f in ledger.facts if f.norm == fact.norm), None)
        if same is not None:
            return same
        pairs = pair([fact], list(ledger.facts))
        return ledger.facts[next(iter(pairs))] if pairs else None

    for ch in changes(base, now):
        if ch.kind == "removed":
            assert ch.before is not None
            have = find(ch.before)
            if have is not None:
                text, ledger = _drop(text, ledger, have.id)
                removed.append(have.id)
        elif ch.kind == "changed":
            assert ch.before is not None and ch.after is not None
            have = find(ch.before)
            if have is None:
                have = find(ch.after)
            if have is not None:
                text, ledger = _set(text, ledger, have.id, Fact(have.id, ch.after.section, ch.after.text, ch.after.norm))
            else:
                text, ledger = _put_free(text, ledger, ch.after)
        else:
            assert ch.after is not None
            have = ledger.get(ch.id)
            if have is not None and have.norm != ch.after.norm and not pair([ch.after], [have]):
                have = None  # the id is another fact's here: look for this one by its words
            if have is None and find(Fact("", ch.after.section, ch.after.text, ch.after.norm)) is None:
                text, ledger = _put_free(text, ledger, ch.after)
    return text, ledger, removed


def _put_free(text: str, ledger: Ledger, fact: Fact) -> tuple[str, Ledger]:
    """Add ``fact`` with its id, or with a new one when ``ledger`` uses that id for another fact."""
    if ledger.get(fact.id) is not None:
        fact = Fact(f"F{ledger.next}", fact.section, fact.text, fact.norm)
        ledger = Ledger(ledger.facts, ledger.next + 1)
    return _put(text, ledger, fact)
