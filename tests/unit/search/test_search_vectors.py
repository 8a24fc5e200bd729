"""Tests for core/search's vectors, fusion and keyword rules added for hybrid search."""

from __future__ import annotations

import random

import pytest
from memtray.core.log.events import MemoryWritten, Message
from memtray.core.log.store import Store
from memtray.core.search import vectors as vecmod
from memtray.core.search.health import check_search
from memtray.core.search.hybrid import fuse
from memtray.core.search.index import SearchIndex, index_path
from memtray.core.search.text import Hit, cjk_split, fts_query
from memtray.core.search.vectors import VectorStore, quantize, signature

from tests.fixtures.embeddings import cosine, embed


def say(store: Store, content: str, role: str = "user", session: str = "cli") -> int:
    return store.append(Message(role=role, content=content), session=session).seq


# --- keyword rules -------------------------------------------------------------------------


def test_english_word_forms_share_a_stem(store: Store, index: SearchIndex) -> None:
    runs = say(store, "She runs every morning")
    say(store, "A quiet evening")
    index.sync(store)
    assert {h.seq for h in index.search("running")} == {runs}
    assert {h.seq for h in index.search("run")} == {runs}


def test_chinese_words_are_found_inside_longer_runs(store: Store, index: SearchIndex) -> None:
    target = say(store, "我女儿的老师很好")
    other = say(store, "老板今天不在")
    index.sync(store)
    hits = index.search("老师")
    assert [h.seq for h in hits] == [target]
    assert "«" in hits[0].snippet and "老师" in hits[0].snippet
    assert {h.seq for h in index.search("老")} == {target, other}  # one character: substring fallback


def test_cjk_split_pairs_characters_and_keeps_other_text() -> None:
    assert cjk_split("abc 我女儿 x") == "abc  我女 女儿  x"
    assert cjk_split("plain text") == "plain text"
    assert fts_query("女儿的") == '"女儿 儿的"'


def test_memory_edits_are_documents(store: Store, index: SearchIndex) -> None:
    seq = store.append(MemoryWritten(memory="# Memory\n- Ada's teacher is Mr Okafor\n", reason="agent", diff={"added": [{"id": "f1", "section": "", "text": "Ada's teacher is Mr Okafor"}],
                 "dropped": [], "changed": [], "unchanged": 0})).seq
    store.append(MemoryWritten(memory="# Memory\n", reason="consolidation", diff={"added": [{"id": "f2", "section": "", "text": "Okafor again"}]}))
    index.sync(store)
    hits = index.search("okafor")
    assert [(h.seq, h.kind) for h in hits] == [(seq, "memory")]  # a consolidation counts by its diary entry


# --- vectors -------------------------------------------------------------------------------


def test_quantize_and_signature() -> None:
    q = quantize([0.5, -1.0, 0.0, 0.25])
    assert list(q) == [64, -127, 0, 32]
    assert signature(q) == 0b1001
    assert list(quantize([0.0, 0.0])) == [0, 0]


def fill(store: Store, index: SearchIndex, texts: list[str]) -> tuple[VectorStore, list[int]]:
    seqs = [say(store, t) for t in texts]
    index.sync(store)
    vs = VectorStore(index)
    vs.use_model("test")
    batch, through = vs.pending(10_000)
    assert [s for s, _ in batch] == seqs
    vs.put([(s, t, embed(t)) for s, t in batch], through)
    return vs, seqs


def test_nearest_documents_by_cosine(store: Store, index: SearchIndex) -> None:
    texts = ["I bought a new car", "the weather is sunny", "J'ai acheté une voiture", "piano lessons"]
    vs, seqs = fill(store, index, texts)
    got = vs.search(embed("purchased an automobile"), limit=2)
    assert {s for s, _ in got} == {seqs[0], seqs[2]}  # the paraphrase and the translation
    by_seq = dict(got)
    assert abs(by_seq[seqs[0]] - cosine(embed("purchased an automobile"), embed(texts[0]))) < 0.02
    assert next(s for s, _ in vs.search(embed("car"), limit=5, allowed={seqs[2], seqs[3]})) == seqs[2]
    assert vs.pending(10) == ([], 0)
    assert vs.progress() == (4, 4)


def test_signature_prefilter_finds_what_the_exact_scan_finds(
    store: Store, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    words = ["car", "teacher", "swim", "garden", "coffee", "train", "birthday", "doctor", "money", "dog",
             "piano", "snow", "flight", "laptop", "wedding", "Okafor", "Lyon", "Rennes", "tomato", "orchid"]
    texts = [" ".join(rng.sample(words, 3)) + f" {i}" for i in range(300)]
    vs, _ = fill(store, index, texts)
    queries = [embed(" ".join(rng.sample(words, 2))) for _ in range(20)]
    exact = [vs.search(q, limit=5) for q in queries]
    monkeypatch.setattr(vecmod, "EXACT_BELOW", 10)
    monkeypatch.setattr(vecmod, "PREFILTER", 60)
    pre = [vs.search(q, limit=5) for q in queries]
    found = sum(len({s for s, _ in a} & {s for s, _ in b}) for a, b in zip(exact, pre, strict=True))
    assert found >= 0.9 * 5 * len(queries)  # the estimate keeps nearly every true neighbour


def test_another_model_drops_the_vectors(store: Store, index: SearchIndex) -> None:
    vs, _ = fill(store, index, ["one", "two"])
    assert vs.count() == 2
    vs.use_model("test")
    assert vs.count() == 2
    vs.use_model("other")
    assert vs.count() == 0 and vs.through == 0 and vs.model == "other"


def test_a_rebuilt_index_reuses_vectors_of_unchanged_texts(store: Store, index: SearchIndex) -> None:
    vs, seqs = fill(store, index, ["alpha beta", "gamma delta"])
    index.rebuild(store)
    assert vs.through == 0  # another generation: checked again from the start
    assert vs.pending(10) == ([], 0)  # every text unchanged: no embedding needed
    assert vs.progress() == (2, 2)
    assert [s for s, _ in vs.search(embed("alpha beta"), limit=1)] == [seqs[0]]


def test_vectors_of_vanished_documents_are_pruned(store: Store, index: SearchIndex) -> None:
    vs, seqs = fill(store, index, ["alpha", "beta"])
    index.db.execute("DELETE FROM documents WHERE seq = ?", (seqs[1],))
    assert vs.pending(10) == ([], 0)
    assert vs.count() == 1


# --- fusion --------------------------------------------------------------------------------


def hit(seq: int, score: float, mode: str = "keyword") -> Hit:
    kw = score if mode == "keyword" else None
    sem = score if mode == "semantic" else None
    return Hit("message", seq, "cli", "user", "2026-03-01T10:00:00.000Z", f"s{seq}", score, mode, kw, sem)


def test_reciprocal_rank_fusion() -> None:
    keyword = [hit(1, 9.0), hit(2, 9.0)]
    semantic = [hit(3, 0.9, "semantic"), hit(2, 0.8, "semantic")]
    out = fuse(keyword, semantic, limit=10)
    assert [h.seq for h in out] == [2, 3, 1]  # found by both first; then a tie goes to the newer
    top = out[0]
    assert top.mode == "hybrid" and top.keyword_score == 9.0 and top.semantic_score == 0.8
    assert top.score == pytest.approx(1 / 62 + 1 / 62, abs=1e-6)
    assert out[1].keyword_score is None and out[2].semantic_score is None
    assert [h.seq for h in fuse(keyword, semantic, limit=1)] == [2]


def test_a_keyword_hit_far_below_the_best_counts_little() -> None:
    """The any-word ranking runs on into passages with one common word: their ranks count
    by their score against the best one's, so a strong vector outvotes them."""
    out = fuse([hit(1, 9.0), hit(4, 3.0)], [hit(2, 0.5, "semantic")], limit=3)
    assert [h.seq for h in out] == [2, 1, 4]  # 1 and 2 tie (the newer first); 4 is far behind
    assert out[2].score == pytest.approx((3.0 / 9.0) ** 8 / 62, abs=1e-6) and out[2].score < 0.001 / 62


def test_a_semantic_hit_far_out_of_the_noise_counts_more() -> None:
    keyword, semantic = [hit(1, 9.0)], [hit(2, 0.9, "semantic")]
    assert [h.seq for h in fuse(keyword, semantic, limit=2)] == [2, 1]  # a tie: the newer first
    sure = fuse(keyword, semantic, limit=2, noise=(0.1, 0.05))  # 16 deviations out: counts 5 times
    assert [h.seq for h in sure] == [2, 1] and sure[0].score == pytest.approx(5 / 61, abs=1e-6)
    near = fuse([hit(1, 9.0)], [hit(2, 0.2, "semantic")], limit=2, noise=(0.1, 0.05))
    assert near[0].seq == 2 and near[0].score == pytest.approx(1 / 61, abs=1e-6)


# --- doctor --------------------------------------------------------------------------------


def test_doctor_reports_the_index_and_repairs_an_unreadable_one(store: Store, index: SearchIndex) -> None:
    fill(store, index, ["alpha", "beta"])
    home = store.home
    findings = check_search(home, "test")
    assert all(f.ok for f in findings)
    assert any("2 of 2" in f.title for f in findings if f.code == "embeddings")
    assert any("keywords only" in f.title for f in check_search(home, ""))
    index.close()
    index_path(home).write_bytes(b"not a database at all" * 100)
    (bad,) = check_search(home, "test")
    assert not bad.ok and bad.fix is not None
    assert "rebuilt" in bad.fix()
    assert not index_path(home).exists()
    assert check_search(home, "test")[0].ok
    reopened = SearchIndex.open(index_path(home))  # and it opens again, empty, to be rebuilt
    try:
        assert reopened.count() == 0
    finally:
        reopened.close()


def test_the_same_text_again_reuses_its_vector_and_batches_stay_full(store: Store, index: SearchIndex) -> None:
    seqs = [say(store, t) for t in ("alpha", "beta", "alpha", "beta", "gamma", "delta", "alpha")]
    index.sync(store)
    vs = VectorStore(index)
    vs.use_model("test")
    batch, through = vs.pending(2)
    assert batch == [(seqs[0], "alpha"), (seqs[1], "beta")] and through == seqs[1]
    vs.put([(s, t, embed(t)) for s, t in batch], through)
    batch, through = vs.pending(2)  # the repeats got their copies on the way: no call for them
    assert batch == [(seqs[4], "gamma"), (seqs[5], "delta")] and through == seqs[5]
    assert vs.count() == 4
    vs.put([(s, t, embed(t)) for s, t in batch], through)
    assert vs.pending(2) == ([], 0)
    assert vs.count() == 7 and vs.progress() == (7, 7)
    assert {s for s, _ in vs.search(embed("alpha"), limit=3)} == {seqs[0], seqs[2], seqs[6]}


def test_vectors_of_another_size_start_the_backfill_over(store: Store, index: SearchIndex) -> None:
    vs = VectorStore(index)
    vs.use_model("m")
    seqs = [say(store, t) for t in ("alpha", "beta", "gamma")]
    index.sync(store)
    batch, through = vs.pending(10)
    vs.put([(s, t, [1.0, 0.5, -0.5, 0.1]) for s, t in batch], through)
    assert vs.progress() == (3, 3)
    # the same model name now answers with 8 dimensions (a provider changed it)
    vs.put([(seqs[0], "alpha", [0.1] * 8)], seqs[0])
    sizes = {n for (n,) in index.db.execute("SELECT DISTINCT length(vec) FROM vectors")}
    assert sizes == {8} and vs.count() == 1  # never mixed: the 4-dimension ones are gone
    assert vs.through == 0  # and the backfill starts over (re-embedding the rest)
    batch, through = vs.pending(10)
    assert [t for _s, t in batch] == ["beta", "gamma"]  # alpha's new vector is reused
    with pytest.raises(ValueError, match="mixed sizes"):
        vs.put([(seqs[1], "beta", [0.1] * 8), (seqs[2], "gamma", [0.1] * 4)], through)
    assert check_search(store.home, "m")[0].ok


def test_doctor_repairs_vectors_of_mixed_sizes(store: Store, index: SearchIndex) -> None:
    vs = VectorStore(index)
    vs.use_model("m")
    a, b = say(store, "alpha"), say(store, "beta")
    index.sync(store)
    vs.put([(a, "alpha", [1.0, 0.5, -0.5, 0.1])], a)
    # an index written before sizes were checked: rows of two sizes side by side
    index.db.execute("INSERT INTO vectors(seq, hash, norm, sig, vec) VALUES (?, ?, 1.0, ?, ?)",
                     (b, vecmod.text_hash("beta"), b"\x01", bytes(8)))
    bad = [f for f in check_search(store.home, "m") if not f.ok]
    assert len(bad) == 1 and "different sizes" in bad[0].title and bad[0].fix is not None
    index.close()
    assert "dropped" in bad[0].fix()
    assert all(f.ok for f in check_search(store.home, "m"))
    reopened = SearchIndex.open(index_path(store.home))
    try:
        assert VectorStore(reopened).count() == 0 and VectorStore(reopened).through == 0
    finally:
        reopened.close()


def test_keyword_first_never_displaces_a_keyword_hit() -> None:
    from memtray.core.search.hybrid import keyword_first

    keyword = [hit(1, 9.0), hit(2, 5.0)]
    fused = fuse([hit(1, 9.0), hit(2, 5.0), hit(4, 1.0)],
                 [hit(3, 0.9, "semantic"), hit(5, 0.8, "semantic"), hit(2, 0.7, "semantic")], limit=10)
    assert [h.seq for h in fused][:2] == [3, 1]  # the fusion alone would put 3 above 1
    out = keyword_first(keyword, fused, limit=3)
    assert [h.seq for h in out] == [1, 2, 3]
    assert all(h.mode == "hybrid" for h in out)
    assert [h.seq for h in keyword_first(keyword, fused, limit=1)] == [1]
    assert [h.seq for h in keyword_first([], fused, limit=2)] == [h.seq for h in fused[:2]]


def test_weak_vectors_count_less_than_a_keyword_hit() -> None:
    from memtray.core.search.hybrid import WEAK_SEMANTIC_WEIGHT

    keyword, semantic = [hit(1, 3.0)], [hit(2, 0.9, "semantic")]
    weak = fuse(keyword, semantic, limit=2, semantic_weight=WEAK_SEMANTIC_WEIGHT)
    assert [h.seq for h in weak] == [1, 2]
    assert weak[1].score == pytest.approx(WEAK_SEMANTIC_WEIGHT / 61, abs=1e-6)
