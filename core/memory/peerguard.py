"""Another device's memory passes the guards a local consolidation passes (pure).

A merge or a fast-forward brings facts this device never guarded: another device
wrote them, or a remote someone else can push to did. So before the merge or
fast-forward is written, every fact of the result that this device's memory does not
hold (new, or reworded) is checked as a consolidation's would be:

* it reads like an instruction (:mod:`memtray.core.memory.poison`, standing orders
  included): held, kind ``instruction``;
* it carried a secret (the peer's payload is redacted on arrival, so a fact now holds
  a ``[REDACTED:...]`` marker this device's memory did not have): held, kind ``secret``;
* no revision says where it came from (:func:`says_where`, the doctor's provenance rule
  applied to the revision that introduced it, or the origin the merge traced): held,
  kind ``unsupported``.

A held fact is not written: a new one is left out, a fact of this device that the peer
reworded keeps this device's words. Each becomes an item of the review queue (the
same one a consolidation fills), where the user restores it or lets it go. Non-fact
blocks (a heading, a comment, a code line) that read like instructions are held too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memtray.core.log.events import MemoryWritten
from memtray.core.memory import factdiff
from memtray.core.memory.facts import Ledger, new_id
from memtray.core.memory.items import review_item
from memtray.core.memory.merge import Node
from memtray.core.memory.poison import hold_flagged, looks_like_instruction, why_flagged

__all__ = ["PeerGuarded", "guard_peer", "says_where"]

_MARKER = "[REDACTED:"
#: most facts of one merge held as review items (as for a consolidation's reply); the peer's
#: revision itself stays in the log (``memory.peer``) and on its side line in git
MAX_HELD = 50
#: reasons whose revision says where its facts came from without naming messages
_SELF_EVIDENT = ("user-edit", "review", "import")


@dataclass
class PeerGuarded:
    """The result of :func:`guard_peer`: what is written, and what is held for review."""

    text: str
    ledger: Ledger
    flagged: list[dict[str, Any]]


def says_where(written: MemoryWritten, fact_id: str) -> bool:
    """Whether the revision ``written`` that introduced fact ``fact_id`` says where the fact
    came from, by the rule ``memtray doctor`` applies here
    (:mod:`memtray.core.memory.provenance`): a consolidation (or redo) names its
    consolidation; the user wrote it (hand edit, review); an import; an MCP client that is
    named; a write that names its source messages or, for a merge, the origin it traced."""
    reason, source = written.reason, written.source
    if reason in ("consolidation", "redo"):
        return bool(written.consolidation)
    if reason in _SELF_EVIDENT or source == "user":
        return True
    if source == "mcp":
        return bool(written.client)
    entry = (written.provenance or {}).get(fact_id)
    if entry is None:
        return False
    return bool(entry.get("source_seqs")) or "origin" in entry or bool(entry.get("rebuild"))


def _introduced(nodes: Iterable[Node]) -> dict[str, list[tuple[Node, str]]]:
    """Normalised fact text -> each revision of ``nodes`` that added or reworded a fact to
    those words, with the id it gave the fact there. A merge only carries facts its parents
    wrote, so it introduces none."""
    out: dict[str, list[tuple[Node, str]]] = {}
    for n in nodes:
        diff = n.written.diff
        if diff is None or n.written.reason == "merge":
            continue
        for item in [*diff["added"], *(c["new"] for c in diff["changed"])]:
            out.setdefault(factdiff.normalize(item["text"]), []).append((n, item["id"]))
    return out


def guard_peer(local_text: str, local: Ledger, text: str, ledger: Ledger, nodes: Iterable[Node],
               traced: Collection[str], moved: Mapping[str, str], device: str) -> PeerGuarded:
    """``text`` (a merge's or fast-forward's result, with ``ledger``) without what fails the
    guards, and the review items for it.

    ``local_text``/``local``: this device's memory now; ``nodes``: the revisions the result
    follows (read only when a fact's origin is not in ``traced``); ``traced``: ids of the result whose origin the merge
    found; ``moved``: this device's ids the result renumbered (old -> new); ``device``:
    who the facts came from, for the reason shown.
    """
    known = {f.norm for f in local.facts}
    mine = {moved.get(f.id, f.id): f for f in local.facts}
    introduced: dict[str, list[tuple[Node, str]]] | None = None
    held: list[tuple[int, str, str]] = []  # (index in ledger, kind, reason)
    for k, f in enumerate(ledger.facts):
        if f.norm in known:
            continue
        if looks_like_instruction(f.text):
            held.append((k, "instruction", f"from {device}: {why_flagged(f.text)}"))
        elif _MARKER in f.text and _MARKER not in (mine[f.id].text if f.id in mine else ""):
            held.append((k, "secret", f"from {device}: it carried a secret (redacted on arrival)"))
        elif f.id not in traced:
            if introduced is None:
                introduced = _introduced(nodes)
            if not any(says_where(n.written, fid) for n, fid in introduced.get(f.norm, ())):
                held.append((k, "unsupported", f"from {device}: no revision says where it came from"))
    flagged: list[dict[str, Any]] = []
    ids = list(ledger.ids)
    facts = list(ledger.facts)
    for k, kind, reason in reversed(held):
        f = facts[k]
        old = mine.get(f.id)
        if old is not None and old.norm != f.norm:  # a fact of this device reworded there: its words here
            text = factdiff.replace_fact(text, k, old.text)
        else:
            text = factdiff.remove_fact(text, factdiff.parse(text)[k])
            del ids[k]
        flagged.append(review_item(kind, f.text, f.section, None if old is None else f.id, reason))
    flagged.reverse()
    if len(flagged) > MAX_HELD:  # a stream that floods the queue: the rest stays only on the peer's side line
        flagged = flagged[:MAX_HELD]
    text, blocks = hold_flagged(local_text, text)  # a heading or comment that reads like an order
    flagged += [review_item("instruction", b.text, "", None, f"from {device}: {b.reason}") for b in blocks]
    parsed = factdiff.parse(text)
    out = Ledger.with_ids(text, ids, ledger.next) if len(parsed) == len(ids) else _by_words(text, ledger)
    return PeerGuarded(text, out, flagged)


def _by_words(text: str, ledger: Ledger) -> Ledger:
    """The ids of ``text``'s facts from ``ledger`` by their words (a held block took a fact
    line with it); a fact not found gets a new id."""
    by_norm = {f.norm: f.id for f in ledger.facts}
    nxt = ledger.next
    ids: list[str] = []
    for f in factdiff.parse(text):
        fid = by_norm.pop(f.norm, None)
        if fid is None:
            fid, nxt = new_id(nxt), nxt + 1
        ids.append(fid)
    return Ledger.with_ids(text, ids, nxt)
