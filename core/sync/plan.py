"""What one sync does, decided apart from doing it: the sync's planner.

Every decision :mod:`~memtray.core.sync.service` and :mod:`~memtray.core.sync.intake`
take on the way (is this a memtray remote, make keys for it, which streams are peers,
which commit this device's next segment builds on, is a peer's stream a continuation,
a republication, a stale copy or rewritten, does this push fast-forward or replace)
is a function here of plain values: the remote's refs, the tracked refs, this device's
id, the peers' cursors, the flags the user gave. No git, no file, no clock.

What only git can tell (is one commit an ancestor of another, what a stream's head
says, which files changed) is handed in by the caller as a function, and asked for only
when the decision needs it, in the order the sync has always asked: a steady sync makes
no git call for a question whose answer cannot matter, and an error is the same error.
The errors are built here, with their hints, so every door reports the same words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from memtray.core.log.events import BadRecord, decode_raw
from memtray.core.log.tombstone import purge_problem, purged_text
from memtray.core.sync.gitcli import SyncError
from memtray.core.sync.identity import PAIR_HINT
from memtray.core.sync.stream import PREFIX, StreamHead, log_ref, tracking_ref

T = TypeVar("T")
#: a fact only git can tell, asked for when a decision needs it
Fact = Callable[[], T]
#: a relation of two commits (``older``, ``newer``) only git can tell
Relation = Callable[[str, str], T]

#: everything memtray keeps on a remote lives under here (streams, rosters, invitations)
MEMTRAY_REFS = "refs/memtray/"
#: where a paired device leaves an invitation for one joining (``pairing.invite_ref``)
INVITE_PREFIX = "refs/memtray/pairing/"

#: what a device is told when another data home pushes under its device id
COPIED_HINT = ("Another data home uses this device id (a copied data home?). On the copy, run "
               "`memtray sync --new-device`: it takes a new device id and publishes its own events under it; "
               "nothing is lost, the shared history is not published twice. (If no copy exists, the remote "
               "was rewritten: `memtray sync --republish` here publishes this device's stream again.)")
#: what repairs a stream rewritten on the remote, on the device it belongs to
REPUBLISH_HINT = "run `memtray sync --republish` there (it publishes its stream again from its own log)"


class NotMemtrayRemote(SyncError):
    """The remote holds refs, none of them a memtray stream."""


class PeerRefused(SyncError):
    """One peer's stream is refused for this sync (the others go on)."""


# --- the remote ---------------------------------------------------------------------


@dataclass(frozen=True)
class Remote:
    """What a remote's refs (``git ls-remote``: name -> commit) say about it."""

    refs: Mapping[str, str]

    @property
    def streams(self) -> list[str]:
        """The devices with a stream on it, sorted."""
        return sorted({n[len(PREFIX):-len("/log")] for n in self.refs if n.startswith(PREFIX) and n.endswith("/log")})

    @property
    def memtrays(self) -> bool:
        """Whether it holds anything of memtray's (a stream, a roster, an invitation)."""
        return any(n.startswith(MEMTRAY_REFS) for n in self.refs)

    @property
    def rostered(self) -> bool:
        """Whether a device published its keys on it (its devices seal what they publish)."""
        return any(n.startswith(PREFIX) and n.endswith("/keys") for n in self.refs)

    @property
    def encrypted(self) -> bool:
        """Whether other devices encrypted it: a roster, or an invitation to join them."""
        return self.rostered or any(n.startswith(INVITE_PREFIX) for n in self.refs)


def check_memtray(remote: Remote, where: str, *, init: bool, taken: bool) -> None:
    """:class:`NotMemtrayRemote` for a remote that holds other things and nothing of memtray's,
    unless asked to take it (``init``: ``--init``) or taken before (``taken``: its marker)."""
    if remote.refs and not remote.streams and not remote.memtrays and not init and not taken:
        raise NotMemtrayRemote(
            f"{where} is not a memtray remote (it has {len(remote.refs)} ref(s), no memtray stream)",
            hint="Use an empty repository for sync, or `memtray sync --init URL` to add memtray's refs "
            "(under refs/memtray/ only) beside what it holds.")


def keys_for_new_remote(remote: Remote, where: str, *, clear: bool, encrypt: bool,
                        syncs_in_clear: Fact[bool]) -> bool:
    """For a device without sync keys: whether to make them now. Yes at its first sync with
    a remote that holds nothing of memtray's (a new remote is encrypted by default), unless
    asked for clear (``clear``, or ``encrypt``: the ``sync_encrypt`` setting, off) or this device
    already syncs in clear with other devices (``syncs_in_clear``: they could no longer read
    it, that is a migration, docs/SYNC.md). A remote other devices encrypted is refused: this
    device must be paired to use it."""
    if remote.encrypted:
        raise SyncError(f"{where} is an encrypted remote and this device is not paired with its devices",
                        hint=PAIR_HINT)
    if clear or not encrypt:
        return False
    if remote.memtrays:
        return False  # a clear remote memtray uses already: it stays clear
    return not syncs_in_clear()  # it syncs in clear elsewhere: encrypting is a migration the user starts


def refuse_sealing(remote: Remote, where: str, *, keyed: bool, me: str) -> None:
    """A device with keys (``keyed``) seals all it publishes, on every remote. On a remote where
    other devices sync in clear (their streams, and no roster: no device there has keys) its
    roster and sealed stream would make the remote 'encrypted' and lock every one of them out.
    Refused before anything is fetched or pushed; moving them is the migration."""
    if not keyed or not any(dev != me for dev in remote.streams):
        return
    if remote.rostered:
        return  # an encrypted remote: its devices have keys
    raise SyncError(
        f"{where} is a clear remote that other devices sync with in clear, and this device "
        "encrypts what it publishes (it has sync keys): syncing it here would lock them out",
        hint="Move every device to a new encrypted remote (docs/SYNC.md, 'From a clear remote to an "
        "encrypted one'), or keep syncing this remote from devices without keys.")


def check_new_device(*, new_device: bool, secured: bool) -> None:
    """``--new-device`` is refused on a device with sync keys (not supported yet)."""
    if new_device and secured:
        raise SyncError("--new-device is not supported on a device with sync keys yet",
                        hint="On the copy: delete sync-identity.json and sync-trust.json, then pair it as a "
                        "new device (`memtray sync pair` on this one, `--join CODE` there).")


# --- the streams --------------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    """A peer's stream to check: its fetched commit (None: listed, not fetched) and its cursor."""

    device: str
    commit: str | None
    cursor: Mapping[str, Any]


@dataclass(frozen=True)
class Streams:
    """The streams of one sync: the peers to check, in device order, and this device's own
    stream on the remote (its fetched commit; None if it has none there yet)."""

    peers: tuple[Peer, ...]
    mine: str | None


def streams(remote: Remote, me: str, key: str, tracked: Mapping[str, str],
            cursors: Mapping[str, Mapping[str, Any]]) -> Streams:
    """Who is who on ``remote`` for device ``me``: ``tracked`` holds the fetched streams
    (:func:`~memtray.core.sync.stream.tracking_ref` under the remote's ``key``), ``cursors`` what
    was imported from each peer (``State.sync``)."""
    devices = remote.streams
    peers = tuple(Peer(dev, tracked.get(tracking_ref(key, dev)), cursors.get(dev) or {})
                  for dev in devices if dev != me)
    return Streams(peers, tracked.get(tracking_ref(key, me)) if me in devices else None)


# --- this device's stream: what the next segment builds on ----------------------------


@dataclass(frozen=True)
class Base:
    """The commit this device's next segment builds on (None: a first segment). ``adopt``: it is
    the remote's copy, ahead of the local ref (a crash after a push, before the local ref moved;
    a republication through another remote): taken only once :func:`check_adoption` agrees;
    ``forward``: that copy continues the local ref."""

    commit: str | None
    adopt: bool = False
    forward: bool = False


def base(me: str, local: str | None, remote: str | None, *, ancestor: Relation[bool],
         republishes: Relation[bool]) -> Base:
    """Where this device's stream goes on: the local ref (``local``), or the remote's copy of it
    (``remote``) when that is ahead. ``ancestor(older, newer)`` and ``republishes(old, new)`` (a
    higher epoch that reaches as far) are asked of git. :class:`SyncError` when the remote's copy
    is neither behind the local ref nor ahead of it: rewritten by someone else."""
    if remote is None:
        return Base(local)
    forward = local is not None and local != remote and ancestor(local, remote)
    if local is None or forward or (local != remote and republishes(local, remote)):
        return Base(remote, adopt=True, forward=forward)
    if not ancestor(remote, local) and not republishes(remote, local):
        raise SyncError(
            f"this device's stream on the remote ({log_ref(me)}) was rewritten by someone else",
            hint="Nothing was pushed. memtray never force-pushes; restore the ref on the remote "
            "or sync with another remote.")
    return Base(local)


def check_adoption(me: str, *, remote_last: int, log_last: int, changed: Fact[Sequence[str]],
                   differs: Fact[int | None]) -> None:
    """Whether the remote's copy of this device's stream (reaching ``remote_last``) may be adopted
    by a log that reaches ``log_last``: not if it holds events this home lacks, if a file the local
    ref has changed in it (``changed``), or if a line is not this log's (``differs``: the first seq
    that is not): another data home pushed under this id, or the copy was rewritten."""
    if remote_last > log_last:
        raise SyncError(
            f"the remote's stream of this device ({me}) holds events this home does not have "
            f"(up to seq {remote_last}, here {log_last}): another data home pushed "
            "under the same device id", hint=COPIED_HINT)
    files = changed()
    if files:
        raise SyncError(
            f"the remote's copy of this device's stream ({me}) was rewritten: {files[0]} changed; "
            "memtray does not adopt it", hint="Nothing was imported or pushed. Run `memtray sync "
            "--republish` to publish this device's stream again from its own log.")
    seq = differs()
    if seq is not None:
        raise SyncError(
            f"the remote's stream of this device ({me}) differs from this home's log at seq {seq}: "
            "another data home pushed under the same device id", hint=COPIED_HINT)


# --- this device's push -------------------------------------------------------------


def must_republish(base: str | None, mine: str | None, *, asked: bool, purged: bool, own_purges: bool,
                   clear_copy: Fact[bool]) -> bool:
    """Whether this push publishes the stream again from the log (a new history, the next epoch)
    rather than adding a segment: asked (``--republish``), a purge applied here now (``purged``)
    or made here since the last push (``own_purges``), or a copy in clear (``clear_copy``: at
    ``base`` or on the remote) once this device seals (the migration to an encrypted remote).
    A first push (no ``base``, nothing of this device's on the remote) has nothing to publish again."""
    again = asked or purged or own_purges or clear_copy()
    return bool(again and (base or mine))


def next_epoch(epochs: Iterable[int]) -> int:
    """The epoch of a republication: above every copy's (``epochs``), so peers take it as one."""
    return max([0, *epochs]) + 1


@dataclass(frozen=True)
class Push:
    """How ``head`` goes to this device's ref on the remote. ``lease``: None for a fast-forward,
    else the commit it replaces ("": none), like a republication; ``kept``: the remote's copy is
    in ``head``, so its events are not counted as pushed again."""

    lease: str | None
    republished: bool
    kept: bool


def push(head: str | None, mine: str | None, *, republication: bool, fast_forward: Relation[bool]) -> Push | None:
    """How to push ``head`` over the remote's copy ``mine`` (None: nothing to push). A
    ``republication`` replaces the copy with a lease; so does a head the copy does not lead to
    (``fast_forward(mine, head)`` false: that remote holds an older epoch, a purge here published
    through another remote since); otherwise it is a fast-forward, never forced."""
    if head is None or head == mine:
        return None
    if republication:
        return Push(lease=mine or "", republished=True, kept=False)
    if mine and not fast_forward(mine, head):
        return Push(lease=mine, republished=True, kept=False)
    return Push(lease=None, republished=False, kept=bool(mine))


# --- a peer's stream ----------------------------------------------------------------


def news(dev: str, commit: str | None, seen: Any) -> str | None:
    """The commit of ``dev``'s stream to look at, if it may hold anything not imported at
    ``seen`` (its cursor's commit); None when it is that commit (the common case with many
    devices). :class:`SyncError` for a stream listed and not fetched (``commit`` None)."""
    if commit is None:
        raise SyncError(f"the stream of {dev} was listed but could not be fetched")
    return None if seen == commit else commit


@dataclass(frozen=True)
class PeerPlan:
    """What to do with a peer's stream: ``read`` its events after the cursor (or nothing new
    here); ``continuation``: first check that it only added files to the commit imported;
    ``note``: why nothing is read (an older copy), for the report."""

    read: bool
    continuation: bool = False
    note: str | None = None


def peer(dev: str, seen: Any, commit: str, *, ancestry: Relation[bool | None], republishes: Relation[bool],
         problem: Fact[str | None], stale: Fact[tuple[int, int] | None]) -> PeerPlan:
    """How the stream of ``dev`` at ``commit`` relates to what was imported at ``seen``:
    ``ancestry(older, newer)`` (None: ``older`` is not here), ``republishes(old, new)``,
    ``problem`` (why a republication is more than a purge) and ``stale`` (the epochs of an older
    copy) are asked of git. :class:`PeerRefused` for a stream rewritten by someone else."""
    if not seen:
        return PeerPlan(read=True)
    if ancestry(commit, seen):  # a remote behind another one: nothing new here
        return PeerPlan(read=False)
    ahead = ancestry(seen, commit)
    if ahead is False:
        if republishes(seen, commit):
            why = problem()
            if why is not None:
                raise PeerRefused(
                    f"the stream of device {dev} was republished with changes a purge cannot make: {why}",
                    hint=f"Nothing was imported from {dev}. If {dev} did not do this, someone with push "
                    f"access rewrote its stream: {REPUBLISH_HINT}.")
            return PeerPlan(read=True)
        older = stale()
        if older is not None:  # a remote this device has not synced with since its purge
            return PeerPlan(read=False, note=(
                f"the stream of {dev} here is an older copy (epoch {older[0]}; imported before: epoch "
                f"{older[1]}): nothing imported from it; {dev} replaces it when it syncs with this remote"))
        raise PeerRefused(
            f"the stream of device {dev} on the remote was rewritten by someone else (it no longer "
            f"contains {str(seen)[:12]}, imported here)",
            hint=f"Nothing was imported from {dev}. Restore that ref on the remote, or {dev} can "
            f"{REPUBLISH_HINT}; memtray never overwrites a stream.")
    return PeerPlan(read=True, continuation=bool(ahead))


def check_continuation(dev: str, changed: Sequence[str]) -> None:
    """A continuation only ever adds segments: :class:`PeerRefused` if a file imported changed."""
    if changed:
        raise PeerRefused(
            f"the stream of device {dev} on the remote was rewritten: {changed[0]} changed after it was "
            "imported here", hint=f"Nothing was imported from {dev}. Device {dev} can repair it: "
            f"{REPUBLISH_HINT}; or restore that ref on the remote.")


def is_republication(old: StreamHead, new: StreamHead) -> bool:
    """Whether ``new`` republishes the stream at ``old`` (after a purge): a higher epoch that
    still reaches as far."""
    return new.epoch > old.epoch and new.last_seq >= old.last_seq


def stale_copy(old: StreamHead, new: StreamHead, through: int) -> tuple[int, int] | None:
    """(its epoch, the epoch imported) when ``new`` is an older copy of the stream imported at
    ``old``: a lower epoch that reaches no further than what was imported (``through``). None
    otherwise (a same or lower epoch reaching further was rewritten)."""
    if new.epoch < old.epoch and new.last_seq <= max(through, old.last_seq):
        return new.epoch, old.epoch
    return None


def republication_problem(old_lines: Iterable[tuple[int, bytes]], new_lines: Iterable[tuple[int, bytes]],
                          through: int, same_file: Callable[[str, str], bool]) -> str | None:
    """Why ``new_lines`` are not ``old_lines`` (seq, line) republished after a purge (None if
    they are): each line up to ``through`` that was there must be there again, the same event,
    purged at most; no line may appear among them that was not there. ``same_file(old, new)``:
    whether attachment ``new`` is ``old`` purged (asked of the streams)."""
    old = {seq: line for seq, line in old_lines if 0 < seq <= through}
    new = {seq: line for seq, line in new_lines if seq <= through}
    if -1 in new:
        return "a line of the republished stream cannot be read"
    extra = sorted(set(new) - set(old))
    if extra:
        return f"the republished stream holds seq {extra[0]}, which the stream it replaces did not"
    for seq, line in sorted(old.items()):
        got = new.get(seq)
        if got is None:
            return f"the republished stream lacks seq {seq}"
        if got == line:
            continue
        try:
            a, b = decode_raw(line), decode_raw(got)
        except BadRecord:
            return f"seq {seq} of the republished stream is damaged"
        if tuple(a[:5]) != tuple(b[:5]):
            return f"seq {seq} is another event in the republished stream"
        problem = purge_problem(a.data, b.data, same_file=same_file)
        if problem is None and a.session != b.session and not (
                isinstance(a.session, str) and isinstance(b.session, str) and purged_text(a.session, b.session)):
            problem = "session: renamed, not purged"
        if problem is not None:
            return f"seq {seq} ({b.id}) was changed, not purged ({problem})"
    return None
