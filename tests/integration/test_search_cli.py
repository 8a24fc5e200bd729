"""`memtray history search` end to end: the CLI's own entry point (in this process, tests/support.cli_here), a real data home."""

from __future__ import annotations

import json
from typing import Any

from memtray.core.base.home import Home
from memtray.core.log.events import MemoryWritten, Message
from memtray.core.log.store import Store
from memtray.core.search.index import index_path

from tests.support import cli_here

HIT_KEYS = {"kind", "seq", "session", "role", "ts", "snippet", "score", "mode", "keyword_score", "semantic_score"}


def seed(home: Home) -> dict[str, int]:
    with Store.open(home) as store:
        return {
            "user": store.append(
                Message(role="user", content="Book a table at the Café in Zürich"), session="cli"
            ).seq,
            "assistant": store.append(
                Message(role="assistant", content="Done: Zürich, Friday 8pm."), session="desk"
            ).seq,
            "diary": store.append(
                MemoryWritten(memory="# Memory\n", reason="consolidation", history_append="[2026-03-01 10:00] User booked dinner in Zürich."),
                session="cli",
            ).seq,
        }


def search_json(home: Home, *args: str) -> list[dict[str, Any]]:
    proc = cli_here(home.root, "history", "search", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert isinstance(out, list)
    return out


def test_json_output(home: Home) -> None:
    s = seed(home)
    hits = search_json(home, "zurich")
    assert {h["seq"] for h in hits} == set(s.values())
    for h in hits:
        assert set(h) == HIT_KEYS
        assert isinstance(h["seq"], int) and isinstance(h["score"], float) and h["score"] > 0
        assert "«Zürich»" in h["snippet"]
    kinds = {h["seq"]: (h["kind"], h["role"], h["session"]) for h in hits}
    assert kinds[s["diary"]] == ("history", None, "cli")
    assert kinds[s["user"]] == ("message", "user", "cli")
    assert kinds[s["assistant"]] == ("message", "assistant", "desk")


def test_filters_limit_and_regex(home: Home) -> None:
    s = seed(home)
    assert [h["seq"] for h in search_json(home, "zurich", "--session", "desk")] == [s["assistant"]]
    assert len(search_json(home, "zurich", "--limit", "1")) == 1
    assert [h["seq"] for h in search_json(home, "zurich", "--kind", "history")] == [s["diary"]]
    hits = search_json(home, r"friday \d+pm", "--regex")
    assert [h["seq"] for h in hits] == [s["assistant"]]
    assert hits[0]["score"] == 0.0
    assert search_json(home, "no such words") == []


def test_text_output(home: Home) -> None:
    seed(home)
    proc = cli_here(home.root, "history", "search", "dinner")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.startswith("[") and "(cli/history)" in line and "«dinner»" in line
    proc = cli_here(home.root, "history", "search", "xyzzy")
    assert proc.returncode == 0 and proc.stdout.strip() == "no matches"


def test_hostile_query_and_bad_regex(home: Home) -> None:
    seed(home)
    assert isinstance(search_json(home, "--", '"zürich AND (NOT*'), list)
    proc = cli_here(home.root, "history", "search", "--regex", "(unclosed")
    assert proc.returncode == 1
    assert "memtray: error: invalid regular expression" in proc.stderr
    assert "--regex" in proc.stderr  # the hint
    proc = cli_here(home.root, "history", "search", "x", "--limit", "0")
    assert proc.returncode == 2  # argparse usage error


def test_index_is_incremental_and_rebuildable(home: Home) -> None:
    seed(home)
    first = search_json(home, "zurich")
    assert index_path(home).exists()
    with Store.open(home) as store:
        late = store.append(Message(role="user", content="Zürich again?"), session="cli").seq
    second = search_json(home, "zurich")
    assert late in {h["seq"] for h in second}
    index_path(home).unlink()
    assert search_json(home, "zurich") == second
    assert len(second) == len(first) + 1


def test_forwards_to_the_running_instance(home: Home) -> None:
    from memtray.core.app import App
    from memtray.core.base import ipc
    from memtray.core.cli import main as cli

    s = seed(home)
    app = App.open(home)
    server = ipc.Server(home, lambda req, send: cli.serve(app, req, send))
    try:
        server.start()
        live = app.store.append(Message(role="user", content="Zürich by train"), session="cli").seq
        hits = search_json(home, "zurich")  # the home is locked: served by `app`
        assert {h["seq"] for h in hits} == {*s.values(), live}
    finally:
        server.close()
        app.close()


# --- modes ---------------------------------------------------------------------------------


def use_embeddings(home: Home, base_url: str) -> None:
    home.create()
    home.config.write_text(f'embedding_model = "openai/test-embedding"\nembedding_api_base = "{base_url}"\n')


def test_modes_and_scores(home: Home, llm_server: Any) -> None:
    s = seed(home)
    with Store.open(home) as store:
        run = store.append(Message(role="user", content="I went running by the lake"), session="cli").seq
    proc = cli_here(home.root, "history", "search", "--json", "--mode", "semantic", "ran")
    assert proc.returncode == 1 and "needs an embedding model" in proc.stderr
    assert "embedding_model" in proc.stderr  # the hint says how
    proc = cli_here(home.root, "history", "search", "--json", "ran")
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    assert "no embedding model is configured" in proc.stderr  # said plainly, on stderr

    use_embeddings(home, llm_server.base_url)
    proc = cli_here(home.root, "history", "embed")
    assert proc.returncode == 0, proc.stderr
    # progress lines come from this backfill or from the background one it waits for
    assert all(line.startswith("embedded ") and line.endswith(" of 4") for line in proc.stderr.splitlines())
    assert "openai/test-embedding: 4 of 4 entries embedded" in proc.stdout
    status = json.loads(cli_here(home.root, "history", "embed", "--status", "--json").stdout)
    assert isinstance(status.pop("running"), bool)  # the background pass may be looking for work
    assert status == {"model": "openai/test-embedding", "done": 4, "total": 4, "error": None}

    sem = search_json(home, "ran", "--mode", "semantic", "--limit", "1")
    assert [h["seq"] for h in sem] == [run]
    assert sem[0]["mode"] == "semantic" and sem[0]["keyword_score"] is None
    assert 0 < sem[0]["semantic_score"] <= 1 and sem[0]["score"] == sem[0]["semantic_score"]
    assert search_json(home, "ran", "--mode", "keyword") == []
    hyb = search_json(home, "zurich", "--mode", "hybrid")
    assert {h["seq"] for h in hyb} >= set(s.values())
    for h in hyb:
        assert set(h) == HIT_KEYS and h["mode"] == "hybrid" and h["score"] > 0
    both = [h for h in hyb if h["keyword_score"] is not None]
    assert {h["seq"] for h in both} == set(s.values()) and all(h["semantic_score"] is not None for h in both)
