#!/usr/bin/env python3
"""Tokens sent and received per consolidation: memtray's edits by id against a full rewrite.

For memories of 50, 200 and 500 facts and a conversation that changes 5 of them
(2 rewordings with new detail, 1 move, 1 addition, 1 removal), count with litellm's
tokenizer (gpt-4o's) the tokens of

* memtray: the request it sends (prompt with ids + numbered messages + the save_memory
  tool) and the ``edits`` reply that makes the 5 changes;
* memtray, full form: the same request and a ``memory_update`` reply (the whole memory,
  ids kept), which memtray still accepts from models that do better with it;
* nanobot: its request (the memory without ids, the messages, its save_memory tool) and
  its reply, the whole memory rewritten.

The replies are what a model must write to make those changes in each protocol; each
is also run through memtray's guard to check it does what it says.

    bench/consolidation_tokens.py [--sizes 50,200,500]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memtray import resources
from memtray.core.memory import facts
from memtray.core.memory.guard import SAVE_MEMORY
from memtray.core.memory.proposal import apply_reply
from memtray.core.memory.receipts import read_receipts

NAMES = ["Mia", "Omar", "Ingrid", "Kenji", "Lucia", "Tobias", "Zara", "Pedro", "Yusuf", "Greta", "Ravi", "Noor"]
CITIES = ["Paris", "Rome", "Kyoto", "Lisbon", "Oslo", "Quito", "Hanoi", "Dakar", "Perth", "Tallinn", "Cusco"]
THINGS = ["tennis", "jazz", "sailing", "chess", "pottery", "hiking", "ramen", "Rust", "salsa", "birding"]
SECTIONS = ["People", "Places", "Work", "Hobbies", "Preferences"]

# nanobot's save_memory tool and prompt (nanobot/agent/memory.py, MemoryStore.consolidate), as it sends them
NANOBOT_TOOL = {"type": "function", "function": {"name": "save_memory", "description": "Save the memory consolidation result to persistent storage.", "parameters": {"type": "object", "properties": {"history_entry": {"type": "string", "description": "A paragraph (2-5 sentences) summarizing key events/decisions/topics. Start with [YYYY-MM-DD HH:MM]. Include detail useful for grep search."}, "memory_update": {"type": "string", "description": "Full updated long-term memory as markdown. Include all existing facts plus new ones. Return unchanged if nothing new."}}, "required": ["history_entry", "memory_update"]}}}
NANOBOT_PROMPT = """Process this conversation and call the save_memory tool with your consolidation.

## Current Long-term Memory
{memory}

## Conversation to Process
{conversation}"""


def memory(n: int) -> str:
    by_section: dict[str, list[str]] = {s: [] for s in SECTIONS}
    for i in range(n):
        name, city, thing = NAMES[i % len(NAMES)], CITIES[(i // 3) % len(CITIES)], THINGS[(i // 7) % len(THINGS)]
        by_section[SECTIONS[i % len(SECTIONS)]].append(
            f"{name} (friend no. {i + 1}) lives in {city} and is into {thing} since {1990 + i % 35}")
    return "".join(f"## {s}\n" + "".join(f"- {t}\n" for t in ts) + "\n" for s, ts in by_section.items())


CONVERSATION = [
    ("user", "Quick update: friend no. 3 moved from {c3} to Lyon last month."),
    ("assistant", "Noted, Lyon it is."),
    ("user", "And friend no. 8 is now really into climbing, not just {t8}."),
    ("assistant", "Climbing, great."),
    ("user", "Also I adopted a cat called Pixel."),
    ("assistant", "Welcome, Pixel!"),
    ("user", "Forget friend no. 5, we lost touch completely."),
    ("assistant", "Okay."),
    ("user", "Friend no. 2 is a colleague actually, file them under Work."),
    ("assistant", "Done."),
]


@dataclass(frozen=True)
class Scenario:
    """One memory size's case: the memory, the 10 messages, the 4 facts they change."""

    text: str
    led: facts.Ledger
    conv: list[tuple[str, str]]
    numbered: str  # the messages as the prompt numbers them
    f2: facts.Fact
    f3: facts.Fact
    f5: facts.Fact
    f8: facts.Fact
    new3: str  # f3 moved to Lyon
    quotes: tuple[str, str, str]  # the receipts' quotes: the move, the climbing, the cat
    entry: str = "[2026-12-01 09:01] Friend 3 moved to Lyon, friend 8 climbs, a new cat Pixel, friend 5 forgotten."


def scenario(n: int) -> Scenario:
    text = memory(n)
    led = facts.attach(facts.Ledger(()), text)
    f3, f8, f2, f5 = (next(f for f in led.facts if f"no. {k})" in f.text) for k in (3, 8, 2, 5))
    conv = [(r, c.format(c3=f3.text.split(" lives in ")[1].split()[0], t8=f8.text.split(" into ")[1].split()[0]))
            for r, c in CONVERSATION]
    numbered = "\n".join(f"#{i} [2026-12-01 09:{i:02d}] {r.upper()}: {c}" for i, (r, c) in enumerate(conv, 1))
    new3 = f3.text.replace(f3.text.split(" lives in ")[1].split()[0], "Lyon", 1)
    quotes = (conv[0][1].removeprefix("Quick update: ").rstrip("."), conv[2][1].removeprefix("And ").split(",")[0],
              conv[4][1].removeprefix("Also ").rstrip("."))
    return Scenario(text, led, conv, numbered, f2, f3, f5, f8, new3, quotes)


def tokens(text: str) -> int:
    import litellm

    return int(litellm.token_counter(model="gpt-4o", text=text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="50,200,500")
    args = ap.parse_args()
    template = resources.text("prompts/consolidation.md")
    print(f"{'facts':>5} {'protocol':<22} {'sent':>7} {'received':>9} {'total':>7}")
    for n in (int(x) for x in args.sizes.split(",")):
        sc = scenario(n)
        text, led, conv, numbered, entry, new3 = sc.text, sc.led, sc.conv, sc.numbered, sc.entry, sc.new3
        f2, f3, f5, f8 = sc.f2, sc.f3, sc.f5, sc.f8
        q3, q8, q5 = sc.quotes
        plain = "\n".join(f"[2026-12-01 09:{i:02d}] {r.upper()}: {c}" for i, (r, c) in enumerate(conv, 1))
        msgs = [c for _r, c in conv]
        ours_in = template.replace("{memory}", facts.render(led)).replace("{conversation}", numbered)
        ours_in += "\nYou consolidate memory by calling save_memory." + json.dumps(SAVE_MEMORY)
        edits = {"history_entry": entry, "removed_facts": [], "edits": [
            {"op": "update", "id": f3.id, "text": new3, "receipt": {"messages": [1], "quote": q3}},
            {"op": "update", "id": f8.id, "text": f8.text + ", and climbing", "receipt": {"messages": [3], "quote": q8}},
            {"op": "add", "text": "Has a cat called Pixel", "section": "Pets", "receipt": {"messages": [5], "quote": q5}},
            {"op": "remove", "id": f5.id, "reason": "user lost touch (message 7)"},
            {"op": "update", "id": f2.id, "text": f2.text, "section": "Work"},
        ]}
        full_lines = []
        for f in led.facts:
            if f.id == f5.id:
                continue
            t = new3 + " [#1]" if f.id == f3.id else f8.text + ", and climbing [#3]" if f.id == f8.id else f.text
            full_lines.append((("Work" if f.id == f2.id else f.section), f"- [{f.id}] {t}"))
        full_lines.append(("Pets", "- Has a cat called Pixel [#5]"))
        sections: dict[str, list[str]] = {}
        for s, line in full_lines:
            sections.setdefault(s, []).append(line)
        body = "".join(f"## {s}\n" + "\n".join(ls) + "\n\n" for s, ls in sections.items())
        full = {"history_entry": entry, "memory_update": body,
                "removed_facts": [{"fact": f5.id, "reason": "user lost touch"}],
                "receipts": [{"fact": f3.id, "messages": [1], "quote": q3}, {"fact": f8.id, "messages": [3], "quote": q8},
                             {"fact": "Has a cat called Pixel", "messages": [5], "quote": q5}]}
        nano_body = "".join(f"## {s}\n" + "\n".join(
            "- " + line.removeprefix("- ").split("] ", 1)[-1].split(" [#")[0] for line in ls) + "\n\n" for s, ls in sections.items())
        nano = {"history_entry": entry, "memory_update": nano_body}
        nano_in = NANOBOT_PROMPT.format(memory=text, conversation=plain)
        nano_in += "\nYou are a memory consolidation agent. Call the save_memory tool with your consolidation "
        nano_in += "of the conversation." + json.dumps(NANOBOT_TOOL)
        # the replies do what they say
        for reply in (edits, full):
            out = apply_reply(led, text, memory_update=reply.get("memory_update"), edits=reply.get("edits"),
                              removed=reply["removed_facts"], messages=msgs, roles=[r for r, _c in conv],
                              receipts=read_receipts(reply.get("receipts")))
            kinds = sorted(v.kind for v in out.verdicts if v.kind not in ("kept",))
            assert kinds == ["added", "removed", "reworded", "reworded"], kinds
            assert len(out.ledger.facts) == n
        for name, sent, got in (("memtray edits", ours_in, json.dumps(edits)),
                                ("memtray full rewrite", ours_in, json.dumps(full)),
                                ("nanobot full rewrite", nano_in, json.dumps(nano))):
            s, r = tokens(sent), tokens(got)
            print(f"{n:>5} {name:<22} {s:>7} {r:>9} {s + r:>7}")


if __name__ == "__main__":
    main()
