"""Payloads of rebuilds: a re-consolidation of the log onto a branch (docs/AUDIT.md).

Registered in the one :data:`~memtray.core.log.schema.SCHEMA` (conventions: core/log/payloads.py).
"""

from dataclasses import dataclass
from typing import ClassVar, TypedDict

from memtray.core.log.payloads_memory import FactDiffData, FactLedger, ReviewItem
from memtray.core.log.schema import SCHEMA, Payload


class SilentDrop(TypedDict):
    """A fact the model dropped without a reason (before the guard kept it)."""

    id: str
    text: str


@SCHEMA.register
@dataclass(frozen=True)
class RebuildStarted(Payload):
    """A re-consolidation of the log onto the branch ``rebuild/<name>`` began (or resumed)."""

    TYPE: ClassVar[str] = "rebuild.started"
    rebuild: str
    name: str
    model: str
    base_seq: int  # the log seq the plan was made at
    steps: int
    start_memory_seq: int = 0  # the memory.written the branch forks from (0: empty memory)
    since: str | None = None
    exclude: list[str] | None = None
    prompt: str | None = None  # a custom consolidation prompt template
    resumed: bool = False


@SCHEMA.register
@dataclass(frozen=True)
class RebuildProgress(Payload):
    """One step of a rebuild: the branch's MEMORY.md after it (one commit on the branch)."""

    TYPE: ClassVar[str] = "rebuild.progress"
    rebuild: str
    step: int
    source_seq: int  # the memory.written on main this step re-does
    kind: str  # consolidation | patch
    memory: str
    history_append: str | None = None
    diff: FactDiffData | None = None
    #: facts the model removed, listed with a reason: fact id -> reason
    reasons: dict[str, str] | None = None
    #: facts the model dropped without a reason (before the guard kept them)
    silent: list[SilentDrop] | None = None
    flagged: list[ReviewItem] | None = None
    message_seqs: list[int] | None = None
    model: str | None = None
    #: the id of every fact of ``memory``, as in ``memory.written`` (absent before rebuilds kept ids)
    facts: FactLedger | None = None


@SCHEMA.register
@dataclass(frozen=True)
class RebuildCompleted(Payload):
    TYPE: ClassVar[str] = "rebuild.completed"
    rebuild: str
    steps: int
    base_seq: int


@SCHEMA.register
@dataclass(frozen=True)
class RebuildFailed(Payload):
    """A rebuild stopped (model error, Ctrl-C); its progress stays and it can be resumed."""

    TYPE: ClassVar[str] = "rebuild.failed"
    rebuild: str
    reason: str
    step: int = 0


@SCHEMA.register
@dataclass(frozen=True)
class RebuildDiscarded(Payload):
    TYPE: ClassVar[str] = "rebuild.discarded"
    rebuild: str


@SCHEMA.register
@dataclass(frozen=True)
class RebuildAdopted(Payload):
    """A rebuild became the current memory (the ``memory.written`` with reason ``adopt``)."""

    TYPE: ClassVar[str] = "rebuild.adopted"
    rebuild: str
    memory_seq: int
