"""The sync suites again, every home paired: the same behaviour through an encrypted remote.

Runs the sync test files in a pytest of their own with ``MEMTRAY_TEST_SYNC_ENCRYPTED=1`` (every
home :func:`tests.integration.sync_support.open_app` opens is paired with the other homes of its
test, so every stream is sealed). Left out: the tests that read or write the remote's files in
clear by hand (those are what an encrypted remote prevents), and the one limit as built."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITES = ["test_sync_basic.py", "test_sync_merge.py", "test_sync_reminders.py", "test_sync_conflicts.py",
          "test_sync_crisscross.py", "test_sync_history.py", "test_sync_why.py", "test_sync_peer_guard.py",
          "test_sync_attachments.py", "test_sync_purge.py", "test_sync_failures.py", "test_sync_two_remotes.py"]
#: test -> why it cannot run on an encrypted remote
CLEAR_ONLY = {
    "test_sync_basic.py::test_the_counts_say_what_travelled_memory_revisions_are_merged_not_imported":
        "its second home is a CLI process never paired",
    "test_sync_attachments.py::test_attachments_reach_every_device_with_their_messages":
        "lists the remote's attachment files by their hash (hidden on an encrypted remote)",
    "test_sync_purge.py::test_a_purge_reaches_every_device_and_says_what_the_remote_keeps":
        "searches the remote's objects for the text in clear",
    "test_sync_two_remotes.py::test_after_a_purge_the_second_remote_is_caught_up_not_refused":
        "searches the remote's objects for the text in clear",
    "test_sync_two_remotes.py::test_an_older_epoch_that_reaches_further_is_a_rewrite":
        "writes a clear segment on the remote by hand",
    "test_sync_failures.py::test_a_damaged_line_on_the_remote_is_refused_and_the_rest_goes_on":
        "writes a clear line into a stream by hand (a sealed stream refuses it whole)",
    "test_sync_failures.py::test_an_old_segment_changed_on_the_remote_is_refused_and_its_owner_republishes":
        "decodes the remote's segment by hand",
    "test_sync_failures.py::test_a_copied_home_is_refused_then_becomes_a_device_of_its_own_without_losing_or_doubling":
        "--new-device on a home with keys is not supported yet (docs/SYNC.md, limits)",
}


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
def test_the_sync_suite_passes_with_every_home_paired(suite: str) -> None:
    here = "tests/integration/"
    skip = [x for t in CLEAR_ONLY if t.startswith(suite + "::") for x in ("--deselect", here + t)]
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0", "-x", here + suite, *skip]
    env = {**os.environ, "MEMTRAY_TEST_SYNC_ENCRYPTED": "1", "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    tail = out.stdout[-3000:]
    assert out.returncode == 0, tail
    passed = re.search(r"(\d+) passed", tail)
    assert passed is not None and int(passed.group(1)) >= 1, tail
