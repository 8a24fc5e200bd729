"""The semantic half of history search: one embedding per document, in the index's file.

Owns the ``vectors`` table of ``state/search.sqlite`` and nearest-neighbour
search over it. Like the keyword index it is derived: deleting ``state/`` (or a
purge, which empties it) drops it, and the background backfill embeds every
document again.

Why no vector extension: sqlite-vec is the natural fit, but Python's ``sqlite3``
here is built without ``enable_load_extension``, so the extension cannot be
loaded, and numpy is not a dependency of memtray. The search is therefore plain
Python, in two steps that keep it fast at 100 000 documents:

1. every vector is stored as int8 (a quarter of float32; cosine changes in the
   third decimal) plus its **sign signature**, one bit per dimension. The
   signatures of all documents are held in memory as Python integers (about 6 MB
   per 100 000 documents at 256 dimensions) and the Hamming distance to the
   query's signature, ``(q ^ s).bit_count()``, ranks every document (SimHash:
   the distance estimates the angle);
2. the best :data:`PREFILTER` by that estimate are re-ranked by their exact cosine,
   read from SQLite. Below :data:`EXACT_BELOW` documents every one is scored
   exactly.

Keys in ``meta``: ``vec_model`` (the embedding model the rows belong to; another
model clears them), ``vec_dims`` (their dimension: vectors of another size, from
the same model name, clear the others and the backfill starts over, so one index
never mixes sizes), ``vec_through`` (the last document seq handled: the backfill
resumes after it) and ``vec_generation`` (the keyword index's generation seen;
when the documents are rebuilt the backfill starts over from seq 0, but keeps
every vector whose text is unchanged -- rows are matched by the text's hash, so a
rebuild costs no embedding calls).
"""

from __future__ import annotations

import hashlib
import heapq
import math
import operator
import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import compress

from memtray.core.search.index import SearchIndex

#: documents below this are all scored exactly; above, the signature prefilter runs first
EXACT_BELOW = 4000
#: candidates the signature prefilter keeps for exact re-ranking
PREFILTER = 600
#: stored vectors a query is compared with to learn its noise floor (:meth:`VectorStore.noise`)
NOISE_SAMPLE = 256

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors(seq INTEGER PRIMARY KEY, hash BLOB NOT NULL, "
    "norm REAL NOT NULL, sig BLOB NOT NULL, vec BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS vectors_hash ON vectors(hash)",
)


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def quantize(vec: Sequence[float]) -> array[int]:
    """``vec`` as int8, scaled so its largest component is ±127 (the direction is what counts)."""
    top = max((abs(x) for x in vec), default=0.0)
    scale = 127.0 / top if top > 0 and math.isfinite(top) else 0.0
    return array("b", (round(x * scale) for x in vec))


def signature(q: array[int]) -> int:
    """One bit per dimension: set where the component is positive."""
    return int("".join("1" if x > 0 else "0" for x in reversed(q)) or "0", 2)


def _dot(a: array[int], b: array[int]) -> int:
    return sum(map(operator.mul, a, b))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two float vectors (0 when either is all zeros)."""
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(map(operator.mul, a, b)) / (na * nb) if na and nb else 0.0


def _nearest_by_signature(qs: int, sigs: list[int], cand: Sequence[int], keep: int) -> list[int]:
    """About ``keep`` of ``cand`` (indexes into ``sigs``) whose signatures are nearest ``qs``.

    Distances are small integers, so a histogram finds the cut-off without sorting
    100 000 of them; among those exactly at the cut-off the newest are kept. Every
    pass is a ``map`` of a builtin, so the loops run in C (about 10 ms at 100 000).
    """
    dists = list(map(int.bit_count, map(qs.__xor__, map(sigs.__getitem__, cand))))
    counts = Counter(dists)
    below = 0
    cutoff = 0
    for d in sorted(counts):
        if below + counts[d] >= keep:
            cutoff = d
            break
        below += counts[d]
    else:
        return list(cand)
    out = list(compress(cand, map(cutoff.__gt__, dists)))
    room = keep - len(out)
    if room > 0:
        out.extend(list(compress(cand, map(cutoff.__eq__, dists)))[-room:])
    return out


class VectorStore:
    """Embeddings keyed by document seq. Shares the connection and lock of ``index``."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self._cache: tuple[array[int], list[int]] | None = None  # seqs, signatures
        self._cache_lock = threading.Lock()
        with index.lock:
            for stmt in _SCHEMA:
                index.db.execute(stmt)

    # --- bookkeeping ---------------------------------------------------------------

    def _get(self, key: str) -> str:
        row = self.index.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return "" if row is None else str(row[0])

    def _set(self, **values: str) -> None:
        self.index.db.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [(f"vec_{k}", v) for k, v in values.items()]
        )

    @property
    def model(self) -> str:
        with self.index.lock:
            return self._get("vec_model")

    def use_model(self, model: str) -> None:
        """Make the rows belong to ``model``: another model's vectors are dropped."""
        with self.index.lock:
            if self._get("vec_model") == model:
                return
            self.index.db.execute("BEGIN IMMEDIATE")
            try:
                self.index.db.execute("DELETE FROM vectors")
                self._set(model=model, through="0", generation=self.index.generation, dims="")
            except BaseException:
                self.index.db.execute("ROLLBACK")
                raise
            self.index.db.execute("COMMIT")
            self._cache = None

    @property
    def through(self) -> int:
        """The last document seq the backfill has handled (after a rebuild: 0 again)."""
        with self.index.lock:
            if self._get("vec_generation") != self.index.generation:
                return 0
            return int(self._get("vec_through") or 0)

    def count(self) -> int:
        with self.index.lock:
            return int(self.index.db.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def progress(self) -> tuple[int, int]:
        """``(documents handled, documents)``: equal when the backfill is done."""
        through = self.through
        with self.index.lock:
            (left,) = self.index.db.execute("SELECT count(*) FROM documents WHERE seq > ?", (through,)).fetchone()
            (total,) = self.index.db.execute("SELECT count(*) FROM documents").fetchone()
        return int(total) - int(left), int(total)

    # --- filling -------------------------------------------------------------------

    def pending(self, limit: int) -> tuple[list[tuple[int, str]], int]:
        """Up to ``limit`` documents without a current vector, oldest first, and the seq to
        pass to :meth:`put` with their vectors. A vector stored for the same text (the same
        words said again, or a document before a rebuild) is reused on the way, without an
        embedding call. ``([], 0)``: nothing is left."""
        out: list[tuple[int, str]] = []
        pos = self.through
        while len(out) < limit:
            docs = self.index.documents_after(pos, limit)
            if not docs:
                break
            with self.index.lock:
                self.index.db.execute("BEGIN IMMEDIATE")
                try:
                    for seq, text in docs:
                        pos = seq
                        if not self._reuse(seq, text_hash(text)):
                            out.append((seq, text))
                            if len(out) == limit:
                                break
                    if not out:  # everything so far was current: keep that progress
                        self._set(through=str(pos), generation=self.index.generation)
                except BaseException:
                    self.index.db.execute("ROLLBACK")
                    raise
                self.index.db.execute("COMMIT")
        if not out:
            self._prune()
            return [], 0
        return out, pos

    def _reuse(self, seq: int, h: bytes) -> bool:
        """True if ``seq`` has the vector of its text already, or now got a copy of one."""
        row = self.index.db.execute("SELECT hash FROM vectors WHERE seq = ?", (seq,)).fetchone()
        if row is not None and bytes(row[0]) == h:
            return True
        same = self.index.db.execute("SELECT norm, sig, vec FROM vectors WHERE hash = ? LIMIT 1", (h,)).fetchone()
        if same is None:
            return False
        self.index.db.execute(
            "INSERT OR REPLACE INTO vectors(seq, hash, norm, sig, vec) VALUES (?,?,?,?,?)", (seq, h, *same))
        self._cached(seq, same[1])
        return True

    def _cached(self, seq: int, sig: bytes) -> None:
        """Keep the in-memory signatures in step with a row written for ``seq``."""
        cache = self._cache
        if cache is not None and (not cache[0] or seq > cache[0][-1]):
            cache[0].append(seq)
            cache[1].append(int.from_bytes(sig, "little"))
        else:
            self._cache = None

    def put(self, items: Iterable[tuple[int, str, Sequence[float]]], through: int) -> int:
        """Store embeddings; the backfill then resumes after ``through``. Returns rows written."""
        rows = []
        dims = {len(vec) for _seq, _text, vec in items}
        if len(dims) > 1:
            raise ValueError(f"vectors of mixed sizes in one batch: {sorted(dims)}")
        for seq, text, vec in items:
            q = quantize(vec)
            norm = math.sqrt(_dot(q, q))
            rows.append((seq, text_hash(text), norm, signature(q).to_bytes((len(q) + 7) // 8, "little"), q.tobytes()))
        with self.index.lock:
            self.index.db.execute("BEGIN IMMEDIATE")
            try:
                size = str(next(iter(dims))) if dims else self._get("vec_dims")
                if self._get("vec_dims") not in ("", size):  # the model changed size: start over
                    self.index.db.execute("DELETE FROM vectors")
                    self._cache = None
                    through = 0
                self.index.db.executemany(
                    "INSERT OR REPLACE INTO vectors(seq, hash, norm, sig, vec) VALUES (?,?,?,?,?)", rows
                )
                self._set(through=str(through), generation=self.index.generation, dims=size)
            except BaseException:
                self.index.db.execute("ROLLBACK")
                raise
            self.index.db.execute("COMMIT")
            for seq, _h, _n, sig, _v in rows:
                self._cached(seq, sig)
        return len(rows)

    def _prune(self) -> None:
        """Drop vectors of seqs that are no longer documents (after the log was replaced)."""
        with self.index.lock:
            cur = self.index.db.execute("DELETE FROM vectors WHERE seq NOT IN (SELECT seq FROM documents)")
            if cur.rowcount:
                self._cache = None

    def clear(self) -> None:
        with self.index.lock:
            self.index.db.execute("DELETE FROM vectors")
            self._set(through="0", dims="")
            self._cache = None

    # --- searching -----------------------------------------------------------------

    def _signatures(self) -> tuple[array[int], list[int]]:
        with self._cache_lock:
            cache = self._cache
            if cache is None:
                seqs: array[int] = array("q")
                sigs: list[int] = []
                with self.index.lock:
                    for seq, sig in self.index.db.execute("SELECT seq, sig FROM vectors ORDER BY seq"):
                        seqs.append(seq)
                        sigs.append(int.from_bytes(sig, "little"))
                cache = self._cache = (seqs, sigs)
            return cache

    def search(self, vec: Sequence[float], *, limit: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        """``(seq, cosine)`` of the ``limit`` nearest documents, best first (ties: newest first)."""
        q = quantize(vec)
        qn = math.sqrt(_dot(q, q))
        if qn == 0:
            return []
        seqs, sigs = self._signatures()
        n = len(seqs)
        cand: Sequence[int] = range(n) if allowed is None else [i for i in range(n) if seqs[i] in allowed]
        if len(cand) > EXACT_BELOW:
            cand = _nearest_by_signature(signature(q), sigs, cand, max(PREFILTER, limit * 4))
        chosen = [seqs[i] for i in cand]
        scored: list[tuple[float, int]] = []
        with self.index.lock:
            for i in range(0, len(chosen), 900):
                part = chosen[i : i + 900]
                marks = ",".join("?" * len(part))
                for seq, norm, blob in self.index.db.execute(
                    f"SELECT seq, norm, vec FROM vectors WHERE seq IN ({marks})", part
                ):
                    d = array("b")
                    d.frombytes(blob)
                    if len(d) != len(q) or not norm:
                        continue
                    scored.append((_dot(q, d) / (qn * norm), seq))
        best = heapq.nlargest(limit, scored)
        return [(seq, round(cos, 6)) for cos, seq in best]

    def noise(self, vec: Sequence[float], *, allowed: set[int] | None = None) -> tuple[float, float]:
        """The mean and standard deviation of the cosine between ``vec`` and the stored
        vectors, from an even sample of :data:`NOISE_SAMPLE` of them: what "not near" looks
        like for this query with this model. Cosines are not comparable between models (an
        unrelated text scores 0.1 with one and 0.4 with another) nor between queries, but a
        passage that is about the query stands out of this spread (the best tenth of the sample
        is left out of it, so that passage does not widen it). ``(0.0, 0.0)`` when fewer than 8
        vectors are stored."""
        q = quantize(vec)
        qn = math.sqrt(_dot(q, q))
        seqs, _sigs = self._signatures()
        pool = list(seqs) if allowed is None else [s for s in seqs if s in allowed]
        if qn == 0 or len(pool) < 8:
            return 0.0, 0.0
        step = max(1, len(pool) // NOISE_SAMPLE)
        chosen = pool[::step][:NOISE_SAMPLE]
        cos: list[float] = []
        with self.index.lock:
            for i in range(0, len(chosen), 900):
                part = chosen[i : i + 900]
                marks = ",".join("?" * len(part))
                for norm, blob in self.index.db.execute(
                    f"SELECT norm, vec FROM vectors WHERE seq IN ({marks})", part
                ):
                    d = array("b")
                    d.frombytes(blob)
                    if len(d) == len(q) and norm:
                        cos.append(_dot(q, d) / (qn * norm))
        if len(cos) < 8:
            return 0.0, 0.0
        # the passages about the query are what should stand out: they are no part of the noise
        cos = sorted(cos)[: len(cos) - max(1, len(cos) // 10)]
        mean = sum(cos) / len(cos)
        return mean, math.sqrt(sum((c - mean) ** 2 for c in cos) / len(cos))
