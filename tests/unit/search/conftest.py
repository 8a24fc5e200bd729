"""Fixtures of the search tests: a store in a fresh data home, and its search index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.base.home import Home
from memtray.core.log.store import Store
from memtray.core.search.index import SearchIndex, index_path


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(Home.resolve(tmp_path / "home"))
    yield s
    s.close()


@pytest.fixture
def index(store: Store) -> Iterator[SearchIndex]:
    idx = SearchIndex.open(index_path(store.home))
    yield idx
    idx.close()
