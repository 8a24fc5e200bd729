"""`memtray import chatgpt` on an export built from ChatGPT's published format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest


def _node(nid: str, parent: str | None, children: list[str], role: str | None, parts: list[Any] | None,
          t: float = 1_700_000_000.0, ctype: str = "text", hidden: bool = False) -> dict[str, Any]:
    msg = None
    if role is not None:
        msg = {"id": nid, "author": {"role": role, "name": None, "metadata": {}}, "create_time": t,
               "content": {"content_type": ctype, "parts": parts}, "status": "finished_successfully",
               "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {}}
    return {"id": nid, "message": msg, "parent": parent, "children": children}


def export() -> list[dict[str, Any]]:
    # conversation 1: system message, a user prompt edited once (two branches), the second is current
    m1 = {
        "root": _node("root", None, ["sys"], None, None),
        "sys": _node("sys", "root", ["u1", "u1b"], "system", [""], hidden=True),
        "u1": _node("u1", "sys", ["a1"], "user", ["Where should I travel in May?"], 1_700_000_010),
        "a1": _node("a1", "u1", [], "assistant", ["Lisbon is lovely in May."], 1_700_000_020),
        "u1b": _node("u1b", "sys", ["a1b"], "user", ["Where should I travel in June? I love trains."], 1_700_000_030),
        "a1b": _node("a1b", "u1b", [], "assistant", ["Take the train to Vienna."], 1_700_000_040),
    }
    # conversation 2: an image reference (multimodal) and a tool message
    m2 = {
        "r": _node("r", None, ["u"], None, None),
        "u": _node("u", "r", ["tool"], "user", [
            {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-AbC123", "width": 10},
            "What plant is this?"], 1_700_100_000, ctype="multimodal_text"),
        "tool": _node("tool", "u", ["a"], "tool", ["search results ..."], 1_700_100_001),
        "a": _node("a", "tool", [], "assistant", ["A monstera."], 1_700_100_002),
    }
    m3 = {"x": _node("x", None, ["y"], "user", ["My name is Ada."], 1_700_200_000),
          "y": _node("y", "x", [], "assistant", ["Hello Ada!"], 1_700_200_001)}
    return [
        {"title": "Travel", "create_time": 1_700_000_000, "update_time": 1_700_000_040, "mapping": m1,
         "current_node": "a1b", "conversation_id": "conv-1", "id": "conv-1"},
        {"title": "Plant", "create_time": 1_700_100_000, "mapping": m2, "current_node": "a", "id": "conv-2"},
        {"title": "Hello", "create_time": 1_700_200_000, "mapping": m3, "current_node": None, "id": "conv-3"},
    ]


def _memtray(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMTRAY_HOME=str(home), MEMTRAY_NO_DESKTOP="1")
    return subprocess.run([sys.executable, "-m", "memtray.core.cli", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def _events(home: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((home / "events").glob("*.jsonl")) for line in p.read_text().splitlines()]


def test_zip_export_imports_current_branches_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    z = tmp_path / "export.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("conversations.json", json.dumps(export()))
        zf.writestr("user.json", "{}")
    dry = _memtray(home, "import", "chatgpt", str(z), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["messages"] == 6
    assert not any(e["type"].startswith("import.") for e in _events(home)) if (home / "events").exists() else True

    first = _memtray(home, "import", "chatgpt", str(z), "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) | {"notes": []} == {
        "items": 3, "already_imported": 0, "messages": 6, "facts": 0, "history_entries": 0, "consolidated": 0, "notes": [],
        "dry_run": False}
    msgs = [e for e in _events(home) if e["type"] == "message"]
    by_session: dict[str, list[str]] = {}
    for e in msgs:
        by_session.setdefault(e["session"], []).append(e["data"]["content"])
    assert by_session["chatgpt:conv-1"] == ["Where should I travel in June? I love trains.", "Take the train to Vienna."]
    assert by_session["chatgpt:conv-2"][0] == "[image: file-service://file-AbC123]\nWhat plant is this?"
    assert by_session["chatgpt:conv-3"] == ["My name is Ada.", "Hello Ada!"]
    assert msgs[0]["data"]["sent_at"] == "2023-11-14T22:13:50Z"
    items = {e["data"]["key"]: e["data"] for e in _events(home) if e["type"] == "import.item"}
    assert items["conv-1"]["skipped"] == 3  # the system message and the other branch's two messages
    assert items["conv-2"]["skipped"] == 1  # the tool message

    again = _memtray(home, "import", "chatgpt", str(z), "--json")
    assert json.loads(again.stdout)["messages"] == 0 and json.loads(again.stdout)["already_imported"] == 3
    assert len([e for e in _events(home) if e["type"] == "message"]) == 6

    found = _memtray(home, "history", "search", "Vienna", "--json")
    assert found.returncode == 0 and "Vienna" in found.stdout


@pytest.mark.parametrize(("content", "expect"), [
    (b'{"conversations": []}', "does not start with a JSON array"),
    (b'[{"title": "x", "messages": [{"role": "user", "text": "hi"}]}]', "no 'mapping'"),
    (json.dumps(export()).encode()[:-200], "cut short"),
    (b"PK\x03\x04garbage", "not a ChatGPT"),
])
def test_foreign_or_damaged_files_are_refused_clearly(tmp_path: Path, content: bytes, expect: str) -> None:
    f = tmp_path / "conversations.json"
    f.write_bytes(content)
    r = _memtray(tmp_path / "home", "import", "chatgpt", str(f))
    assert r.returncode != 0
    assert "memtray: error: " in r.stderr and expect in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_1_gb_file_is_not_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "conversations.json"
    with big.open("wb") as fh:  # sparse: a gigabyte of NUL bytes
        fh.truncate(1 << 30)
    r = _memtray(tmp_path / "home", "import", "chatgpt", str(big))
    assert r.returncode != 0 and "does not start with a JSON array" in r.stderr, r.stderr


def test_consolidate_folds_each_conversation_into_memory(tmp_path: Path) -> None:
    from tests.fixtures.llm_server import ScriptedLLMServer, tool_call
    from tests.fixtures.receipting import receipted
    from tests.support import cli_here

    def save(update: str) -> Any:
        return receipted(tool_call("save_memory", {"history_entry": "[2023-11-14 22:00] Talked.",
                                                   "memory_update": update, "removed_facts": []}))

    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(export()[1:]))  # the plant and the hello conversations
    with ScriptedLLMServer() as server:
        server.script(save("# Facts\n\n- Has a monstera\n"), save("# Facts\n\n- Has a monstera\n- Is called Ada\n"))
        out = cli_here(tmp_path / "home", "import", "chatgpt", str(f), "--consolidate", "--json",
                      MEMTRAY_MODEL="openai/test-model", MEMTRAY_API_BASE=server.base_url, OPENAI_API_KEY="sk-test")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["consolidated"] == 2
        prompts = [json.dumps(r.json["messages"]) for r in server.requests if r.path.endswith("/chat/completions")]
        assert "What plant is this?" in prompts[0] and "My name is Ada." in prompts[1]
    shown = cli_here(tmp_path / "home", "memory", "show").stdout
    assert "- Is called Ada" in shown
    # only the assistant said "A monstera": an inferred fact, held for the user's confirmation
    assert "- Has a monstera" not in shown
    review = json.loads(cli_here(tmp_path / "home", "memory", "review", "--json").stdout)
    assert ("Has a monstera", "inferred") in [(i["text"], i["kind"]) for i in review]


def test_consolidate_without_a_model_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(export()))
    home = tmp_path / "home"
    out = _memtray(home, "import", "chatgpt", str(f), "--consolidate")
    assert out.returncode != 0 and "--consolidate needs a model" in out.stderr
    assert not (home / "events").exists() or not [e for e in _events(home) if e["type"].startswith("import.")]


def test_a_failed_consolidation_leaves_every_session_open_for_the_sweep(tmp_path: Path) -> None:
    from tests.fixtures.llm_server import ScriptedLLMServer, error
    from tests.support import cli_here

    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(export()))
    home = tmp_path / "home"
    with ScriptedLLMServer() as server:
        server.default = lambda _req: error(400)
        out = cli_here(home, "import", "chatgpt", str(f), "--consolidate", "--json", MEMTRAY_MODEL="openai/test-model",
                      MEMTRAY_API_BASE=server.base_url, OPENAI_API_KEY="sk-test")
    got = json.loads(out.stdout)
    assert out.returncode == 0 and got["messages"] == 6 and got["consolidated"] == 0
    assert any("idle sweep" in n for n in got["notes"])
    assert not any(e["type"] == "session.reset" for e in _events(home))  # still open for the sweep
