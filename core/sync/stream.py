"""Device streams as git commits, and the remote that holds them.

A device's *stream* is the events it made itself that travel
(:data:`~memtray.core.log.origin.EXPORTED`), as append-only segment files in a
chain of commits on ``refs/memtray/devices/<device>/log``::

    memtray.json                       {"format": "memtray-stream", "version": 1, "device", "last_seq", ...}
    segments/000000/000000000001.jsonl the lines of one push, exactly as the log holds them
    segments/000000/000000000212.jsonl (named by their first seq; a directory per 10 000 seqs)
    attachments/ab/<sha256>            the files its messages' attachments name (content-addressed)

Each push adds one segment and never changes an old one, so a remote only ever
grows, every push is a fast-forward, and the line checksums of the log (CRC-32)
travel with the lines: a damaged segment is found before anything is imported.
An attachment travels with the push that carries its message, under its hash,
which the importing device checks before it stores the file.

The commits are built in ``<home>/sync/repo.git`` (a bare repository private to
this home, a cache: losing it costs one fetch) with git plumbing, and pushed and
fetched with the ``git`` command line (:mod:`memtray.core.sync.gitcli`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memtray.core.log.door import KEEP_BYTES, Door, Refusal, Source
from memtray.core.log.events import BadRecord, Record, decode_raw, envelopes, legacy_line
from memtray.core.log.origin import LOCAL_TYPES, ORIGIN_KEY
from memtray.core.sync import crypto
from memtray.core.sync.gitcli import (
    FULL_HINT,
    NETWORK_TIMEOUT,
    Git,
    SyncError,
    disk_full,
    last_words,
    safe_url,
)
from memtray.core.sync.identity import Refused, Seal

FORMAT = "memtray-stream"
VERSION = 1
#: a sealed stream (an encrypted remote): every file signed and encrypted (docs/SYNC.md)
SEALED_VERSION = 2
META = "memtray.json"
PREFIX = "refs/memtray/devices/"
BUCKET = 10_000
#: the largest ``memtray.json`` read (a real one is ~200 bytes)
META_MOST = 64 * 1024
#: the largest sealed segment opened (held whole to check its signature): a republished
#: segment of 5 000 events of at most 256 KiB each would be larger, and is refused
SEALED_MOST = 512 * 1024 * 1024


def log_ref(device: str) -> str:
    return f"{PREFIX}{device}/log"


def memory_ref(device: str) -> str:
    return f"{PREFIX}{device}/memory"


def segment_path(first_seq: int) -> str:
    return f"segments/{first_seq // BUCKET:06d}/{first_seq:012d}.jsonl"


def attachment_path(sha: str) -> str:
    return f"attachments/{sha[:2]}/{sha}"


def tracking_ref(remote_key: str, device: str) -> str:
    """Where a fetched device stream is kept locally (never pushed)."""
    return f"refs/memtray/remotes/{remote_key}/{device}/log"


@dataclass(frozen=True)
class StreamHead:
    commit: str
    device: str
    last_seq: int
    segments: int
    events: int
    #: how many times the device republished its stream (after a purge: a new history)
    epoch: int = 0
    #: signed and encrypted (an encrypted remote), or in clear
    sealed: bool = False


@dataclass(frozen=True)
class PeerEvents:
    device: str
    commit: str
    records: list[Record]
    last_seq: int
    #: what the door or the stream's own rules refused (quarantined and reported by the service)
    refused: list[Refusal] = field(default_factory=list)


def _refusal(source: Source, rec: Record, reason: str) -> Refusal:
    raw = legacy_line(rec)
    return Refusal(source, reason, raw[:KEEP_BYTES], len(raw), rec.seq, rec.id, rec.type)


def _missing_path(url: str) -> bool:
    """Whether ``url`` is a local path (or ``file://``) that does not exist."""
    path = url.removeprefix("file://")
    if "://" in path or (":" in path.split("/", 1)[0] and not os.path.isabs(path)):  # ssh, scp-like host:path
        return False
    return not os.path.exists(path)


class LocalRepo:
    """The home's private sync repository (``<home>/sync/repo.git``)."""

    def __init__(self, path: Path, seal: Seal | None = None) -> None:
        self.path = path
        self.git = Git(path)
        #: this device's keys: with an identity, every file it writes is sealed, and a peer's
        #: stream is read only when a paired device sealed it; without, everything is in clear
        self.seal = seal
        #: commits of peers' streams imported before (their cursors): read in clear to compare
        #: with a republication after a migration to an encrypted remote, never imported again
        self.imported: set[str] = set()

    def ensure(self) -> LocalRepo:
        if not (self.path / "HEAD").exists():
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            Git().run(["init", "--bare", "-q", str(self.path)], what="creating the sync repository")
            for key, value in (("gc.auto", "0"), ("core.fsync", "objects,derived-metadata,reference"),
                               ("core.fsyncMethod", "fsync"), ("user.name", "memtray"),
                               ("user.email", "sync@memtray.invalid")):
                self.git.run(["config", key, value])
        return self

    # --- reading streams ------------------------------------------------------------

    def head(self, commit: str, expect_device: str | None = None) -> StreamHead:
        """The stream metadata of ``commit``; :class:`SyncError` if it is not a memtray stream."""
        return self._parse_head(commit, self._meta(commit), expect_device)

    def _meta(self, commit: str) -> bytes | None:
        """``memtray.json`` of ``commit`` (None if absent or too large to be one: never read whole)."""
        [size] = self.git.sizes([f"{commit}:{META}"])
        if size is None or size > META_MOST:
            return None
        return self.git.blobs([f"{commit}:{META}"])[0]

    def _opened(self, device: str, path: str, epoch: int, blob: bytes, sealed: bool) -> bytes:
        """A file of ``device``'s stream as written: opened (and its signature checked) when the
        stream is sealed; :class:`Refused` when a sealed stream holds a file in clear."""
        if not sealed:
            return blob
        if not crypto.is_sealed(blob):
            raise Refused(f"the stream of {device} mixes sealed and clear files ({path} is in clear)",
                          hint=f"Someone changed it on the remote. Nothing was imported from {device}.")
        assert self.seal is not None  # a stream is read as sealed only with keys
        return self.seal.open(device, path, epoch, blob)

    def _parse_head(self, commit: str, raw: bytes | None, expect_device: str | None) -> StreamHead:
        sealed = raw is not None and crypto.is_sealed(raw)
        secured = self.seal is not None and self.seal.secured
        if raw is not None and (sealed or secured):
            who = expect_device or commit[:12]
            if not secured:
                raise Refused(f"the stream of {who} is encrypted and this device is not paired",
                              hint="Pair this device with one that syncs already: there, run `memtray sync pair`; "
                              "here, `memtray sync pair --join CODE`.")
            assert self.seal is not None
            if expect_device is None:
                raise SyncError(f"a stream ({commit[:12]}) read without its device")
            if sealed:
                raw = self.seal.open_meta(expect_device, META, raw)
            elif expect_device != self.seal.device and commit not in self.imported:
                # (this device's own stream and one imported before are read in clear: a migration)
                raise Refused(f"the stream of {who} is not signed (in clear): this device accepts only streams "
                              "sealed by devices you paired",
                              hint=f"If {who} is yours, pair it (`memtray sync pair`) and sync there. Nothing was "
                              f"imported from {who}.")
        try:
            meta = json.loads(raw) if raw is not None else None
            ok = (isinstance(meta, dict) and meta.get("format") == FORMAT and isinstance(meta.get("last_seq"), int)
                  and isinstance(meta.get("device"), str))
        except ValueError:
            ok, meta = False, None
        if not ok or meta is None:
            raise SyncError(f"{commit[:12]} is not a memtray stream (no valid {META})",
                            hint="This remote holds something else under refs/memtray/; use another remote.")
        if int(meta.get("version", 0)) > SEALED_VERSION:
            raise SyncError(f"the stream of {meta['device']} was written by a newer memtray (format "
                            f"{meta.get('version')})", hint="Update memtray on this device, then sync again.")
        if expect_device is not None and meta["device"] != expect_device:
            raise SyncError(f"the stream under {log_ref(expect_device)} says it belongs to {meta['device']}",
                            hint="The remote's refs were moved by hand; use another remote.")
        if sealed != (int(meta.get("version", 0)) == SEALED_VERSION):
            raise Refused(f"the stream at {commit[:12]} mixes sealed and clear files", hint="Use another remote.")
        return StreamHead(commit, meta["device"], meta["last_seq"], int(meta.get("segments", 0)),
                          int(meta.get("events", 0)), int(meta.get("epoch", 0)), sealed)

    def segments(self, commit: str) -> list[tuple[int, str]]:
        """(first seq, path) of every segment of the stream at ``commit``, in order."""
        res = self.git.run(["ls-tree", "-r", "--name-only", commit, "--", "segments"])
        out = []
        for name in res.out.decode().split("\n"):
            if not name:
                continue
            stem = name.rsplit("/", 1)[-1].removesuffix(".jsonl")
            if not stem.isdigit():
                raise SyncError(f"unexpected file {name} in a memtray stream at {commit[:12]}")
            out.append((int(stem), name))
        out.sort()
        return out

    def read_after(self, device: str, commit: str, through: int, door: Door) -> PeerEvents:
        """Every event of ``device``'s stream at ``commit`` with a seq after ``through``, each
        line through ``door`` (checksum, size, envelope, payload, redaction). A line the door
        refuses, one out of order or past the stream's end, an event of a type that does not
        travel, and every event whose id comes twice, are refused (in ``refused``), not
        imported; the rest goes on. A stream that cannot be read at all raises SyncError."""
        segs = self.segments(commit)
        # segment i holds seqs in [first_i, first_i+1): read the ones after ``through`` and the
        # one that holds ``through`` (a cursor can stop inside a segment); the metadata with them
        older = [seg for seg in segs if seg[0] <= through]
        wanted = older[-1:] + [seg for seg in segs if seg[0] > through]
        head = self._parse_head(commit, self._meta(commit), device)
        sizes = self.git.sizes([f"{commit}:{path}" for _, path in wanted])
        records: list[Record] = []
        refused: list[Refusal] = []
        last = 0
        most = door.limits.event_bytes
        for (first, path), size in zip(wanted, sizes, strict=True):
            if size is None:
                raise SyncError(f"segment {path} of {device} is missing on the remote")
            # the segment holding the cursor was read before, up to ``through``: what it says
            # there was imported or reported then; every other segment is new
            again = first <= through
            for n, (line, length) in enumerate(self._lines(head, path, most), 1):
                source = Source("peer", device, f"{path} line {n}")
                seen = envelopes([line]) if again and length <= most else None
                if seen is not None and seen[0][0] <= through:
                    last = max(last, seen[0][0])
                    continue  # imported before
                got = door.line(line, source, length)
                if isinstance(got, Refusal):
                    if not (again and (got.seq is None or got.seq <= through)):
                        refused.append(got)
                    continue
                if again and got.seq <= through:
                    last = max(last, got.seq)
                    continue
                if got.seq <= max(last, through):
                    refused.append(_refusal(source, got, f"out of order (seq {got.seq} after "
                                                         f"{max(last, through)})"))
                    continue
                last = got.seq
                if ORIGIN_KEY in got.data:  # a device publishes its own events only, never copies
                    refused.append(_refusal(source, got, "it carries an origin mark: a copy imported from "
                                            "another device does not travel"))
                    continue
                if got.seq > head.last_seq:
                    refused.append(_refusal(source, got, f"seq {got.seq} is past the stream's end ({head.last_seq})"))
                    continue
                if got.type in LOCAL_TYPES:
                    refused.append(_refusal(source, got, f"a {got.type} event does not travel between devices"))
                    continue
                records.append(got)
        counts = Counter(r.id for r in records)
        twice = {i for i, k in counts.items() if k > 1}
        if twice:
            refused += [_refusal(Source("peer", device, f"seq {r.seq}"), r, "its event id comes more than once "
                                 "in the stream") for r in records if r.id in twice]
            records = [r for r in records if r.id not in twice]
        return PeerEvents(device, commit, records, max(head.last_seq, through), refused)

    def _lines(self, head: StreamHead, path: str, most: int) -> Iterator[tuple[bytes, int]]:
        """The lines of one segment as (line, its length), the line cut at ``most`` bytes. A clear
        segment is streamed (a huge line costs no memory); a sealed one is opened whole (its
        size was bounded by the device that sealed it) and its signature checked first."""
        name = f"{head.commit}:{path}"
        if not head.sealed:
            yield from self.git.lines(name, most)
            return
        [size] = self.git.sizes([name])
        if size is None or size > SEALED_MOST:
            raise SyncError(f"segment {path} of {head.device} is missing or too large ({size} bytes)")
        blob = self.git.blobs([name])[0] or b""
        body = self._opened(head.device, path, head.epoch, blob, head.sealed)
        for line in body.split(b"\n")[:-1] if body.endswith(b"\n") else body.split(b"\n"):
            yield line[:most], len(line)

    def attachment_name(self, sealed: bool, sha: str) -> str:
        """The path of attachment ``sha`` in a stream (a sealed stream hides its hash)."""
        if sealed and self.seal is not None and self.seal.secured:
            name = self.seal.attachment_name(sha)
            return f"attachments/{name[:2]}/{name}"
        return attachment_path(sha)

    def attachments(self, device: str, commit: str, shas: Sequence[str], most: int) -> Iterator[tuple[str, bytes]]:
        """The attachment files ``shas`` of ``device``'s stream at ``commit`` whose bytes have
        their hash, one at a time (a damaged, absent or larger than ``most`` bytes one is left
        out: the message shows its name only; one a paired device did not seal is refused)."""
        import hashlib

        sealed = self.head(commit, device).sealed
        paths = [self.attachment_name(sealed, sha) for sha in shas]
        names = [f"{commit}:{path}" for path in paths]
        sizes = self.git.sizes(names) if names else []
        extra = crypto.OVERHEAD if sealed else 0
        for sha, path, name, size in zip(shas, paths, names, sizes, strict=True):
            if size is None or size > most + extra:
                continue
            blob = self.git.blobs([name])[0]
            if blob is not None:
                blob = self._opened(device, path, 0, blob, sealed)
            if blob is not None and hashlib.sha256(blob).hexdigest() == sha:
                yield sha, blob

    def changed_files(self, old: str, new: str) -> list[str]:
        """Files of the stream at ``old`` that ``new`` changed or deleted (its metadata aside).
        A continuation only adds segments: anything here means the remote was rewritten."""
        res = self.git.run(["diff-tree", "-r", "--no-renames", "--name-status", old, new])
        out = []
        for line in res.out.decode("utf-8", "replace").splitlines():
            status, _, name = line.partition("\t")
            if name and status != "A" and name != META:
                out.append(name)
        return out

    def lines_after(self, device: str, commit: str, through: int) -> list[tuple[int, bytes]]:
        """(seq, line as stored) of every line of ``device``'s stream at ``commit`` with a seq
        after ``through``; a line that cannot be read gets seq -1 (it matches nothing)."""
        head = self.head(commit, device)
        segs = self.segments(commit)
        older = [seg for seg in segs if seg[0] <= through]
        wanted = older[-1:] + [seg for seg in segs if seg[0] > through]
        out: list[tuple[int, bytes]] = []
        for (_, path), blob in zip(wanted, self.git.blobs([f"{commit}:{path}" for _, path in wanted]), strict=True):
            if blob is not None:
                blob = self._opened(device, path, head.epoch, blob, head.sealed)
            for line in (blob or b"").split(b"\n"):
                if not line:
                    continue
                try:
                    seq = decode_raw(line).seq
                except BadRecord:
                    seq = -1
                if seq == -1 or seq > through:
                    out.append((seq, line))
        return out

    # --- writing my stream ----------------------------------------------------------

    def extend(self, device: str, base: str | None, lines: Sequence[bytes], last_seq: int,
               first_seq: int, when: str, files: Mapping[str, Path] | None = None) -> str:
        """A new commit on ``base`` adding one segment with ``lines`` (and ``files``, attachment
        hash -> its file here); the ref is not moved."""
        prev = self.head(base, device) if base else None
        meta = {"format": FORMAT, "version": VERSION, "device": device, "last_seq": last_seq,
                "segments": (prev.segments if prev else 0) + 1,
                "events": (prev.events if prev else 0) + len(lines), "epoch": prev.epoch if prev else 0}
        msg = f"{device}: events {first_seq}..{last_seq} ({len(lines)})\n"
        return self._commit(device, base, [(first_seq, lines)], meta, msg, when, files)

    def republish(self, device: str, segments: Sequence[tuple[int, Sequence[bytes]]], last_seq: int,
                  epoch: int, when: str, files: Mapping[str, Path] | None = None) -> str:
        """A new history (no parent) of the whole stream, as its lines are now (after a purge)."""
        meta = {"format": FORMAT, "version": VERSION, "device": device, "last_seq": last_seq,
                "segments": len(segments), "events": sum(len(lines) for _, lines in segments), "epoch": epoch}
        msg = f"{device}: the stream republished after a purge (epoch {epoch}, up to event {last_seq})\n"
        return self._commit(device, None, segments, meta, msg, when, files)

    @property
    def sealing(self) -> bool:
        """Whether what this device writes is sealed (it has keys: an encrypted remote)."""
        return self.seal is not None and self.seal.secured

    def _blob(self, device: str, path: str, epoch: int, body: bytes) -> str:
        if self.seal is not None and self.seal.secured:
            body = self.seal.seal(device, path, epoch, body)
        return self.git.text(["hash-object", "-w", "--stdin"], input=body)

    def _commit(self, device: str, base: str | None, segments: Sequence[tuple[int, Sequence[bytes]]],
                meta: dict[str, object], msg: str, when: str, files: Mapping[str, Path] | None = None) -> str:
        infos = []
        sealing = self.sealing
        epoch = int(meta.get("epoch", 0))  # type: ignore[call-overload]
        for first, lines in segments:
            blob = self._blob(device, segment_path(first), epoch, b"".join(lines))
            infos += ["--cacheinfo", f"100644,{blob},{segment_path(first)}"]
        items = sorted((files or {}).items())
        if sealing:  # each file read, sealed and written on its own
            for sha, file in items:
                path = self.attachment_name(True, sha)
                infos += ["--cacheinfo", f"100644,{self._blob(device, path, 0, file.read_bytes())},{path}"]
            items = []
        for start in range(0, len(items), 200):  # git reads each file itself: none is held here
            chunk = items[start : start + 200]
            blobs = self.git.text(["hash-object", "-w", "--", *(str(path) for _, path in chunk)]).split()
            infos += [x for (sha, _), blob in zip(chunk, blobs, strict=True)
                      for x in ("--cacheinfo", f"100644,{blob},{attachment_path(sha)}")]
        if sealing:
            assert self.seal is not None and self.seal.identity is not None
            meta = {**meta, "version": SEALED_VERSION, "key": self.seal.identity.sign_pub}
            msg = "memtray\n"  # the counts stay inside the sealed metadata
        meta_blob = self._blob(device, META, 0, (json.dumps(meta, sort_keys=True) + "\n").encode())
        fd, index = tempfile.mkstemp(prefix="index-", dir=self.path)
        os.close(fd)
        os.unlink(index)
        env = {"GIT_INDEX_FILE": index}
        try:
            self.git.run(["read-tree", base] if base else ["read-tree", "--empty"], env=env)
            self.git.run(["update-index", "--add", *infos, "--cacheinfo", f"100644,{meta_blob},{META}"], env=env)
            tree = self.git.text(["write-tree"], env=env)
        finally:
            if os.path.exists(index):
                os.unlink(index)
        stamp = {"GIT_AUTHOR_NAME": "memtray", "GIT_AUTHOR_EMAIL": f"{device}@memtray.invalid",
                 "GIT_COMMITTER_NAME": "memtray", "GIT_COMMITTER_EMAIL": f"{device}@memtray.invalid",
                 "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        args = ["commit-tree", tree] + (["-p", base] if base else [])
        return self.git.text(args, input=msg.encode(), env=stamp)

    def set_ref(self, ref: str, new: str, old: str | None) -> None:
        args = ["update-ref", ref, new] + ([old] if old else [])
        self.git.run(args, what="recording the pushed stream")

    # --- the remote -----------------------------------------------------------------

    def ls_remote(self, url: str) -> dict[str, str]:
        """Every ref of the remote (name -> sha); :class:`SyncError` if it cannot be reached."""
        res = self.git.run(["ls-remote", "--", url], timeout=NETWORK_TIMEOUT, check=False)
        if res.code != 0 and _missing_path(url):
            raise SyncError(f"cannot reach the remote {safe_url(url)}: it does not exist",
                            hint=f"A new remote must be created first: `git init --bare {url}` (an empty bare "
                            "repository); one on a removable disk or a share: check that it is mounted. "
                            "Then sync again.")
        if res.code != 0:
            raise SyncError(f"cannot reach the remote {safe_url(url)}: {safe_url(last_words(res.err))}",
                            hint="Check the address, the network and your git credentials "
                            "(git's credential helper or ssh-agent), then sync again.")
        refs = {}
        for line in res.out.decode("utf-8", "replace").splitlines():
            sha, _, name = line.partition("\t")
            if name:
                refs[name] = sha
        return refs

    def fetch(self, url: str, remote_key: str, devices: Iterable[str]) -> None:
        specs = [f"+{log_ref(d)}:{tracking_ref(remote_key, d)}" for d in devices]
        if not specs:
            return
        res = self.git.run(["fetch", "--no-tags", "--quiet", "--no-write-fetch-head", "--", url, *specs],
                           timeout=NETWORK_TIMEOUT, check=False)
        if res.code != 0 and disk_full(res.err):
            raise SyncError(f"could not fetch from {safe_url(url)}: this computer's disk is full "
                            f"({safe_url(last_words(res.err, 1))})", hint=FULL_HINT)
        if res.code != 0:
            raise SyncError(f"could not fetch from {safe_url(url)}: {safe_url(last_words(res.err))}",
                            hint="Nothing was changed here. Sync again once the remote is reachable.")

    def push(self, url: str, sha: str, ref: str, git: Git | None = None, *, lease: str | None = None) -> None:
        """Push ``sha`` to ``ref`` as a fast-forward; raise with git's reason. ``lease``: a
        republished stream replaces ``ref`` only if the remote still has exactly that commit
        there (``--force-with-lease``; this device's own ref only, never anyone else's)."""
        args = ["push", "--porcelain", "--quiet"]
        spec = f"{sha}:{ref}"
        if lease is not None:
            args.append(f"--force-with-lease={ref}:{lease}")
            spec = "+" + spec
        res = (git or self.git).run([*args, "--", url, spec], timeout=NETWORK_TIMEOUT, check=False)
        if res.code == 0:
            return
        text = res.out.decode("utf-8", "replace") + "\n" + res.err
        said = [ln.removeprefix("remote:").strip() for ln in res.err.splitlines() if ln.startswith("remote:")]
        said = [s for s in said if s]
        if "non-fast-forward" in text or "fetch first" in text or "stale info" in text:
            raise SyncError(f"the remote refused {ref}: it moved since this device last pushed",
                            hint="Another data home uses this device id, or the remote was rewritten. "
                            "Nothing was changed; see `memtray doctor`.")
        if disk_full(res.err, remote=True) or (disk_full(res.err) and "://" not in url):
            raise SyncError(f"could not push to {safe_url(url)}: the remote's disk is full "
                            f"({safe_url(last_words(res.err, 1))})",
                            hint="Free some space where the remote is (or use another remote); nothing was "
                            "changed on the remote, memtray tries again at the next sync.")
        if "pre-receive hook declined" in text or "hook declined" in text or "[remote rejected]" in text:
            why = "; ".join(said[-3:]) or last_words(res.err)
            raise SyncError(f"the remote rejected the push: {safe_url(why)}",
                            hint="Nothing was changed on either side; memtray tries again at the next sync.")
        raise SyncError(f"could not push to {safe_url(url)}: {safe_url(last_words(res.err))}",
                        hint="Nothing was changed on the remote; memtray tries again at the next sync.")
