"""Fixtures of the log's tests: a store open on the test's data home (``home``, tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from memtray.core.base.home import Home
from memtray.core.log.store import Store


@pytest.fixture
def store(home: Home) -> Iterator[Store]:
    s = Store.open(home)
    yield s
    s.close()
