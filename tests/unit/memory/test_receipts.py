"""The receipt a ``save_memory`` reply gives for a fact, read at the door (core/memory/receipts.py)."""

from __future__ import annotations

import json

import pytest
from memtray.core.memory.guard import SAVE_MEMORY, parse_reply
from memtray.core.memory.receipts import (
    MAX_QUOTE,
    Receipt,
    find_receipt,
    read_receipt,
    read_receipts,
)


def _reply(**args: object) -> str:
    return json.dumps({"history_entry": "[2026-01-01 10:00] x", "removed_facts": [], **args})


def test_a_well_formed_receipt_is_read() -> None:
    r = read_receipt({"messages": [3, "#5", 3], "quote": "  I keep   bees in the garden "})
    assert r == Receipt((3, 5), "I keep bees in the garden")


@pytest.mark.parametrize(("raw", "problem"), [
    ("bees", "not an object"),
    ({"messages": [3]}, "has no quote"),
    ({"messages": [3], "quote": 7}, "not a string"),
    ({"messages": [3], "quote": " … "}, "quote is empty"),
    ({"messages": [3], "quote": "x" * (MAX_QUOTE + 1)}, "longer than"),
    ({"messages": "three", "quote": "bees"}, "not a number"),
    ({"messages": [True], "quote": "bees"}, "not message numbers"),
    ({"messages": {"a": 1}, "quote": "bees"}, "not a list"),
    ({"messages": list(range(1, 40)), "quote": "bees"}, "cites 39 messages"),
    ({"messages": [], "quote": "bees"}, "names no message"),
])
def test_a_malformed_receipt_is_kept_with_its_problem_never_raised(raw: object, problem: str) -> None:
    r = read_receipt(raw)
    assert r is not None and problem in r.problem


def test_an_edit_without_a_receipt_has_none_and_old_sources_stand_in_for_messages() -> None:
    assert read_receipt(None) is None
    assert read_receipt({"quote": "bees"}, sources=[4]) == Receipt((4,), "bees")


def test_parse_reply_reads_receipts_of_both_forms() -> None:
    reply = parse_reply(_reply(edits=[
        {"op": "add", "text": "Is a hobby beekeeper", "receipt": {"messages": [1], "quote": "I keep bees"}},
        {"op": "add", "text": "Wants concise replies", "receipt": "short answers"},
        {"op": "add", "text": "Plays chess"},
    ], receipts=[{"fact": "F3", "messages": [2], "quote": "cello"}, {"messages": [1]}, 5]))
    assert reply.edits is not None
    assert [e["receipt"] for e in reply.edits] == [
        Receipt((1,), "I keep bees"), Receipt((), "", "the receipt is not an object {messages, quote}"), None]
    assert [(r.fact, r.receipt) for r in reply.receipts] == [("F3", Receipt((2,), "cello"))]
    assert reply.notes == ["receipt 2 names no fact; ignored", "receipt 3 names no fact; ignored"]


def test_receipts_that_are_not_a_list_are_a_note() -> None:
    notes: list[str] = []
    assert read_receipts({"fact": "x"}, notes) == []
    assert notes == ["receipts is not a list; ignored"]


def test_a_top_level_receipt_is_found_by_id_or_by_text() -> None:
    rs = read_receipts([{"fact": "[F3] Is a cellist", "messages": [2], "quote": "I play the cello"},
                        {"fact": "Wake-up time: 5 am [#4]", "messages": [4], "quote": "wake up at 5"}])
    assert find_receipt(rs, "Plays the cello", ["F3"]) == Receipt((2,), "I play the cello")
    assert find_receipt(rs, "wake-up time: 5 AM") == Receipt((4,), "wake up at 5")
    assert find_receipt(rs, "Has a cat") is None


def test_the_tool_asks_for_receipts() -> None:
    params = SAVE_MEMORY["function"]["parameters"]["properties"]
    assert params["receipts"]["items"]["required"] == ["fact", "messages", "quote"]
    assert params["edits"]["items"]["properties"]["receipt"]["required"] == ["messages", "quote"]
