"""packaging/install-env, the install step of the README's set-up command and of CI: a newer
upstream release of a locked (transitive) dependency can neither break nor change it.

The case reproduced is the one that broke a fresh machine: a locked package asks for another
with an extra (``litellm -> httpx[http2]>=0.28``), the lock pins ``httpx==0.28.1``, and the index
also holds a newer ``httpx``. The pip a Python 3.11 venv starts with (23.2.1) then refuses the
lock ("all requirements must have their versions pinned with =="). The test builds that world
with a local package index of small wheels and the oldest pip a supported Python bundles.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.wheels import sha256 as _sha
from tests.fixtures.wheels import wheel as _wheel

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "packaging" / "install-env"
BOOTSTRAP_LOCK = ROOT / "packaging" / "requirements-bootstrap.lock"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a bash script")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("install")
    index = base / "index"
    index.mkdir()
    # the pinned installer, as packaging/install-env verified and kept it when this venv was built
    kept = sorted((Path(sys.prefix) / "bootstrap").glob("pip-*.whl"))
    assert kept, (f"no verified pip wheel in {Path(sys.prefix) / 'bootstrap'}: build the venv with "
                  "packaging/install-env (.ci/test or packaging/setup) first")
    (index / kept[-1].name).write_bytes(kept[-1].read_bytes())
    top = _wheel(index, "mtalpha", "1.0", ["mtbeta[fast]>=1.0,<2"])
    locked = _wheel(index, "mtbeta", "1.0", ['mtgamma; extra == "fast"'], ["fast"])
    gamma = _wheel(index, "mtgamma", "1.0", [])
    # published after the lock was made
    _wheel(index, "mtbeta", "1.1", ['mtgamma; extra == "fast"'], ["fast"])
    lock = base / "requirements.lock"
    lock.write_text(
        f"mtalpha==1.0 \\\n    --hash=sha256:{_sha(top)}\n"
        f"mtbeta==1.0 \\\n    --hash=sha256:{_sha(locked)}\n"
        f"mtgamma==1.0 \\\n    --hash=sha256:{_sha(gamma)}\n"
    )
    return {"base": base, "index": index, "lock": lock}


def _venv(where: Path) -> Path:
    """A venv with the pip its Python bundles (ensurepip: 23.2.1 for Python 3.11)."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, timeout=300)
    return where / "bin" / "python"


def _env(index: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(index), PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _version(vpy: Path, module: str) -> str:
    out = subprocess.run([str(vpy), "-c", f"import {module}; print({module}.VERSION if hasattr({module}, 'VERSION') "
                          f"else {module}.__version__)"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_bundled_pip_refuses_this_lock(world: dict[str, Path]) -> None:
    """The hazard is real in this world: the plain install the set-up used to run fails."""
    vpy = _venv(world["base"] / "plain")
    bundled = subprocess.run([str(vpy), "-m", "pip", "--version"], capture_output=True, text=True).stdout
    out = subprocess.run([str(vpy), "-m", "pip", "install", "--require-hashes", "-r", str(world["lock"])],
                         env=_env(world["index"]), capture_output=True, text=True, timeout=300)
    if bundled.split()[1] == "23.2.1":
        assert out.returncode != 0, out.stdout
        assert "must have their versions pinned" in out.stderr


def test_install_env_is_immune_to_the_newer_release(world: dict[str, Path]) -> None:
    vpy = _venv(world["base"] / "pinned")
    out = _install(vpy, world["lock"], world)
    assert out.returncode == 0, out.stderr
    assert _version(vpy, "mtbeta") == "1.0"  # the locked version, not the newer release
    assert _version(vpy, "mtgamma") == "1.0"
    pinned = re.search(r"^pip==(\S+)", BOOTSTRAP_LOCK.read_text(), re.M).group(1)  # type: ignore[union-attr]
    assert _version(vpy, "pip") == pinned


def _lock_without(world: dict[str, Path], where: Path, name: str, tamper: bool = False) -> Path:
    """The lock with ``name``'s entry left out, or (``tamper``) its hash changed."""
    entries = world["lock"].read_text().split("\n", 6)
    out = []
    for pin, hashes in zip(entries[0::2], entries[1::2], strict=False):
        if pin.startswith(f"{name}=="):
            if not tamper:
                continue
            hashes = hashes[:-4] + "0000"
        out += [pin, hashes]
    where.write_text("\n".join(out) + "\n")
    return where


def _install(vpy: Path, lock: Path, world: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(INSTALL), str(vpy), str(lock)], env=_env(world["index"]),
                          capture_output=True, text=True, timeout=600)


def test_install_env_refuses_a_file_that_does_not_match_the_lock(world: dict[str, Path], tmp_path: Path) -> None:
    """A hash that does not match (a re-published or tampered file) stops the install."""
    out = _install(_venv(tmp_path / "v"), _lock_without(world, tmp_path / "bad.lock", "mtgamma", tamper=True), world)
    assert out.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in out.stderr


def test_an_incomplete_lock_is_named(world: dict[str, Path], tmp_path: Path) -> None:
    """--no-deps cannot silently install half a set: pip check names what the lock lacks."""
    out = _install(_venv(tmp_path / "v"), _lock_without(world, tmp_path / "partial.lock", "mtbeta"), world)
    assert out.returncode != 0
    assert "mtbeta" in out.stderr and "pip check" in out.stderr
