"""How an import enters the log: items, idempotency, resumption, dry runs.

A source (a nanobot workspace, a ChatGPT export) is read as a stream of
:class:`Item` s: a conversation or session (its messages), MEMORY.md (facts to
add) or the history diary (entries). Each item is appended in **one** write:
its ``message`` events (session ``<source>:<key>``, each carrying the time it
was originally sent as ``sent_at``), a ``session.reset`` (reason ``import``: the
messages are history, not an open conversation the idle sweep would
consolidate), and an ``import.item`` with the item's key and content digest. A
memory item is a ``memory.written`` (reason ``import``, source ``import``) plus
its ``import.item``. So an interrupted import keeps every finished item, and a
rerun skips each item whose key and digest are already logged: importing twice
adds nothing. A session that grew since (nanobot appends) imports only the new
messages. With ``--consolidate`` the sessions are not reset but consolidated into
memory one by one as they are imported (the ordinary consolidation, guard
included); what is not consolidated then is left to the idle sweep.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memtray.core.base.errors import MemtrayError
from memtray.core.base.redact import redact
from memtray.core.log.door import Door, Quarantine, Refusal, Source
from memtray.core.log.events import Message, SessionReset
from memtray.core.log.integrations import ImportCompleted, ImportFailed, ImportItem, ImportStarted
from memtray.core.log.schema import Payload
from memtray.core.log.store import Entry
from memtray.core.memory import factdiff
from memtray.core.memory.items import review_item
from memtray.core.memory.poison import hold_flagged, looks_like_instruction, why_flagged

if TYPE_CHECKING:
    from memtray.core.log.store import Store
    from memtray.core.memory.service import MemoryService

MAX_MESSAGE_CHARS = 100_000
MAX_KEY = 160


class ImportProblem(MemtrayError):
    """The source cannot be imported (missing, damaged, another format); nothing partial is lost."""


@dataclass
class Item:
    key: str  # stable within the source: a session key, a conversation id, "memory", "history"
    kind: str  # session | conversation | memory | history | refused (a file not read; its notes say why)
    #: (role, text, sent_at ISO or None) for sessions and conversations
    messages: list[tuple[str, str, str | None]] = field(default_factory=list)
    title: str | None = None
    skipped: int = 0
    #: MEMORY.md text (memory) or diary entries (history)
    text: str = ""
    entries: list[str] = field(default_factory=list)
    #: a damaged part the reader stepped over ("line 7: not JSON")
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The key names the item in the log (import.item) and in the session name; a
        # token pasted into a session or file name must not reach the disk, and the
        # redacted key is the one a rerun finds logged, so dedupe keeps working.
        self.key = clean(self.key)
        if len(self.key) > MAX_KEY:  # a conversation id of any length: named by a prefix and a digest
            self.key = self.key[:MAX_KEY - 14] + "~" + hashlib.sha256(self.key.encode()).hexdigest()[:12]

    def digest(self) -> str:
        h = hashlib.sha256()
        for part in (self.kind, self.key, self.text, *self.entries):
            h.update(part.encode("utf-8", "replace") + b"\0")
        for role, text, sent in self.messages:
            h.update(f"{role}\0{sent or ''}\0".encode() + text.encode("utf-8", "replace") + b"\0")
        return h.hexdigest()[:24]


@dataclass
class Summary:
    items: int = 0
    skipped_items: int = 0
    messages: int = 0
    facts: int = 0
    entries: int = 0
    consolidated: int = 0
    notes: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "already_imported": self.skipped_items, "messages": self.messages,
                "facts": self.facts, "history_entries": self.entries, "consolidated": self.consolidated,
                "notes": self.notes}


def clean(text: str) -> str:
    """Storable text: no NUL, no lone surrogate, secrets redacted, bounded."""
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS] + f"\n[... cut on import: {len(text) - MAX_MESSAGE_CHARS:,} more characters]"
    return redact(text)


@dataclass(frozen=True)
class Imported:
    """An item already in the log: the digest of its newest import and its messages so far."""

    digest: str
    total: int


def logged(store: Store, source: str) -> dict[str, Imported]:
    """key -> what the ``import.item`` events of ``source`` already in the log say of it."""
    done: dict[str, Imported] = {}
    for rec in store.log.records(0):
        if rec.type == ImportItem.TYPE and (item := ImportItem.of(rec)).source == source:
            prev = done.get(item.key)
            done[item.key] = Imported(item.digest, (prev.total if prev else 0) + item.messages)
    return done


def session_key(source: str, key: str) -> str:
    return f"{source}:{key}"[:200]


class Importer:
    """Runs items of one source into the store (or, with ``dry_run``, only counts them)."""

    def __init__(self, store: Store, memory: MemoryService, source: str, path: str, *, dry_run: bool,
                 new_id: Callable[[], str], progress: Callable[[str], None] | None = None,
                 call: Callable[[Callable[[], Any]], Any] | None = None,
                 consolidate: Callable[[str], None] | None = None, quarantine: Quarantine,
                 door: Door | None = None) -> None:
        #: every event of the source passes the one door before it is appended (types, sizes,
        #: text, redaction); what it refuses is kept in ``quarantine``, said in the notes, and
        #: the rest of the item goes on
        self.door = door if door is not None else Door()
        self.quarantine = quarantine
        #: runs a function on the store's writer thread (``Worker.call``); reading the source stays here
        self.call = call or (lambda fn: fn())
        #: ``--consolidate``: folds an imported session into memory (called here, off the worker).
        #: The session is then left open instead of reset, so whatever this does not finish
        #: (a failure, an interruption) the idle sweep consolidates later.
        self.consolidate = consolidate
        self._keep_open = consolidate is not None
        self._to_consolidate: list[str] = []
        self.store = store
        self.memory = memory
        self.source = source
        self.path = path
        self.dry_run = dry_run
        self.progress = progress or (lambda _t: None)
        self.import_id = new_id()
        self.done: dict[str, Imported] = self.call(lambda: logged(store, source))
        self.summary = Summary()
        self._started = False

    def run(self, items: Iterable[Item]) -> Summary:
        try:
            for item in items:
                self.call(functools.partial(self._one, item))
                self._consolidate_pending()
        except (ImportProblem, KeyboardInterrupt) as exc:
            if self._started and not self.dry_run:
                failed = ImportFailed(import_id=self.import_id, source=self.source,
                                      reason=(str(exc) or "interrupted")[:500], items=self.summary.items)
                self.call(lambda: self.store.append(failed))
            raise
        if self._started and not self.dry_run:
            s = self.summary
            done = ImportCompleted(import_id=self.import_id, source=self.source, items=s.items,
                                   messages=s.messages, skipped_items=s.skipped_items)
            self.call(lambda: self.store.append(done))
        return self.summary

    def _start(self) -> None:
        if not self._started and not self.dry_run:
            self.store.append(ImportStarted(import_id=self.import_id, source=self.source, path=clean(self.path)))
        self._started = True

    def _one(self, item: Item) -> None:
        self.summary.notes += [f"{item.key}: {n}" for n in item.notes]
        if item.kind == "refused":  # a file of the source that was not read (said in the notes)
            self.summary.lines.append(f"{item.key}: not imported")
            return
        digest = item.digest()
        prev = self.done.get(item.key)
        if prev is not None and prev.digest == digest:
            self.summary.skipped_items += 1
            return
        if item.kind in ("session", "conversation"):
            self._conversation(item, digest, prev)
        elif item.kind == "memory":
            self._memory(item, digest)
        elif item.kind == "history":
            self._history(item, digest, prev)

    def _item(self, item: Item, digest: str, *, session: str | None = None, messages: int = 0,
              memory_seq: int | None = None) -> ImportItem:
        return ImportItem(import_id=self.import_id, source=self.source, key=item.key, kind=item.kind, digest=digest,
                          session=session, messages=messages, skipped=item.skipped,
                          title=clean(item.title)[:200] if item.title else None, memory_seq=memory_seq)

    def _record(self, item: Item, digest: str, *, memory_seq: int | None = None,
                messages: int = 0) -> tuple[ImportItem, None, None]:
        return (self._item(item, digest, memory_seq=memory_seq, messages=messages), None, None)

    def _conversation(self, item: Item, digest: str, prev: Imported | None) -> None:
        already = prev.total if prev else 0
        new = item.messages[already:] if already <= len(item.messages) else item.messages
        session = session_key(self.source, item.key)
        self.summary.items += 1
        self.summary.messages += len(new)
        self.summary.lines.append(f"{item.kind} {item.key}: {len(new)} messages"
                                  + (f" (after {already} imported before)" if already else "")
                                  + (f", {item.skipped} not imported" if item.skipped else "")
                                  + (f" — {item.title}" if item.title else ""))
        if self.dry_run:
            return
        self._start()
        batch: list[Entry] = []
        for n, (role, text, sent) in enumerate(new, already + 1):
            self._admit(batch, Message(role=role, content=clean(text), sent_at=sent or None), session,
                        f"{item.key} message {n}")
        if not self._keep_open:
            self._admit(batch, SessionReset(reason="import"), session, item.key)
        elif new and self.consolidate is not None:
            self._to_consolidate.append(session)
        self._admit(batch, self._item(item, digest, session=session, messages=len(new)), session, item.key)
        self.store.append_many(batch)
        self.progress(f"imported {item.kind} {item.key}: {len(new)} messages")

    def _admit(self, batch: list[Entry], payload: Payload, session: str | None, where: str) -> None:
        """``payload`` onto ``batch`` as the door lets it in, or its refusal quarantined and said."""
        got = self.door.event(payload.TYPE, payload.to_data(), session, Source("import", self.source, where))
        if isinstance(got, Refusal):
            self.quarantine.put(got)
            self.summary.notes.append(f"{where}: refused ({got.reason}); kept in the quarantine, see `memtray doctor`")
            return
        batch.append((got.payload(), got.session, None))

    def _consolidate_pending(self) -> None:
        while self._to_consolidate and self.consolidate is not None:
            session = self._to_consolidate.pop(0)
            try:
                self.consolidate(session)
                self.summary.consolidated += 1
                self.progress(f"consolidated {session}")
            except MemtrayError as exc:
                self.summary.notes.append(f"consolidating {session} failed ({exc}); the idle sweep consolidates "
                                          "the imported sessions later")
                self.consolidate = None  # one failure (no model, offline): leave the rest to the sweep

    def _memory(self, item: Item, digest: str) -> None:
        facts = factdiff.parse(clean(item.text))
        self.memory.check_worktree()
        current = self.store.state.memory
        # an imported fact passes the guard a consolidation's does: one that reads like an
        # instruction is held for review, never written (another tool's memory may hold one)
        held = [review_item("instruction", f.text, f.section, None, f"imported from {self.source}: {why_flagged(f.text)}")
                for f in facts if looks_like_instruction(f.text)]
        new = current
        if not current.strip() and not held:
            new, _blocks = hold_flagged("", clean(item.text))  # a heading or comment that orders
            held += [review_item("instruction", b.text, "", None, f"imported from {self.source}: {b.reason}")
                     for b in _blocks]
        else:
            for f in facts:
                if not looks_like_instruction(f.text):
                    new = factdiff.add_fact(new, f.text, f.section or None)
        added = len(factdiff.diff(current, new).added) if new != current else 0
        self.summary.items += 1
        self.summary.facts += added
        self.summary.lines.append(f"MEMORY.md: {added} new facts (of {len(facts)})"
                                  + (f", {len(held)} held for review" if held else ""))
        if held:
            self.summary.notes.append(f"MEMORY.md: {len(held)} fact(s) read like instructions and are held for review "
                                      "(`memtray memory review`)")
        if self.dry_run:
            return
        self._start()
        seq = self.store.state.memory_seq
        rec = self._record(item, digest, memory_seq=seq + 1)
        if new == current and not held:
            self.store.append_many([rec])
        else:
            self.memory.write(new, reason="import", source="import", extra=[rec[:2]], flagged=held or None)
        self.progress(f"imported MEMORY.md: {added} new facts")

    def _history(self, item: Item, digest: str, prev: Imported | None) -> None:
        already = prev.total if prev else 0
        new = [clean(e) for e in item.entries[already:]]
        new = [e.strip() for e in new if e.strip()]
        self.summary.items += 1
        self.summary.entries += len(new)
        self.summary.lines.append(f"HISTORY: {len(new)} diary entries")
        if self.dry_run or not new:
            return
        self._start()
        seq = self.store.state.memory_seq
        rec = self._record(item, digest, messages=len(item.entries) - already, memory_seq=seq + 1)
        self.memory.check_worktree()
        self.memory.write(self.store.state.memory, reason="import", source="import",
                          history_append="\n\n".join(new), extra=[rec[:2]])
        self.progress(f"imported HISTORY: {len(new)} entries")


def read_jsonl(lines: Iterator[bytes], where: str, notes: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each line; a torn or damaged line becomes a note, not a failure."""
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            notes.append(f"{where} line {n} is damaged (not JSON); skipped")
            continue
        except RecursionError:
            notes.append(f"{where} line {n} is nested too deep to be a message; skipped")
            continue
        if isinstance(obj, dict):
            yield n, obj
        else:
            notes.append(f"{where} line {n} is not an object; skipped")
