"""A hostile peer for the sync tests: a device stream written by hand on a real bare remote.

What a compromised device, a buggy one, or anyone with push access to the remote can
write: any bytes in a segment (with a matching checksum or not), any ``memtray.json``,
a force-pushed new history. Nothing here goes through memtray's own writer."""

from __future__ import annotations

import json
import os
import subprocess
import zlib
from pathlib import Path
from typing import Any

from tests.integration.sync_support import GIT

TS = "2026-12-01T10:00:00.000Z"


def line_of(obj: Any) -> bytes:
    """``obj`` as a log line with a matching checksum, whatever it holds (as a hostile peer
    can write: the checksum protects against damage, not against a writer)."""
    body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    return body[:-1] + b',"crc":"' + f"{zlib.crc32(body):08x}".encode() + b'"}'


def event(seq: int, ident: str, type_: str, data: Any, session: Any = "quick", **over: Any) -> bytes:
    return line_of({"seq": seq, "id": ident, "ts": TS, "type": type_, "v": 1, "session": session, "data": data,
                    **over})


class HostilePeer:
    """Device ``device``'s stream on ``remote``, written by hand."""

    def __init__(self, remote: Path, tmp: Path, device: str) -> None:
        self.remote = remote
        self.tmp = tmp
        self.device = device
        self.ref = f"refs/memtray/devices/{device}/log"

    def _git(self, *args: str, data: bytes | None = None, env: dict[str, str] | None = None) -> str:
        out = subprocess.run([GIT, "--git-dir", str(self.remote), *args], input=data, check=True,
                             capture_output=True, env={**os.environ, **(env or {})}).stdout
        return out.decode().strip()

    def head(self) -> str | None:
        res = subprocess.run([GIT, "--git-dir", str(self.remote), "rev-parse", "--verify", "--quiet", self.ref],
                             capture_output=True)
        return res.stdout.decode().strip() or None

    def push(self, lines: list[bytes], *, first: int | None = None, last_seq: int | None = None,
             epoch: int = 0, force: bool = False) -> str:
        """Add one segment holding ``lines`` (or, ``force``: a new history holding only it) and
        move the ref; ``memtray.json`` says ``last_seq`` (default: the number of lines so far)."""
        base = None if force else self.head()
        index = str(self.tmp / f"hostile-index-{self.device}")
        env = {"GIT_INDEX_FILE": index}
        if os.path.exists(index):
            os.unlink(index)
        self._git(*(["read-tree", base] if base else ["read-tree", "--empty"]), env=env)
        meta = json.loads(self._git("show", f"{base}:memtray.json")) if base else {"events": 0, "segments": 0}
        first = first if first is not None else meta.get("last_seq", 0) + 1
        blob = self._git("hash-object", "-w", "--stdin", data=b"".join(ln + b"\n" for ln in lines))
        path = f"segments/{first // 10_000:06d}/{first:012d}.jsonl"
        body = {"format": "memtray-stream", "version": 1, "device": self.device,
                "last_seq": last_seq if last_seq is not None else first + len(lines) - 1,
                "segments": int(meta.get("segments", 0)) + 1, "events": int(meta.get("events", 0)) + len(lines),
                "epoch": epoch}
        mblob = self._git("hash-object", "-w", "--stdin", data=(json.dumps(body) + "\n").encode())
        self._git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}",
                  "--cacheinfo", f"100644,{mblob},memtray.json", env=env)
        tree = self._git("write-tree", env=env)
        args = ["-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-m", "hostile"]
        commit = self._git(*args, *(["-p", base] if base else []))
        self._git("update-ref", self.ref, commit)
        return commit


def republish_forged(remote: Path, tmp: Path, device: str, change: dict[int, bytes]) -> None:
    """Force-push ``device``'s stream as a republication (epoch + 1), every line as it was
    except those in ``change`` (seq -> new line): what anyone with push access can do."""
    peer = HostilePeer(remote, tmp, device)
    head = peer.head()
    assert head is not None
    meta = json.loads(peer._git("show", f"{head}:memtray.json"))
    names = peer._git("ls-tree", "-r", "--name-only", head, "--", "segments").splitlines()
    lines: list[bytes] = []
    for name in sorted(names):
        lines += [ln for ln in subprocess.run([GIT, "--git-dir", str(remote), "show", f"{head}:{name}"],
                                              check=True, capture_output=True).stdout.split(b"\n") if ln]
    out = []
    for ln in lines:
        seq = json.loads(ln)["seq"]
        out.append(change.get(seq, ln))
    peer.push(out, first=json.loads(lines[0])["seq"], last_seq=meta["last_seq"], epoch=int(meta.get("epoch", 0)) + 1,
              force=True)
