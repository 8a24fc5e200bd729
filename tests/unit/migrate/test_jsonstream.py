"""The streaming JSON-array reader behind `memtray import chatgpt`."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memtray.core.migrate.jsonstream import NotAnArray, elements

values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c, max_size=3)
                      | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=10)


@given(st.lists(values, max_size=8), st.integers(min_value=1, max_value=9))
def test_every_element_comes_back_whatever_the_chunk_size(items: list[object], chunk: int) -> None:
    data = json.dumps(items, indent=1).encode()
    assert list(elements(io.BytesIO(data), chunk=chunk)) == items


def test_an_element_larger_than_the_cap_is_refused() -> None:
    data = json.dumps([{"a": "x" * 5000}]).encode()
    with pytest.raises(NotAnArray, match="larger than"):
        list(elements(io.BytesIO(data), chunk=64, max_element=1000))
