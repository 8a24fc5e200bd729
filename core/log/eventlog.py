"""The append-only event log: segment files, durable appends, recovery on open.

Layout: ``events/000001.jsonl``, ``000002.jsonl``, ... Each record is one line
(see :mod:`memtray.core.log.events`), written by the single writer with one
``os.write`` on an ``O_APPEND`` descriptor and fsynced before :meth:`EventLog.append`
returns: an append is acknowledged only once it is durable.

Recovery on open (writer): every checksum of the last segment is checked (its
seqs and ids only after the checkpoint, when the store passes one that lies in
it); segments are small (4 MiB), so this costs at most a few milliseconds
whatever the log's length. A torn or checksum-failing *last* record is cut off,
its bytes kept in ``<segment>.torn`` and a warning logged. A bad record followed
by good ones is never skipped: the log opens read-only, and
:attr:`EventLog.problem` says where and what to run. (Damage in older segments
is found by the read that reaches it, by ``memtray events verify`` and by
``memtray doctor``.)

A failed write or fsync (ENOSPC, EIO) truncates back to the last acknowledged
offset and raises :class:`LogWriteError`; state does not advance, and a retry
with the same event id is idempotent (the id is looked up before appending).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from memtray.core.base.clock import Clock, IdGenerator, format_ts
from memtray.core.base.errors import LogCorrupt, LogReadOnly, LogWriteError, UnknownEventVersion
from memtray.core.base.fsutil import (
    FILE_MODE,
    LINK_HINT,
    FileOps,
    describe_oserror,
    ensure_dir,
    fsync_dir,
)
from memtray.core.log.events import (
    SCHEMA,
    Record,
    Schema,
    encode,
    envelopes,
)
from memtray.core.log.segments import (
    DEFAULT_SEGMENT_BYTES,
    Damage,
    Position,
    Scan,
    checked_from,
    last_record,
    list_segments,
    scan_envelopes,
    scan_segment,
    segment_path,
)

log = logging.getLogger(__name__)

_RECENT_IDS = 50_000

class EventLog:
    """The log of one data home. Use :meth:`open`; one writer per home (see HomeLock)."""

    def __init__(
        self,
        directory: Path,
        *,
        readonly: bool,
        clock: Clock,
        ids: IdGenerator,
        segment_bytes: int,
        files: FileOps,
        schema: Schema,
    ) -> None:
        self.dir = directory
        self.readonly = readonly
        self.clock = clock
        self.ids = ids
        self.segment_bytes = segment_bytes
        self.files = files
        self.schema = schema
        self.problem: Damage | None = None
        self.cut: list[Damage] = []
        self._lock = threading.RLock()
        self._fd: int | None = None
        self._segment = 1
        self._size = 0
        self._last_seq = 0
        self._ids: OrderedDict[str, int] = OrderedDict()
        #: ids not yet loaded into ``_ids``: the records of this segment before this offset
        #: (opened after a checkpoint; loaded on the first append that carries an id)
        self._ids_before: Position | None = None
        #: recovery checked only what follows the checkpoint it was given (see :meth:`open`)
        self.trusted_used = False
        self._wedged = False
        self._listeners: list[Any] = []

    # --- opening --------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        *,
        readonly: bool = False,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        files: FileOps | None = None,
        schema: Schema = SCHEMA,
        trusted: tuple[Position, int] | None = None,
    ) -> EventLog:
        """Open (and, for a writer, recover) the log in ``directory``.

        ``trusted`` is a checkpoint's (position, seq): when it lies in the last
        segment, recovery still checks every checksum of that segment (damage
        anywhere in it opens the log read-only, as without a checkpoint) but reads
        seqs and ids only after it; the rest of the recent-ids index is loaded on
        the first append that carries an id. Anything irregular falls back to
        scanning the whole segment carefully.
        """
        clock = clock or Clock()
        self = cls(
            Path(directory).absolute(),
            readonly=readonly,
            clock=clock,
            ids=ids or IdGenerator(clock),
            segment_bytes=segment_bytes,
            files=files or FileOps(),
            schema=schema,
        )
        if not readonly:
            ensure_dir(self.dir)
        self._recover(trusted)
        return self

    def _recover(self, trusted: tuple[Position, int] | None = None) -> None:
        segs = list_segments(self.dir)
        if not segs:
            self._segment, self._size, self._last_seq = 1, 0, 0
            return
        number, path = segs[-1]
        expect: int | None = None
        if len(segs) > 1:
            prev = last_record(segs[-2][1], segs[-2][0])
            if prev is not None:
                expect = prev.seq + 1
                self._last_seq = prev.seq
        self._segment = number
        if trusted is not None and trusted[0].segment == number:
            pos, seq = trusted
            fast = checked_from(path, pos, seq, expect)
            if fast is not None:
                seqs, ids, self._size = fast
                self._last_seq = seqs[-1] if seqs else seq
                self._ids.update(zip(ids[-_RECENT_IDS:], seqs[-_RECENT_IDS:], strict=True))
                self._ids_before = pos
                self.trusted_used = True
                return
        fast = scan_envelopes(path, expect)
        if fast is not None:
            seqs, ids, self._size = fast
            self._ids.update(zip(ids[-_RECENT_IDS:], seqs[-_RECENT_IDS:], strict=True))
            while len(self._ids) > _RECENT_IDS:
                self._ids.popitem(last=False)
            if seqs:
                self._last_seq = seqs[-1]
            return
        scan = scan_segment(path, number, 0, expect)
        for rec in scan.records[-_RECENT_IDS:]:
            self._remember_id(rec.id, rec.seq)
        if scan.records:
            self._last_seq = scan.records[-1].seq
        self._size = scan.good_end
        if scan.damage is None:
            return
        if scan.damage.at_tail and not self.readonly:
            self._cut_tail(path, scan.good_end, scan.damage)
        elif scan.damage.at_tail:
            # Readers never repair; the torn tail is simply not visible to them.
            pass
        else:
            self.problem = scan.damage
            self.readonly = True
            log.error("event log damaged: %s; opened read-only", scan.damage.describe())

    def _cut_tail(self, path: Path, good_end: int, damage: Damage) -> None:
        with open(path, "rb") as fh:
            fh.seek(good_end)
            torn = fh.read()
        side = path.with_name(path.name + ".torn")
        fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
        try:
            os.write(fd, torn)
            os.fsync(fd)
        finally:
            os.close(fd)
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.ftruncate(fd, good_end)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(self.dir)
        self.cut.append(damage)
        log.warning(
            "cut %d bytes off the end of %s (%s); they are kept in %s",
            len(torn), path.name, damage.reason, side.name,
        )

    # --- state ----------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def head(self) -> Position:
        return Position(self._segment, self._size)

    def _remember_id(self, event_id: str, seq: int) -> None:
        self._ids[event_id] = seq
        if len(self._ids) > _RECENT_IDS:
            self._ids.popitem(last=False)

    def _load_earlier_ids(self) -> None:
        """Complete the recent-ids index with the records recovery did not read (before
        the checkpoint it trusted), so a retried append is still recognised."""
        pos, self._ids_before = self._ids_before, None
        assert pos is not None
        path = segment_path(self.dir, pos.segment)
        try:
            with open(path, "rb") as fh:
                buf = fh.read(pos.offset)
        except OSError as exc:
            log.warning("could not read %s for recent event ids: %s", path.name, exc)
            return
        lines = buf.split(b"\n")
        lines.pop()
        found = envelopes(lines)
        if found is None:  # a line envelopes cannot read: the careful scan keeps what it vouches for
            scan = scan_segment(path, pos.segment)
            kept = [(r.id, r.seq) for r, end in zip(scan.records, scan.ends, strict=True) if end <= pos.offset]
        else:
            kept = list(zip(found[1], found[0], strict=True))
        earlier = OrderedDict(kept[-_RECENT_IDS:])
        earlier.update(self._ids)
        while len(earlier) > _RECENT_IDS:
            earlier.popitem(last=False)
        self._ids = earlier

    def add_listener(self, fn: Any) -> None:
        """``fn(records)`` is called (under the log lock) after each durable append."""
        self._listeners.append(fn)

    # --- appending ------------------------------------------------------------------

    def append(
        self,
        type: str,
        data: Mapping[str, Any],
        *,
        session: str | None = None,
        id: str | None = None,
        v: int | None = None,
    ) -> Record:
        """Append one event durably and return its record."""
        return self.append_many([(type, data, session, id, v)])[0]

    def append_many(
        self, items: Iterable[tuple[str, Mapping[str, Any], str | None, str | None, int | None]]
    ) -> list[Record]:
        """Append events with one write and one fsync (group commit), in order.

        Events whose id is already in the log are not written again; their existing
        records are returned instead (idempotent retries).
        """
        with self._lock:
            if self.readonly:
                if self.problem is not None:
                    raise LogCorrupt(f"the event log is damaged ({self.problem.describe()}); it is read-only")
                raise LogReadOnly("the event log is open read-only")
            if self._wedged:
                self._rewind_after_failure()
            out: list[Record | None] = []
            new: list[Record] = []
            lines: list[bytes] = []
            seq = self._last_seq
            ts = format_ts(self.clock.now())
            items = list(items)
            if self._ids_before is not None and any(item[3] is not None for item in items):
                self._load_earlier_ids()
            for type_, data, session, event_id, v in items:
                if event_id is not None and event_id in self._ids:
                    out.append(self.get(self._ids[event_id]))
                    continue
                seq += 1
                rec = Record(
                    seq,
                    event_id or self.ids.new(),
                    ts,
                    type_,
                    v if v is not None else self.schema.versions.get(type_, 1),
                    session,
                    dict(data),
                )
                new.append(rec)
                out.append(rec)
                lines.append(encode(rec))
            if new:
                self._write(b"".join(lines))
                for rec in new:
                    self._remember_id(rec.id, rec.seq)
                self._last_seq = seq
                for fn in self._listeners:
                    fn(new)
            return [r for r in out if r is not None]

    def _ensure_fd(self, extra: int) -> None:
        if self._fd is not None and self._size > 0 and self._size + extra > self.segment_bytes:
            self.files.close(self._fd)
            self._fd = None
            self._segment += 1
            self._size = 0
        if self._fd is None:
            path = segment_path(self.dir, self._segment)
            created = not path.exists()
            try:
                self._fd = self.files.open_append(path)
                if created:
                    self.files.fsync_dir(self.dir)
            except OSError as exc:
                self._fd = None
                hint = LINK_HINT if exc.errno == errno.ELOOP else None
                raise LogWriteError(f"could not open {path.name}: {describe_oserror(exc)}", hint=hint) from exc

    def _write(self, blob: bytes) -> None:
        self._ensure_fd(len(blob))
        assert self._fd is not None
        before = self._size
        done = 0
        try:
            # A short write is not an error by itself (the file system had room for only
            # part of it): write the rest, and the kernel names what stops it (ENOSPC...).
            while done < len(blob):
                n = self.files.write(self._fd, blob[done:] if done else blob)
                if n <= 0:
                    raise OSError(errno.ENOSPC, "no room for the rest of the record")
                done += n
            self.files.fsync(self._fd)
        except OSError as exc:
            self._undo(before)
            part = f" ({done} of {len(blob)} bytes written, then taken back)" if 0 < done < len(blob) else ""
            raise LogWriteError(f"could not write to the event log: {describe_oserror(exc)}{part}") from exc
        self._size = before + len(blob)

    def _undo(self, size: int) -> None:
        """Take back a failed append so the file matches what was acknowledged."""
        assert self._fd is not None
        try:
            self.files.truncate(self._fd, size)
            self.files.fsync(self._fd)
        except OSError:
            # We cannot tell what reached the disk: rescan before the next append.
            self._wedged = True
        with contextlib.suppress(OSError):
            self.files.close(self._fd)
        self._fd = None

    def _rewind_after_failure(self) -> None:
        """After a failed undo: adopt whatever complete records reached disk, cut the rest."""
        path = segment_path(self.dir, self._segment)
        if path.exists():
            scan = scan_segment(path, self._segment, self._size, self._last_seq + 1)
            for rec in scan.records:
                self._remember_id(rec.id, rec.seq)
                self._last_seq = rec.seq
            if scan.tail_bytes and scan.damage is not None:
                self._cut_tail(path, scan.good_end, scan.damage)
            self._size = scan.good_end
        self._wedged = False

    # --- reading --------------------------------------------------------------------

    def read(self, after: Position | None = None, *, upcast: bool = True) -> Iterator[tuple[Record, Position]]:
        """Every record after ``after`` (or from the start), with where it ends.

        Raises :class:`LogCorrupt` at a damaged record that has good ones after it.
        A torn tail (possible for readers while a writer appends) ends the stream.
        """
        for scan in self._scans(after):
            for rec, pos in scan.pairs():
                yield (self._upcast(rec) if upcast else rec), pos

    def iter_records(self, after: Position | None = None) -> Iterator[Record]:
        """Like :meth:`read`, upcast, without positions: the replay path."""
        versions = self.schema.versions
        upcast = self._upcast
        for scan in self._scans(after):
            for rec in scan.records:
                if rec.v != versions.get(rec.type, rec.v):
                    rec = upcast(rec)
                yield rec

    def upcast(self, rec: Record) -> Record:
        """``rec`` at its type's current version; a type or version this memtray does not
        know is returned as it is (kept verbatim, skipped by the fold)."""
        return self._upcast(rec)

    def _upcast(self, rec: Record) -> Record:
        try:
            current = self.schema.versions.get(rec.type)
            if current is None or rec.v > current:
                return rec  # unknown type or newer version: kept verbatim
            return self.schema.upcast(rec)
        except (KeyError, TypeError, ValueError, AttributeError, UnknownEventVersion):
            # a record no upcaster can read (a log written before the door checked what peers
            # sent): as it is; the fold names it unfoldable and the doctor repairs it
            return rec

    def _scans(self, after: Position | None) -> Iterator[Scan]:
        start_seg = after.segment if after else 0
        for number, path in list_segments(self.dir):
            if number < start_seg:
                continue
            start = after.offset if after and number == after.segment else 0
            scan = scan_segment(path, number, start)
            yield scan
            if scan.damage is not None:
                if number == list_segments(self.dir)[-1][0] and scan.damage.at_tail:
                    return
                raise LogCorrupt(f"the event log is damaged: {scan.damage.describe()}")

    def records(self, after_seq: int = 0) -> Iterator[Record]:
        for rec, _ in self.read():
            if rec.seq > after_seq:
                yield rec

    def get(self, seq: int) -> Record:
        for rec, _ in self.read():
            if rec.seq == seq:
                return rec
        raise KeyError(seq)

    def tail(self, n: int) -> list[Record]:
        """The last ``n`` records, reading segments from the end."""
        out: list[Record] = []
        for number, path in reversed(list_segments(self.dir)):
            scan = scan_segment(path, number)
            out = scan.records + out
            if len(out) >= n:
                break
        return out[-n:] if n else []

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    self.files.close(self._fd)
                self._fd = None
