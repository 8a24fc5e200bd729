"""Git-versioned memory: MEMORY.md and HISTORY.md as a projection of the log.

Every memory change is a ``memory.written`` event (full new MEMORY.md text,
reason, fact diff, optional HISTORY.md entry). The git repository in
``memory/`` is derived from those events: a store subscriber turns each one
into exactly one commit, with trailers ``Event-Seq``, ``Reason``,
``Consolidation`` and ``Model``. At start-up the repository is reconciled
with the log: missing commits are made (crash between append and commit), a
deleted repository is rebuilt (commits are deterministic, so SHAs come back
identical), and a hand edit of MEMORY.md in the work tree becomes a
``memory.written`` event with source ``user``.

While memtray runs, a hand edit is recorded by :meth:`MemoryService.check_worktree`
(the consolidation service's periodic sweep calls it) and, at the latest, before
the next write, so a checkout never overwrites it unrecorded. The work tree is
judged against HEAD only when git has caught up with the log, and a file that
still holds what memtray last checked out (its index entry) is stale, not
edited: a crash between moving the branch and writing the files is repaired,
never mistaken for the user's doing. A failed commit is made again before the
next one, so every event keeps exactly one commit.

Browsing, restore, rollback, review and provenance live here too; the CLI and
the desktop call the same methods.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memtray.core.base.clock import parse_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.base.faults import crash_point
from memtray.core.base.fsutil import atomic_write, fsync_dir
from memtray.core.base.redact import redact
from memtray.core.log.events import MemoryReviewed, MemoryRolledBack, MemoryWritten, Record
from memtray.core.log.projections import State
from memtray.core.memory import factdiff
from memtray.core.memory.factdiff import Fact, FactDiff
from memtray.core.memory.gitrepo import (
    FILES,
    BadRevision,
    CommitInfo,
    GitError,
    GitRepo,
    RepoDamaged,
    aside_path,
    bring_back,
    hand_edits,
    probe,
)
from memtray.core.memory.guard import review_item

if TYPE_CHECKING:
    from memtray.core.app import App

log = logging.getLogger(__name__)

REASONS = ("consolidation", "agent", "user-edit", "restore", "rollback", "redo", "review", "adopt", "rebuild", "import")
MAX_MEMORY_CHARS = 200_000
#: why a fact left memory when a consolidation dropped it unasked under policy ``review``
SILENT_HELD = "silent (held for review)"


class MemoryError_(MemtrayError):
    """A memory operation could not be done."""


@dataclass(frozen=True)
class Revision:
    rev: str
    time: datetime
    reason: str
    model: str
    added: int
    removed: int
    changed: int
    flagged: int
    consolidation: str | None
    event_seq: int
    subject: str

    @property
    def short(self) -> str:
        return self.rev[:8]

    def to_json(self) -> dict[str, Any]:
        return {
            "rev": self.rev,
            "time": self.time.isoformat().replace("+00:00", "Z"),
            "reason": self.reason,
            "model": self.model,
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "flagged": self.flagged,
            "consolidation": self.consolidation,
            "event_seq": self.event_seq,
        }


def _revision(info: CommitInfo) -> Revision:
    t = info.trailers
    facts = t.get("Facts", "+0 -0 ~0").split()
    nums = [int(x[1:]) if len(x) > 1 and x[1:].isdigit() else 0 for x in facts] + [0, 0, 0]
    return Revision(
        info.sha, info.time, t.get("Reason", "?"), t.get("Model", "-"), nums[0], nums[1], nums[2],
        int(t.get("Flagged", "0") or 0), t.get("Consolidation") or None, int(t.get("Event-Seq", "0") or 0),
        info.subject,
    )


def commit_message(rec: Record) -> str:
    d = rec.data
    diff = d.get("diff") or {}
    a, r, c = len(diff.get("added", [])), len(diff.get("dropped", [])), len(diff.get("changed", []))
    flagged = len(d.get("flagged") or [])
    reason = d.get("reason", "?")
    subject = f"{reason}: +{a} -{r} ~{c}" + (f", {flagged} flagged" if flagged else "")
    trailers = [f"Event-Seq: {rec.seq}", f"Reason: {reason}"]
    if d.get("consolidation"):
        trailers.append(f"Consolidation: {d['consolidation']}")
    trailers.append(f"Model: {d.get('model') or '-'}")
    trailers.append(f"Source: {d.get('source', 'memtray')}")
    trailers.append(f"Facts: +{a} -{r} ~{c}")
    trailers.append(f"Flagged: {flagged}")
    return subject + "\n\n" + "\n".join(trailers) + "\n"


def history_entry(ts: datetime, text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    if not re.match(r"^\[\d{4}-\d{2}-\d{2}", text):
        text = f"[{ts.strftime('%Y-%m-%d %H:%M')}] {text}"
    return text + "\n\n"


def _apply_history(prev: str, rec: Record) -> str:
    d = rec.data
    if d.get("history") is not None:
        return str(d["history"])
    entry = d.get("history_append")
    if entry:
        return prev + history_entry(parse_ts(rec.ts), entry)
    return prev


class MemoryService:
    def __init__(self, app: App) -> None:
        self.app = app
        self.store = app.store
        self.git = GitRepo(app.home.memory)
        self.commits_made_on_start = 0
        self._behind = False  # a commit failed: make the missing ones before the next
        self._adopting = False
        #: what start-up found and repaired that the user should be told of (the desktop shows it)
        self.problems: list[str] = []

    # --- the projection into git ------------------------------------------------------

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
        self._remove_stale_rebuilds()
        try:
            self.git.open()
            self.git.clean_stale_locks()
            probe(self.git)
        except RepoDamaged as exc:
            self._rebuild_damaged(exc)
        else:
            behind = self.head_seq() != self.store.state.memory_seq
            carried = hand_edits(self.app.home.memory) if behind else {}
            base = {n: self.git.read(h, n) if (h := self.git.head()) else "" for n in carried}
            self.commits_made_on_start = self._catch_up()
            if carried:
                self._merge_behind_edits(carried, base)
        self._adopt_worktree()
        self.problems += [said[0].upper() + said[1:] + "." for said in self.git.removed_links]

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
                kept = self.app.home.memory / f"{name}.unmerged"
                atomic_write(kept, data)
                self.problems.append(f"Your edit of {name} was made on an older version than the log's and "
                                     f"could not be merged; it is kept in {kept}.")
                continue
            atomic_write(self.app.home.memory / name, merged.encode("utf-8"))
            log.warning("%s was edited by hand while git was behind the log; the edit was merged onto "
                        "the log's latest", name)

    def _remove_stale_rebuilds(self) -> None:
        # a crash during a rebuild leaves a half-made copy: derived data, never the user's only copy
        for p in self.app.home.root.glob(f"{self.app.home.memory.name}.rebuilding-*"):
            if p.is_dir() and not p.is_symlink():
                log.warning("removing %s, left by an interrupted rebuild", p.name)
                shutil.rmtree(p, ignore_errors=True)

    def _logged_texts(self) -> set[str]:
        return {str(r.data.get("memory", "")) for r in self.store.log.records() if r.type == MemoryWritten.TYPE}

    def _rebuild_damaged(self, exc: RepoDamaged) -> None:
        home = self.app.home
        if self.store.readonly:
            raise GitError(f"the memory repository is damaged ({exc}) and the event log is read-only",
                           hint="Run `memtray doctor --repair`: it repairs the log, then rebuilds memory/.")
        log.error("the memory repository is damaged (%s); rebuilding it from the event log", exc)
        self.git.close()
        stamp = self.app.clock.now().strftime("%Y%m%dT%H%M%S")
        carried = hand_edits(home.memory, self._logged_texts())
        work = aside_path(home.memory, "rebuilding", stamp)
        try:
            # made beside the damaged one and swapped in only when complete: a failure or a
            # crash on the way leaves memory/ as it was
            self.git = GitRepo(work).open()
            made = self._catch_up()
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
            shutil.rmtree(work, ignore_errors=True)
            self.git = GitRepo(home.memory)
            raise GitError(f"the memory repository is damaged ({exc}) and could not be rebuilt: {err}") from err
        self.git = GitRepo(home.memory).open()
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
            crash_point("memory.appended")
            try:
                if self._behind:
                    self._catch_up()  # commits every logged event git lacks, this one included
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
        prev_history = self.git.read(head, "HISTORY.md") if head else ""
        files = {"MEMORY.md": rec.data["memory"], "HISTORY.md": _apply_history(prev_history, rec)}
        sha = self.git.commit(files, commit_message(rec), parse_ts(rec.ts))
        self._behind = False
        return sha

    def head_seq(self) -> int:
        head = self.git.head()
        if head is None:
            return 0
        return int(self.git.info(head).trailers.get("Event-Seq", "0") or 0)

    def _catch_up(self) -> int:
        """Make the commits missing for logged ``memory.written`` events. Returns how many."""
        state = self.store.state
        after = self.head_seq()
        if after == state.memory_seq:
            self._behind = False
            return 0
        if after > state.memory_seq:
            # git is ahead of the log (restored from a backup?): rebuild it from the log
            log.warning("memory repository is ahead of the event log; rebuilding it from the log")
            self.git.set_ref("refs/heads/main", None)
            after = 0
        made = 0
        for rec in self.store.log.records(after):
            if rec.seq > state.memory_seq:
                break
            if rec.type == MemoryWritten.TYPE:
                self._commit(rec)
                made += 1
        if made:
            log.warning("made %d memory commit(s) missing for logged events", made)
        self._behind = False
        return made

    def reconcile(self) -> None:
        """Make git match the log; turn a hand edit of the work tree into an event."""
        self._catch_up()
        self._adopt_worktree()

    def _adopt_worktree(self) -> bool:
        """Record a hand edit of MEMORY.md / HISTORY.md as a ``user-edit``; restore missing or
        stale files (a crash between moving the branch and writing them). True if an edit was recorded."""
        if self._behind or self.head_seq() != self.store.state.memory_seq:
            # The work tree can only be judged against a HEAD that matches the log.
            try:
                self._catch_up()
            except MemtrayError as exc:
                log.warning("memory repository still behind the log (%s); not checking for hand edits", exc)
                return False
        head = self.git.head()
        if head is None:
            return self._adopt_first()
        status = {n: self.git.worktree_status(n, head) for n in FILES}
        if all(v == "clean" for v in status.values()):
            return False
        edited = {n for n, v in status.items() if v == "edited"}
        recorded = False
        if edited and not self.store.readonly and not self._adopting:
            on_disk = {n: self.git.worktree_text(n) for n in edited}
            new_mem = on_disk.get("MEMORY.md")
            if new_mem is None:
                new_mem = self.git.read(head, "MEMORY.md")
            hist = on_disk.get("HISTORY.md")
            log.warning("%s edited by hand; recording it as a user edit", " and ".join(sorted(edited)))
            self._adopting = True
            try:
                self.write(new_mem, reason="user-edit", source="user", history=hist)
            finally:
                self._adopting = False
            recorded = True
            head = self.git.head()
            assert head is not None
        restore = {n for n, v in status.items() if v in ("missing", "stale")}
        if restore and not recorded:  # recording an edit commits, which rewrites both files
            self.git.checkout_files({n: self.git.read(head, n) for n in restore})
        return recorded

    def _adopt_first(self) -> bool:
        """No revision yet: a MEMORY.md (or HISTORY.md) written by hand is the first one."""
        on_disk = {n: self.git.worktree_text(n) for n in FILES}
        if self.store.readonly or self._adopting or not any(on_disk.values()):
            return False
        log.warning("MEMORY.md written by hand before the first revision; recording it as a user edit")
        self._adopting = True
        try:
            self.write(on_disk["MEMORY.md"] or "", reason="user-edit", source="user", history=on_disk["HISTORY.md"])
        finally:
            self._adopting = False
        return True

    def check_worktree(self) -> bool:
        """Pick up a hand edit made while memtray runs. Returns True if one was recorded."""
        before = self.store.state.memory_seq
        self.reconcile()
        return self.store.state.memory_seq != before

    # --- writing ----------------------------------------------------------------------

    def write(
        self,
        memory: str,
        *,
        reason: str,
        source: str = "memtray",
        model: str | None = None,
        consolidation: str | None = None,
        history_append: str | None = None,
        history: str | None = None,
        flagged: list[dict[str, Any]] | None = None,
        provenance: dict[str, Any] | None = None,
        dropped_reasons: dict[str, str] | None = None,
        extra: list[tuple[str, dict[str, Any], str | None]] | None = None,
        session: str | None = None,
    ) -> list[Record]:
        """Append ``memory.written`` (+ ``extra`` events) in one write; git follows.

        A hand edit still waiting in the work tree is recorded first (as its own
        ``user-edit``), so the checkout that follows this write never overwrites it
        unrecorded. Callers that build ``memory`` from the current text should call
        :meth:`check_worktree` before they read it. An ``extra`` payload with a
        ``memory_seq`` member gets the seq of this ``memory.written`` event.
        """
        if reason not in REASONS:
            raise MemoryError_(f"unknown memory change reason {reason!r}")
        if not self._adopting and not self.store.readonly:
            self._adopt_worktree()
        memory = redact(memory)
        if len(memory) > MAX_MEMORY_CHARS:
            raise MemoryError_(f"MEMORY.md would be {len(memory):,} characters; the limit is {MAX_MEMORY_CHARS:,}")
        old = self.store.state.memory
        reasons = {k: redact(v) for k, v in (dropped_reasons or {}).items()}
        d = factdiff.diff(old, memory)
        if reasons and d.changed:
            # A fact removed with a reason is a removal even when the fuzzy diff pairs it
            # with a new fact ("lives in London" -> "lives in Lyon"): record it as dropped.
            moved = [(o, n) for o, n in d.changed if o.id in reasons]
            d = FactDiff(d.added + [n for _o, n in moved], d.dropped + [o for o, _n in moved],
                         [(o, n) for o, n in d.changed if o.id not in reasons], d.unchanged)
        if d.dropped:
            # one of two copies of a fact going is not the fact leaving memory
            still = {f.norm for f in factdiff.parse(memory)}
            d = FactDiff(d.added, [f for f in d.dropped if f.norm not in still], d.changed, d.unchanged)
        diff_json = d.to_json()
        flagged = [_redact_item(i) for i in flagged or ()]
        held = {i["fact_id"] for i in flagged if i.get("kind") == "silent-drop"}
        for item in diff_json["dropped"]:
            item["reason"] = reasons.get(item["id"]) or (SILENT_HELD if item["id"] in held else reason)
        ev = MemoryWritten(
            memory=memory, reason=reason, source=source, history_append=redact(history_append) if history_append else None,
            history=redact(history) if history is not None else None, consolidation=consolidation, model=model,
            diff=diff_json, flagged=flagged or None, provenance=provenance,
        )
        items: list[tuple[str, dict[str, Any], str | None, str | None]] = [(MemoryWritten.TYPE, ev.to_data(), session, None)]
        with self.store._mutex:  # re-entrant: the seq read here is the one append_many gives
            seq = self.store.log.last_seq + 1
            for t, data, sess in extra or []:
                items.append((t, {**data, "memory_seq": seq} if "memory_seq" in data else data, sess, None))
            return self.store.append_many(items)

    # --- browsing ---------------------------------------------------------------------

    def revisions(self, limit: int = 50, offset: int = 0) -> list[Revision]:
        out: list[Revision] = []
        for i, info in enumerate(self.git.walk()):
            if i < offset:
                continue
            if len(out) >= limit:
                break
            out.append(_revision(info))
        return out

    def revision(self, spec: str) -> Revision:
        return _revision(self.git.info(self.resolve(spec)))

    def resolve(self, spec: str) -> str:
        """A commit sha from: sha or unique prefix, HEAD, a consolidation id, seq:N, a branch,
        any of those followed by ``~N`` (N first parents back)."""
        spec = spec.strip()
        head = self.git.head()
        if head is None:
            raise BadRevision("memory has no revisions yet")
        m = re.fullmatch(r"(.+?)~(\d*)", spec)
        if m:
            n = int(m.group(2) or 1)
            for i, info in enumerate(self.git.walk(self.resolve(m.group(1)))):
                if i == n:
                    return info.sha
            raise BadRevision(f"{spec}: history has fewer than {n + 1} revisions there")
        if spec in ("HEAD", "@"):
            return head
        branch = self.git.ref(spec if spec.startswith("refs/") else f"refs/heads/{spec}")
        if branch:
            return branch
        m = re.fullmatch(r"seq:(\d+)", spec)
        low = spec.lower()
        is_hex = re.fullmatch(r"[0-9a-f]{4,40}", low) is not None
        if len(low) == 40 and is_hex and self.git.has_commit(low):
            return low
        matches: list[str] = []
        for info in self.git.walk():
            if m and info.trailers.get("Event-Seq") == m.group(1):
                return info.sha
            if info.trailers.get("Consolidation") == spec:
                return info.sha
            if is_hex and info.sha.startswith(low):
                matches.append(info.sha)
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise BadRevision(f"{spec} is ambiguous ({len(matches)} revisions start with it)")
        raise BadRevision(f"unknown revision {spec!r}")

    def show(self, rev: str = "HEAD", name: str = "MEMORY.md") -> str:
        return self.git.read(self.resolve(rev), name)

    def at(self, when: datetime) -> Revision | None:
        """The revision in force at ``when``."""
        for info in self.git.walk():
            if info.time <= when:
                return _revision(info)
        return None

    def diff(self, rev_a: str | None = None, rev_b: str | None = None) -> FactDiff:
        b = self.resolve(rev_b or "HEAD")
        if rev_a is None:
            parents = self.git.info(b).parents
            old = self.git.read(parents[0], "MEMORY.md") if parents else ""
        else:
            old = self.git.read(self.resolve(rev_a), "MEMORY.md")
        return factdiff.diff(old, self.git.read(b, "MEMORY.md"))

    def raw_diff(self, rev_a: str | None = None, rev_b: str | None = None) -> str:
        import difflib

        b = self.resolve(rev_b or "HEAD")
        if rev_a is None:
            parents = self.git.info(b).parents
            a_sha = parents[0] if parents else None
        else:
            a_sha = self.resolve(rev_a)
        old = self.git.read(a_sha, "MEMORY.md") if a_sha else ""
        new = self.git.read(b, "MEMORY.md")
        return "".join(difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True),
            f"a/MEMORY.md ({(a_sha or 'empty')[:8]})", f"b/MEMORY.md ({b[:8]})",
        ))

    def memory_events(self) -> list[Record]:
        return [r for r in self.store.log.records() if r.type == MemoryWritten.TYPE]

    def dropped(self) -> list[dict[str, Any]]:
        """Every fact ever removed: by which revision, why, and whether it is back now."""
        current = {f.norm for f in factdiff.parse(self.store.state.memory)}
        shas = {info.trailers.get("Event-Seq"): info.sha for info in self.git.walk()}
        out = []
        for rec in self.memory_events():
            listed = set()
            for item in (rec.data.get("diff") or {}).get("dropped", []):
                listed.add(item["id"])
                present = factdiff.normalize(item["text"]) in current  # exact: "Lyon" is not "London"
                out.append({
                    "id": item["id"], "text": item["text"], "section": item.get("section", ""),
                    "rev": shas.get(str(rec.seq)), "event_seq": rec.seq, "time": rec.ts,
                    "reason": item.get("reason") or "silent", "by": rec.data.get("reason"),
                    "present_now": present,
                })
            for item in rec.data.get("flagged") or []:
                if item.get("kind") == "silent-drop" and item["fact_id"] not in listed:
                    present = factdiff.normalize(item["text"]) in current
                    out.append({
                        "id": item["fact_id"], "text": item["text"], "section": item.get("section", ""),
                        "rev": shas.get(str(rec.seq)), "event_seq": rec.seq, "time": rec.ts,
                        "reason": SILENT_HELD, "by": rec.data.get("reason"),
                        "present_now": present,
                    })
        return out

    # --- changing ---------------------------------------------------------------------

    def _find(self, rev: str, fact: str) -> tuple[Fact, str]:
        """The fact at ``rev``, or -- when ``rev`` is the revision that removed it, as
        `memory dropped` lists -- at its parent. An exact match (id, id prefix, text) at
        either wins over a fuzzy one. Returns the fact and the sha it is in."""
        sha = self.resolve(rev)
        parents = self.git.info(sha).parents
        places = [(sha, factdiff.parse(self.git.read(sha, "MEMORY.md")))]
        if parents:
            places.append((parents[0], factdiff.parse(self.git.read(parents[0], "MEMORY.md"))))
        for finder in (factdiff.find_fact, factdiff.match_fact):
            for where, facts in places:
                found = finder(facts, fact)
                if found is not None:
                    return found, where
        raise MemoryError_(f"no fact matching {fact!r} at {sha[:8]}", hint="See `memtray memory show REV`.")

    def restore_fact(self, rev: str, fact: str) -> Revision:
        self._adopt_worktree()
        f, src = self._find(rev, fact)
        current = self.store.state.memory
        if any(x.norm == f.norm for x in factdiff.parse(current)):
            raise MemoryError_(f"the fact is already in memory: {f.text}")
        new = factdiff.add_fact(current, f.text, f.section or None)
        self.write(new, reason="restore", source="user", provenance={f.id: {"restored_from": src}})
        return self.revision("HEAD")

    def rollback(self, rev: str) -> Revision:
        self._adopt_worktree()
        sha = self.resolve(rev)
        text = self.git.read(sha, "MEMORY.md")
        seq = self.store.state.memory_seq
        self.write(text, reason="rollback", source="user",
                   extra=[(MemoryRolledBack.TYPE, MemoryRolledBack(to_rev=sha, memory_seq=seq + 1).to_data(), None)])
        return self.revision("HEAD")

    # --- agent tools ------------------------------------------------------------------

    def remember(self, fact: str, section: str | None, *, model: str | None, source_seq: int | None) -> str:
        fact = " ".join(fact.split())
        if not fact:
            raise MemoryError_("the fact is empty")
        from memtray.core.memory.poison import looks_like_instruction

        self._adopt_worktree()
        if looks_like_instruction(fact):
            item = review_item("instruction", fact, section or "General", None, "looks like an instruction")
            self.write(self.store.state.memory, reason="agent", source="model", model=model, flagged=[item])
            return "held for the user's review: it looks like an instruction rather than a fact"
        current = self.store.state.memory
        new = factdiff.add_fact(current, fact, section)
        if new == current:
            return "already remembered"
        prov = {"source_seqs": [source_seq]} if source_seq else None
        added = factdiff.diff(current, new).added
        self.write(new, reason="agent", source="model", model=model,
                   provenance={f.id: prov for f in added} if prov else None)
        return f"remembered: {fact}"

    def forget(self, fact: str, why: str, *, model: str | None) -> str:
        self._adopt_worktree()
        current = self.store.state.memory
        found = factdiff.match_fact(factdiff.parse(current), fact)
        if found is None:
            return f"no fact in memory matches {fact!r}"
        new = factdiff.remove_fact(current, found)
        self.write(new, reason="agent", source="model", model=model, dropped_reasons={found.id: why or "asked to forget"})
        return f"forgot: {found.text} ({why})"

    # --- review -----------------------------------------------------------------------

    def pending_review(self) -> list[dict[str, Any]]:
        return sorted(self.store.state.review.values(), key=lambda i: i["seq"])

    def accept_review(self, item_id: str) -> None:
        """The change stands (a silent drop stays dropped; an instruction stays out)."""
        item = self._review(item_id)
        self.store.append(MemoryReviewed.TYPE, MemoryReviewed(item=item["id"], action="accept").to_data())

    def restore_review(self, item_id: str) -> Revision:
        """Put the held fact (back) into memory."""
        item = self._review(item_id)
        self._adopt_worktree()
        new = factdiff.add_fact(self.store.state.memory, item["text"], item.get("section") or None)
        self.write(new, reason="review", source="user",
                   extra=[(MemoryReviewed.TYPE, MemoryReviewed(item=item["id"], action="restore",
                                                               memory_seq=self.store.state.memory_seq + 1).to_data(), None)])
        return self.revision("HEAD")

    def _review(self, item_id: str) -> dict[str, Any]:
        items = self.store.state.review
        if item_id in items:
            return items[item_id]
        matches = [k for k in items if k.startswith(item_id)]
        if len(matches) == 1:
            return items[matches[0]]
        raise MemoryError_(f"no review item {item_id!r}", hint="See `memtray memory review`.")

    # --- provenance -------------------------------------------------------------------

    def why(self, fact: str) -> dict[str, Any]:
        """The revision that introduced ``fact`` and the messages it came from."""
        current = factdiff.parse(self.store.state.memory)
        target = factdiff.match_fact(current, fact)
        if target is None:
            raise MemoryError_(f"no fact in current memory matches {fact!r}")
        introduced: CommitInfo | None = None
        for info in self.git.walk():
            facts = factdiff.parse(self.git.read(info.sha, "MEMORY.md"))
            if factdiff.match_fact(facts, target.text) is None:
                break
            introduced = info
        assert introduced is not None
        rev = _revision(introduced)
        seq = rev.event_seq
        rec = next((r for r in self.store.log.records(seq - 1) if r.seq == seq), None)
        messages: list[dict[str, Any]] = []
        cons = rev.consolidation
        if rec is not None:
            prov = (rec.data.get("provenance") or {}).get(target.id) or {}
            seqs = set(prov.get("source_seqs") or [])
            c = self.store.consolidation(cons) if cons else None
            if c is not None and c.first_seq is not None and c.last_seq is not None:
                rng = (c.first_seq, c.last_seq, c.session)
                cands = [
                    r for r in self.store.log.records(rng[0] - 1)
                    if r.seq <= rng[1] and r.type == "message" and r.session == rng[2]
                    and r.data.get("role") in ("user", "assistant") and r.data.get("content")
                ] if rng[0] else []
                scored = sorted(cands, key=lambda r: -factdiff.similarity(r.data["content"], target.text))
                top = [r for r in scored[:5] if factdiff.similarity(r.data["content"], target.text) > 0.05]
                messages = [_msg_json(r) for r in sorted(top or scored[:3], key=lambda r: r.seq)]
            elif seqs:
                messages = [_msg_json(r) for r in self.store.log.records(min(seqs) - 1) if r.seq in seqs]
        return {
            "fact": {"id": target.id, "section": target.section, "text": target.text},
            "revision": rev.to_json(),
            "source": rec.data.get("source") if rec else None,
            "consolidation": cons,
            "messages": messages,
        }

    def close(self) -> None:
        self.git.close()


def _msg_json(r: Record) -> dict[str, Any]:
    return {"seq": r.seq, "ts": r.ts, "session": r.session, "role": r.data.get("role"), "content": r.data.get("content")}


def _redact_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: redact(v) if k in ("text", "reason", "section") and isinstance(v, str) else v for k, v in item.items()}


def install(app: App, *, start: bool = True) -> None:
    svc = MemoryService(app)
    app.services["memory"] = svc
    if not app.store.readonly:
        svc.start()
    from memtray.core.memory.tools import register

    register(app, svc)
