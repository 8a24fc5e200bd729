"""Fusing the keyword and the semantic rankings into one: reciprocal rank fusion.

Owns the hybrid ranking rule. Each half ranks its own candidates (BM25 for
keywords, cosine for vectors); a document's fused score is the sum over the
halves that found it of ``1 / (RRF_K + rank)`` (rank from 1), the usual
reciprocal rank fusion: it needs no calibration between BM25 and cosine, and a
document both halves agree on rises. Each rank is weighted by how sure its half
is (weighted RRF): the keyword half (:mod:`ranking`, BM25 over *any* of the
query's words) runs on into passages with one common word, so a keyword hit
counts ``(score / best score) ** KEYWORD_CONFIDENCE``; a semantic hit counts
more the further its cosine stands out of the query's noise (the mean and spread
of its cosines with the history, :meth:`VectorStore.noise`), up to
:data:`SEMANTIC_CONFIDENCE` times, and one that does not stand out by
:data:`NEAR_SPREAD` deviations is no hit at all, so "zebra quantum" finds
nothing. On the retrieval set with strong vectors hybrid reaches 0.872 recall@5,
above semantic alone (0.865) and keywords alone (0.195); unweighted RRF over the
any-word ranking was 0.812 (bench/BENCHMARKS.md; a test holds hybrid >= semantic). Equal
scores go to the newer document (recency is the tie-breaker, as a person asking
"what did I say about X" usually means the latest time).

With weak vectors (the offline 135M model: :attr:`Embedder.strong` is False) the
fusion must never do worse than keywords alone, so :func:`keyword_first` keeps
the keyword search's own hits in their places and lets the fusion fill only the
places they leave: the vectors can add a passage, never push one out. In
that fusion a semantic rank counts :data:`WEAK_SEMANTIC_WEIGHT` (a quarter): at
full weight the weak vectors outvote the rare-word keyword matches and the
retrieval set's recall@5 drops from 0.46 to 0.24 (bench/BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memtray.core.search.index import SearchIndex
from memtray.core.search.text import Hit, excerpt, substring_pieces, words_pattern

RRF_K = 60
#: how steeply a keyword hit's weight falls with its score below the best one's (module doc)
KEYWORD_CONFIDENCE = 8
#: a semantic hit counts up to this many times more for its distance above the noise (module doc)
SEMANTIC_CONFIDENCE = 5.0
#: standard deviations above the query's mean cosine that make a passage near at all
NEAR_SPREAD = 3.0
#: candidates each half contributes to the fusion (beyond the limit asked for)
CANDIDATES = 50
#: weight of a semantic rank when the vectors are weak (module doc)
WEAK_SEMANTIC_WEIGHT = 0.25


def semantic_hits(index: SearchIndex, scored: Sequence[tuple[int, float]], query: str) -> list[Hit]:
    """Hits for ``(seq, cosine)`` pairs, with excerpts around any query word found."""
    docs = index.documents(seq for seq, _ in scored)
    pattern = words_pattern(substring_pieces(query))
    out = []
    for seq, cos in scored:
        doc = docs.get(seq)
        if doc is None:
            continue  # the vector outlived its document (pruned at the next backfill)
        kind, session, role, ts, text = doc
        out.append(Hit(kind, seq, session, role, ts, excerpt(text, pattern), cos, "semantic", None, cos))
    return out


def fuse(keyword: Sequence[Hit], semantic: Sequence[Hit], limit: int, k: int = RRF_K,
         semantic_weight: float = 1.0, noise: tuple[float, float] = (0.0, 0.0)) -> list[Hit]:
    """The reciprocal-rank fusion of two rankings (module doc), best first."""
    fused: dict[int, float] = {}
    first: dict[int, Hit] = {}
    kw_score: dict[int, float | None] = {}
    sem_score: dict[int, float | None] = {}
    top = max((h.score for h in keyword), default=0.0)
    for rank, h in enumerate(keyword, 1):
        # a keyword hit counts as far as it matches: the OR-ranked list runs on into passages
        # with one common word, which are no evidence (module doc)
        weight = (h.score / top) ** KEYWORD_CONFIDENCE if top > 0 else 0.0
        fused[h.seq] = fused.get(h.seq, 0.0) + weight / (k + rank)
        first.setdefault(h.seq, h)  # keyword excerpts mark the words found
        kw_score[h.seq] = h.keyword_score  # None: ranked for the messages around it (ranking.py)
    for rank, h in enumerate(semantic, 1):
        # a passage far out of the query's noise (VectorStore.noise) counts more, up to 5 times
        boost = 1.0
        if noise[1] > 0:
            boost = min(SEMANTIC_CONFIDENCE, max(1.0, (h.score - noise[0]) / (NEAR_SPREAD * noise[1])))
        fused[h.seq] = fused.get(h.seq, 0.0) + semantic_weight * boost / (k + rank)
        first.setdefault(h.seq, h)
        sem_score[h.seq] = h.semantic_score if h.semantic_score is not None else h.score
    order = sorted(fused, key=lambda seq: (-fused[seq], -seq))[:limit]
    return [
        replace(first[seq], score=round(fused[seq], 6), mode="hybrid",
                keyword_score=kw_score.get(seq), semantic_score=sem_score.get(seq))
        for seq in order
    ]


def keyword_first(keyword: Sequence[Hit], fused: Sequence[Hit], limit: int) -> list[Hit]:
    """The keyword search's hits in their order, then the fused ranking's other hits
    (module doc). Scores stay the fused ones (the order, not the score, says which
    came first), or the keyword score for a hit the fusion did not reach."""
    by_seq = {h.seq: h for h in fused}
    out: list[Hit] = []
    for h in keyword[:limit]:
        f = by_seq.get(h.seq)
        out.append(f if f is not None else replace(h, mode="hybrid", keyword_score=h.score, semantic_score=None))
    seen = {h.seq for h in out}
    out.extend(h for h in fused if h.seq not in seen)
    return out[:limit]
