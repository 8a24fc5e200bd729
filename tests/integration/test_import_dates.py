"""Imported messages keep the time they were sent (ChatGPT's ``create_time``, nanobot's
per-message ``timestamp``): search shows and orders them by it, not by the import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.test_import_chatgpt import export


def _memtray(home: Path, *args: str, tz: str = "UTC") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMTRAY_HOME=str(home), MEMTRAY_NO_DESKTOP="1", TZ=tz)
    return subprocess.run([sys.executable, "-m", "memtray.core.cli", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def _search(home: Path, query: str) -> list[dict[str, object]]:
    proc = _memtray(home, "history", "search", query, "--json", "--kind", "message")
    assert proc.returncode == 0, proc.stderr
    hits: list[dict[str, object]] = json.loads(proc.stdout)
    return hits


def test_chatgpt_messages_are_dated_by_create_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export()))
    assert _memtray(home, "import", "chatgpt", str(path)).returncode == 0
    (vienna,) = [h for h in _search(home, "Vienna train") if "Vienna" in str(h["snippet"])]
    assert vienna["ts"] == "2023-11-14T22:14:00.000Z"  # create_time 1 700 000 040, not today
    (ada,) = [h for h in _search(home, "Ada") if h["role"] == "user"]
    assert ada["ts"] == "2023-11-17T05:46:40.000Z"


def test_nanobot_messages_are_dated_by_their_timestamps_in_the_local_zone(tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    (ws / "sessions").mkdir(parents=True)
    lines = [{"_type": "metadata", "key": "telegram:42"},
             {"role": "user", "content": "Book the ferry to Naxos", "timestamp": "2025-02-25T10:30:00.250"},
             {"role": "assistant", "content": "Ferry to Naxos booked.", "timestamp": "2025-02-25T10:30:05"},
             {"role": "user", "content": "And the hotel on Naxos?", "timestamp": "not a time"}]
    (ws / "sessions" / "telegram_42.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    home = tmp_path / "home"
    proc = _memtray(home, "import", "nanobot", str(ws), tz="Asia/Shanghai")  # nanobot wrote local times, UTC+8
    assert proc.returncode == 0, proc.stderr
    by_text = {str(h["snippet"]).replace("«", "").replace("»", ""): h["ts"] for h in _search(home, "Naxos")}
    assert by_text["Book the ferry to Naxos"] == "2025-02-25T02:30:00.250Z"
    assert by_text["Ferry to Naxos booked."] == "2025-02-25T02:30:05.000Z"
    undated = by_text["And the hotel on Naxos?"]
    assert isinstance(undated, str) and not undated.startswith("2025-02-25")  # no usable time: the import's


def test_an_index_that_dated_imports_by_the_import_is_redated_once_keeping_its_vectors(tmp_path: Path) -> None:
    import sqlite3

    home = tmp_path / "home"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export()))
    assert _memtray(home, "import", "chatgpt", str(path)).returncode == 0
    assert _search(home, "Vienna")  # the index exists
    db = sqlite3.connect(home / "state" / "search.sqlite")
    with db:  # as an index of the previous rule left it: import times, a vector made meanwhile
        db.execute("UPDATE meta SET value = '1' WHERE key = 'said_at'")
        db.execute("UPDATE documents SET ts = '2026-12-03T14:17:00.000Z'")
        db.execute("INSERT INTO vectors(seq, hash, norm, sig, vec) VALUES (1, x'00', 1.0, x'01', x'7f')")
    db.close()
    (vienna,) = [h for h in _search(home, "Vienna") if "Vienna" in str(h["snippet"])]
    assert vienna["ts"] == "2023-11-14T22:14:00.000Z"
    db = sqlite3.connect(home / "state" / "search.sqlite")
    try:
        assert db.execute("SELECT count(*) FROM vectors").fetchone() == (1,)  # kept: no re-embedding
        assert db.execute("SELECT value FROM meta WHERE key = 'said_at'").fetchone() == ("2",)
    finally:
        db.close()
