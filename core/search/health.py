"""What ``memtray doctor`` says about the search index: readable, how far indexed and
embedded, and for which embedding model (the provider's or the offline one); that
the stored vectors are all of one size; and, without any embedding model, that
search is by keywords only, in the words the CLI and Settings use.

Owns :func:`check_search`. Read-only (the file is opened with ``mode=ro``); the
one repair it offers is deleting the file, which is always safe: the index and
its vectors are derived from the log and rebuilt at the next start.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3

from memtray.core.base.config import Config
from memtray.core.base.findings import Finding
from memtray.core.base.home import Home
from memtray.core.search.embed import Embedder
from memtray.core.search.index import FORMAT, index_path


def check_search(home: Home, embedding_model: str = "") -> list[Finding]:
    path = index_path(home)
    if not path.exists():
        return [Finding(True, "search index: not built yet (made from the log at the next start)", code="search")]
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return [_broken(home, str(exc))]
    try:
        (ok,) = db.execute("PRAGMA quick_check").fetchone()
        if ok != "ok":
            return [_broken(home, str(ok))]
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != str(FORMAT):
            return [Finding(True, f"search index: format {meta.get('format')} is rebuilt as format {FORMAT} "
                            "at the next start", code="search")]
        docs = int(db.execute("SELECT count(*) FROM documents").fetchone()[0])
        out = [Finding(True, f"search index: {docs} entries, up to seq {meta.get('last_seq', 0)}", code="search")]
        try:
            vecs = int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
            sizes = [int(n) for (n,) in db.execute("SELECT DISTINCT length(vec) FROM vectors LIMIT 3")]
        except sqlite3.OperationalError:
            vecs, sizes = 0, []
        if len(sizes) > 1:
            out.append(_mixed(home, sizes))
        stored = meta.get("vec_model", "")
        embedder = Embedder(lambda: Config(embedding_model=embedding_model))
        model, identity = embedder.model, embedder.identity
        reason = embedder.keyword_only_reason
        if reason is not None:
            out.append(Finding(True, f"note: {reason} (set embedding_model for search by meaning)",
                               code="embeddings"))
        elif stored and stored != identity:
            out.append(Finding(True, f"note: the stored embeddings are from {stored}; they are replaced by "
                               f"{model}'s in the background", code="embeddings"))
        else:
            out.append(Finding(True, f"embeddings ({model}): {vecs} of {docs} entries "
                               + ("(the rest is embedded in the background)" if vecs < docs else ""),
                               code="embeddings"))
        return out
    except sqlite3.Error as exc:
        return [_broken(home, str(exc))]
    finally:
        db.close()


def _mixed(home: Home, sizes: list[int]) -> Finding:
    path = index_path(home)

    def drop() -> str:
        db = sqlite3.connect(path)
        try:
            with db:
                db.execute("DELETE FROM vectors")
                db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('vec_through', '0'), ('vec_dims', '')")
        finally:
            db.close()
        return "embeddings dropped (made again in the background)"

    return Finding(False, "search index: embeddings of different sizes are mixed",
                   f"vectors of {', '.join(map(str, sorted(sizes)))} dimensions",
                   "drop the embeddings (they are made again from the log)", drop, "embeddings")


def _broken(home: Home, detail: str) -> Finding:
    path = index_path(home)

    def remove() -> str:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")
        return "search index removed (rebuilt from the log at the next start)"

    return Finding(False, "search index unreadable", detail,
                   "delete it (it is derived from the log and rebuilt, embeddings included)", remove, "search")
