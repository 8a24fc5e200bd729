"""``memtray sync``: push this device's stream, import its peers', merge their memory.

One sync, in this order, each step leaving both sides as they were if it fails:

1. list the remote's refs (``git ls-remote``): a remote that cannot be reached, or
   one holding other things and no memtray stream, stops here;
2. fetch every device stream into the private sync repository (only local
   tracking refs move);
3. check every stream: a peer whose stream no longer contains what was imported
   from it (rewritten by someone else), a damaged segment (line checksums), a
   tree that is not a memtray stream: stop, nothing imported;
4. import each peer's new events, oldest first, as the same events with their
   ids and an origin mark (:mod:`memtray.core.log.origin`), together with the
   cursor (``sync.pulled``) in one write; its ``memory.written`` go to the memory
   merge (``MemoryService.merge_peer_heads``) first, so a crash in between only
   makes the next sync hand the same heads again (the merge is idempotent);
5. add one segment with this device's new events and push it as a fast-forward
   of its own ref only (never forced); the local ref moves only after the remote
   took it; the memory repository is mirrored to ``.../memory`` when that is a
   fast-forward too.

Nothing here orders events by wall-clock time: cursors are per-device seqs and
imports are idempotent by event id, so a device whose clock is hours off syncs
like any other. The outcome is kept in ``<home>/sync/status.json`` for the tray,
``memtray sync --status`` and the doctor.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtray.core.base.clock import Clock, format_ts, parse_ts
from memtray.core.base.config import Settings
from memtray.core.base.errors import MemtrayError
from memtray.core.base.faults import crash_point
from memtray.core.base.fsutil import atomic_write
from memtray.core.base.home import DeviceId, Home, new_device_id, set_device_id
from memtray.core.log.attachments import AttachmentStore
from memtray.core.log.door import Door, Quarantine, Refusal, Source
from memtray.core.log.events import (
    MemoryWritten,
    Record,
    SyncPulled,
    SyncPurge,
    Verbatim,
    legacy_line,
)
from memtray.core.log.origin import (
    EXPORTED,
    ORIGIN_KEY,
    marked,
    peer_session,
)
from memtray.core.log.segments import Position
from memtray.core.log.store import Entry, Store, record_ending_at
from memtray.core.log.tombstone import Applied
from memtray.core.memory.merge import PeerHead
from memtray.core.sync import announce, attach, pairing, plan
from memtray.core.sync.gitcli import Git, SyncError, has_password, safe_url
from memtray.core.sync.history import git_date, purged_to, republished
from memtray.core.sync.identity import Keys, Seal
from memtray.core.sync.intake import check_peer, claim_ids
from memtray.core.sync.plan import NotMemtrayRemote as NotMemtrayRemote
from memtray.core.sync.status import SyncReport, complete, read_status, remote_key, status_file
from memtray.core.sync.stream import (
    LocalRepo,
    PeerEvents,
    log_ref,
    memory_ref,
)

if TYPE_CHECKING:
    from memtray.core.memory.service import MemoryService

log = logging.getLogger(__name__)

#: events imported per write (one fsync each); a month offline is a few of these
IMPORT_BATCH = 2000
#: events per segment of a republished stream
REPUBLISH_SEGMENT = 5000
#: after a failure, the next automatic attempt waits this long, doubling, up to the interval
RETRY_FIRST = timedelta(minutes=1)
#: refusals listed in a sync's report and status (all are counted and quarantined)
REPORTED_REFUSALS = 50
#: what the memory merge and the purge check see as the peer wrote it (they redact and check
#: these themselves: a redacted revision is followed by one of this device's own; a tombstone
#: is compared with the events it names)
VERBATIM = frozenset({MemoryWritten.TYPE, SyncPurge.TYPE})


def check_remote(url: str) -> str:
    """The remote URL as given, or :class:`SyncError` for one that holds a password."""
    url = url.strip()
    if not url:
        raise SyncError("no sync remote is set",
                        hint="Give one (`memtray sync /path/to/bare.git`) or set it: "
                        "`memtray config set sync_remote URL`.")
    if has_password(url):
        raise SyncError(f"the remote address {safe_url(url)} holds a password",
                        hint="memtray never stores credentials: leave them out of the address and let "
                        "git's credential helper or ssh-agent provide them.")
    return url


class SyncService:
    """Sync of one open store with git remotes. Built by the App (``app.sync``)."""

    def __init__(self, home: Home, store: Store, memory: MemoryService, settings: Settings, clock: Clock, *,
                 exported: frozenset[str] = EXPORTED) -> None:
        self.home = home
        #: the event types this device publishes (a newer version's list is longer)
        self.exported = exported
        self.store = store
        self.memory = memory
        self.settings = settings
        self.clock = clock
        self.dir = home.root / "sync"
        #: this device's sync keys (the keyring) and the devices it paired (docs/SYNC.md, "Encrypted remotes")
        self.keys = Keys(home.root)
        self.pairing = pairing.Pairing(self.keys, self.repo, lambda: self.device, clock,
                                       syncs_in_clear=lambda: bool(self.store.state.sync))
        self.attachments = AttachmentStore(home.root)
        self.door = Door(verbatim=VERBATIM)
        self.quarantine = Quarantine(home.root, clock)
        self._lock = threading.Lock()
        self._device = DeviceId(home)  # read again when device.json changes (another process)
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        #: applies imported purge tombstones to this home (set by the front ends, from
        #: ``admin.purge.follow_tombstones``: the rewrite lives above this room); None: kept pending
        self.on_tombstones: Callable[[list[Record]], Applied] | None = None

    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> None:
        """``fn(status)`` after every sync attempt, on the thread that synced (the tray's line)."""
        self._listeners.append(fn)

    @property
    def device(self) -> str:
        return self._device.get()

    @property
    def status_path(self) -> Path:
        return self.dir / "status.json"

    def repo(self, seal: Seal | None = None) -> LocalRepo:
        return LocalRepo(self.dir / "repo.git", seal).ensure()

    # --- status ---------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What the last sync did (``{}`` before the first); never raises."""
        return read_status(self.home)

    def _status_file(self, url: str) -> Path:
        """status.json for the configured remote (or with none configured); a one-off sync with
        another remote keeps its own status beside it, so it never counts against the configured one."""
        return status_file(self.home, url, self.settings.current.sync_remote)

    def _save_status(self, body: dict[str, Any], path: Path | None = None) -> None:
        body = complete(body)
        try:
            self.dir.mkdir(mode=0o700, exist_ok=True)
            atomic_write(path or self.status_path, json.dumps(body, indent=1, sort_keys=True) + "\n")
        except (OSError, MemtrayError) as exc:
            log.warning("could not save the sync status: %s", exc)
        if path is not None and path != self.status_path:
            return
        for fn in list(self._listeners):
            try:
                fn(dict(body))
            except Exception:  # a view that fails must not fail the sync
                log.exception("sync status listener failed")

    # --- one sync ---------------------------------------------------------------------

    def sync(self, remote: str | None = None, *, init: bool = False, new_device: bool = False,
             republish: bool = False, clear: bool = False) -> SyncReport:
        """Sync with ``remote`` (default: the ``sync_remote`` setting). Raises SyncError.
        ``new_device``: this home takes a new device id first (a copied home, docs/SYNC.md);
        ``republish``: publish this device's stream again from its log (a stream rewritten on the remote);
        ``clear``: a new remote stays in clear (by default a device without keys makes them at its
        first sync with a remote that holds nothing of memtray's, :meth:`_new_remote`)."""
        # an empty REMOTE (`memtray sync ""`) is no remote given: the configured one
        url = check_remote(remote if remote and remote.strip() else self.settings.current.sync_remote)
        with self._lock:
            started = format_ts(self.clock.now())
            where = self._status_file(url)
            try:
                prev = json.loads(where.read_text(encoding="utf-8"))
                prev = prev if isinstance(prev, dict) else {}
            except (OSError, ValueError):
                prev = {}
            try:
                rep = self._sync(url, init, new_device, republish, clear)
            except MemtrayError as exc:
                failures = int(prev.get("failures", 0)) + 1 if prev.get("last_error") else 1
                self._save_status({**prev, "remote": safe_url(url), "device": self.device, "last_attempt": started,
                                   "last_error": str(exc), "hint": exc.hint, "failures": failures}, where)
                raise
            self._save_status({
                "remote": safe_url(url), "device": self.device, "last_attempt": started, "last_success": started,
                "last_error": None, "hint": None, "failures": 0, "imported": rep.imported, "pushed": rep.pushed,
                "peers": sorted(set(prev.get("peers", [])) | set(rep.peers)) if rep.peers else prev.get("peers", []),
                "conflicts": rep.conflicts or (prev.get("conflicts", []) if not rep.merges else []),
                "pending_heads": rep.pending_heads, "notes": rep.notes, "pending_purges": rep.pending_purges,
                "refused": rep.refused, "refusals": rep.refusals, "encrypted": rep.encrypted, "devices": rep.devices,
            }, where)
            return rep

    def _sync(self, url: str, init: bool, new_device: bool = False, republish: bool = False,
              clear: bool = False) -> SyncReport:
        if self.store.readonly:
            raise SyncError("the event log is read-only (damaged or opened by another program)",
                            hint="Run `memtray doctor` first.")
        me = self.device
        rep = SyncReport(safe_url(url), me)
        seal = self.keys.seal(me)  # the keyring is read once a sync
        repo = self.repo(seal)
        key = remote_key(url)
        refs = repo.ls_remote(url)
        remote = plan.Remote(refs)
        if seal.identity is None and self._new_remote(url, remote, clear):
            seal = self.keys.seal(me)
            repo = self.repo(seal)
            rep.keys_created = True
        rep.encrypted = seal.secured
        if seal.identity is not None:  # devices paired and removed elsewhere, keys handed to this one
            seal.identity = pairing.take_rosters(repo, url, key, refs, self.keys, seal.identity, seal.trust, me,
                                                 rep.notes)
        plan.refuse_sealing(remote, safe_url(url), keyed=seal.identity is not None, me=me)
        marker = self.dir / f"init-{key}"  # this remote was taken with --init: it stays taken
        plan.check_memtray(remote, safe_url(url), init=init, taken=marker.exists())
        repo.fetch(url, key, remote.streams)
        crash_point("sync.fetched")
        tracked = repo.git.refs(f"refs/memtray/remotes/{key}/") if remote.streams else {}
        plan.check_new_device(new_device=new_device, secured=seal.secured)
        if new_device:
            me = self._become_new_device(repo, plan.streams(remote, me, key, tracked, {}).mine)
            rep.device = rep.new_device = me
        # 3. check every peer's stream on its own before changing anything: a stream refused
        # (rewritten, unreadable) is reported and skipped; this device's push and the others go on
        streams = plan.streams(remote, me, key, tracked, self.store.state.sync)
        peers: list[PeerEvents] = []
        for p in streams.peers:
            try:
                got = check_peer(repo, p.device, p.commit, p.cursor, self.door, rep.notes)
            except SyncError as exc:
                self._refuse(rep, [Refusal(Source("peer", p.device, "its stream"), str(exc))], hint=exc.hint)
                continue
            if got is not None:
                peers.append(got)
        peers = claim_ids(peers, self.store.log.dir)
        for peer in peers:
            self._refuse(rep, peer.refused)
        mine_remote = streams.mine
        base = repo.git.rev(log_ref(me)) if republish else self._base(repo, mine_remote)
        # 4. import: every peer's memory revisions to the merge in one call first (a merge one
        # peer made names revisions of a third device: the merge knows them when it comes)
        heads = [(p.device, r) for p in peers for r in p.records if r.type == MemoryWritten.TYPE]
        if heads:
            self._merge(heads, rep)
        for peer in peers:
            self._import(repo, peer, rep)
        self._apply_tombstones(peers, rep)
        if rep.purges:  # the files a purge rewrote, from the device that purged (its new stream)
            for peer in peers:
                rep.attachments += attach.take(self.attachments, repo, peer.device, peer.commit, attach.payloads(peer.records))
        # 5. push my new events
        self._push(repo, url, base, mine_remote, rep, republish)
        if init and not marker.exists():
            with contextlib.suppress(OSError, MemtrayError):
                atomic_write(marker, safe_url(url) + "\n")
        if seal.identity is not None:
            when = format_ts(self.clock.now())
            pairing.publish_roster(repo, url, refs, seal.identity, seal.trust, me, git_date(when, when))
            if pairing.withdraw_invitations(repo, url, refs, seal.trust):
                rep.notes.append("the invitation of a device removed before it joined was taken off the remote")
            self._save_trust(seal, rep)
            rep.devices = len(seal.trust.active())
        else:
            self._mirror_memory(url, rep, refs)  # an encrypted remote gets no memory mirror (docs/SYNC.md)
        return rep

    def _new_remote(self, url: str, remote: plan.Remote, clear: bool) -> bool:
        """For a device without sync keys: whether it made them now (:func:`plan.keys_for_new_remote`
        decides: a new remote is encrypted by default; one other devices encrypted is refused)."""
        if not plan.keys_for_new_remote(
                remote, safe_url(url), clear=clear, encrypt=self.settings.current.sync_encrypt,
                syncs_in_clear=lambda: bool(self.store.state.sync) or self.repo().git.rev(log_ref(self.device)) is not None):
            return False
        try:
            pairing.set_up(self.keys, self.device)
        except MemtrayError as exc:  # no secure keyring, or it refused: never clear without being asked
            raise SyncError(f"this device's sync keys could not be made for the new remote: {exc}",
                            hint="A new remote is encrypted, with keys kept in the OS keyring. Unlock or install "
                            "one (docs/INSTALL.md), or sync in clear on purpose: `memtray sync --clear REMOTE` "
                            "(or `memtray config set sync_encrypt false`).") from None
        log.info("new remote %s: this device's sync keys were made, the remote is encrypted", safe_url(url))
        return True

    def _save_trust(self, seal: Seal, rep: SyncReport) -> None:
        try:
            seal.trust.save()  # the devices recognised on first sight by their key
        except (OSError, MemtrayError) as exc:
            rep.notes.append(f"the paired devices could not be saved: {exc}")

    def _refuse(self, rep: SyncReport, refusals: Sequence[Refusal], hint: str = "") -> None:
        """Report ``refusals`` and keep them in the quarantine (``memtray doctor`` lists them)."""
        if not refusals:
            return
        self.quarantine.put_all(refusals)
        rep.refusals += len(refusals)
        for r in refusals:
            if len(rep.refused) < REPORTED_REFUSALS:
                rep.refused.append({**r.to_json(), "hint": hint})
        log.warning("sync refused %d event(s) or stream(s); first: %s", len(refusals), refusals[0].describe())

    def _base(self, repo: LocalRepo, mine_remote: str | None) -> str | None:
        """The commit my next segment builds on: the local ref, or the remote's copy of it
        when that is ahead (a crash after a push, before the local ref moved; a republication
        included), once it agrees with this home's log (:func:`plan.base`, :func:`plan.check_adoption`)."""
        me = self.device
        local = repo.git.rev(log_ref(me))
        base = plan.base(me, local, mine_remote, ancestor=repo.git.is_ancestor,
                         republishes=lambda old, new: republished(repo, me, old, new))
        if not base.adopt or mine_remote is None:
            return base.commit
        head = repo.head(mine_remote, me)

        def differs() -> int | None:
            after = repo.head(local, me).last_seq if base.forward and local else self._start(me)
            # a purge here since that push explains the lines its tombstone names (then republished)
            return self._first_difference(repo, mine_remote, after, purged_after=head.last_seq)

        plan.check_adoption(me, remote_last=head.last_seq, log_last=self.store.log.last_seq,
                            changed=lambda: repo.changed_files(local, mine_remote) if base.forward and local else [],
                            differs=differs)
        repo.set_ref(log_ref(me), mine_remote, local)
        return mine_remote

    def _start(self, me: str) -> int:
        """The seq after which this device's stream starts: 0, or for a home that took a new
        device id (``--new-device``) the end of the history it shares with the old id."""
        try:
            body = json.loads((self.dir / "start.json").read_text(encoding="utf-8"))
            return int(body["after"]) if body.get("device") == me else 0
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return 0

    def _first_difference(self, repo: LocalRepo, commit: str, after: int,
                          purged_after: int | None = None) -> int | None:
        """The first seq after ``after`` at which this device's stream at ``commit`` is not, line
        for line, what its log holds (events compared by the whole record: id, payload, checksum);
        None if they agree. ``purged_after``: this home's own purge tombstones (``sync.purge``)
        after that seq explain a line they name: the remote's record with the tombstone's payload
        (the last one naming it) is the log's record (a push that landed, then a purge here)."""
        own = list(self._own_after(after))
        mine = {r.seq: r for r in own}
        payloads: dict[str, Any] = {}
        if purged_after is not None:
            for r in own:
                if r.type == SyncPurge.TYPE and r.seq > purged_after:
                    payloads.update(SyncPurge.of(r).events)
        for seq, line in repo.lines_after(self.device, commit, after):
            rec = mine.get(seq)
            if rec is not None and (legacy_line(rec).rstrip(b"\n") == line or purged_to(line, rec, payloads)):
                continue
            return seq if seq > 0 else after + 1
        return None

    def _become_new_device(self, repo: LocalRepo, old_remote: str | None) -> str:
        """``--new-device``: this home takes a fresh device id. The history it shares with its
        old id (the old stream on the remote, as far as it agrees with this log) stays the old
        id's: it is imported from there like a peer's, from that point on; this home's own
        events after it are published under the new id. Nothing is rewritten or lost."""
        old = self.device
        shared = 0
        if old_remote is not None:
            differs = self._first_difference(repo, old_remote, 0)
            shared = repo.head(old_remote, old).last_seq if differs is None else differs - 1
            shared = min(shared, self.store.log.last_seq)
        else:
            local = repo.git.rev(log_ref(old))
            shared = repo.head(local, old).last_seq if local else 0
        new = new_device_id(self.home)
        # in this order, so a crash anywhere leaves either the old id or the new one complete
        atomic_write(self.dir / "start.json", json.dumps({"device": new, "after": shared, "was": old}) + "\n")
        self.store.append(SyncPulled(device=old, commit="", through=shared))
        crash_point("sync.new_device")  # the old id's cursor is in, the id not changed yet
        set_device_id(self.home, new)
        for mark in self.dir.glob("mirrored-*"):
            mark.unlink(missing_ok=True)
        log.info("device id %s -> %s (shared history up to seq %d)", old, new, shared)
        return new

    # --- importing ------------------------------------------------------------------

    def _merge(self, heads: Sequence[tuple[str, Record]], rep: SyncReport) -> None:
        outcome = self.memory.merge_peer_heads([PeerHead(device, r.id, r.ts, dict(r.data)) for device, r in heads])
        crash_point("sync.merged")
        if outcome.summary:
            rep.merges.append(str(outcome.summary))
        rep.conflicts.extend(list(outcome.conflicts))

    def _import(self, repo: LocalRepo, peer: PeerEvents, rep: SyncReport) -> None:
        """The peer's events with the cursor, IMPORT_BATCH a write, after its memory heads went
        to the merge (with every peer's, in one call that reads the memory history once). A crash in between hands the same heads again next time, which the merge
        recognises."""
        dev = peer.device
        records = peer.records
        last = peer.last_seq
        # a cursor names the peer's commit only once everything up to it is in; until then the
        # commit imported before, so the next sync neither skips the rest nor loses the check
        before = str((self.store.state.sync.get(dev) or {}).get("commit") or "")
        rep.merged_heads += sum(1 for r in records if r.type == MemoryWritten.TYPE)
        # the files first: a message is never shown before its attachment is here
        rep.attachments += attach.take(self.attachments, repo, peer.device, peer.commit, attach.payloads(records))
        imported = 0
        for start in range(0, max(len(records), 1), IMPORT_BATCH):
            chunk = records[start : start + IMPORT_BATCH]
            final = start + IMPORT_BATCH >= len(records)
            through = last if final else chunk[-1].seq
            # every event but memory revisions (merged above), a newer device's types included,
            # kept with the version it was written in
            batch: list[Entry] = [(Verbatim(r.type, marked(r, dev), r.v), peer_session(r.session, dev), r.id)
                                  for r in chunk if r.type != MemoryWritten.TYPE]
            commit = peer.commit if final else before
            batch.append((SyncPulled(device=dev, commit=commit, through=through), None, None))
            self.store.append_many(batch)
            crash_point("sync.imported")
            imported += len(batch) - 1
        rep.peers[dev] = imported
        rep.imported += imported

    def _apply_tombstones(self, peers: Sequence[PeerEvents], rep: SyncReport) -> None:
        """Hand new and still pending ``sync.purge`` events to :attr:`on_tombstones`; what it
        refuses (a replacement that is not a purge) is reported and quarantined."""
        new = [r for peer in peers for r in peer.records if r.type == SyncPurge.TYPE]
        waiting = [str(i) for i in self.status().get("pending_purges") or []]
        if not new and not waiting:
            return
        ids = [r.id for r in new] + [i for i in waiting if i not in {r.id for r in new}]
        if self.on_tombstones is None:
            rep.pending_purges = ids
            rep.notes.append(f"{len(ids)} purge(s) from other devices not applied here yet: run `memtray sync`")
            return
        wanted = set(ids)
        recs = [r for r in self.store.log.records() if r.type == SyncPurge.TYPE and r.id in wanted]
        try:
            done = self.on_tombstones(recs)
        except MemtrayError as exc:
            rep.pending_purges = ids
            rep.notes.append(f"purge from another device not applied yet: {exc}")
            return
        self._refuse(rep, done.refused)
        rep.purges = done.tombstones

    # --- pushing --------------------------------------------------------------------

    def _own_after(self, seq: int) -> Iterator[Record]:
        """This device's exported events after ``seq``, from a remembered position when it still
        matches the log (a purge rewrites segments: then from the start)."""
        pos: Position | None = None
        try:
            hint = json.loads((self.dir / "pushed.json").read_text(encoding="utf-8"))
            cand = Position.from_json(hint["position"])
            rec = record_ending_at(self.store.log.dir, cand)
            if rec is not None and rec.seq == hint["seq"] and rec.seq <= seq:
                pos = cand
        except (OSError, ValueError, KeyError, TypeError):
            pos = None
        for rec, _end in self.store.log.read(pos, upcast=False):
            if rec.seq > seq and rec.type in self.exported and ORIGIN_KEY not in rec.data:
                yield rec

    def _push(self, repo: LocalRepo, url: str, base: str | None, mine_remote: str | None, rep: SyncReport,
              republish: bool = False) -> None:
        me = self.device
        start = self._start(me)
        last = repo.head(base, me).last_seq if base else start
        announce.catch_up(self.store, self.dir, self.exported, last if base else None)  # once, after an upgrade
        own = list(self._own_after(last))
        head = base
        when = format_ts(self.clock.now())
        republication = False
        if plan.must_republish(
                base, mine_remote, asked=republish, purged=bool(rep.purges),
                own_purges=any(r.type == SyncPurge.TYPE for r in own),
                clear_copy=lambda: repo.sealing and any(c and not repo.head(c, me).sealed for c in (base, mine_remote))):
            # a purge here (made or applied), a stream rewritten on the remote, or one in clear once
            # this device has keys (the migration): published again from the log as a new history
            # of this device's own ref (docs/SYNC.md)
            everything = list(self._own_after(start))
            epochs = []
            for commit in (base, mine_remote):  # above both: peers take it as a republication
                if commit:
                    with contextlib.suppress(SyncError):  # a rewritten remote copy may not be a stream
                        epochs.append(repo.head(commit, me).epoch)
            epoch = plan.next_epoch(epochs)
            segs = [(chunk[0].seq, [legacy_line(r) for r in chunk])
                    for chunk in (everything[i : i + REPUBLISH_SEGMENT]
                                  for i in range(0, len(everything), REPUBLISH_SEGMENT))]
            files = attach.files_to_push(self.attachments, attach.payloads(everything))
            if segs:
                head = repo.republish(me, segs, everything[-1].seq, epoch, git_date(everything[-1].ts, when), files)
                republication = rep.republished = True
        elif own:
            head = repo.extend(me, base, [legacy_line(r) for r in own], own[-1].seq, own[0].seq,
                               git_date(own[-1].ts, when),
                               attach.files_to_push(self.attachments, attach.payloads(own)))
        # a fast-forward, or (a republication; this remote holding an older epoch, a purge here
        # published through another remote since, checked by _base) own ref only, with a lease
        how = plan.push(head, mine_remote, republication=republication, fast_forward=repo.git.is_ancestor)
        if how is None or head is None:
            return
        rep.republished = rep.republished or how.republished
        # the events the remote's copy has already, unless this push replaces it
        kept = repo.head(mine_remote, me).events if how.kept and mine_remote else 0
        pushed = max(repo.head(head, me).events - kept, 0)
        repo.push(url, head, log_ref(me), lease=how.lease)
        crash_point("sync.pushed")  # the remote has it, the local ref does not yet
        if head != base:
            repo.set_ref(log_ref(me), head, base)
        rep.pushed = pushed
        self._remember_position()

    def _remember_position(self) -> None:
        with self.store.locked():
            body = {"seq": self.store.log.last_seq, "position": self.store.log.head.to_json()}
        try:
            atomic_write(self.dir / "pushed.json", json.dumps(body) + "\n")
        except (OSError, MemtrayError):
            pass

    def _mirror_memory(self, url: str, rep: SyncReport, remote_refs: dict[str, str]) -> None:
        """Best effort: the memory repository's history beside the stream (``git log --graph``)."""
        gitdir = self.home.memory / ".git"
        if not (gitdir / "HEAD").exists():
            return
        try:
            git = Git(gitdir)
            sha = git.rev("HEAD")
            if sha is None:
                return
            mark = self.dir / f"mirrored-{remote_key(url)}"
            with contextlib.suppress(OSError):
                if mark.read_text(encoding="utf-8").strip() == sha:
                    return  # the remote has this history already: spare a round trip
            # after a purge memory's history is new too: it replaces the mirror (own ref, with a lease)
            lease = remote_refs.get(memory_ref(self.device), "") if rep.republished else None
            LocalRepo(self.dir / "repo.git").push(url, sha, memory_ref(self.device), git=git, lease=lease)
            with contextlib.suppress(OSError, MemtrayError):
                atomic_write(mark, sha + "\n")
        except SyncError as exc:
            rep.notes.append(f"memory history not mirrored: {exc}")

    # --- automatic sync -------------------------------------------------------------

    def due(self, now: datetime | None = None) -> bool:
        """Whether the automatic sync should run now: every ``sync_interval_minutes`` after
        the last success; after a failure sooner, backing off from a minute."""
        cfg = self.settings.current
        if not cfg.sync_enabled or not cfg.sync_remote:
            return False
        now = now or self.clock.now()
        st = self.status()
        interval = timedelta(minutes=cfg.sync_interval_minutes)
        try:
            if st.get("last_error") and st.get("last_attempt"):
                wait = min(RETRY_FIRST * (2 ** max(int(st.get("failures", 1)) - 1, 0)), interval)
                return bool(now - parse_ts(st["last_attempt"]) >= wait)
            if st.get("last_success"):
                return bool(now - parse_ts(st["last_success"]) >= interval)
        except (ValueError, TypeError, OverflowError):
            return True
        return True

    def tick(self) -> SyncReport | None:
        """The maintenance job: sync if due; a failure is recorded (and retried), never raised."""
        if not self.due():
            return None
        try:
            return self.sync()
        except MemtrayError as exc:
            log.warning("sync failed: %s", exc)
            return None
