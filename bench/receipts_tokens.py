#!/usr/bin/env python3
"""Tokens per consolidation with receipts (issue 27) against without.

The setting of bench/consolidation_tokens.py: memories of 50, 200 and 500 facts and a
conversation that changes 5 of them (2 rewordings with new detail, 1 addition, 1 removal,
1 move to another section). Counted with litellm's tokenizer (gpt-4o's):

* request: the consolidation prompt and the ``save_memory`` tool as memtray sends them now
  (the prompt asks for a receipt per new or changed fact, the tool has ``receipt`` on each
  edit and a top-level ``receipts``), against the prompt and tool before receipts (the
  paragraph that asked for ``sources`` only, and the tool's ``sources`` member);
* reply: the ``edits`` that make the 5 changes with a receipt (message numbers and a
  verbatim quote) on each added or changed fact, against the same edits with ``sources``
  only; and the same for the full form (``memory_update`` plus top-level ``receipts``).

Each reply with receipts is run through the guard (proposal.apply_reply) to check it does
the 5 changes; the replies without are what the guard now holds (no receipt).

    bench/receipts_tokens.py [--sizes 50,200,500]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from consolidation_tokens import scenario, tokens
from memtray import resources
from memtray.core.memory import facts
from memtray.core.memory.guard import SAVE_MEMORY
from memtray.core.memory.proposal import apply_reply
from memtray.core.memory.receipts import read_receipts

# the prompt's paragraph and edit examples before receipts (resources/prompts/consolidation.md, 2026-12-01)
BEFORE_EXAMPLES = """  - `edits` (preferred when only a few facts change): a list of changes by fact
    id — `{"op": "update", "id": "F12", "text": "...", "sources": [4]}`,
    `{"op": "add", "text": "...", "section": "People", "sources": [2, 5]}`,
    `{"op": "remove", "id": "F7", "reason": "..."}`,
    `{"op": "merge", "ids": ["F3", "F9"], "text": "..."}`. Facts you do not
    name stay exactly as they are."""
BEFORE_RULE = """- Every new or updated fact names the numbers of the messages it comes from:
  `sources` in an edit, or `[#4, #9]` at the end of the bullet in
  `memory_update`. Only store what the messages say; a fact no message
  supports is not saved."""


def prompt_before(now: str) -> str:
    """The consolidation prompt as it was before receipts."""
    start = now.index("  - `edits` (preferred")
    end = now.index("name stay exactly as they are.") + len("name stay exactly as they are.")
    now = now[:start] + BEFORE_EXAMPLES + now[end:]
    start = now.index("- Every new or updated fact carries a receipt")
    end = now.index("- `removed_facts`")
    return now[:start] + BEFORE_RULE + "\n" + now[end:]


def tool_before() -> dict[str, Any]:
    """The save_memory tool as it was before receipts: ``sources`` on an edit, no ``receipts``."""
    tool = copy.deepcopy(SAVE_MEMORY)
    props = tool["function"]["parameters"]["properties"]
    del props["receipts"]
    item = props["edits"]["items"]["properties"]
    del item["receipt"]
    item["sources"] = {"type": "array", "items": {"type": "integer"},
                       "description": "Numbers of the messages the fact comes from."}
    props["memory_update"]["description"] = props["memory_update"]["description"].replace(
        " Every new or reworded fact needs an entry in receipts.", "")
    return tool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="50,200,500")
    args = ap.parse_args()
    template = resources.text("prompts/consolidation.md")
    before = prompt_before(template)
    assert "receipt" not in before and "sources" in before
    print(f"{'facts':>5} {'form':<6} {'receipts':<9} {'sent':>7} {'received':>9} {'total':>7} {'extra':>7}")
    for n in (int(x) for x in args.sizes.split(",")):
        one(n, template, before)


def one(n: int, template: str, before: str) -> None:
    """The rows of one memory size."""
    sc = scenario(n)
    text, led, conv, numbered, entry, new3 = sc.text, sc.led, sc.conv, sc.numbered, sc.entry, sc.new3
    f2, f3, f5, f8 = sc.f2, sc.f3, sc.f5, sc.f8
    q3, q8, q5 = sc.quotes
    changes = [(f3.id, new3, 1, q3), (f8.id, f8.text + ", and climbing", 3, q8), (None, "Has a cat called Pixel", 5, q5)]

    def edits(receipts: bool) -> dict[str, Any]:
        out: list[dict[str, Any]] = []
        for fid, t, num, quote in changes:
            e: dict[str, Any] = {"op": "update", "id": fid, "text": t} if fid else {
                "op": "add", "text": t, "section": "Pets"}
            e |= {"receipt": {"messages": [num], "quote": quote}} if receipts else {"sources": [num]}
            out.append(e)
        out += [{"op": "remove", "id": f5.id, "reason": "user lost touch (message 7)"},
                {"op": "update", "id": f2.id, "text": f2.text, "section": "Work"}]
        return {"history_entry": entry, "removed_facts": [], "edits": out}

    def full(receipts: bool) -> dict[str, Any]:
        sections: dict[str, list[str]] = {}
        for f in led.facts:
            if f.id == f5.id:
                continue
            t = new3 + " [#1]" if f.id == f3.id else f8.text + ", and climbing [#3]" if f.id == f8.id else f.text
            sections.setdefault("Work" if f.id == f2.id else f.section, []).append(f"- [{f.id}] {t}")
        sections.setdefault("Pets", []).append("- Has a cat called Pixel [#5]")
        body = "".join(f"## {s}\n" + "\n".join(ls) + "\n\n" for s, ls in sections.items())
        out: dict[str, Any] = {"history_entry": entry, "memory_update": body,
                               "removed_facts": [{"fact": f5.id, "reason": "user lost touch"}]}
        if receipts:
            out["receipts"] = [{"fact": fid or t, "messages": [num], "quote": q} for fid, t, num, q in changes]
        return out

    for reply in (edits(True), full(True)):
        got = apply_reply(led, text, memory_update=reply.get("memory_update"), edits=reply.get("edits"),
                          removed=reply["removed_facts"], messages=[c for _r, c in conv],
                          roles=[r for r, _c in conv], receipts=read_receipts(reply.get("receipts")))
        kinds = sorted(v.kind for v in got.verdicts if v.kind != "kept")
        assert kinds == ["added", "removed", "reworded", "reworded"], kinds
    sent_now = tokens(template.replace("{memory}", facts.render(led)).replace("{conversation}", numbered)
                      + "\nYou consolidate memory by calling save_memory." + json.dumps(SAVE_MEMORY))
    sent_before = tokens(before.replace("{memory}", facts.render(led)).replace("{conversation}", numbered)
                         + "\nYou consolidate memory by calling save_memory." + json.dumps(tool_before()))
    for form, make in (("edits", edits), ("full", full)):
        base = sent_before + tokens(json.dumps(make(False)))
        for receipts, sent in ((False, sent_before), (True, sent_now)):
            got = tokens(json.dumps(make(receipts)))
            extra = f"{sent + got - base:+d}" if receipts else ""
            print(f"{n:>5} {form:<6} {'with' if receipts else 'without':<9} {sent:>7} {got:>9} {sent + got:>7} "
                  f"{extra:>7}")


if __name__ == "__main__":
    main()
