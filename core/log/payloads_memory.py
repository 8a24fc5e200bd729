"""Payloads of memory: revisions (``memory.written``), peers' revisions, reviews, rollbacks, purges.

Registered in the one :data:`~memtray.core.log.schema.SCHEMA` (see core/log/payloads.py
for the conventions). The value shapes (a fact diff, the fact ids, review items,
provenance) are ``TypedDict`` classes: they are what core/memory writes and reads, and
what the validating door checks a peer's or an import's revision against.
"""

from dataclasses import dataclass
from typing import Any, ClassVar, NotRequired, TypedDict

from memtray.core.log.schema import SCHEMA, Payload

# --- value shapes -------------------------------------------------------------------------


class DiffFact(TypedDict):
    """A fact in a fact diff (core/memory/factdiff.py): its id, section and words."""

    id: str
    section: str
    text: str
    #: a dropped fact's: why it went (the consolidation's reason, "merged into F3", ...)
    reason: NotRequired[str]
    #: the fact's memory scope, when not the global one (core/memory/scopes.py)
    scope: NotRequired[str]


class ScopeMove(TypedDict):
    """A fact moved from one memory scope to another, under its id, and why."""

    id: str
    section: str
    text: str
    #: "global" or a scope's name
    source: str
    target: str
    reason: str


class DiffChange(TypedDict):
    old: DiffFact
    new: DiffFact
    similarity: float
    #: a rewording the user made by hand: the reason they gave
    reason: NotRequired[str]


class FactDiffData(TypedDict):
    """What one revision changed (``FactDiff.to_json``)."""

    added: list[DiffFact]
    dropped: list[DiffFact]
    changed: list[DiffChange]
    unchanged: int


class FactLedger(TypedDict):
    """The id of every fact of a revision, in document order, and the next id number
    (core/memory/facts.py ``Ledger``)."""

    ids: list[str]
    next: int
    #: survivor id -> the ids merged into it
    merged: NotRequired[dict[str, list[str]]]
    #: a sync merge's: per device, the ids it renumbered (old -> new)
    renamed: NotRequired[dict[str, dict[str, str]]]


class ReviewItem(TypedDict):
    """A change held for the user's review (core/memory/guard.py ``review_item``;
    a merge conflict, core/memory/merge.py, adds ``conflict`` and ``words``)."""

    id: str
    kind: str  # silent-drop | instruction | unsupported | inferred | merge-conflict | proposal | not-remembered
    text: str
    section: str
    fact_id: str
    reason: str
    conflict: NotRequired[str]  # reworded | removed-reworded | ...
    #: each device's words for the fact (None: removed there)
    words: NotRequired[dict[str, str | None]]
    #: the message numbers (seqs) the held change cites (review), and the words it quotes from them
    messages: NotRequired[list[int]]
    quote: NotRequired[str]
    #: a fact the receipt check held (unsupported | inferred), or what the user said and nothing
    #: kept (not-remembered, core/memory/unsaid.py): the seqs of the messages it cited or where
    #: the quote was found (core/memory/proposal.py)
    source_seqs: NotRequired[list[int]]
    #: the memory scope adding it from the review writes it into (core/memory/scopereply.py
    #: ``with_scope``: held in a scoped conversation); absent: global
    scope: NotRequired[str]


class MessageSpan(TypedDict):
    """The messages a consolidation read, so another device can name them once imported."""

    session: str
    first_seq: int
    last_seq: int | None


class ProvenanceOrigin(TypedDict, total=False):
    """Where a fact another device wrote came from, there (core/memory/merging.py)."""

    device: str
    seqs: list[int]
    revision: str
    consolidation: str
    messages: MessageSpan


class Provenance(TypedDict, total=False):
    """Where one fact came from. Which members are set depends on what wrote it: a
    consolidation or the agent (``source_seqs``, ``text``, ``consolidation``), a restore or
    an undo (``restored_from``), a sync merge (``merged_from``, ``origin``), an adopted
    rebuild (``rebuild``, ``rebuild_seq``, ``source_seqs`` or ``source_event``, ``from_seq``).
    A consolidation's fact with a receipt (issue 27) adds ``quote`` (the verbatim words, found in
    the messages ``source_seqs``) and ``stated`` (True: a user message says it; False: only the
    assistant's, an inferred fact written under ``inferred_facts = write``); older facts have neither."""

    source_seqs: list[int]
    text: str
    consolidation: str
    quote: str
    stated: bool
    restored_from: str | None
    merged_from: str
    origin: ProvenanceOrigin
    rebuild: str
    rebuild_seq: int
    source_event: int
    from_seq: int


# --- payloads -----------------------------------------------------------------------------


@SCHEMA.register
@dataclass(frozen=True)
class MemoryWritten(Payload):
    """A new MEMORY.md (and optionally HISTORY.md entry); one git commit each."""

    TYPE: ClassVar[str] = "memory.written"
    memory: str
    #: consolidation | agent | user-edit | restore | rollback | redo | review | adopt | rebuild |
    #: import | undo | merge | expired (core/memory/service.py REASONS)
    reason: str
    source: str = "memtray"  # memtray | user | model | import | mcp
    history_append: str | None = None
    #: full HISTORY.md text, only when the diary itself was edited by hand
    history: str | None = None
    consolidation: str | None = None
    model: str | None = None
    diff: FactDiffData | None = None
    flagged: list[ReviewItem] | None = None
    #: fact id -> where it came from
    provenance: dict[str, Provenance] | None = None
    #: the program that asked for the write (an MCP client's name), when not memtray itself
    client: str | None = None
    #: the id of every fact of ``memory`` (absent before fact ids existed)
    facts: FactLedger | None = None
    #: a rollback's: the revision (sha) memory went back to, named in the commit message
    target: str | None = None
    #: sync: the device that wrote it, and the memory.written event ids it follows (two or more
    #: for a merge); absent in older events = the previous memory.written of the same log
    device: str | None = None
    parents: list[str] | None = None
    #: a sync merge's: this device's ids the merge renumbered (old -> new)
    relabeled: dict[str, str] | None = None
    #: the review items (merge conflicts) this revision resolves, on every device it reaches
    reviewed: list[str] | None = None
    #: a consolidation's: the messages it read
    messages: MessageSpan | None = None
    #: the review items (merge conflicts) this revision opens again: the undo of a review choice
    reopened: list[str] | None = None
    #: facts this revision moved between memory scopes (their id, words and history stay)
    moved: list[ScopeMove] | None = None


@SCHEMA.register
@dataclass(frozen=True)
class MemoryPeerHead(Payload):
    """A memory revision another device wrote, kept for the memory merge.

    ``data`` is that device's ``memory.written`` payload verbatim (the merge reads it as
    the writer wrote it, so it stays a raw mapping here; the door checks it against
    :class:`MemoryWritten`)."""

    TYPE: ClassVar[str] = "memory.peer"
    device: str
    event_id: str
    ts: str
    data: dict[str, Any]
    redacted: bool | None = None  # True: secrets were cut from ``data`` here (it is not verbatim)


@SCHEMA.register
@dataclass(frozen=True)
class MemoryReviewed(Payload):
    """The user resolved a flagged item. A held change: ``add`` (written into memory) or
    ``keep-out`` (left out, with the user's ``why``); a merge conflict: ``keep-this`` (this
    device's version stands) or ``keep-other``. Older events say ``accept`` (the change
    stands: kept out, or this version) or ``restore`` (added, or the other version);
    ``synced``: another device's revision resolved it.

    ``entry`` is the item as it was reviewed (absent in older events), so the choice can be
    listed (``memory dropped``) and undone: the undo is a revision that holds it again."""

    TYPE: ClassVar[str] = "memory.reviewed"
    item: str
    action: str  # add | keep-out | keep-this | keep-other | accept | restore | synced
    memory_seq: int | None = None
    entry: ReviewItem | None = None
    why: str | None = None


@SCHEMA.register
@dataclass(frozen=True)
class MemoryRolledBack(Payload):
    TYPE: ClassVar[str] = "memory.rolled_back"
    to_rev: str
    memory_seq: int


@SCHEMA.register
@dataclass(frozen=True)
class MemoryPurged(Payload):
    """Tombstone of ``memtray purge``: what kind of text went, how much, when -- never the text."""

    TYPE: ClassVar[str] = "memory.purged"
    pattern_sha256: str  # sha256 of salt + pattern (utf-8), hex
    salt: str
    regex: bool = False
    events: int = 0  # events rewritten
    occurrences: int = 0  # occurrences replaced in the log
    revisions: int = 0  # memory.written events rewritten (memory revisions)
    files: int = 0  # side files and logs scrubbed or removed
    by: str = "user"


@SCHEMA.register
@dataclass(frozen=True)
class CheckinAsked(Payload):
    """A notification asked the user whether a fact still holds ("Still training for the
    marathon?"): the fact's id, the check date it was due on, and the user's day it asked.
    Each fact is asked once per check date, after a restart too
    (:class:`~memtray.core.memory.dated.CheckIns` reads these back); an answer is a revision.
    Device-local: it does not sync (core/log/origin.py), so each device asks once."""

    TYPE: ClassVar[str] = "checkin.asked"
    fact: str
    review_after: str  # YYYY-MM-DD: the check date that was due
    day: str  # YYYY-MM-DD: the user's day it was asked
