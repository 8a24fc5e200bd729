"""get_history: unconsolidated tail, starts at a user turn, no orphaned tool messages."""

from __future__ import annotations

from typing import Any

from memtray.core.log.projections import SessionState
from memtray.core.log.sessions import clean, get_history, render


def _call(cid: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "t", "arguments": "{}"}}


def test_starts_at_user_turn() -> None:
    msgs = [
        {"role": "tool", "content": "r", "tool_call_id": "x"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "b"},
    ]
    assert [m["content"] for m in clean(msgs)] == ["u", "b"]


def test_orphans_removed() -> None:
    msgs = [
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "", "tool_calls": [_call("1"), _call("2")]},
        {"role": "tool", "content": "r1", "tool_call_id": "1"},  # 2 never answered
        {"role": "user", "content": "u2"},
        {"role": "tool", "content": "stray", "tool_call_id": "9"},
        {"role": "assistant", "content": "thinking", "tool_calls": [_call("3")]},
        {"role": "tool", "content": "r3", "tool_call_id": "3"},
        {"role": "assistant", "content": "done"},
    ]
    out = clean(msgs)
    assert [m["role"] for m in out] == ["user", "user", "assistant", "tool", "assistant"]
    assert out[2]["tool_calls"][0]["id"] == "3"
    for i, m in enumerate(out):
        if m["role"] == "tool":
            prev = out[i - 1]
            assert prev["role"] in ("assistant", "tool")


def test_get_history_uses_pointer_and_renders_context() -> None:
    s = SessionState("quick")
    for i in range(6):
        s.messages.append({"role": "user", "content": f"u{i}", "context": f"[ctx {i}]", "seq": 2 * i + 1})
        s.messages.append({"role": "assistant", "content": f"a{i}", "seq": 2 * i + 2})
    s.last_consolidated = 5  # points at an assistant message: history must start at u3
    hist = get_history(s)
    assert hist[0] == {"role": "user", "content": "[ctx 3]\n\nu3"}
    assert [m["content"] for m in hist][-1] == "a5"
    assert all("seq" not in m for m in hist)


def test_render_tool_messages() -> None:
    assert render({"role": "tool", "content": "x", "tool_call_id": "1", "name": "t"}) == {
        "role": "tool", "content": "x", "tool_call_id": "1", "name": "t"}
    out = render({"role": "assistant", "content": None, "tool_calls": [_call("1")]})
    assert out["content"] is None and out["tool_calls"]
