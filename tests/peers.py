"""The peers memtray is tested and measured against, built from hash-checked locks.

A peer is someone else's program run next to memtray, never a memtray dependency:

* ``nanobot`` (nanobot-ai) -- tests/integration/test_import_nanobot.py, bench/peer_nanobot, bench/warm_cli.py;
* ``mcp-server-time`` -- tests/integration/test_mcp_client.py;
* the npm ``everything`` MCP server -- tests/integration/test_mcp_client.py.

Each Python peer has a lock of its own, ``packaging/peers/NAME.lock`` (compiled by uv like
every other lock, see docs/PACKAGING.md), installed into a venv of its own with
``packaging/install-env`` -- the pinned pip, ``--require-hashes --no-deps``, then ``pip check``.
An npm peer is ``packaging/peers/npm-NAME/`` (package.json + package-lock.json with integrity
hashes), installed with ``npm ci``. Both land in ``$MEMTRAY_CI_CACHE/peers/`` (default
``~/.cache/memtray-ci``) under a name keyed by the hash of what built them, so a changed lock
(or installer, or Python) builds a fresh one and the stale one is removed; a build that did
not finish is never reused.

``.ci/test`` builds them all first (``python -m tests.peers``), so a broken lock fails CI
before pytest with the install log's tail. A test asks with :func:`peer_python` /
:func:`npm_peer`: a peer that cannot be built fails the test with that tail -- never a skip.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOCKS = ROOT / "packaging" / "peers"
INSTALL_ENV = ROOT / "packaging" / "install-env"
BOOTSTRAP_LOCK = ROOT / "packaging" / "requirements-bootstrap.lock"
STAMP = ".memtray-peer-built"  # written last: a directory without it is a build that did not finish
TAIL = 40  # lines of the install log shown when a build fails
_failed: dict[Path, str] = {}  # a build that failed is tried once per process, not once per test


class PeerBuildError(Exception):
    """A peer could not be built from its lock; the message names the lock and ends with the log's tail."""


def cache_root() -> Path:
    return Path(os.environ.get("MEMTRAY_CI_CACHE") or "~/.cache/memtray-ci").expanduser() / "peers"


def python_peers(locks: Path = LOCKS) -> list[str]:
    return sorted(p.stem for p in locks.glob("*.lock"))


def npm_peers(locks: Path = LOCKS) -> list[str]:
    return sorted(p.parent.name.removeprefix("npm-") for p in locks.glob("npm-*/package-lock.json"))


def _key(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


@contextmanager
def _exclusive(root: Path, name: str) -> Iterator[None]:
    """One builder per peer at a time (xdist workers, a bench next to a test run)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.building", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _tail(log: Path) -> str:
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if not ln.startswith("WARNING: Location")]
    return "\n".join(lines[-TAIL:])


def _run(argv: list[str], log: Path, cwd: Path, timeout: float = 1800) -> bool:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        try:
            return subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=timeout).returncode == 0
        except subprocess.TimeoutExpired:
            out.write(f"\n(timed out after {timeout:.0f} s)\n")
            return False


def _build(name: str, key: str, what: Path, steps: list[list[str]], files: tuple[Path, ...] = ()) -> Path:
    """Run ``steps`` (in a fresh ``NAME-KEY`` folder, ``files`` copied in) unless a finished build is
    there; older builds of ``name`` are removed."""
    root = cache_root()
    target = root / f"{name}-{key}"
    if target in _failed:
        raise PeerBuildError(_failed[target])
    with _exclusive(root, name):
        if (target / STAMP).exists():
            return target
        mine = re.compile(re.escape(name) + r"-[0-9a-f]{16}(\.log)?")
        for old in root.iterdir():
            if not mine.fullmatch(old.name) or old.name == f"{target.name}.log":
                continue
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink()
        log = root / f"{target.name}.log"
        log.write_text(f"building the peer {name} from {what}\n")
        target.mkdir()
        for f in files:
            shutil.copy(f, target / f.name)
        for argv in steps:
            if not _run(argv, log, cwd=target):
                _failed[target] = f"could not build the peer {name!r} from {what} (full log: {log}):\n{_tail(log)}"
                raise PeerBuildError(_failed[target])
        (target / STAMP).write_text(f"{what}\n")
        return target


def build_python(name: str, locks: Path = LOCKS) -> Path:
    """The python of ``name``'s venv, built from ``locks/NAME.lock`` with packaging/install-env if needed."""
    lock = locks / f"{name}.lock"
    if not lock.is_file():
        raise PeerBuildError(f"no lock for the peer {name!r}: {lock} does not exist")
    version = f"{sys.version_info.major}.{sys.version_info.minor}".encode()
    key = _key(lock.read_bytes(), INSTALL_ENV.read_bytes(), BOOTSTRAP_LOCK.read_bytes(), version)
    venv = cache_root() / f"{name}-{key}"
    py = venv / "bin" / "python"
    _build(name, key, lock, [[sys.executable, "-m", "venv", "--clear", str(venv)],
                             ["bash", str(INSTALL_ENV), str(py), str(lock)]])
    return py


def build_npm(name: str, locks: Path = LOCKS) -> Path:
    """The folder whose node_modules holds the npm peer ``name``, installed by ``npm ci`` if needed."""
    src = locks / f"npm-{name}"
    files = [src / "package.json", src / "package-lock.json"]
    if not all(f.is_file() for f in files):
        raise PeerBuildError(f"no lock for the npm peer {name!r}: {src} needs package.json and package-lock.json")
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise PeerBuildError(f"the npm peer {name!r} needs Node.js and npm on PATH (.ci/test's machine has them)")
    # npm ci installs exactly package-lock.json and checks every file against its integrity hash;
    # no install scripts run (none of these packages has one)
    return _build(f"npm-{name}", _key(*(f.read_bytes() for f in files)), src,
                  [[npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"]], files=tuple(files))


def _for_test(build: Callable[[str, Path], Path], name: str, locks: Path) -> Path:
    try:
        return build(name, locks)
    except PeerBuildError as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)  # outside the except: the message alone, no exception chain


def peer_python(name: str, locks: Path = LOCKS) -> Path:
    """For a test: the peer's python; a peer that cannot be built fails the test (never a skip)."""
    return _for_test(build_python, name, locks)


def npm_peer(name: str, locks: Path = LOCKS) -> Path:
    """For a test: the folder of the npm peer; a peer that cannot be built fails the test."""
    return _for_test(build_npm, name, locks)


def main() -> int:
    """Build every peer (``.ci/test`` runs this before pytest); exit 1 naming each that failed."""
    jobs: list[tuple[str, Callable[[], Path]]] = [(n, partial(build_python, n)) for n in python_peers()]
    jobs += [(f"npm {n}", partial(build_npm, n)) for n in npm_peers()]
    failed = 0
    for name, build in jobs:
        try:
            print(f"peer {name}: {build()}", flush=True)
        except PeerBuildError as e:
            print(e, file=sys.stderr, flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
