"""Rebuild memory from the log: re-consolidate onto ``rebuild/NAME``, compare, adopt.

A rebuild re-does every memory change of the log (or those after ``--since``)
with another model or consolidation prompt, leaving ``main`` untouched:

* each consolidation on main becomes a consolidation of the same messages
  (minus ``--exclude``\\d sessions and seq ranges) by the new model, through
  the same validation, redaction and no-silent-forgetting guard;
* each memory edit that did not come from a consolidation (user edits,
  restores, rollbacks, review, the agent's ``remember``/``forget``) is applied
  as a fact-level patch by id (:func:`undo.replay`), so what the user wrote by
  hand survives a rebuild;
* redo, adopt and rebuild revisions are skipped (they re-derive, not add).

Fact ids: the branch starts from the ledger of the main revision it forks
from, and every step records the ids of its memory (``facts``, as
``memory.written`` does). A consolidation goes through the same id protocol
and guard as on main (:func:`proposal.apply_reply`); a fact the rebuilt
consolidation adds gets the id main gave the same fact in the consolidation it
re-does (:func:`facts.pair`: same words, or the same names and numbers
reworded), so a rebuild keeps each fact's id and comparing or adopting it is by
id. A fact main never had gets an id above every id main has handed out.

Progress is event-sourced: ``rebuild.started``, one ``rebuild.progress`` per
step (the branch's full MEMORY.md after it), then ``rebuild.completed`` or
``rebuild.failed``. The branch ``refs/heads/rebuild/NAME`` in the memory
repository is a projection of those events (deterministic commits forking
from the main commit the rebuild starts from), so it comes back identical if
the repository is rebuilt, and a rebuild interrupted by Ctrl-C, SIGKILL or a
failing model resumes where it stopped: run the same command again. Running
it again after main moved on re-does only the new memory changes.

Comparing a rebuild with the current memory and adopting it: :mod:`adopt`.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memtray import resources
from memtray.core.audit.exclusions import Exclusions, RebuildError, parse_exclusions
from memtray.core.base.clock import parse_ts
from memtray.core.base.errors import LLMError
from memtray.core.base.faults import crash_point
from memtray.core.base.redact import redact
from memtray.core.log.events import (
    ConsolidationStarted,
    FactDiffData,
    MemoryWritten,
    Message,
    RebuildAdopted,
    RebuildCompleted,
    RebuildDiscarded,
    RebuildFailed,
    RebuildProgress,
    RebuildStarted,
    Record,
    UsageRecorded,
)
from memtray.core.log.usage import as_usage
from memtray.core.memory import factdiff, facts, scopereply, scopes
from memtray.core.memory.facts import Ledger
from memtray.core.memory.gitrepo import GitRepo
from memtray.core.memory.ledgers import diff_by_id
from memtray.core.memory.undo import replay

if TYPE_CHECKING:
    from memtray.core.app import App

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]

PREFIX = "rebuild/"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SKIP_REASONS = ("redo", "adopt", "rebuild")


# --- names and exclusions ----------------------------------------------------------------


def parse_name(spec: str) -> str:
    """``NAME``, ``rebuild/NAME`` or ``refs/heads/rebuild/NAME`` -> ``NAME`` (validated)."""
    name = spec.strip().removeprefix("refs/heads/").removeprefix(PREFIX)
    if not _NAME_RE.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise RebuildError(f"{spec!r} is not a usable rebuild name",
                           hint="Use letters, digits, '.', '_' and '-' (at most 64), e.g. --name gpt4o-test.")
    return name


def default_name(model: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.")[:64] or "rebuild"
    return parse_name(slug.replace("..", "."))


def branch_ref(name: str) -> str:
    return f"refs/heads/{PREFIX}{name}"


# --- the plan ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One memory change of main to re-do."""

    source_seq: int
    kind: str  # consolidation | patch
    ts: str
    reason: str
    session: str | None = None
    consolidation: str | None = None
    message_seqs: tuple[int, ...] = ()
    diff: FactDiffData | None = None
    #: the memory.written on main before this one (0: none): a patch re-does the change between them
    before_seq: int = 0
    #: the memory scope of the conversation a consolidation re-does (core/memory/scopereply.py)
    scope: str = "global"


@dataclass
class Plan:
    steps: list[Step]
    start_memory_seq: int
    start_memory: str
    base_seq: int
    notes: list[str] = field(default_factory=list)
    excluded_messages: int = 0


def make_plan(records: Iterable[Record], *, since: datetime | None, exclude: Exclusions) -> Plan:
    """The steps of a rebuild, from one pass over the log."""
    cons: dict[str, tuple[str, int | None, int | None, str]] = {}
    msgs: dict[str, list[int]] = {}
    plan = Plan([], 0, "", 0)
    excluded_msgs: set[int] = set()
    last_written = 0
    for rec in records:
        plan.base_seq = rec.seq
        if rec.type == Message.TYPE:
            key = rec.session or "default"
            msgs.setdefault(key, []).append(rec.seq)
            if exclude.excludes(rec.seq, key):
                excluded_msgs.add(rec.seq)
            continue
        if rec.type == ConsolidationStarted.TYPE:
            c = ConsolidationStarted.of(rec)
            cons[c.consolidation] = (rec.session or "default", c.first_seq, c.last_seq, c.scope)
            continue
        if rec.type != MemoryWritten.TYPE:
            continue
        d = MemoryWritten.of(rec)
        before_seq, last_written = last_written, rec.seq
        reason = d.reason
        if since is not None and parse_ts(rec.ts) < since:
            plan.start_memory_seq, plan.start_memory = rec.seq, d.memory
            continue
        if reason in _SKIP_REASONS:
            continue
        if exclude.excludes(rec.seq, rec.session):
            plan.notes.append(f"skipped the {reason} of event {rec.seq} (excluded)")
            continue
        if reason != "consolidation":
            plan.steps.append(Step(rec.seq, "patch", rec.ts, reason, diff=d.diff,
                                   before_seq=before_seq))
            continue
        cid = d.consolidation
        session, first, last, scope = cons.get(cid or "", (rec.session or "default", None, None, scopes.GLOBAL))
        if first is None or last is None:
            plan.notes.append(f"skipped consolidation {cid} of event {rec.seq}: its messages are not recorded")
            continue
        seqs = msgs.get(session, [])
        lo, hi = bisect.bisect_left(seqs, first), bisect.bisect_right(seqs, last)
        keep = tuple(s for s in seqs[lo:hi] if not exclude.excludes(s, session))
        if not keep:
            plan.notes.append(f"skipped consolidation {cid} of event {rec.seq}: all its messages are excluded")
            continue
        plan.steps.append(Step(rec.seq, "consolidation", rec.ts, reason, session, cid, keep, before_seq=before_seq,
                               scope=scope))
    plan.excluded_messages = len(excluded_msgs)
    return plan


# --- rebuilds recorded in the log --------------------------------------------------------


@dataclass
class RebuildInfo:
    id: str
    name: str
    model: str
    since: str | None
    exclude: list[str]
    prompt: str | None
    start_memory_seq: int
    base_seq: int
    steps: int
    started_seq: int
    ts: str
    progress: list[Record] = field(default_factory=list)
    status: str = "running"  # running (or interrupted) | failed | completed | discarded | adopted
    reason: str | None = None
    adopted_seq: int | None = None

    @property
    def branch(self) -> str:
        return PREFIX + self.name

    def options(self) -> tuple[Any, ...]:
        return (self.model, self.since, sorted(self.exclude), self.prompt)

    def memory(self, start_memory: str) -> str:
        return RebuildProgress.of(self.progress[-1]).memory if self.progress else start_memory

    def ledger(self, start: Ledger) -> Ledger:
        """The branch's facts with their ids (``start``: the ledger of the fork point)."""
        return step_ledger(self.progress[-1]) if self.progress else start

    def describe(self) -> str:
        done = len(self.progress)
        if self.status == "running":
            return f"interrupted after step {done} of {self.steps}"
        if self.status == "failed":
            return f"stopped after step {done} of {self.steps}: {self.reason}"
        return self.status


def scan(records: Iterable[Record]) -> tuple[dict[str, RebuildInfo], dict[int, str]]:
    """Every rebuild in the log, and the memory text of every ``memory.written`` a rebuild starts from."""
    out: dict[str, RebuildInfo] = {}
    memories: dict[int, str] = {}
    for rec in records:
        if rec.type == MemoryWritten.TYPE:
            memories[rec.seq] = MemoryWritten.of(rec).memory
            continue
        if rec.type not in _REBUILD_TYPES:
            continue
        p = rec.payload
        if not isinstance(p, _Rebuild):
            continue
        info = out.get(p.rebuild)
        if isinstance(p, RebuildStarted):
            if info is None:
                out[p.rebuild] = RebuildInfo(
                    p.rebuild, p.name, p.model, p.since, list(p.exclude or []),
                    p.prompt, p.start_memory_seq, p.base_seq, p.steps, rec.seq, rec.ts,
                )
            else:
                info.base_seq, info.steps, info.status, info.reason = p.base_seq, p.steps, "running", None
        elif info is None:
            continue
        elif isinstance(p, RebuildProgress):
            info.progress.append(rec)
        elif isinstance(p, RebuildCompleted):
            info.status, info.base_seq = "completed", p.base_seq
        elif isinstance(p, RebuildFailed):
            info.status, info.reason = "failed", p.reason
        elif isinstance(p, RebuildDiscarded):
            info.status = "discarded"
        elif isinstance(p, RebuildAdopted):
            info.status, info.adopted_seq = "adopted", p.memory_seq
    keep = {i.start_memory_seq for i in out.values()}
    return out, {k: v for k, v in memories.items() if k in keep}


_Rebuild = RebuildStarted | RebuildProgress | RebuildCompleted | RebuildFailed | RebuildDiscarded | RebuildAdopted
_REBUILD_TYPES = frozenset(c.TYPE for c in (RebuildStarted, RebuildProgress, RebuildCompleted, RebuildFailed,
                                            RebuildDiscarded, RebuildAdopted))


def step_ledger(rec: Record) -> Ledger:
    """The ids of a ``rebuild.progress`` step's memory (content ids for steps recorded before
    rebuilds kept fact ids)."""
    p = RebuildProgress.of(rec)
    return Ledger.of(p.memory, p.facts)


def by_name(rebuilds: dict[str, RebuildInfo], name: str) -> RebuildInfo | None:
    live = [r for r in rebuilds.values() if r.name == name and r.status != "discarded"]
    return max(live, key=lambda r: r.started_seq) if live else None


# --- the branch: a projection of rebuild.progress events ---------------------------------


def _fork(git: GitRepo, start_memory_seq: int) -> str | None:
    if not start_memory_seq or git.head() is None:
        return None
    for info in git.walk():
        if info.trailers.get("Event-Seq") == str(start_memory_seq):
            return info.sha
    return None


def _commit_message(info: RebuildInfo, rec: Record, prev: str) -> str:
    d = RebuildProgress.of(rec)
    # the diff the event recorded, so the commit (and its SHA) never depends on how a later
    # memtray would pair the facts; events written before it was recorded fall back to diffing
    if d.diff is not None:
        a, r, c = len(d.diff["added"]), len(d.diff["dropped"]), len(d.diff["changed"])
    else:
        a, r, c = factdiff.diff(prev, d.memory).counts
    return (
        f"rebuild {info.name}: step {d.step + 1} ({d.kind}) +{a} -{r} ~{c}\n\n"
        f"Event-Seq: {rec.seq}\nReason: rebuild\nRebuild: {info.id}\nSource-Seq: {d.source_seq}\n"
        f"Model: {d.model or info.model}\nFacts: +{a} -{r} ~{c}\n"
    )


def sync_branch(git: GitRepo, info: RebuildInfo) -> int:
    """Make ``rebuild/NAME`` hold one commit per progress event. Returns the commits made."""
    from memtray.core.memory.revisions import history_entry

    ref = branch_ref(info.name)
    if info.status == "discarded":
        head = git.ref(ref)
        if head is not None and git.info(head).trailers.get("Rebuild") in (info.id, None):
            git.set_ref(ref, None)
        return 0
    fork = _fork(git, info.start_memory_seq)
    seqs = [str(p.seq) for p in info.progress]
    head = git.ref(ref)
    done = 0
    if head is not None and head != fork:
        trailers = git.info(head).trailers
        if trailers.get("Rebuild") == info.id and trailers.get("Event-Seq") in seqs:
            done = seqs.index(trailers["Event-Seq"]) + 1
        else:
            head = None
    if head is None:
        git.set_ref(ref, fork)
    tip = git.ref(ref)
    prev_mem = git.read_memory(tip) if tip else ""
    history = git.read(tip, "HISTORY.md") if tip else ""
    made = 0
    for rec in info.progress[done:]:
        d = RebuildProgress.of(rec)
        if d.history_append:
            history += history_entry(parse_ts(rec.ts), d.history_append)
        # the global facts in MEMORY.md, each scope's in scopes/NAME.md, as on main
        git.commit({**scopes.files(d.memory), "HISTORY.md": history}, _commit_message(info, rec, prev_mem),
                   parse_ts(rec.ts), branch=ref.encode(), update_worktree=False)
        prev_mem = d.memory
        made += 1
    return made


def sync_all(app: App) -> dict[str, RebuildInfo]:
    """Bring every rebuild branch up to date with the log (after a crash or a repository rebuild)."""
    rebuilds, _ = scan(app.store.log.records())
    git: GitRepo = app.memory.git

    def sync() -> None:
        for info in sorted(rebuilds.values(), key=lambda r: r.started_seq):
            sync_branch(git, info)

    app.write(sync)  # branch refs and commits are git writes: the worker makes them
    return rebuilds


# --- running ---------------------------------------------------------------------------


@dataclass
class Outcome:
    info: RebuildInfo
    done_now: int
    skipped: int  # steps already done by an earlier run
    total: int
    notes: list[str]
    up_to_date: bool = False


def load_messages(records: Iterable[Record], seqs: set[int]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    if not seqs:
        return out
    last = max(seqs)
    for rec in records:
        if rec.seq > last:
            break
        if rec.seq in seqs and rec.type == Message.TYPE:
            out[rec.seq] = {**Message.of(rec).to_session(), "seq": rec.seq, "ts": rec.ts}
    return out


def apply_patch(memory: str, ledger: Ledger, step: Step, before: Ledger, after: Ledger,
                texts: tuple[str, str]) -> tuple[str, Ledger, dict[str, str]]:
    """Re-apply a non-consolidation memory change of main (``before`` -> ``after``, its
    ledgers; ``texts``, its memory texts) onto the branch by fact id. Returns (memory, its
    ledger, removal reasons by id).

    A branch that holds what main held before the change (the same text, the same ids)
    holds what main held after it: main's text, layout and scopes exactly. Otherwise the
    change is replayed by id (:func:`undo.replay`); a fact it added or moved between scopes
    goes into the scope main has it in after, every other fact of the branch stays in its
    scope (:func:`scopereply.patch_scopes`)."""
    dropped = step.diff["dropped"] if step.diff else []
    given = {it["id"]: it.get("reason", "") for it in dropped}
    by_text = {factdiff.normalize(it["text"]): it.get("reason", "") for it in dropped}
    gone = {f.id: f for f in before.facts if after.get(f.id) is None}
    if memory == texts[0] and ledger.ids == before.ids:
        out, led, removed = texts[1], Ledger(after.facts, max(after.next, ledger.next)), list(gone)
    else:
        where = (scopes.scope_map(before, texts[0]), scopes.scope_map(after, texts[1]))
        scoped = scopes.scope_map(ledger, memory)
        out, led, removed = replay(before, after, memory, ledger)
        out, led = scopes.settle(out, led, scopereply.patch_scopes(led, scoped, before, after, *where))
    reasons: dict[str, str] = {}
    for fid in removed:
        had = ledger.get(fid)
        main_fact = gone.get(fid) or next((f for f in gone.values() if had is not None and f.norm == had.norm), None)
        why = given.get(main_fact.id if main_fact else fid) or (by_text.get(had.norm) if had else None)
        reasons[fid] = f"{step.reason}: {why or step.reason}"
    return out, led, reasons


def prompt_template(custom: str | None) -> str:
    text: str = custom if custom is not None else resources.text("prompts/consolidation.md")
    if "{memory}" not in text or "{conversation}" not in text:
        raise RebuildError("the consolidation prompt must contain {memory} and {conversation}")
    return text


async def _consolidate(
    app: App, ledger: Ledger, memory: str, messages: list[dict[str, Any]], model: str, template: str,
    main: Ledger, scope: str = scopes.GLOBAL,
) -> tuple[dict[str, Any], Ledger]:
    """One re-done consolidation through the id protocol and guard of main's. ``main`` is the
    ledger of the main revision it re-does: a fact it adds that main added too keeps main's id.
    ``scope``: the conversation's memory scope, as on main: the model is shown the global
    memory and that scope only, and its new facts go there (unless it says global)."""
    from memtray.core.memory.ask import request_save_memory
    from memtray.core.memory.guard import hold_history, parse_reply, shown_messages
    from memtray.core.memory.proposal import apply_reply

    see = scopereply.shown(scope)
    part, part_ids = scopes.restrict(memory, see), scopes.sub_ledger(ledger, memory, see)
    result = await request_save_memory(app.llm, app.config.consolidation_timeout, part, messages, model, template,
                                       ledger=part_ids, budget=app.config.memory_budget, scope=scope)
    if (usage := as_usage(result.usage)) is not None:  # the usage ledger (core/log/usage.py)
        app.store.append(UsageRecorded(kind="rebuild", model=model, usage=usage))
    call = next((tc for tc in result.tool_calls if tc.name == "save_memory"), None)
    if call is None:
        raise ValueError("the model answered without calling save_memory")
    scoped = scopereply.plan(parse_reply(call.arguments), scope, part_ids)
    reply = scoped.reply
    update = redact(reply.memory_update) if reply.memory_update is not None else None
    edits = [{k: redact(v) if isinstance(v, str) else v for k, v in e.items()} for e in reply.edits or []]
    texts = [str(m.get("content") or "") for m in shown_messages(messages)]
    roles = [str(m.get("role") or "") for m in shown_messages(messages)]
    a = apply_reply(part_ids, part, memory_update=update, edits=edits if reply.edits is not None else None, removed=reply.removed,
                    messages=texts, policy=app.config.drop_policy, roles=roles, receipts=reply.receipts,
                    inferred=app.config.inferred_facts)
    entry = hold_history(redact(reply.history_entry), a.flagged)
    silent = [{"id": v.id, "text": v.text} for v in a.verdicts if v.kind in ("silent-kept", "silent-held")]
    # beside the scopes it never saw; each fact where main's write would put it
    text, led = scopes.merge_back(memory, ledger, see, a.memory, a.ledger)
    was = scopes.scope_map(ledger, memory)
    text, led = scopes.settle(text, led, {**{i: was[i] for i in led.ids if i in was},
                                          **scopereply.placed(scoped, was, led)})
    return ({"memory": text, "history_append": entry or None, "reasons": a.reasons or None,
             "silent": silent or None, "flagged": a.flagged or None}, main_ids(ledger, led, main))


def main_ids(before: Ledger, after: Ledger, main: Ledger) -> Ledger:
    """``after`` with the facts it added (ids not in ``before``) under main's ids for the same
    facts (:func:`facts.pair`), where main has one the branch does not use yet."""
    new = [f for f in after.facts if before.get(f.id) is None]
    used = set(after.ids)
    free = [f for f in main.facts if f.id not in used]
    if not new or not free:
        return after
    rename = {new[j].id: free[i].id for j, i in facts.pair(free, new).items()}
    return Ledger(tuple(replace(f, id=rename.get(f.id, f.id)) for f in after.facts), after.next)


async def run(
    app: App,
    *,
    model: str,
    name: str | None = None,
    since: datetime | None = None,
    exclude: list[str] | None = None,
    prompt: str | None = None,
    on_progress: Progress | None = None,
) -> Outcome:
    """Start, resume or bring up to date the rebuild ``name`` (run on the worker)."""
    if app.store.readonly:
        raise RebuildError("the event log is read-only (damaged?)", hint="Run `memtray doctor`.")
    name = parse_name(name) if name else default_name(model)
    key = (id(app), name)
    if key in _RUNNING:
        raise RebuildError(f"rebuild {name!r} is already running")
    _RUNNING.add(key)
    try:
        return await _run(app, model=model, name=name, since=since, exclude=exclude, prompt=prompt,
                          on_progress=on_progress)
    finally:
        _RUNNING.discard(key)


#: (app, name) of the rebuilds running in this process (a forwarded second run must not interleave)
_RUNNING: set[tuple[int, str]] = set()


async def _run(
    app: App,
    *,
    model: str,
    name: str,
    since: datetime | None,
    exclude: list[str] | None,
    prompt: str | None,
    on_progress: Progress | None,
) -> Outcome:
    template = prompt_template(prompt)
    store = app.store
    git: GitRepo = app.memory.git
    excl, notes = parse_exclusions(exclude or [], last_seq=store.log.last_seq, sessions=store.state.sessions.keys())
    since_text = since.isoformat().replace("+00:00", "Z") if since else None
    rebuilds, memories = scan(store.log.records())
    info = by_name(rebuilds, name)
    wanted = (model, since_text, sorted(excl.specs()), prompt)
    if info is not None and info.options() != wanted:
        raise RebuildError(
            f"a rebuild named {name!r} exists with other options ({info.model}, since {info.since or '-'}, "
            f"exclude {' '.join(info.exclude) or '-'})",
            hint=f"Resume it with the same options, choose another --name, or `memtray memory rebuild --discard {name}`.",
        )
    plan = make_plan(store.log.records(), since=since, exclude=excl)
    notes += plan.notes
    done_sources = {RebuildProgress.of(p).source_seq for p in info.progress} if info else set()
    todo = [s for s in plan.steps if s.source_seq not in done_sources]
    if info is not None:
        sync_branch(git, info)
        if not todo and info.status in ("completed", "adopted"):
            return Outcome(info, 0, len(plan.steps), len(plan.steps), notes, up_to_date=True)
        rid = info.id
        start_memory = memories.get(info.start_memory_seq, plan.start_memory)
    else:
        rid = store.new_id()
        start_memory = plan.start_memory
    start_seq = info.start_memory_seq if info else plan.start_memory_seq
    srec = store.append(RebuildStarted(
        rebuild=rid, name=name, model=model, base_seq=plan.base_seq, steps=len(plan.steps),
        start_memory_seq=start_seq, since=since_text, exclude=excl.specs() or None, prompt=prompt,
        resumed=info is not None,
    ))
    if info is None:
        info = RebuildInfo(rid, name, model, since_text, excl.specs(), prompt, start_seq, plan.base_seq,
                           len(plan.steps), srec.seq, srec.ts)
        sync_branch(git, info)  # a new branch starts at its fork point
    info.base_seq, info.steps, info.status, info.reason = plan.base_seq, len(plan.steps), "running", None
    memory = info.memory(start_memory)
    ledgers = app.memory.ledgers
    ledger = info.ledger(ledgers.at_seq(start_seq) if start_seq else Ledger(()))
    messages = load_messages(store.log.records(), {s for st in todo for s in st.message_seqs})
    total, skipped = len(plan.steps), len(plan.steps) - len(todo)
    done_now = 0
    index = skipped
    try:
        for step in todo:
            if on_progress is not None:
                on_progress(index, total, f"step {index + 1}/{total}: {step.kind} of event {step.source_seq}")
            # new ids above every id main has handed out: a fact main never had never takes one of main's
            ledger = Ledger(ledger.facts, max(ledger.next, app.memory.ledger().next))
            if step.kind == "consolidation":
                msgs = [messages[s] for s in step.message_seqs if s in messages]
                result, new_ledger = await _consolidate(app, ledger, memory, msgs, model, template,
                                                        ledgers.at_seq(step.source_seq), step.scope)
            else:
                new, new_ledger, reasons = apply_patch(memory, ledger, step, ledgers.at_seq(step.before_seq),
                                                       ledgers.at_seq(step.source_seq),
                                                       (_main_at(ledgers, step.before_seq), _main_at(ledgers, step.source_seq)))
                result = {"memory": new, "reasons": reasons or None}
            diff = diff_by_id(ledger, new_ledger).to_json()
            rec = store.append(RebuildProgress(
                rebuild=rid, step=index, source_seq=step.source_seq, kind=step.kind, diff=diff,
                message_seqs=list(step.message_seqs) or None, model=model if step.kind == "consolidation" else None,
                facts=new_ledger.to_json(), **result,
            ))
            info.progress.append(rec)
            crash_point(f"rebuild.progress-{index + 1}")
            sync_branch(git, info)
            memory, ledger = result["memory"], new_ledger
            index += 1
            done_now += 1
    except (LLMError, ValueError, TimeoutError) as exc:
        reason = f"timed out after {app.config.consolidation_timeout:g}s" if isinstance(exc, TimeoutError) else str(exc)
        store.append(RebuildFailed(rebuild=rid, reason=redact(reason), step=index))
        raise RebuildError(
            f"rebuild {name!r} stopped at step {index + 1} of {total}: {reason}",
            hint=f"Main is untouched and the {index} finished step(s) are kept: run the same command again "
                 f"to resume, or `memtray memory rebuild --discard {name}`.",
        ) from None
    except asyncio.CancelledError:
        store.append(RebuildFailed(rebuild=rid, reason="interrupted", step=index))
        raise
    store.append(RebuildCompleted(rebuild=rid, steps=total, base_seq=plan.base_seq))
    info.status = "completed"
    if on_progress is not None:
        on_progress(total, total, "done")
    return Outcome(info, done_now, skipped, total, notes)


def _main_at(ledgers: Any, seq: int) -> str:
    """Main's memory text at the ``memory.written`` of ``seq`` (0: none yet)."""
    rec = ledgers.record(seq) if seq else None
    return MemoryWritten.of(rec).memory if rec is not None else ""


def discard(app: App, name: str) -> RebuildInfo:
    rebuilds, _ = scan(app.store.log.records())
    info = by_name(rebuilds, parse_name(name))
    if info is None:
        raise RebuildError(f"no rebuild named {name!r}", hint="See `memtray memory rebuild --list`.")
    app.store.append(RebuildDiscarded(rebuild=info.id))
    info.status = "discarded"
    app.write(lambda: sync_branch(app.memory.git, info))
    return info


__all__ = ["Exclusions", "Plan", "RebuildError", "RebuildInfo", "Step", "apply_patch", "discard", "main_ids",
           "make_plan", "parse_exclusions", "parse_name", "run", "scan", "step_ledger", "sync_all", "sync_branch"]
