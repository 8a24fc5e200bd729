"""The memory repository against what a killed process or an old version leaves behind,
checked with the real ``git`` binary."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from memtray.core.memory.gitrepo import GitError, GitRepo, UnstorableText

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")
WHEN = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def test_an_old_repository_is_migrated_to_core_fsync_and_git_prints_no_warning(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "memory").open()
    g.commit({"MEMORY.md": "- a fact\n"}, "first\n\nReason: test", WHEN)
    g.close()
    # as memtray <= this release left it: the deprecated key
    assert _git(tmp_path / "memory", "config", "core.fsyncObjectFiles", "true").returncode == 0
    assert "deprecated" in _git(tmp_path / "memory", "log", "--oneline").stderr
    g = GitRepo(tmp_path / "memory").open()
    assert g.repo.object_store.fsync_object_files is True  # dulwich still fsyncs every object
    g.commit({"MEMORY.md": "- a fact\n- another\n"}, "second\n\nReason: test", WHEN)
    out = _git(tmp_path / "memory", "log", "--oneline")
    assert out.returncode == 0 and out.stderr == "" and len(out.stdout.splitlines()) == 2
    assert _git(tmp_path / "memory", "config", "core.fsync").stdout.strip() == "objects,derived-metadata,reference"
    assert _git(tmp_path / "memory", "config", "core.fsyncObjectFiles").returncode == 1  # gone
    fsck = _git(tmp_path / "memory", "fsck", "--strict")
    assert fsck.returncode == 0 and fsck.stderr == "", fsck.stderr


def test_lock_files_a_killed_writer_leaves_are_cleaned(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "memory").open()
    g.commit({"MEMORY.md": "- a fact\n"}, "first\n\nReason: test", WHEN)
    git = tmp_path / "memory" / ".git"
    new = {"MEMORY.md": "- a fact\n- b\n", "HISTORY.md": ""}
    from dulwich.objects import Blob

    blob = Blob.from_string(new["MEMORY.md"].encode()).id.decode()
    planted = [git / "objects" / blob[:2] / f"{blob[2:]}.lock", git / "refs" / "heads" / "main.lock",
               git / "index.lock", git / "HEAD.lock", git / "objects" / "pack" / "tmp_pack_x1"]
    for p in planted:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half")
    with pytest.raises(GitError, match="lock file is in the way") as err:
        g.commit(new, "second\n\nReason: test", WHEN)  # what every command died of
    assert "Traceback" not in str(err.value)
    removed = g.clean_stale_locks()
    assert sorted(removed) == sorted(p.relative_to(git).as_posix() for p in planted)
    assert not any(p.exists() for p in planted)
    g.commit(new, "second\n\nReason: test", WHEN)
    assert _git(tmp_path / "memory", "fsck", "--strict").returncode == 0
    assert (tmp_path / "memory" / "MEMORY.md").read_text() == new["MEMORY.md"]


def test_text_git_cannot_store_is_a_clear_error_and_changes_nothing(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "memory").open()
    head = g.commit({"MEMORY.md": "- a fact\n"}, "first\n\nReason: test", WHEN)
    with pytest.raises(UnstorableText, match=r"MEMORY.md holds a lone surrogate \(U\+D800\) at character 4"):
        g.commit({"MEMORY.md": "- a \ud800\x00\n"}, "bad\n\nReason: test", WHEN)
    with pytest.raises(UnstorableText):
        g.checkout_files({"MEMORY.md": "\udcff"})
    assert g.head() == head and (tmp_path / "memory" / "MEMORY.md").read_text() == "- a fact\n"
    assert _git(tmp_path / "memory", "status", "--porcelain").stdout == ""
