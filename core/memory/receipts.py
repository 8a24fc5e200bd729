"""Receipts: the messages and the verbatim quote a ``save_memory`` reply gives for a fact (pure).

Every fact a consolidation adds or changes comes with a receipt, in one of two places:

* on an edit: ``{"op": "add", "text": "Is a hobby beekeeper",
  "receipt": {"messages": [3], "quote": "I keep bees in the garden"}}``;
* for ``memory_update`` (or edits without one): a top-level list
  ``"receipts": [{"fact": "<the fact's text or its id>", "messages": [3], "quote": "..."}]``.

This module reads them at the door: :func:`read_receipt` never raises, a malformed receipt
becomes a :class:`Receipt` with a ``problem`` (the fact is then held, the problem is its
reason). Whether the quote is in the messages and the fact follows from it is
:mod:`memtray.core.memory.receiptcheck`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memtray.core.memory import factdiff, facts

__all__ = ["MAX_QUOTE", "MAX_RECEIPTS", "MAX_RECEIPT_MESSAGES", "FactReceipt", "Receipt", "find_receipt",
           "read_receipt", "read_receipts", "receipt_schema"]

#: longest quote a receipt may carry (characters); a quote is a phrase, not the conversation
MAX_QUOTE = 400
#: most messages one receipt may cite
MAX_RECEIPT_MESSAGES = 12
#: most top-level receipts one reply may carry (the rest are ignored with a note)
MAX_RECEIPTS = 2_000
_MSG_RE = re.compile(r"^\s*#?\s*(\d{1,6})\s*$")


@dataclass(frozen=True)
class Receipt:
    """Where a fact comes from, as the model says: message numbers (1-based, as the prompt
    numbers them) and a short verbatim quote. ``problem`` is set when the receipt is unusable
    as sent (wrong types, too long, no quote): such a receipt supports nothing."""

    messages: tuple[int, ...]
    quote: str
    problem: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": list(self.messages), "quote": self.quote}
        if self.problem:
            out["problem"] = self.problem
        return out


@dataclass(frozen=True)
class FactReceipt:
    """A top-level receipt: the fact it is for (its text or id) and the receipt."""

    fact: str
    receipt: Receipt


def _numbers(raw: object) -> tuple[tuple[int, ...], str]:
    if raw is None:
        return (), ""
    if isinstance(raw, int | str) and not isinstance(raw, bool):
        raw = [raw]
    if not isinstance(raw, list):
        return (), "the receipt's messages are not a list of message numbers"
    out: list[int] = []
    for x in raw:
        if isinstance(x, bool):
            return (), "the receipt's messages are not message numbers"
        if isinstance(x, int):
            n = x
        elif isinstance(x, str) and (m := _MSG_RE.match(x)):
            n = int(m.group(1))
        else:
            return (), f"the receipt names a message that is not a number: {str(x)[:20]!r}"
        if n not in out:
            out.append(n)
    if len(out) > MAX_RECEIPT_MESSAGES:
        return (), f"the receipt cites {len(out)} messages (at most {MAX_RECEIPT_MESSAGES})"
    return tuple(out), ""


def read_receipt(raw: object, *, sources: object = None) -> Receipt | None:
    """The receipt of one edit (``raw`` is its ``receipt`` member), validated; never raises.

    None when there is none at all. ``sources`` (the edit's older ``sources`` list) stands
    in for the receipt's message numbers when it names none."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        return Receipt((), "", "the receipt is not an object {messages, quote}")
    nums, problem = _numbers(raw.get("messages"))
    if not nums and not problem and sources is not None:
        nums, problem = _numbers(sources)
    quote = raw.get("quote")
    if problem:
        return Receipt((), quote if isinstance(quote, str) else "", problem)
    if quote is None:
        return Receipt(nums, "", "the receipt has no quote")
    if not isinstance(quote, str):
        return Receipt(nums, "", "the receipt's quote is not a string")
    quote = " ".join(quote.split())
    if not quote.strip(" .…\"'“”"):
        return Receipt(nums, "", "the receipt's quote is empty")
    if len(quote) > MAX_QUOTE:
        return Receipt(nums, quote[:MAX_QUOTE], f"the receipt's quote is longer than {MAX_QUOTE} characters")
    if not nums:
        return Receipt((), quote, "the receipt names no message")
    return Receipt(nums, quote)


def read_receipts(raw: object, notes: list[str] | None = None) -> list[FactReceipt]:
    """The top-level ``receipts`` list, validated; an entry that is not an object or names
    no fact is skipped (with a note), never raised on."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        if notes is not None:
            notes.append("receipts is not a list; ignored")
        return []
    out: list[FactReceipt] = []
    for n, item in enumerate(raw[:MAX_RECEIPTS], 1):
        fact = item.get("fact", item.get("id")) if isinstance(item, Mapping) else None
        if not isinstance(fact, str) or not fact.strip():
            if notes is not None:
                notes.append(f"receipt {n} names no fact; ignored")
            continue
        r = read_receipt(item)
        assert r is not None
        out.append(FactReceipt(" ".join(fact.split()), r))
    if len(raw) > MAX_RECEIPTS and notes is not None:
        notes.append(f"{len(raw) - MAX_RECEIPTS} receipts past the first {MAX_RECEIPTS:,} were ignored")
    return out


def find_receipt(receipts: Sequence[FactReceipt], text: str, fact_ids: Sequence[str] = ()) -> Receipt | None:
    """The top-level receipt for a fact: one naming one of its ids, else one naming its text
    (normalised; a receipt's ``fact`` may keep the ``[F12]`` marker or the ``[#3]`` tail)."""
    if not receipts:
        return None
    keys = {k for i in fact_ids if (k := facts.id_key(i))}
    norm = factdiff.normalize(text)
    marked = [facts.read_markers(f"- {fr.fact}") for fr in receipts]
    for fr, m in zip(receipts, marked, strict=True):
        named = {k for i in (m.ids[0] if m.ids else []) if (k := facts.id_key(i))}
        k = facts.id_key(fr.fact)
        if keys & (named | ({k} if k else set())):
            return fr.receipt
    for fr, m in zip(receipts, marked, strict=True):
        if (m.facts and m.facts[0].norm == norm) or factdiff.normalize(fr.fact) == norm:
            return fr.receipt
    return None


def receipt_schema(where: str) -> dict[str, Any]:
    """The JSON schema of a receipt, as the ``save_memory`` tool shows it."""
    return {
        "type": "object",
        "description": f"Where {where} comes from: the numbers of the messages and a short verbatim quote "
                       "copied from them (the user's own words).",
        "properties": {
            "messages": {"type": "array", "items": {"type": "integer"}},
            "quote": {"type": "string", "maxLength": MAX_QUOTE},
        },
        "required": ["messages", "quote"],
    }
