"""Audit commands: ``eval retention``, ``memory rebuild|compare|adopt``, ``prompt at``.

Names, flags and ``--json`` shapes are a contract (docs/CLI.md, docs/AUDIT.md).
``eval retention`` and ``prompt at`` only read the data home (the evaluation runs
in a throw-away one), so they never need the running instance; the rebuild
commands write events and run against the App (or are forwarded to it).
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memtray.core.base.clock import parse_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli.console import app_scope, con, listing
from memtray.core.cli.console import dumps as _dumps
from memtray.core.cli.console import out as _out
from memtray.core.cli.frontend import renderer


def _when(text: str) -> datetime:
    try:
        dt = parse_ts(text) if "T" in text or " " not in text else datetime.fromisoformat(text)
    except ValueError:
        raise MemtrayError(f"cannot read the date and time {text!r}",
                           hint="Use ISO 8601, e.g. 2026-11-30T09:00 (local time) or 2026-11-30T08:00Z") from None
    if dt.tzinfo is None:
        dt = dt.astimezone()
    return dt.astimezone(UTC)


class ProgressBar:
    """``[#####-----] 3/8 what`` redrawn in place on a terminal's stderr; silent otherwise."""

    WIDTH = 24

    def __init__(self, enabled: bool | None = None) -> None:
        c = con()
        self.enabled = c.tty if enabled is None else enabled
        self._write = c.write_err
        self._shown = 0

    def __call__(self, done: int, total: int, what: str) -> None:
        if not self.enabled:
            return
        filled = round(self.WIDTH * done / total) if total else self.WIDTH
        line = f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {done}/{total} {what}"[:100]
        self._write("\r" + line.ljust(self._shown))
        self._shown = len(line)

    def close(self) -> None:
        if self.enabled and self._shown:
            self._write("\r" + " " * self._shown + "\r")
            self._shown = 0


# --- eval retention ------------------------------------------------------------------------


def cmd_eval_retention(args: argparse.Namespace, home: Home) -> int:
    from dataclasses import replace

    from memtray.core.audit import retention
    from memtray.core.base import config as cfgmod

    if args.consolidations < 1:
        raise MemtrayError("--consolidations must be at least 1")
    if args.plot and not args.plot.lower().endswith(".png"):
        raise MemtrayError(f"--plot writes a PNG file; {args.plot!r} does not end in .png")
    # the chart is drawn by the front end (the desktop's Qt renderer): ask for it before
    # the evaluation's model calls, not after
    plotter = renderer() if args.plot else None
    cfg = cfgmod.load(home)
    if args.model:
        cfg = replace(cfg, model=args.model)
    corpus = retention.synthetic_corpus() if args.corpus == "synthetic" else retention.own_corpus(home)
    bar = ProgressBar()
    try:
        result = retention.run_eval(corpus, cfg, consolidations=args.consolidations,
                                    policy=args.policy or cfg.drop_policy, guard=not args.no_guard,
                                    on_progress=bar)
    finally:
        bar.close()
    report = result.to_json()
    # the report first: if the chart cannot be drawn, the evaluation is not lost
    if args.json:
        _out(_dumps(report))
    else:
        for line in retention_table(report):
            _out(line)
    if plotter is not None:
        plotter.plot_retention(report, Path(args.plot))
        if not args.json:
            _out(f"plot written to {args.plot}")
    return 0


def retention_table(r: dict[str, Any]) -> list[str]:
    guard = "on" if r.get("guard", True) else "OFF (test only)"
    out = [
        f"memtray eval retention — corpus {r['corpus']} ({r['messages']} messages), model {r['model']}, "
        f"policy {r['policy']}, guard {guard}",
        "",
        f"{'#':>3} {'facts':>6} {'added':>6} {'removed':>8} {'changed':>8} {'silent drops':>13} {'kept':>5} "
        f"{'lost':>5} {'unsupported':>12} {'survival':>9}",
    ]
    for s in r["steps"]:
        if s["failed"]:
            out.append(f"{s['index']:>3} {'FAILED: ' + s['failed'][:80]}")
            continue
        drops = f"{s['silent']} ({100 * s['silent_rate']:.0f}%)"
        out.append(f"{s['index']:>3} {s['facts']:>6} {s['added']:>6} {s['removed']:>8} {s['changed']:>8} "
                   f"{drops:>13} {s['kept']:>5} {s['lost']:>5} {len(s['unsupported']):>12} "
                   f"{100 * s['survival']:>8.1f}%")
    out.append("")
    out += summary_lines(r)
    return out


def summary_lines(r: dict[str, Any]) -> list[str]:
    k = r["consolidations"]
    never = r.get("never_remembered") or []
    should = f" and the {len(never)} it never held" if never else ""
    out = [
        f"survival@{k}: {100 * r['survival']:.1f}%  ({r['facts_survived']} of {r['facts_ever'] + len(never)} facts: "
        f"the {r['facts_ever']} that ever entered memory{should}; present or removed with a reason)",
        f"silent drops: {r['silent_drops']} in {k} consolidation(s) (mean {100 * r['silent_drop_rate']:.1f}% of "
        f"memory per consolidation); lost without a reason: {len(r['lost'])}",
    ]
    for text in r["lost"][:10]:
        out.append(f"  lost: {text}")
    # what the conversation stated and no revision ever held: as lost as a dropped fact
    out.append(f"never remembered: {len(never) or 'none'}")
    for text in never[:10]:
        out.append(f"  never remembered: {text}")
    if len(never) > 10:
        out.append(f"  … and {len(never) - 10} more (see --json)")
    sup = r.get("supersession")
    if sup:
        out.append(f"supersession: {sup['correct']} of {sup['total']} correct (newer fact kept, older removed "
                   f"with a reason)")
        for p in sup["pairs"]:
            if not p["correct"]:
                out.append(f"  wrong: {p['old']!r} -> {p['new']!r} (new kept: {p['new_kept']}, old removed: "
                           f"{p['old_removed']}, reason recorded: {p['reason_recorded']})")
    bad = r["unsupported_insertions"]
    out.append(f"unsupported insertions: {len(bad) or 'none'}")
    for b in bad[:10]:
        out.append(f"  step {b['step']}: {b['fact']}")
    if r.get("failures"):
        out.append(f"failed consolidations: {r['failures']}")
    return out


# --- rebuild, compare, adopt ---------------------------------------------------------------


def cmd_rebuild(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.audit import adopt, rebuild

    with app_scope(home) as app:
        if args.list:
            return listing(adopt.listing(app), args.json, "no rebuilds",
                           lambda r: f"{r['branch']:<28} {r['model']:<28} {r['state']}")
        if args.discard:
            info = rebuild.discard(app, args.discard)
            _out(f"discarded {info.branch} (its events stay in the log; main is untouched)")
            return 0
        if not args.model:
            raise MemtrayError("memory rebuild needs --model MODEL", hint="Any litellm model string.")
        prompt = None
        if args.prompt:
            try:
                prompt = Path(args.prompt).read_text(encoding="utf-8")
            except OSError as exc:
                raise MemtrayError(f"cannot read the prompt file {args.prompt}: {exc.strerror or exc}") from None
        since = _when(args.since) if args.since else None
        bar = ProgressBar()
        try:
            out = app.run(rebuild.run(app, model=args.model, name=args.name, since=since,
                                      exclude=list(args.exclude or []), prompt=prompt, on_progress=bar))
        except KeyboardInterrupt:
            bar.close()
            name = args.name or rebuild.default_name(args.model)
            con().error(f"memtray: rebuild {name!r} interrupted; main is untouched and finished steps are kept. "
                        "Run the same command again to resume.")
            return 130
        finally:
            bar.close()
        for note in out.notes:
            _out(f"note: {note}")
        info = out.info
        if out.up_to_date:
            _out(f"{info.branch} is up to date ({out.total} steps); main is untouched")
        else:
            resumed = f", {out.skipped} already done" if out.skipped else ""
            _out(f"rebuilt {info.branch} with {info.model}: {out.total} steps ({out.done_now} now{resumed}); "
                 "main is untouched")
        _out(f"next: memtray memory compare {info.branch}   then   memtray memory adopt {info.branch}")
    return 0


def cmd_compare(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.audit import adopt

    with app_scope(home) as app:
        r = adopt.compare(app, args.branch)
    if args.json:
        _out(_dumps(r))
        return 0
    _out(f"{r['branch']} ({r['model']}, {r['state']}) vs current memory:")
    if r["steps_pending"]:
        _out(f"  note: {r['steps_pending']} memory change(s) on main are not in the rebuild yet")
    d = r["diff"]
    if not (d["added"] or d["dropped"] or d["changed"]):
        _out("  no fact differences")
    for f in d["added"]:
        _out(f"+ {f['id']} [{f['section']}] {f['text']}")
    for f in d["dropped"]:
        _out(f"- {f['id']} [{f['section']}] {f['text']}")
    for c in d["changed"]:
        _out(f"~ {c['new']['id']} [{c['new']['section']}] {c['old']['text']}\n    → {c['new']['text']}")
    m, b = r["retention"]["main"], r["retention"]["rebuild"]
    _out("")
    _out(f"{'':<28} {'main':>10} {'rebuild':>10}")
    rows = [
        ("facts now", r["facts"]["main"], r["facts"]["rebuild"]),
        ("consolidations", m["consolidations"], b["consolidations"]),
        ("survival", f"{100 * m['survival']:.1f}%", f"{100 * b['survival']:.1f}%"),
        ("facts lost without reason", len(m["lost"]), len(b["lost"])),
        ("silent drops (guarded)", m["silent_drops"], b["silent_drops"]),
        ("unsupported insertions", len(m["unsupported_insertions"]), len(b["unsupported_insertions"])),
    ]
    for label, a, c in rows:
        _out(f"{label:<28} {a!s:>10} {c!s:>10}")
    return 0


def cmd_adopt(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.audit import adopt, rebuild
    from memtray.core.log.events import MemoryWritten

    with app_scope(home) as app:
        rec = adopt.adopt(app, args.branch, force=args.force)
        d = MemoryWritten.of(rec).diff
        a, r, c = (len(d["added"]), len(d["dropped"]), len(d["changed"])) if d else (0, 0, 0)
        rev = app.memory.revision("HEAD")
        _out(f"adopted {rebuild.PREFIX}{rebuild.parse_name(args.branch)}: new revision {rev.short} on main "
             f"(+{a} −{r} ~{c})")
    return 0


# --- prompt at -----------------------------------------------------------------------------


def cmd_prompt_at(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.agent.timetravel import NotATurn, find_turn, reconstruct
    from memtray.core.log.eventlog import EventLog
    from memtray.core.memory.gitrepo import GitRepo

    if not home.events.exists():
        raise NotATurn(f"there is no event log in {home.root}")
    elog = EventLog.open(home.events, readonly=True)
    try:
        spec = args.when.strip()
        m = re.fullmatch(r"(?:seq:)?(\d+)", spec)
        if m:
            seq = find_turn(elog.records(), seq=int(m.group(1)), session=args.session)
        else:
            seq = find_turn(elog.records(), when=_when(spec), session=args.session)
        from memtray.core.log.attachments import AttachmentStore

        rec = reconstruct(elog.records, [seq], AttachmentStore(home.root).load)[seq]
    finally:
        elog.close()
    rev = None
    git = GitRepo(home.memory)
    if rec.memory_seq and git.exists():
        try:
            git.open(create=False)
            rev = next((i.sha for i in git.walk() if i.trailers.get("Event-Seq") == str(rec.memory_seq)), None)
        except MemtrayError:
            rev = None
        finally:
            git.close()
    if args.json:
        _out(_dumps(rec.to_json() | {"memory_rev": rev}))
        return 0 if rec.match else 1
    verdict = "exact: the rebuilt request hashes to the recorded one" if rec.match else \
        f"MISMATCH: rebuilt {rec.rebuilt_hash[:12]}, recorded {rec.request_hash[:12]}"
    mem = f"revision {rev[:8]} (event {rec.memory_seq})" if rev else (
        f"event {rec.memory_seq}" if rec.memory_seq else "empty")
    _out(f"turn {rec.seq} — session {rec.session!r}, {rec.ts[:19].replace('T', ' ')}, model {rec.model or '?'}")
    _out(f"request {rec.request_hash[:12]}: {verdict}")
    _out(f"memory in force: {mem}; context: event {rec.context_seq or '-'}; built at log position {rec.basis_seq}")
    tools = [t.get("function", {}).get("name", "?") for t in rec.tools]
    _out(f"tools: {', '.join(tools) or 'none'}")
    for note in rec.notes:
        _out(f"note: {note}")
    for msg in rec.messages:
        _out("")
        head = f"── {msg['role']}"
        if msg.get("tool_call_id"):
            head += f" (result of {msg.get('name') or msg['tool_call_id']})"
        _out(head + " " + "─" * max(3, 60 - len(head)))
        if msg.get("content"):
            _out(str(msg["content"]))
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function", {})
            _out(f"→ calls {fn.get('name')}({fn.get('arguments')})")
    return 0 if rec.match else 1


# --- parser --------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> Any:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise RuntimeError("the memory command has no subcommands")  # pragma: no cover


def add_commands(sub: Any) -> None:
    """``eval retention``, ``prompt at`` and (under ``memory``) ``rebuild``, ``compare``, ``adopt``.

    Call after :func:`memtray.core.cli.memory.add_commands` (it creates ``memory``).
    """
    ev = sub.add_parser("eval", help="measure memory quality")
    evs = ev.add_subparsers(dest="eval_cmd", metavar="SUBCOMMAND", required=True)
    r = evs.add_parser("retention", help="replay a conversation through K consolidations in a scratch home")
    r.add_argument("--model", help="litellm model string (default: the configured model)")
    r.add_argument("--corpus", choices=["own", "synthetic"], default="synthetic",
                   help="your own log, or the built-in corpus with known facts (default)")
    r.add_argument("--consolidations", "-k", type=int, default=8, metavar="K")
    r.add_argument("--policy", choices=["keep", "review"], help="silent-drop policy (default: configured)")
    r.add_argument("--json", action="store_true")
    r.add_argument("--plot", metavar="FILE.png", help="write a PNG chart of facts, drops and survival")
    r.add_argument("--no-guard", action="store_true", help=argparse.SUPPRESS)  # shows what the guard prevents
    r.set_defaults(fn=cmd_eval_retention)

    p = sub.add_parser("prompt", help="inspect past prompts")
    ps = p.add_subparsers(dest="prompt_cmd", metavar="SUBCOMMAND", required=True)
    at = ps.add_parser("at", help="the exact messages a past assistant turn was sent (SEQ or DATETIME)")
    at.add_argument("when", metavar="SEQ|DATETIME")
    at.add_argument("--session")
    at.add_argument("--json", action="store_true")
    at.set_defaults(fn=cmd_prompt_at)

    ms = _subcommands(sub.choices["memory"])
    rb = ms.add_parser("rebuild", help="re-consolidate the log onto branch rebuild/NAME (main untouched)")
    rb.add_argument("--model", help="litellm model string")
    rb.add_argument("--since", metavar="DATETIME", help="keep memory as it was then; redo the changes after")
    rb.add_argument("--exclude", nargs="+", action="extend", metavar="SESSION|SEQ_RANGE",
                    help="leave out a session or events (e.g. 120-180)")
    rb.add_argument("--name", help="branch name (default: from the model); the same command resumes it")
    rb.add_argument("--prompt", metavar="FILE", help="a consolidation prompt with {memory} and {conversation}")
    rb.add_argument("--list", action="store_true", help="list rebuilds and their state")
    rb.add_argument("--discard", metavar="NAME", help="drop a rebuild and its branch")
    rb.add_argument("--json", action="store_true", help="with --list")
    rb.set_defaults(fn=cmd_rebuild)
    cp = ms.add_parser("compare", help="fact diff and retention scores: current memory vs rebuild/NAME")
    cp.add_argument("branch", metavar="rebuild/NAME")
    cp.add_argument("--json", action="store_true")
    cp.set_defaults(fn=cmd_compare)
    ad = ms.add_parser("adopt", help="make rebuild/NAME the current memory (a new revision on main)")
    ad.add_argument("branch", metavar="rebuild/NAME")
    ad.add_argument("--force", action="store_true", help="adopt although main changed since the rebuild")
    ad.set_defaults(fn=cmd_adopt)
