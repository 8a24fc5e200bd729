"""A pytest plugin: with ``MEMTRAY_NO_SKIPS=1`` (what ``.ci/test`` sets) a skipped test fails.

CI installs everything the suite needs (Xvfb, dbus, Node, the offline model, the
pinned peers), so a skip there can only mean a broken set-up or a feature that
went missing behind a feature-detecting ``pytest.skip`` -- either way a failure,
never a quiet "s" in the summary. Deselection (``-m``, ``-k``) is not a skip and is
unaffected; an expected failure (``xfail``) keeps its own meaning.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

ENV = "MEMTRAY_NO_SKIPS"


def _strict() -> bool:
    return os.environ.get(ENV) == "1"


def _reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    rep = outcome.get_result()
    if _strict() and rep.skipped and not hasattr(rep, "wasxfail"):
        rep.outcome = "failed"
        rep.longrepr = f"skipped, but {ENV}=1 requires every test to run: {_reason(rep.longrepr)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    rep = outcome.get_result()
    if _strict() and rep.skipped:  # a module-level skip hides every test of the module
        rep.outcome = "failed"
        rep.longrepr = f"module skipped, but {ENV}=1 requires every test to run: {_reason(rep.longrepr)}"
