"""The git projection of memory: the repository in ``memory/`` follows the log.

A store subscriber turns each ``memory.written`` event into exactly one
commit. At start-up the repository is reconciled with the log: missing
commits are made (crash between append and commit), a deleted or damaged
repository is rebuilt beside the old one and swapped in (commits are
deterministic, so SHAs come back identical), and a hand edit of MEMORY.md in
the work tree is handed to ``record_edit`` to become a ``memory.written``
event with source ``user``.

The work tree is judged against HEAD only when git has caught up with the
log, and a file that still holds what memtray last checked out (its index
entry) is stale, not edited: a crash between moving the branch and writing
the files is repaired, never mistaken for the user's doing. A failed commit
is made again before the next one, so every event keeps exactly one commit.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from memtray.core.base.clock import Clock, parse_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.base.faults import crash_point
from memtray.core.base.fsutil import atomic_write, fsync_dir
from memtray.core.base.home import Home, device_id
from memtray.core.base.worker import WriterThread
from memtray.core.log.events import MemoryWritten, Record
from memtray.core.log.payloads import SCOPE_NAME_RULE
from memtray.core.log.projections import State
from memtray.core.log.store import Store
from memtray.core.memory import factdiff, scopes
from memtray.core.memory.gitrepo import (
    FILES,
    GitError,
    GitRepo,
    RepoDamaged,
    UnstorableText,
    aside_path,
    bring_back,
    hand_edits,
    probe,
)
from memtray.core.memory.peers import PeerLine
from memtray.core.memory.revisions import commit_message

log = logging.getLogger(__name__)

#: records a hand edit: ``record_edit(memory, reason="user-edit", source="user", history=...)``
RecordEdit = Callable[..., Any]


class GitProjection:
    """Keeps ``memory/`` equal to the log's ``memory.written`` events (see the module doc)."""

    def __init__(self, store: Store, home: Home, clock: Clock, record_edit: RecordEdit) -> None:
        self.store = store
        self.home = home
        self.clock = clock
        self.record_edit = record_edit
        #: the single writer the repository checks (set by the composition root)
        self.writer: WriterThread | None = None
        self.git = self._repo(home.memory)
        #: (seq, event id) of the last memory.written appended while this runs
        self.last_written: tuple[int, str] | None = None
        #: merge revisions' other parents: commits of other devices' revisions (see peers.py)
        self.peers = PeerLine(store, lambda: device_id(home))
        self.commits_made_on_start = 0
        self._behind = False  # a commit failed: make the missing ones before the next
        #: memory.written events git cannot store (text older versions logged: a lone surrogate),
        #: seq -> why; skipped by git (quarantined), reported by start-up and the doctor
        self.quarantined: dict[int, str] = {}
        self.adopting = False
        #: what start-up found and repaired that the user should be told of (the desktop shows it)
        self.problems: list[str] = []

    def start(self) -> None:
        """Reconcile git with the log (under the app lock), then follow new events.

        A repository too damaged to read (an empty or corrupt object, a broken ref:
        :class:`~memtray.core.memory.gitrepo.RepoDamaged`) is made again from the log in a
        sibling folder and swapped in, the damaged one kept as ``memory.damaged-*``:
        git is a projection of the log and its commits are deterministic, so the
        rebuilt one has the same revisions and SHAs. Unrecorded hand edits and the
        user's own files are carried over. A write failure (a full disk) is not
        damage: it is raised and nothing is moved.
        """
        self.store.subscribe(self._on_append)  # before adopting: a hand edit's event needs its commit
        try:
            self._remove_stale_rebuilds()
            try:
                self.git.open()
                self.git.clean_stale_locks()
                probe(self.git)
            except RepoDamaged as exc:
                self._rebuild_damaged(exc)
            else:
                behind = self.head_seq() != self.store.state.memory_seq
                carried = hand_edits(self.home.memory) if behind else {}
                base = {n: self.git.read(h, n) if (h := self.git.head()) else "" for n in carried}
                self.commits_made_on_start = self.catch_up()
                if carried:
                    self._merge_behind_edits(carried, base)
            self.adopt_worktree()
        except GitError as exc:
            # git is a projection: one that cannot follow the log now (a full disk, a lock it
            # cannot remove) never stops a command. Memory is read from the log; git catches up
            # on the next write or start, and `memtray doctor` says what is wrong.
            self._behind = True
            said = (f"The memory repository could not follow the event log ({exc}); your memory is "
                    "safe in the log and git catches up on the next write or start. "
                    "Run `memtray doctor` for details.")
            log.warning("%s", said)
            self.problems.append(said)
        self.problems += [said[0].upper() + said[1:] + "." for said in self.git.removed_links]
        for name, to in unread_scope_files(self.home.memory):  # the user's facts, in a file never read
            said = unread_said(name, to)
            log.warning("%s", said)
            self.problems.append(said[0].upper() + said[1:] + " (`memtray doctor --repair` renames it).")
        if self.quarantined:
            seqs = ", ".join(str(q) for q in sorted(self.quarantined))
            said = (f"{len(self.quarantined)} memory revision(s) (event seq {seqs}) hold text git cannot store; "
                    "they are kept in the log and skipped in git. Run `memtray doctor --repair`.")
            log.warning("%s", said)
            self.problems.append(said)

    def _merge_behind_edits(self, carried: dict[str, bytes], base: dict[str, str]) -> None:
        """A hand edit made while git was behind the log was made on an older MEMORY.md than
        the log's: carry the user's changes (from that text to the edit) onto the log's
        latest, so neither the edit nor the writes git had missed are lost. The result is
        left in the work tree, which start-up then records as a user edit."""
        head = self.git.head()
        for name, data in carried.items():
            edited = data.decode("utf-8", "replace")
            latest = self.git.read(head, name) if head else ""
            if name == "MEMORY.md":
                merged = factdiff.rebase(latest, base[name], edited)
            elif edited.startswith(base[name]):  # HISTORY.md is a diary: the user appended to it
                merged = latest + edited[len(base[name]):]
            else:
                kept = self.home.memory / f"{name}.unmerged"
                atomic_write(kept, data)
                self.problems.append(f"Your edit of {name} was made on an older version than the log's and "
                                     f"could not be merged; it is kept in {kept}.")
                continue
            atomic_write(self.home.memory / name, merged.encode("utf-8"))
            log.warning("%s was edited by hand while git was behind the log; the edit was merged onto "
                        "the log's latest", name)

    def _remove_stale_rebuilds(self) -> None:
        # a crash during a rebuild leaves a half-made copy: derived data, never the user's only copy
        for p in self.home.root.glob(f"{self.home.memory.name}.rebuilding-*"):
            if p.is_dir() and not p.is_symlink():
                log.warning("removing %s, left by an interrupted rebuild", p.name)
                shutil.rmtree(p, ignore_errors=True)

    def _logged_texts(self) -> set[str]:
        return {MemoryWritten.of(r).memory for r in self.store.log.records() if r.type == MemoryWritten.TYPE}

    def _rebuild_damaged(self, exc: RepoDamaged) -> None:
        home = self.home
        if self.store.readonly:
            raise GitError(f"the memory repository is damaged ({exc}) and the event log is read-only",
                           hint="Run `memtray doctor --repair`: it repairs the log, then rebuilds memory/.")
        log.error("the memory repository is damaged (%s); rebuilding it from the event log", exc)
        self.git.close()
        self.peers.reset()
        stamp = self.clock.now().strftime("%Y%m%dT%H%M%S")
        carried = hand_edits(home.memory, self._logged_texts())
        work = aside_path(home.memory, "rebuilding", stamp)
        try:
            # made beside the damaged one and swapped in only when complete: a failure or a
            # crash on the way leaves memory/ as it was
            self.git = self._repo(work).open()
            made = self.catch_up()
            left = bring_back(home.memory, work, carried)
            self.git.close()
            aside = aside_path(home.memory, "damaged", stamp)
            os.rename(home.memory, aside)
            try:
                os.rename(work, home.memory)
            except OSError:
                os.rename(aside, home.memory)  # put the damaged one back: memory/ as it was
                raise
            fsync_dir(home.root)
        except Exception as err:
            self.git.close()
            self.peers.reset()
            shutil.rmtree(work, ignore_errors=True)
            self.git = self._repo(home.memory)
            raise GitError(f"the memory repository is damaged ({exc}) and could not be rebuilt: {err}") from err
        self.git = self._repo(home.memory).open()
        self.commits_made_on_start = made
        said = (f"The memory repository was damaged ({exc}). It was rebuilt from the event log "
                f"({made} revision{'' if made == 1 else 's'}); the damaged copy is kept in {aside}.")
        if carried:
            said += f" Your unrecorded edit of {', '.join(sorted(carried))} was carried over."
        if left:
            said += f" Links left in the damaged copy: {', '.join(left)}."
        log.warning("%s", said)
        self.problems.append(said)

    def _on_append(self, records: list[Record], _state: State) -> None:
        for rec in records:
            if rec.type != MemoryWritten.TYPE:
                continue
            self.last_written = (rec.seq, rec.id)
            crash_point("memory.appended")
            try:
                if self._behind:
                    self.catch_up()  # commits every logged event git lacks, this one included
                else:
                    self._commit(rec)
            except MemtrayError as exc:
                # The event is durable; git is derived. Catch up on the next write or start.
                self._behind = True
                log.error("could not commit memory revision for event %d (will retry): %s", rec.seq, exc)
                continue
            crash_point("memory.committed")

    def _commit(self, rec: Record) -> str:
        head = self.git.head()
        # the global facts in MEMORY.md, each scope's in scopes/NAME.md (core/memory/scopes.py)
        files = {**scopes.files(MemoryWritten.of(rec).memory), "HISTORY.md": self.peers.history(rec, self.git, head)}
        parents = self.peers.commit_parents(rec, self.git, head)
        sha = self.git.commit(files, commit_message(rec), parse_ts(rec.ts), parents=parents)
        gone = [f"{scopes.FOLDER}/{n}" for n in self.git.listdir(head, scopes.FOLDER)] if head else []
        if gone := [n for n in gone if n not in files]:
            self.git.remove_files(gone)
        self.peers.committed(rec, sha)
        self._behind = False
        return sha

    def head_seq(self) -> int:
        """The seq of the last memory.written git holds, quarantined ones counted as held."""
        head = self.git.head()
        seq = 0 if head is None else int(self.git.info(head).trailers.get("Event-Seq", "0") or 0)
        later = [q for q in self.quarantined if q > seq]
        return max([seq, *later]) if later and max(later) <= self.store.state.memory_seq else seq

    def catch_up(self) -> int:
        """Make the commits missing for logged ``memory.written`` events. Returns how many."""
        state = self.store.state
        after = self.head_seq()
        if after == state.memory_seq:
            self._behind = False
            return 0
        if after == 0:
            # made from the start (a purge deleted the repository, a rebuild): the side line's
            # commits cached so far are in no repository now, and the log they came from may
            # have been rewritten; reading them again keeps every parent in this repository
            self.peers.reset()
        if after > state.memory_seq:
            # git is ahead of the log (restored from a backup?): rebuild it from the log
            log.warning("memory repository is ahead of the event log; rebuilding it from the log")
            self.git.set_ref("refs/heads/main", None)
            self.peers.reset()
            after = 0
        made = 0
        for rec in self.store.log.records(after):
            if rec.seq > state.memory_seq:
                break
            if rec.type == MemoryWritten.TYPE:
                try:
                    self._commit(rec)
                except UnstorableText as exc:  # it can never be committed: skip it, keep the rest
                    if rec.seq not in self.quarantined:
                        log.warning("memory revision of event %d quarantined: %s", rec.seq, exc)
                    self.quarantined[rec.seq] = str(exc)
                    continue
                made += 1
        if made:
            log.info("made %d memory commit(s) missing for logged events", made)  # recovered: normal after a purge or a crash
        self._behind = False
        return made

    def reconcile(self) -> None:
        """Make git match the log; turn a hand edit of the work tree into an event."""
        self.catch_up()
        self.adopt_worktree()

    def adopt_worktree(self) -> bool:
        """Record a hand edit of MEMORY.md / HISTORY.md as a ``user-edit``; restore missing or
        stale files (a crash between moving the branch and writing them). True if an edit was recorded."""
        if self._behind or self.head_seq() != self.store.state.memory_seq:
            # The work tree can only be judged against a HEAD that matches the log.
            try:
                self.catch_up()
            except MemtrayError as exc:
                log.warning("memory repository still behind the log (%s); not checking for hand edits", exc)
                return False
        head = self.git.head()
        if head is None:
            return self._adopt_first()
        names = [*FILES, *self._scope_files(head)]
        status = {n: self.git.worktree_status(n, head) for n in names}
        if all(v == "clean" for v in status.values()):
            return False
        edited = {n for n, v in status.items() if v == "edited"}
        recorded = False
        if edited and not self.store.readonly and not self.adopting:
            on_disk = {n: self.git.worktree_text(n) for n in edited}
            if edited - {"HISTORY.md"}:
                # the memory is every memory file as it is now: edited ones from the disk
                now = {n: on_disk[n] or "" if n in edited else self.git.read(head, n) for n in names}
                named = {n[len(scopes.FOLDER) + 1:-3]: t for n, t in now.items() if n.startswith(scopes.FOLDER + "/")}
                new_mem = scopes.from_files(now["MEMORY.md"], named)
            else:
                new_mem = self.git.read_memory(head)
            hist = on_disk.get("HISTORY.md")
            log.warning("%s edited by hand; recording it as a user edit", " and ".join(sorted(edited)))
            self.adopting = True
            try:
                self.record_edit(new_mem, reason="user-edit", source="user", history=hist)
            finally:
                self.adopting = False
            recorded = True
            head = self.git.head()
            assert head is not None
        restore = {n for n, v in status.items() if v in ("missing", "stale")}
        if restore and not recorded:  # recording an edit commits, which rewrites both files
            self.git.checkout_files({n: self.git.read(head, n) for n in restore
                                     if n in FILES or self.git.read(head, n)})
        return recorded

    def _scope_files(self, head: str) -> list[str]:
        """The scope files of ``head`` and those the user put in ``scopes/`` by hand."""
        return scope_files(self.home.memory, [f"{scopes.FOLDER}/{n}" for n in self.git.listdir(head, scopes.FOLDER)])

    def _adopt_first(self) -> bool:
        """No revision yet: a MEMORY.md (or HISTORY.md) written by hand is the first one."""
        on_disk = {n: self.git.worktree_text(n) for n in FILES}
        if self.store.readonly or self.adopting or not any(on_disk.values()):
            return False
        log.warning("MEMORY.md written by hand before the first revision; recording it as a user edit")
        self.adopting = True
        try:
            self.record_edit(on_disk["MEMORY.md"] or "", reason="user-edit", source="user", history=on_disk["HISTORY.md"])
        finally:
            self.adopting = False
        return True

    def check_worktree(self) -> bool:
        """Pick up a hand edit made while memtray runs. Returns True if one was recorded."""
        before = self.store.state.memory_seq
        self.reconcile()
        return self.store.state.memory_seq != before

    def bind_writer(self, writer: WriterThread) -> None:
        self.writer = writer
        self.git.writer = writer

    def _repo(self, path: Any) -> GitRepo:
        repo = GitRepo(path)
        repo.writer = self.writer
        return repo

    def close(self) -> None:
        self.git.close()


def scope_files(root: Path, committed: Collection[str]) -> list[str]:
    """``committed`` (``scopes/NAME.md`` of a revision) and the scope files the user put in
    ``root/scopes/`` by hand, sorted."""
    folder = root / scopes.FOLDER
    found = {n.removeprefix(scopes.FOLDER + "/") for n in committed}
    if folder.is_dir() and not folder.is_symlink():
        found |= {p.name for p in folder.iterdir() if p.suffix == ".md" and p.is_file() and scopes.is_file_name(p.name)}
    return [f"{scopes.FOLDER}/{n}" for n in sorted(found)]


def unread_scope_files(root: Path) -> list[tuple[str, str | None]]:
    """What the user put in ``root/scopes/`` that memtray does not read as a scope: a file
    whose name is no scope name (``Work.md``, ``My project.md``, ``Famille é.md``,
    ``work.txt``), a folder, a link. Each with the name it would be read under
    (``work.md``), if there is one. Hidden entries (``.DS_Store``) are left out.

    Such a file is never read and never mapped to a scope by a guess (``Work.md`` and
    ``work.md`` can both exist, and be one file on a case-insensitive disk): it is said,
    by ``memtray doctor`` (whose repair renames it), ``memory scopes``, ``memory show`` and
    the app at start (:attr:`GitProjection.problems`)."""
    folder = root / scopes.FOLDER
    if not folder.is_dir() or folder.is_symlink():
        return []
    out: list[tuple[str, str | None]] = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or (scopes.is_file_name(p.name) and p.is_file() and not p.is_symlink()):
            continue
        out.append((p.name, scope_file_name(p.name) if p.is_file() and not p.is_symlink() else None))
    return out


def scope_file_name(name: str) -> str | None:
    """The scope file name for a file named ``name`` (``My Project.md`` -> ``my-project.md``,
    ``Famille é.md`` -> ``famille-e.md``), or None when it has no letter or digit to keep."""
    import re
    import unicodedata

    stem = name[:-3] if name.lower().endswith(".md") else name.rsplit(".", 1)[0] if "." in name[1:] else name
    ascii_ = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9_-]+", "-", ascii_).strip("-_")[:32].strip("-_")
    return f"{slug}.md" if slug and slug != scopes.GLOBAL and scopes.is_file_name(f"{slug}.md") else None


def unread_said(name: str, to: str | None) -> str:
    """One unread file of :func:`unread_scope_files`, said."""
    how = f"rename it to {scopes.FOLDER}/{to}" if to else f"move its facts into a {scopes.FOLDER}/NAME.md"
    return (f"memory/{scopes.FOLDER}/{name} is not read: a scope's file is NAME.md, NAME {SCOPE_NAME_RULE}, "
            f"so its facts are in no scope and no prompt; {how}")
