"""Review items: one entry of the review queue, made in one place for every guard.

A review item is a change held back for the user: a fact the consolidation guard
would not write (unsupported, instruction-like, dropped without a reason), a small
model's proposal, a peer's held fact, a sync merge conflict. Its id is derived from
its kind and words, so the same change held twice is one item.

``messages`` (the message numbers it cites) and ``quote`` (the words it quotes from
them) are optional: the review shows them beside the item, the quote highlighted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from memtray.core.memory import factdiff


def review_item(kind: str, text: str, section: str, fact_id: str | None, reason: str, *,
                messages: Sequence[int] | None = None, quote: str | None = None) -> dict[str, Any]:
    """One entry of the review queue: a fact the guard held back, and why."""
    norm = factdiff.normalize(text)
    # surrogatepass: a lone surrogate is refused where the item is logged (codec.find_invalid), not here
    item_id = hashlib.sha1(f"{kind}:{norm}".encode("utf-8", "surrogatepass")).hexdigest()[:10]
    out: dict[str, Any] = {"id": item_id, "kind": kind, "text": text, "section": section,
                           "fact_id": fact_id or hashlib.sha1(norm.encode("utf-8", "surrogatepass")).hexdigest()[:8],
                           "reason": reason}
    if messages:
        out["messages"] = sorted({int(m) for m in messages})
    if quote:
        out["quote"] = quote
    return out


__all__ = ["review_item"]
