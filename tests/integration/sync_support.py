"""Helpers of the sync tests: data homes, a real bare remote, a git daemon on 127.0.0.1,
and reading what a home or a remote holds (refs, texts, hand-made commits on a stream)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from memtray.core.app import App
from memtray.core.base.clock import Clock
from memtray.core.base.config import Config
from memtray.core.base.home import Home, device_id
from memtray.core.log.events import Message
from memtray.core.sync.digest import state_digest
from memtray.core.sync.service import SyncReport

GIT = shutil.which("git") or "git"


class RemoteKind:
    """Which remote the homes :func:`open_app` opens sync through. ``encrypted``: each is paired
    with the other homes of its test (one group per test folder), so every stream is sealed.
    Set per test by the ``remote_kind`` fixture (tests/integration/conftest.py: the sync suites
    run on both kinds); ``MEMTRAY_TEST_SYNC_ENCRYPTED=1`` makes encrypted the default of every
    other test too (a local run of everything on encrypted remotes)."""

    encrypted = os.environ.get("MEMTRAY_TEST_SYNC_ENCRYPTED") == "1"


KIND = RemoteKind()


def pair_locally(root: Path) -> None:
    """Pair the home at ``root`` with every home paired so far under the same folder, as
    ``memtray sync pair`` does through a remote (its keys share the sync key; all trust all)."""
    from memtray.core.sync.identity import Identity, Keys

    me = Keys(root)
    if me.exists():
        return
    group = [Keys(p) for p in sorted(root.parent.iterdir()) if p != root and Keys(p).exists()]
    first = group[0].load() if group else None
    ident = Identity.new(first.keys) if first else Identity.new()
    if first is None:
        from memtray.core.sync import crypto
        from memtray.core.sync.identity import SyncKey

        key = SyncKey(1, crypto.new_sync_key())
        ident.keys[key.id] = key
    me.store(ident, device_id(Home(root)))
    mine = me.trust()
    for other in group:
        theirs = other.trust()
        theirs.merge(mine.to_json())
        theirs.dirty = True
        theirs.save()
        mine.merge(theirs.to_json())
    mine.dirty = True
    mine.save()


def bare(path: Path) -> Path:
    subprocess.run([GIT, "init", "--bare", "-q", str(path)], check=True)
    return path


def served(tmp_path: Path, name: str = "mem.git") -> Path:
    """A folder holding one bare remote ``name``, for a server (git daemon, http) to serve."""
    base = tmp_path / "srv"
    base.mkdir()
    bare(base / name)
    return base


def open_app(root: Path, clock: Clock | None = None, **cfg: object) -> App:
    home = Home(root)
    home.create()
    device_id(home)
    if KIND.encrypted:
        pair_locally(root)
    else:  # a clear remote, asked for (a new remote is encrypted by default)
        cfg.setdefault("sync_encrypt", False)
    return App.open(home, config=Config(**cfg), clock=clock)  # type: ignore[arg-type]


@contextlib.contextmanager
def homes(tmp_path: Path, names: str = "ab", **cfg: object) -> Iterator[list[App]]:
    """A data home under ``tmp_path`` per letter of ``names``, each with its sync; all closed after."""
    apps: list[App] = []
    try:
        for name in names:
            app = open_app(tmp_path / name, **cfg)
            assert app.sync is not None
            apps.append(app)
        yield apps
    finally:
        for app in apps:
            app.close()


def sync(url: Path | str, *apps: App, **how: bool) -> list[SyncReport]:
    """Sync each of ``apps`` with ``url`` in that order; their reports."""
    reports = []
    for app in apps:
        assert app.sync is not None
        reports.append(app.sync.sync(str(url), **how))
    return reports


def say(app: App, text: str, session: str = "quick") -> None:
    app.store.append_many([(Message(role="user", content=text), session, None),
                           (Message(role="assistant", content=f"noted: {text}"), session, None)])


def source(app: App) -> int:
    """The seq of the user message a model's memory write answers, as a turn has one: the
    newest in the log, or one said now. A write without one has no provenance, and another
    device holds such a fact for review (see core/memory/peerguard.py)."""
    def find() -> int:
        recent = app.store.log.records(max(0, app.store.log.last_seq - 500))
        users = [r.seq for r in recent if r.type == "message" and r.data.get("role") == "user"]
        if users:
            return users[-1]
        return app.store.append_many([(Message(role="user", content="Please remember this."), "quick", None)])[0].seq

    return app.write(find)


def remember(app: App, fact: str, section: str | None = None) -> str:
    """The agent's ``remember`` as a turn calls it: from the user message it answers."""
    seq = source(app)
    return app.write(lambda: app.memory.remember(fact, section, model=None, source_seq=seq))


def digest(app: App) -> str:
    return app.write(lambda: state_digest(app.store))


def contents(app: App) -> set[str]:
    return {str(r.data.get("content")) for r in app.store.log.records() if r.type == "message"}


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run([GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def remote_refs(remote: Path) -> dict[str, str]:
    """Every ref of a bare remote: name -> sha."""
    out = git("--git-dir", str(remote), "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in out.splitlines())


def log_holds(root: Path, text: str) -> list[str]:
    """The event log segments of the home at ``root`` that hold ``text``."""
    return [p.name for p in (root / "events").glob("*.jsonl") if text.encode() in p.read_bytes()]


def remote_holds(remote: Path, text: str, *, reachable: bool = True) -> bool:
    """Whether an object of a bare remote holds ``text``: one reachable from a ref, or any."""
    cmd = [GIT, "--git-dir", str(remote), "cat-file", "--batch"]
    names = None
    if reachable:
        listed = git("--git-dir", str(remote), "rev-list", "--objects", "--all")
        names = ("\n".join(line.split()[0] for line in listed.splitlines()) + "\n").encode()
    else:
        cmd.append("--batch-all-objects")
    return text.encode() in subprocess.run(cmd, input=names, check=True, capture_output=True).stdout


def commit_on(remote: Path, ref: str, path: str, blob: bytes, tmp: Path, message: str) -> None:
    """Move ``ref`` of a bare remote to a child commit whose tree has ``blob`` at ``path`` (added
    or replaced), as someone working on the remote by hand would."""
    head = git("--git-dir", str(remote), "rev-parse", ref)
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp / f"index-{os.getpid()}")}

    def run(*args: str, data: bytes | None = None) -> str:
        out = subprocess.run([GIT, "--git-dir", str(remote), *args], input=data, env=env, check=True,
                             capture_output=True).stdout
        return out.decode().strip()

    run("read-tree", head)
    sha = run("hash-object", "-w", "--stdin", data=blob)
    run("update-index", "--add", "--cacheinfo", f"100644,{sha},{path}")
    tree = run("write-tree")
    commit = run("-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-p", head, "-m", message)
    git("--git-dir", str(remote), "update-ref", ref, commit)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving ``base`` on a free 127.0.0.1 port (push enabled); yields the URL prefix."""
    port = free_port()
    proc = subprocess.Popen(
        [GIT, "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1",
         f"--port={port}", f"--base-path={base}", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # wait until it accepts: a connection, not a sleep
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


def env_without_git_config() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env
