"""Fault tests run in-process; give them the private umask `memtray` (cli.main) sets."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _private_umask() -> Iterator[None]:
    old = os.umask(0o077)
    yield
    os.umask(old)
