"""A finding of a health check: what the doctor and the checks of each room report.

It lives on the ground floor so that every room (memory provenance, rebuilds,
the log) can report findings without importing the doctor that collects them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Finding:
    ok: bool
    title: str
    detail: str = ""
    repair: str = ""  # what --repair would do ("" = nothing it can do)
    fix: Callable[[], str] | None = field(default=None, repr=False)
    code: str = ""  # stable id of the check (tests, JSON report)
