"""The CI rule "a skip is a failure" (tests/noskip.py) holds for every kind of skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = '''
import pytest

def test_runs():
    assert True

def test_skips_itself():
    pytest.skip("feature X is missing")

@pytest.mark.skip(reason="marked")
def test_marked():
    pass

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False
'''

MODULE = '''
import pytest
if not hasattr(int, "no_such_feature"):
    pytest.skip("pending: the feature has not landed", allow_module_level=True)

def test_hidden():
    assert True
'''


def _run(tmp_path: Path, strict: bool, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_probe.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "MEMTRAY_NO_SKIPS"}
    env["PYTHONPATH"] = str(ROOT)
    if strict:
        env["MEMTRAY_NO_SKIPS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.noskip", "-p", "no:cacheprovider", "-q", "-rA",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )


def test_every_skip_fails_in_ci_and_nothing_else_changes(tmp_path: Path) -> None:
    res = _run(tmp_path, True, PROBE)
    out = res.stdout
    assert res.returncode == 1, out
    assert "FAILED test_probe.py::test_skips_itself" in out and "feature X is missing" in out
    assert "ERROR test_probe.py::test_marked" in out  # a skip mark acts at set-up: an error there
    assert "PASSED test_probe.py::test_runs" in out
    assert "XFAIL test_probe.py::test_expected_failure" in out


def test_a_module_level_skip_cannot_hide_a_missing_feature_in_ci(tmp_path: Path) -> None:
    res = _run(tmp_path, True, MODULE)
    assert res.returncode != 0, res.stdout
    assert "ERROR test_probe.py" in res.stdout and "pending: the feature has not landed" in res.stdout


def test_outside_ci_a_skip_is_a_skip(tmp_path: Path) -> None:
    res = _run(tmp_path, False, PROBE)
    assert res.returncode == 0, res.stdout
    assert res.stdout.count("SKIPPED") == 2 and "FAILED" not in res.stdout and "ERROR" not in res.stdout
    res = _run(tmp_path, False, MODULE)
    assert res.returncode == 5, res.stdout  # pytest's "no tests ran": only the module skip
    assert "SKIPPED" in res.stdout and "ERROR" not in res.stdout
