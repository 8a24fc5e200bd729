"""Compare a rebuild with the current memory, and adopt it.

``compare`` gives the fact diff (by id) current memory -> ``rebuild/NAME`` and the
retention score of both histories (:mod:`retention`). ``adopt`` makes a
finished, up-to-date rebuild current: one ``memory.written`` (reason
``adopt``) on main whose provenance names, for every fact it brings in, the
rebuild step and the messages it came from, plus ``rebuild.adopted``. Listing
and the doctor's note about unfinished rebuilds live here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memtray.core.audit import retention
from memtray.core.audit.rebuild import (
    PREFIX,
    RebuildError,
    RebuildInfo,
    Step,
    branch_ref,
    by_name,
    load_messages,
    make_plan,
    parse_exclusions,
    parse_name,
    scan,
    step_ledger,
    sync_all,
)
from memtray.core.base.clock import parse_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.log.events import RebuildAdopted, RebuildProgress, Record
from memtray.core.memory import factdiff
from memtray.core.memory.facts import Ledger
from memtray.core.memory.gitrepo import GitRepo
from memtray.core.memory.ledgers import diff_by_id

if TYPE_CHECKING:
    from memtray.core.app import App
    from memtray.core.base.findings import Finding
    from memtray.core.base.home import Home

__all__ = ["PREFIX", "adopt", "check_rebuilds", "compare", "listing", "pending_steps"]


def _get(app: App, spec: str) -> tuple[RebuildInfo, str, dict[str, RebuildInfo]]:
    name = parse_name(spec)
    rebuilds = sync_all(app)
    info = by_name(rebuilds, name)
    if info is None:
        raise RebuildError(f"no rebuild named {name!r}", hint="See `memtray memory rebuild --list`.")
    _, memories = scan(app.store.log.records())
    start = memories.get(info.start_memory_seq, "")
    return info, start, rebuilds


def pending_steps(app: App, info: RebuildInfo) -> list[Step]:
    """Memory changes on main the rebuild has not re-done yet (main moved on, or it stopped)."""
    since = parse_ts(info.since) if info.since else None
    excl, _ = parse_exclusions(
        info.exclude, last_seq=app.store.log.last_seq, sessions=app.store.state.sessions.keys()
    )
    plan = make_plan(app.store.log.records(), since=since, exclude=excl)
    done = {RebuildProgress.of(p).source_seq for p in info.progress}
    return [s for s in plan.steps if s.source_seq not in done]


# --- scoring, compare, adopt -------------------------------------------------------------


def rebuild_steps(app: App, info: RebuildInfo, start_memory: str) -> list[retention.StepInput]:
    seqs = {s for p in info.progress for s in RebuildProgress.of(p).message_seqs or []}
    msgs = load_messages(app.store.log.records(), seqs)
    steps = []
    prev = start_memory
    before = _start_ledger(app, info)
    for p in info.progress:
        d = RebuildProgress.of(p)
        after = step_ledger(p)
        steps.append(retention.StepInput(  # by fact id (the progress events record them)
            f"{d.kind} of #{d.source_seq}", "model" if d.kind == "consolidation" else "user", prev,
            d.memory, dict(d.reasons or {}), [dict(s) for s in d.silent or []], None,
            {it["fact_id"] for it in d.flagged or [] if it["kind"] == "silent-drop"},
            [str(msgs[s].get("content") or "") for s in d.message_seqs or [] if s in msgs], None, p.ts,
            before, after,
        ))
        prev = d.memory
        before = after
    return steps


def _start_ledger(app: App, info: RebuildInfo) -> Ledger:
    return app.memory.ledgers.at_seq(info.start_memory_seq) if info.start_memory_seq else Ledger(())


def compare(app: App, spec: str) -> dict[str, Any]:
    """The fact diff current memory -> rebuild, and both retention scores."""
    info, start, _ = _get(app, spec)
    current = app.store.state.memory
    rebuilt = info.memory(start)
    d = diff_by_id(app.memory.ledger(), info.ledger(_start_ledger(app, info)))
    main_score = retention.score(retention.history_steps(app.store.log.records()), meta={"memory": "main"})
    rb_score = retention.score(rebuild_steps(app, info, start), meta={"memory": info.branch, "model": info.model})
    pending = pending_steps(app, info)
    return {
        "rebuild": info.id, "branch": info.branch, "model": info.model, "status": info.status,
        "state": info.describe(), "steps_done": len(info.progress), "steps_pending": len(pending),
        "diff": d.to_json(), "facts": {"main": len(factdiff.parse(current)), "rebuild": len(factdiff.parse(rebuilt))},
        "retention": {"main": main_score.to_json(), "rebuild": rb_score.to_json()},
    }


def adopt(app: App, spec: str, *, force: bool = False) -> Record:
    """Make the rebuild the current memory: one ``memory.written`` (reason ``adopt``) on main."""
    info, start, _ = _get(app, spec)
    if info.status not in ("completed", "adopted") and not force:
        raise RebuildError(f"rebuild {info.name!r} is not finished ({info.describe()})",
                           hint="Run the same `memtray memory rebuild` command again to finish it (or --force).")
    pending = pending_steps(app, info)
    if pending and not force:
        raise RebuildError(
            f"memory changed since rebuild {info.name!r} ran: {len(pending)} change(s) on main are not in it",
            hint=f"Run `memtray memory rebuild --model {info.model} --name {info.name}` again to add them "
                 f"(only the new part is consolidated), or adopt anyway with --force.",
        )
    current = app.store.state.memory
    new = info.memory(start)
    main_ledger = app.memory.ledger()
    new_ledger = info.ledger(_start_ledger(app, info))
    incoming = diff_by_id(main_ledger, new_ledger)
    if incoming.is_empty and new.strip() == current.strip():
        raise RebuildError(f"rebuild {info.name!r} is already the current memory")
    origin: dict[str, Record] = {}
    prev = _start_ledger(app, info)
    for p in info.progress:
        led = step_ledger(p)
        d = diff_by_id(prev, led)
        for f in d.added + [n for _o, n in d.changed]:
            origin[f.id] = p
        prev = led
    provenance: dict[str, Any] = {}
    for f in incoming.added + [n for _o, n in incoming.changed]:
        came = origin.get(f.id)
        entry: dict[str, Any] = {"rebuild": info.id}
        if came is not None:
            step = RebuildProgress.of(came)
            entry["rebuild_seq"] = came.seq
            if step.message_seqs:
                entry["source_seqs"] = list(step.message_seqs)
            else:
                entry["source_event"] = step.source_seq
        else:
            entry["from_seq"] = info.start_memory_seq
        provenance[f.id] = entry
    recs: list[Record] = app.memory.write(
        new, reason="adopt", source="user", model=info.model, provenance=provenance or None,
        dropped_reasons={f.id: f"adopt: not in {info.branch}" for f in incoming.dropped},
        facts=Ledger(new_ledger.facts, max(new_ledger.next, main_ledger.next)),
        extra=[(RebuildAdopted(rebuild=info.id, memory_seq=app.store.log.last_seq + 1),
                None)],
    )
    return recs[0]


def listing(app: App) -> list[dict[str, Any]]:
    rebuilds = sync_all(app)
    return [
        {"rebuild": r.id, "name": r.name, "branch": r.branch, "model": r.model, "status": r.status,
         "state": r.describe(), "steps_done": len(r.progress), "steps": r.steps, "since": r.since,
         "exclude": r.exclude, "started": r.ts}
        for r in sorted(rebuilds.values(), key=lambda r: r.started_seq)
        if r.status != "discarded"
    ]


# --- doctor ----------------------------------------------------------------------------


def check_rebuilds(home: Home) -> list[Finding]:
    """Doctor: rebuilds that stopped part-way (they resume; nothing on main depends on them)."""
    from memtray.core.base.findings import Finding
    from memtray.core.log.eventlog import EventLog

    if not home.events.exists():
        return []
    elog = EventLog.open(home.events, readonly=True)
    try:
        rebuilds, _ = scan(elog.records())
    except MemtrayError:
        return []
    finally:
        elog.close()
    out = []
    git = GitRepo(home.memory)
    for r in rebuilds.values():
        if r.status in ("running", "failed"):
            out.append(Finding(True, f"note: rebuild {r.name} {r.describe()}; "
                                     f"`memtray memory rebuild --model {r.model} --name {r.name}` resumes it, "
                                     f"`--discard {r.name}` drops it (main is not affected)", code="rebuild"))
    if git.exists() and rebuilds:
        try:
            git.open(create=False)
            for r in rebuilds.values():
                if r.status == "discarded" or not r.progress:
                    continue
                head = git.ref(branch_ref(r.name))
                if head is None or git.info(head).trailers.get("Event-Seq") != str(r.progress[-1].seq):
                    out.append(Finding(True, f"note: branch {r.branch} is behind its events; any "
                                             "`memtray memory rebuild`/`compare` command re-makes it",
                                           code="rebuild"))
        except MemtrayError:
            pass
        finally:
            git.close()
    return out
