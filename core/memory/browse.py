"""Reading memory's past: revisions, diffs, what was dropped, where a fact came from.

:class:`MemoryBrowsing` is read-only over the git projection and the store;
:class:`~memtray.core.memory.service.MemoryService` inherits it, so the CLI,
the desktop and the MCP server call the same methods.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.log.events import MemoryWritten, Message, Provenance, Record
from memtray.core.log.store import Store
from memtray.core.memory import factdiff
from memtray.core.memory.factdiff import FactDiff
from memtray.core.memory.gitrepo import BadRevision, CommitInfo, GitRepo
from memtray.core.memory.revisions import Revision, revision_of

#: why a fact left memory when a consolidation dropped it unasked under policy ``review``
SILENT_HELD = "silent (held for review)"


class MemoryError_(MemtrayError):
    """A memory operation could not be done."""


class MemoryBrowsing:
    """Read-only views of memory; needs ``git`` and ``store``."""

    store: Store

    @property
    def git(self) -> GitRepo:
        raise NotImplementedError

    def revisions(self, limit: int = 50, offset: int = 0) -> list[Revision]:
        out: list[Revision] = []
        for i, info in enumerate(self.git.walk()):
            if i < offset:
                continue
            if len(out) >= limit:
                break
            out.append(revision_of(info))
        return out

    def revision(self, spec: str) -> Revision:
        return revision_of(self.git.info(self.resolve(spec)))

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
        """A file of the revision; ``MEMORY.md`` is the whole memory, every scope's file
        joined (core/memory/scopes.py)."""
        sha = self.resolve(rev)
        return self.git.read_memory(sha) if name == "MEMORY.md" else self.git.read(sha, name)

    def at(self, when: datetime) -> Revision | None:
        """The revision in force at ``when``."""
        for info in self.git.walk():
            if info.time <= when:
                return revision_of(info)
        return None

    def diff(self, rev_a: str | None = None, rev_b: str | None = None) -> FactDiff:
        b = self.resolve(rev_b or "HEAD")
        if rev_a is None:
            parents = self.git.info(b).parents
            old = self.git.read_memory(parents[0]) if parents else ""
        else:
            old = self.git.read_memory(self.resolve(rev_a))
        return factdiff.diff(old, self.git.read_memory(b))

    def raw_diff(self, rev_a: str | None = None, rev_b: str | None = None) -> str:
        import difflib

        b = self.resolve(rev_b or "HEAD")
        if rev_a is None:
            parents = self.git.info(b).parents
            a_sha = parents[0] if parents else None
        else:
            a_sha = self.resolve(rev_a)
        old = self.git.read_memory(a_sha) if a_sha else ""
        new = self.git.read_memory(b)
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
            w = MemoryWritten.of(rec)
            listed = set()
            for item in w.diff["dropped"] if w.diff else []:
                listed.add(item["id"])
                present = factdiff.normalize(item["text"]) in current  # exact: "Lyon" is not "London"
                out.append({
                    "id": item["id"], "text": item["text"], "section": item["section"],
                    "rev": shas.get(str(rec.seq)), "event_seq": rec.seq, "time": rec.ts,
                    "reason": item.get("reason") or "silent", "by": w.reason,
                    "present_now": present,
                })
            for held in w.flagged or []:
                if held["kind"] == "silent-drop" and held["fact_id"] not in listed:
                    present = factdiff.normalize(held["text"]) in current
                    out.append({
                        "id": held["fact_id"], "text": held["text"], "section": held["section"],
                        "rev": shas.get(str(rec.seq)), "event_seq": rec.seq, "time": rec.ts,
                        "reason": SILENT_HELD, "by": w.reason,
                        "present_now": present,
                    })
        return out

    def why(self, fact: str) -> dict[str, Any]:
        """The revision that introduced ``fact`` and the messages it came from."""
        current = factdiff.parse(self.store.state.memory)
        target = factdiff.match_fact(current, fact)
        if target is None:
            raise MemoryError_(f"no fact in current memory matches {fact!r}")
        introduced: CommitInfo | None = None
        for info in self.git.walk():
            facts = factdiff.parse(self.git.read_memory(info.sha))
            if factdiff.match_fact(facts, target.text) is None:
                break
            introduced = info
        assert introduced is not None
        rev = revision_of(introduced)
        seq = rev.event_seq
        rec = next((r for r in self.store.log.records(seq - 1) if r.seq == seq), None)
        messages: list[dict[str, Any]] = []
        cons = rev.consolidation
        written = MemoryWritten.of(rec) if rec is not None else None
        if written is not None:
            prov = (written.provenance or {}).get(target.id, Provenance())
            seqs = set(prov.get("source_seqs", []))
            c = self.store.consolidation(cons) if cons else None
            if c is not None and c.first_seq is not None and c.last_seq is not None:
                rng = (c.first_seq, c.last_seq, c.session)
                cands = [
                    (r, text) for r in self.store.log.records(rng[0] - 1)
                    if r.seq <= rng[1] and r.session == rng[2] and (text := said(r))
                ] if rng[0] else []
                ranked = sorted(cands, key=lambda c: -factdiff.similarity(c[1], target.text))
                scored = [r for r, _t in ranked]
                top = [r for r, t in ranked[:5] if factdiff.similarity(t, target.text) > 0.05]
                messages = [msg_json(r) for r in sorted(top or scored[:3], key=lambda r: r.seq)]
            elif seqs:
                messages = [msg_json(r) for r in self.store.log.records(min(seqs) - 1) if r.seq in seqs]
        return {
            "fact": {"id": target.id, "section": target.section, "text": target.text},
            "revision": rev.to_json(),
            "source": written.source if written is not None else None,
            "consolidation": cons,
            "messages": messages,
        }



def msg_json(r: Record) -> dict[str, Any]:
    m = Message.of(r)
    return {"seq": r.seq, "ts": r.ts, "session": r.session, "role": m.role, "content": m.content}


def said(r: Record) -> str | None:
    """What a user or the assistant said in message ``r`` (None: another record, a tool
    result, an empty message): the text a fact's sources are matched against."""
    if r.type != Message.TYPE:
        return None
    m = Message.of(r)
    return m.content if m.role in ("user", "assistant") and m.content else None
