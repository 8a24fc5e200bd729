"""Tests for core/search: the derived FTS5 index, query safety, the service and tool."""

from __future__ import annotations

import asyncio
import os
import stat
from datetime import UTC, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memtray.core.base.home import Home
from memtray.core.llm.tools import ToolContext, ToolRegistry
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import MemoryWritten, Verbatim
from memtray.core.log.store import Store
from memtray.core.search import index as searchmod
from memtray.core.search.index import SearchIndex, index_path
from memtray.core.search.service import SearchService, build
from memtray.core.search.text import Hit, SearchError, format_hits, fts_query


def say(store: Store, role: str, content: str | None, session: str = "cli", **extra: Any) -> int:
    data: dict[str, Any] = {"role": role, **extra}
    if content is not None:
        data["content"] = content
    return store.append(Verbatim("message", data), session=session).seq


def diary(store: Store, entry: str, session: str | None = "cli") -> int:
    data = {"memory": "# Memory\n", "reason": "consolidation", "history_append": entry}
    return store.append(Verbatim("memory.written", data), session=session).seq


def seed(store: Store) -> dict[str, int]:
    return {
        "hello": say(store, "user", "Hello! I'm planning a trip to Zürich next spring."),
        "reply": say(store, "assistant", "Zürich is lovely in spring; try the Café Sprüngli."),
        "tool": say(store, "tool", "zürich weather: 12°C", tool_call_id="c1", name="weather"),
        "calls": say(store, "assistant", None, tool_calls=[{"id": "c1", "function": {"name": "weather"}}]),
        "work": say(store, "user", "Remind me about the quarterly report (Q3) — 100% due Friday.", session="desk"),
        "diary1": diary(store, "[2026-03-01 10:00] User plans a trip to Zürich.\n[2026-03-01 10:05] Likes Python and green tea."),
        "no_history": store.append(MemoryWritten(memory="# M", reason="agent")).seq,
        "diary2": diary(store, "[2026-03-02 09:00] Quarterly report drafted with Anna.", session="desk"),
        "cjk": say(store, "user", "来週は東京都に行きます", session="desk"),
    }


def seqs(hits: list[Hit]) -> set[int]:
    return {h.seq for h in hits}


# --- indexing ---------------------------------------------------------------------------


def test_hits_come_from_messages_and_history(store: Store, index: SearchIndex) -> None:
    s = seed(store)
    index.sync(store)
    hits = index.search("zurich")
    assert seqs(hits) == {s["hello"], s["reply"], s["diary1"]}
    by_seq = {h.seq: h for h in hits}
    assert by_seq[s["diary1"]].kind == "history"
    assert by_seq[s["diary1"]].role is None
    assert by_seq[s["hello"]].kind == "message" and by_seq[s["hello"]].role == "user"
    assert by_seq[s["hello"]].session == "cli"
    assert all(h.score > 0 for h in hits)
    assert "«Zürich»" in by_seq[s["hello"]].snippet


def test_tool_results_and_tool_calls_are_not_indexed(store: Store, index: SearchIndex) -> None:
    s = seed(store)
    index.sync(store)
    assert s["tool"] not in seqs(index.search("weather"))
    assert index.search("12°C") == []
    # user/assistant messages with text + diary entries with a history_append
    assert index.count() == 6


def test_sync_is_incremental_and_idempotent(store: Store, index: SearchIndex) -> None:
    seed(store)
    assert index.sync(store) == 6
    assert index.sync(store) == 0
    assert index.last_seq == store.log.last_seq
    assert index.count() == 6  # read once and kept (the ranking asks for it every query)...
    new = say(store, "user", "Let's talk about sourdough baking")
    assert index.search("sourdough") == []  # not synced yet
    assert index.sync(store) == 1
    assert index.count() == 7  # ...and read again after a write
    assert seqs(index.search("sourdough")) == {new}
    assert index.sync(store) == 0
    assert index.rebuild(store) == 7 and index.count() == 7


def test_sync_resumes_in_a_new_process(store: Store) -> None:
    seed(store)
    first = SearchIndex.open(index_path(store.home))
    first.sync(store)
    first.close()
    late = say(store, "assistant", "Sourdough needs a starter.")
    again = SearchIndex.open(index_path(store.home))
    try:
        assert again.sync(store) == 1
        assert again.count() == 7
        assert seqs(again.search("starter")) == {late}
    finally:
        again.close()


def test_deleting_the_index_rebuilds_identical_results(store: Store) -> None:
    seed(store)
    path = index_path(store.home)
    queries = ["zurich", "report", "quarterly report", "pyth*", "ython", "東京", "spring café"]
    idx = SearchIndex.open(path)
    idx.sync(store)
    before = {q: idx.search(q) for q in queries}
    idx.close()
    os.unlink(path)
    idx = SearchIndex.open(path)
    try:
        assert idx.count() == 0
        assert idx.sync(store) == 6
        assert {q: idx.search(q) for q in queries} == before
    finally:
        idx.close()


def test_explicit_rebuild_gives_the_same_documents(store: Store, index: SearchIndex) -> None:
    seed(store)
    index.sync(store)
    before = index.search("zurich")
    assert index.rebuild(store.log) == 6
    assert index.search("zurich") == before


def test_index_ahead_of_the_log_is_rebuilt(tmp_path: Path) -> None:
    big = Store.open(Home.resolve(tmp_path / "big"))
    seed(big)
    idx = SearchIndex.open(tmp_path / "search.sqlite")
    idx.sync(big)
    big.close()
    small = Store.open(Home.resolve(tmp_path / "small"))  # a log with fewer records
    try:
        only = say(small, "user", "Zürich again")
        assert idx.sync(small) == 1
        assert seqs(idx.search("zurich")) == {only}
    finally:
        small.close()
        idx.close()


def test_a_different_log_of_the_same_length_is_detected(tmp_path: Path) -> None:
    a = Store.open(Home.resolve(tmp_path / "a"))
    say(a, "user", "alpha apples")
    a.close()
    path = tmp_path / "search.sqlite"
    idx = SearchIndex.open(path)
    idx.sync(EventLog.open(tmp_path / "a" / "events", readonly=True))
    idx.close()
    b = Store.open(Home.resolve(tmp_path / "b"))
    try:
        say(b, "user", "bravo bananas")
        idx = SearchIndex.open(path)  # a fresh open checks the stored position and id
        assert idx.sync(b) == 1
        assert idx.search("apples") == []
        assert len(idx.search("bananas")) == 1
        idx.close()
    finally:
        b.close()


def test_incremental_sync_across_segment_rotation(tmp_path: Path) -> None:
    store = Store.open(Home.resolve(tmp_path / "home"), segment_bytes=600)
    idx = SearchIndex.open(tmp_path / "inc.sqlite")
    try:
        for round_ in range(5):
            for i in range(7):
                say(store, "user", f"round {round_} line {i} about rowing")
            idx.sync(store)
        assert len(list((tmp_path / "home" / "events").glob("*.jsonl"))) > 5
        full = SearchIndex.open(tmp_path / "full.sqlite")
        try:
            assert full.sync(store) == 35 == idx.count()
            assert idx.search("rowing", limit=100) == full.search("rowing", limit=100)
        finally:
            full.close()
    finally:
        idx.close()
        store.close()


def test_a_failed_batch_leaves_nothing_half_indexed(
    store: Store, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(store)

    def boom(self: object) -> list[int]:
        raise RuntimeError("crash between the documents and the meta row")

    with monkeypatch.context() as m:
        m.setattr(searchmod.Position, "to_json", boom)
        with pytest.raises(RuntimeError):
            index.sync(store)
    assert index.count() == 0 and index.last_seq == 0
    assert index.sync(store) == 6  # no duplicate-seq error: the batch was rolled back whole
    assert len(index.search("zurich")) == 3


def test_memory_purged_rebuilds_from_scratch(store: Store, index: SearchIndex) -> None:
    seed(store)
    index.sync(store)
    store.append(Verbatim("memory.purged", {"reason": "user"}))
    # a rebuild re-indexes every document, not just what came after the purge
    assert index.sync(store) == 6
    assert index.sync(store) == 0
    assert index.last_seq == store.log.last_seq


def test_sync_can_stop_between_batches_and_resume(
    store: Store, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(searchmod, "_BATCH", 3)
    for i in range(10):
        say(store, "user", f"note number {i}")
    assert index.sync(store, should_stop=lambda: True) == 3
    assert index.last_seq == 3
    assert index.sync(store) == 7
    assert len(index.search("note", limit=50)) == 10


def test_index_file_is_private(store: Store, index: SearchIndex) -> None:
    seed(store)
    index.sync(store)
    mode = stat.S_IMODE(index_path(store.home).stat().st_mode)
    assert mode == 0o600


def test_an_unreadable_index_file_is_replaced(store: Store) -> None:
    seed(store)
    path = index_path(store.home)
    path.write_bytes(b"this is not a database" * 100)
    idx = SearchIndex.open(path)
    try:
        assert idx.sync(store) == 6
        assert len(idx.search("zurich")) == 3
    finally:
        idx.close()


def test_another_format_version_is_rebuilt(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(store)
    idx = SearchIndex.open(index_path(store.home))
    idx.sync(store)
    idx.close()
    monkeypatch.setattr(searchmod, "FORMAT", searchmod.FORMAT + 1)
    idx = SearchIndex.open(index_path(store.home))
    try:
        assert idx.count() == 0
        assert idx.sync(store) == 6
    finally:
        idx.close()


# --- queries ----------------------------------------------------------------------------


def test_words_are_anded_and_prefixes_match(store: Store, index: SearchIndex) -> None:
    s = seed(store)
    index.sync(store)
    assert seqs(index.search("quarterly report")) == {s["work"], s["diary2"]}
    assert seqs(index.search("quarterly anna")) == {s["diary2"]}
    (prefix,) = index.search("pyth*")
    assert prefix.seq == s["diary1"] and prefix.score > 0  # an FTS prefix match
    (partial,) = index.search("pyth")  # no such token: found by the substring fallback
    assert partial.seq == s["diary1"] and partial.score == 0.0
    assert seqs(index.search("REPORT", kind="history")) == {s["diary2"]}
    assert seqs(index.search("report", session="desk", kind="message")) == {s["work"]}
    assert len(index.search("zurich", limit=1)) == 1


def test_better_matches_rank_first(store: Store, index: SearchIndex) -> None:
    weak = say(store, "user", "A long note that mentions kayak once among many other unrelated words here.")
    strong = say(store, "user", "kayak kayak kayak")
    newer_weak = say(store, "user", "Another long note, kayak mentioned once, plenty of other words as filler.")
    index.sync(store)
    hits = index.search("kayak")
    assert hits[0].seq == strong
    assert {h.seq for h in hits[1:]} == {weak, newer_weak}
    assert hits[0].score > hits[1].score >= hits[2].score > 0


def test_only_the_newest_matches_are_ranked(
    store: Store, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    best_but_old = say(store, "user", "canoe canoe canoe")
    newer = [say(store, "user", f"a note about a canoe trip, number {i} of several") for i in range(4)]
    index.sync(store)
    assert index.search("canoe", limit=1)[0].seq == best_but_old
    monkeypatch.setattr(searchmod, "_RANK_WINDOW", 3)
    assert seqs(index.search("canoe")) == set(newer[-3:])


def test_diacritics_and_case_are_folded(store: Store, index: SearchIndex) -> None:
    s = seed(store)
    index.sync(store)
    assert s["reply"] in seqs(index.search("cafe"))
    assert s["reply"] in seqs(index.search("CAFÉ"))
    assert s["reply"] in seqs(index.search("sprungli"))
    assert seqs(index.search("ZÜRICH")) == seqs(index.search("zurich"))


def test_substring_fallback_when_fts_finds_nothing(store: Store, index: SearchIndex) -> None:
    s = seed(store)
    index.sync(store)
    hits = index.search("ytho")  # inside "Python": no token matches
    assert seqs(hits) == {s["diary1"]}
    assert hits[0].score == 0.0
    assert "P«ytho»n" in hits[0].snippet
    assert seqs(index.search("東京")) == {s["cjk"]}  # unicode61 does not split CJK runs
    assert seqs(index.search("0%")) == {s["work"]}  # token "0" is nowhere; "100%" contains it
    assert index.search("1_0%") == []  # % and _ are literal, not LIKE wildcards
    assert index.search("1%%") == []
    assert seqs(index.search("(Q3)")) == {s["work"]}


def test_fallback_is_case_insensitive_beyond_ascii(store: Store, index: SearchIndex) -> None:
    seq = say(store, "user", "Straße ÉLAN")
    index.sync(store)
    assert seqs(index.search("raße élan")) == {seq}


@pytest.mark.parametrize(
    "query",
    [
        "", "   ", '"', '""', "'", "(", ")", "()", "(zurich", 'zurich"', '"zurich',
        "AND", "OR", "NOT", "NEAR", "zurich AND", "OR zurich", "NOT zurich", "NEAR(a b)",
        "zurich NEAR/2 spring", "*", "**", "zur*", "*zur", "-", "-zurich", "zurich -spring",
        "^zurich", "text:zurich", "kind:history", "{text}: zurich", "a:b:c", "+", "?", "%", "_",
        "\\", "\x00", "zürich\x00", "🎉", "emoji 🎉 zurich", "東京", "ä", "\u0301", "a\u0301",
        "'; DROP TABLE docs; --", "NULL", "rank", "\n\t", "z" * 5000,
    ],
)
def test_hostile_queries_never_raise(
    store: Store, index: SearchIndex, query: str, caplog: pytest.LogCaptureFixture
) -> None:
    seed(store)
    index.sync(store)
    hits = index.search(query)
    assert isinstance(hits, list)
    assert index.count() == 6  # and nothing was dropped
    # not even the safety net (an FTS error turning into a substring search) was needed
    assert not [r for r in caplog.records if r.name == "memtray.core.search.index"]


def test_fts_query_quotes_every_word() -> None:
    assert fts_query('say "hi" AND (x)') == '"say" AND """hi""" AND "AND" AND "(x)"'
    assert fts_query("pyth*") == '"pyth"*'
    assert fts_query("* - ()") is None
    assert fts_query("") is None


def test_arbitrary_text_is_a_safe_query(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = Store.open(Home.resolve(tmp_path / "home"))
    idx = SearchIndex.open(index_path(store.home))
    try:
        seed(store)
        idx.sync(store)

        @given(st.text(max_size=40))
        def check(query: str) -> None:
            assert isinstance(idx.search(query), list)

        check()
        assert not [r for r in caplog.records if r.name == "memtray.core.search.index"]
    finally:
        idx.close()
        store.close()


def test_regex_mode(store: Store, index: SearchIndex) -> None:
    s = seed(store)
    index.sync(store)
    hits = index.search(r"\bpy\w+on\b", regex=True)
    assert seqs(hits) == {s["diary1"]}
    assert "«Python»" in hits[0].snippet
    assert seqs(index.search(r"q[0-9]", regex=True)) == {s["work"]}
    assert seqs(index.search(r"report", regex=True, kind="history")) == {s["diary2"]}
    newest_first = [h.seq for h in index.search("z.rich", regex=True)]
    assert newest_first == sorted(newest_first, reverse=True) and len(newest_first) == 3
    assert index.search("", regex=True) == []


@pytest.mark.parametrize("pattern", ["(", "[a-", "*x", "(?P<1>x)", "a{2,1}"])
def test_invalid_regex_is_a_clear_error(store: Store, index: SearchIndex, pattern: str) -> None:
    seed(store)
    index.sync(store)
    with pytest.raises(SearchError) as info:
        index.search(pattern, regex=True)
    assert "invalid regular expression" in str(info.value)
    assert "--regex" in info.value.hint


def test_bad_arguments(index: SearchIndex) -> None:
    with pytest.raises(SearchError):
        index.search("x", limit=0)
    with pytest.raises(SearchError):
        index.search("x", kind="tool")


def test_hit_json_and_line() -> None:
    hit = Hit("message", 7, "cli", "user", "2026-03-01T10:00:02.123Z", "a «b» c", 1.5)
    assert hit.to_json() == {
        "kind": "message", "seq": 7, "session": "cli", "role": "user",
        "ts": "2026-03-01T10:00:02.123Z", "snippet": "a «b» c", "score": 1.5,
        "mode": "keyword", "keyword_score": None, "semantic_score": None,
    }
    assert hit.line(UTC) == "[2026-03-01 10:00] (cli/user) a «b» c"
    assert hit.line(timezone(timedelta(hours=-5))) == "[2026-03-01 05:00] (cli/user) a «b» c"
    entry = Hit("history", 8, None, None, "2026-03-01T10:00:02.123Z", "x", 0.0)
    assert entry.line(UTC) == "[2026-03-01 10:00] (-/history) x"
    assert format_hits([hit, entry], UTC).splitlines() == [hit.line(UTC), entry.line(UTC)]
    assert format_hits([]) == "no matches"


def test_long_texts_get_trimmed_snippets(store: Store, index: SearchIndex) -> None:
    say(store, "user", ("lorem ipsum " * 200) + "needle " + ("dolor sit " * 200))
    index.sync(store)
    for q, regex in (("needle", False), ("eedl", False), ("need.e", True)):
        (hit,) = index.search(q, regex=regex)
        assert "needle" in hit.snippet.replace("«", "").replace("»", "")
        assert len(hit.snippet) <= 240
        assert "\n" not in hit.snippet


# --- service and tool -------------------------------------------------------------------


def fake_app(store: Store, *, start: bool) -> Any:
    tools = ToolRegistry()
    svc = build(store.home, store, tools, start=start)
    return SimpleNamespace(home=store.home, store=store, search=svc, tools=tools)


def test_service_syncs_lazily_after_appends(store: Store) -> None:
    seed(store)
    app = fake_app(store, start=True)
    svc: SearchService = app.search
    try:
        assert len(svc.search("zurich")) == 3
        late = say(store, "user", "Zürich once more")
        assert late in seqs(svc.search("zurich"))
        assert svc.sync() == 0  # nothing appended since
    finally:
        svc.close()


def test_service_without_start_indexes_on_first_search(store: Store) -> None:
    s = seed(store)
    app = fake_app(store, start=False)
    svc: SearchService = app.search
    try:
        assert svc._thread is None
        assert seqs(svc.search("anna")) == {s["diary2"]}
    finally:
        svc.close()


def test_search_history_tool(store: Store) -> None:
    seed(store)
    app = fake_app(store, start=False)
    svc: SearchService = app.search
    try:
        assert "search_history" in app.tools.names()
        ctx = ToolContext(session="cli")
        out = asyncio.run(app.tools.call("search_history", '{"query": "zurich", "limit": 2}', ctx))
        lines = out.splitlines()
        assert len(lines) == 2
        assert all(line.startswith("[") and "«Zürich»" in line for line in lines)
        assert asyncio.run(app.tools.call("search_history", '{"query": "xyzzy"}', ctx)) == "no matches"
        missing = asyncio.run(app.tools.call("search_history", "{}", ctx))
        assert missing.startswith("error:")
        history = asyncio.run(app.tools.call("search_history", '{"query": "anna"}', ctx))
        assert "(desk/history)" in history
    finally:
        svc.close()


def test_detached_lets_state_be_emptied(store: Store) -> None:
    s = seed(store)
    app = fake_app(store, start=False)
    svc: SearchService = app.search
    try:
        before = svc.search("zurich")
        with svc.detached():
            for p in store.home.state.iterdir():
                p.unlink()
        assert svc.index.count() == 0  # a fresh file: rebuilt on the next search
        assert svc.search("zurich") == before
        assert seqs(before) == {s["hello"], s["reply"], s["diary1"]}
    finally:
        svc.close()
