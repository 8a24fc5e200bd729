"""tests/peers.py: a peer is built from its hashed lock once, rebuilt when the lock changes,
refused when a file does not match, and a failure is a test failure, never a skip.

The world is a local package index of small wheels (tests/fixtures/wheels.py) and the pinned
pip that packaging/install-env verified into this venv's bootstrap/: no network.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import peers
from tests.fixtures.wheels import sha256, wheel

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="packaging/install-env is bash")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    index, locks, cache = tmp_path / "index", tmp_path / "locks", tmp_path / "cache"
    for d in (index, locks):
        d.mkdir()
    kept = sorted((Path(sys.prefix) / "bootstrap").glob("pip-*.whl"))
    assert kept, f"no verified pip wheel in {Path(sys.prefix) / 'bootstrap'}: build the venv with packaging/install-env"
    (index / kept[-1].name).write_bytes(kept[-1].read_bytes())
    for var in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("MEMTRAY_CI_CACHE", str(cache))
    monkeypatch.setattr(peers, "_failed", {})
    return {"index": index, "locks": locks, "cache": cache}


def _lock(world: dict[str, Path], version: str, tamper: bool = False) -> Path:
    whl = wheel(world["index"], "mtpeer", version, [])
    digest = "0" * 64 if tamper else sha256(whl)
    lock = world["locks"] / "demo.lock"
    lock.write_text(f"mtpeer=={version} \\\n    --hash=sha256:{digest}\n")
    return lock


def _version(py: Path) -> str:
    return subprocess.run([str(py), "-c", "import mtpeer; print(mtpeer.VERSION)"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _builds(world: dict[str, Path]) -> list[str]:
    return sorted(p.name for p in (world["cache"] / "peers").iterdir() if p.is_dir())


def test_a_peer_is_built_once_from_its_lock_and_again_when_the_lock_changes(world: dict[str, Path]) -> None:
    _lock(world, "1.0")
    py = peers.build_python("demo", world["locks"])
    assert py.is_relative_to(world["cache"] / "peers") and _version(py) == "1.0"
    for whl in world["index"].glob("mtpeer-*.whl"):
        whl.unlink()  # a second call installs nothing: it could not
    assert peers.build_python("demo", world["locks"]) == py
    _lock(world, "2.0")
    newer = peers.build_python("demo", world["locks"])
    assert newer != py and _version(newer) == "2.0"
    assert _builds(world) == [newer.parent.parent.name]  # the stale build is gone
    assert re.fullmatch(r"demo-[0-9a-f]{16}", newer.parent.parent.name)


def test_a_file_that_does_not_match_its_hash_is_refused_and_never_reused(world: dict[str, Path]) -> None:
    lock = _lock(world, "1.0")
    good = next(world["index"].glob("mtpeer-*.whl"))
    kept = good.read_bytes()
    wheel(world["index"], "mtpeer", "1.0", [], ["other"])  # same name, other bytes: a re-published file
    with pytest.raises(peers.PeerBuildError) as got:
        peers.build_python("demo", world["locks"])
    assert f"could not build the peer 'demo' from {lock}" in str(got.value)
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in str(got.value)
    (venv,) = _builds(world)
    log = world["cache"] / "peers" / f"{venv}.log"
    assert not (world["cache"] / "peers" / venv / peers.STAMP).exists()
    # a test asking for it fails with the log's tail: a skip would hide the broken lock ...
    with pytest.raises(pytest.fail.Exception, match="DO NOT MATCH THE HASHES"):
        peers.peer_python("demo", world["locks"])
    # ... and the process does not retry it for every test that asks
    assert log.read_text().count("install-env") == 1
    # the half-built folder is not taken for a build: the right file builds it afresh
    good.write_bytes(kept)
    peers._failed.clear()
    py = peers.build_python("demo", world["locks"])
    assert py.parent.parent.name == venv and _version(py) == "1.0"


def test_a_missing_lock_or_npm_lock_is_named(world: dict[str, Path]) -> None:
    with pytest.raises(peers.PeerBuildError, match=r"no lock for the peer 'nope'.*nope\.lock"):
        peers.build_python("nope", world["locks"])
    (world["locks"] / "npm-half").mkdir()
    (world["locks"] / "npm-half" / "package.json").write_text("{}")
    with pytest.raises(pytest.fail.Exception, match=r"needs package\.json and package-lock\.json"):
        peers.npm_peer("half", world["locks"])


def test_the_repository_pins_every_peer_by_hash() -> None:
    """Each peer the suite drives has a lock whose every pin carries a hash (pip and npm alike)."""
    assert peers.python_peers() == ["mcp-server-time", "nanobot"]
    assert peers.npm_peers() == ["everything"]
    for name in peers.python_peers():
        entries = re.split(r"\n(?=\S)", (peers.LOCKS / f"{name}.lock").read_text())
        pins = [e for e in entries if not e.startswith("#")]
        assert pins and all(re.match(r"[A-Za-z0-9_.-]+==[0-9][^\s;]* ", e) and "--hash=sha256:" in e for e in pins), name
    npm = json.loads((peers.LOCKS / "npm-everything" / "package-lock.json").read_text())["packages"]
    deps = {k: v for k, v in npm.items() if k}
    assert deps and all(v["integrity"].startswith("sha512-") for v in deps.values())
    pinned = json.loads((peers.LOCKS / "npm-everything" / "package.json").read_text())["dependencies"]
    assert all(re.fullmatch(r"[0-9.]+", v) for v in pinned.values())  # an exact version, not a range
