"""Memory commands: consolidate, memory show/log/diff/dropped/restore-fact/facts/edit/forget/rollback/redo/why/review.

Names, flags and ``--json`` shapes are a contract (see docs/CLI.md). Every
command runs against the App (or is forwarded to the running instance).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli import scopes as cli_scopes
from memtray.core.cli.console import app_scope, con, listing
from memtray.core.cli.console import dumps as _dumps
from memtray.core.cli.console import out as _out
from memtray.core.memory import scopes, unsaid

if TYPE_CHECKING:
    from memtray.core.app import App
    from memtray.core.memory.revisions import Revision
    from memtray.core.memory.service import MemoryService


def _parse_when(text: str) -> datetime:
    """ISO 8601 date or date and time; without an offset it is local time (``T`` or space alike)."""
    text = text.strip()
    try:
        dt = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise MemtrayError(f"cannot read the date and time {text!r}", hint="Use ISO 8601, e.g. 2026-11-30T09:00") from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # local time
    return dt.astimezone(UTC)


def cmd_consolidate(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home, warm=True) as app:  # needs the model: the warm instance serves it
        cons = app.consolidation
        sessions = sorted(app.store.state.sessions) if args.all else [args.session]
        failed = 0
        for key in sessions:
            try:
                out = app.run(cons.consolidate(key, archive_all=False, trigger="manual"))
            except MemtrayError as exc:
                _out(f"{key}: FAILED: {exc}")
                failed += 1
                continue
            if out.nothing_to_do:
                _out(f"{key}: nothing to consolidate")
                continue
            _out(
                f"{key}: consolidation {out.consolidation}: {out.added} added, {out.removed} removed, "
                f"{out.changed} changed, {out.kept} kept, {out.flagged} flagged "
                f"(messages {out.start}..{out.end - 1})"
            )
            if out.not_remembered:
                _out(f"  {unsaid.headline(out.not_remembered)}: see `memtray memory review`")
            for note in out.notes:
                _out(f"  note: {note}")
        return 1 if failed else 0


def cmd_show(args: argparse.Namespace, home: Home) -> int:
    if not args.history:
        cli_scopes.warn_unread(home)
    with app_scope(home) as app:
        mem = app.memory
        if args.at:
            rev = mem.at(_parse_when(args.at))
            if rev is None:
                raise MemtrayError(f"memory had no revision yet at {args.at}")
            sha = rev.rev
        else:
            sha = mem.resolve(args.rev)
        app_text = mem.show(sha, "HISTORY.md" if args.history else "MEMORY.md")
        if (scope := cli_scopes.name_of(args, app)) is not None and not args.history:
            app_text = scopes.only(app_text, scope)
        con_text = app_text if app_text.endswith("\n") or not app_text else app_text + "\n"
        if args.sources and not args.history:
            con_text = with_sources(mem, sha, con_text)
        con().write(con_text)
    return 0


def with_sources(mem: MemoryService, sha: str, text: str) -> str:
    """MEMORY.md with each fact's id and where it comes from after it: ``stated`` (a user
    message says it, with the quote), ``inferred`` (only the assistant's words) or ``no
    receipt`` (written before receipts, by hand or by the agent). The current revision only."""
    from memtray.core.memory import factdiff

    if sha != mem.resolve("HEAD"):
        raise MemtrayError("--sources shows the current memory only", hint="Drop REV/--at, or use `memory why`.")
    ids = {f.norm: f.id for f in mem.ledger().facts}
    receipts = mem.receipts()
    lines = text.split("\n")
    for f, _first, end in factdiff.spans(text):
        fid = ids.get(f.norm, "?")
        r = receipts.get(fid)
        tag = "no receipt" if r is None else (
            f"{'stated' if r['stated'] else 'inferred'}, #{','.join(map(str, r['source_seqs']))}: "
            f"\u201c{r['quote']}\u201d")
        lines[end - 1] += f"  [{fid}] ({tag})"
    return "\n".join(lines)


def cmd_log(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        mem = app.memory
        # with --scope the rows are filtered after they are read: read them all, then cut the
        # page, or a scope whose revisions are older than others' would show fewer than asked
        scoped = cli_scopes.name_of(args, app) is not None
        revs = mem.revisions(limit=sys.maxsize if scoped else args.limit)
        failed = [c for c in app.store.state.consolidations.values() if c.status == "failed"]
        # Ordered by log position, not by clock: each failure goes in before the first
        # revision written before it started; a full page shows no older failures.
        oldest = revs[-1].event_seq if len(revs) >= args.limit and not scoped else 0
        fails = sorted((c for c in failed if c.started_seq > oldest), key=lambda c: c.started_seq, reverse=True)
        rows: list[dict[str, Any]] = []
        for r in revs:
            while fails and fails[0].started_seq > r.event_seq:
                rows.append(_failed_row(fails.pop(0)))
            rows.append(r.to_json() | {"kind": "revision"})
        rows += [_failed_row(c) for c in fails]
        # purges (this home's, and other devices' applied here) go in by log position too
        purges = [{"kind": "purge", "time": p["ts"], "by": p["by"], "events": p["events"], "event_seq": p["seq"]}
                  for p in app.store.state.purges if p["seq"] > oldest]
        if purges:
            at = {id(r): r.get("event_seq") or _started(r, failed) for r in rows}
            rows = sorted(rows + purges, key=lambda r: at.get(id(r)) or r["event_seq"], reverse=True)
        rows = cli_scopes.log_rows(app, rows, cli_scopes.name_of(args, app))
        if args.json:
            _out(_dumps(rows[: args.limit]))
            return 0
        if not rows:
            _out("memory has no revisions yet")
        for r in rows[: args.limit]:
            when = str(r["time"])[:19].replace("T", " ")
            if r["kind"] == "purge":
                _out(f"PURGED   {when}  by {r['by']}: {r['events']} event(s) rewritten")
            elif r["kind"] == "failed" and r["redo_of"]:
                _out(f"FAILED   {when}  redo of {r['redo_of'][:10]}  {r['model']}  {r['reason']} (memory unchanged)")
            elif r["kind"] == "failed":
                _out(f"FAILED   {when}  consolidation {r['consolidation'][:10]}  {r['model']}  {r['reason']}")
            else:
                flag = f"  ⚑{r['flagged']}" if r["flagged"] else ""
                cons = f"  [{r['consolidation'][:10]}]" if r["consolidation"] else ""
                where = f"  ({', '.join(r['scopes'])})" if set(r.get("scopes", ())) - {scopes.GLOBAL} else ""
                _out(f"{r['rev'][:8]} {when}  {r['reason']:<13} {r['model'] or '-':<24} "
                     f"+{r['added']} −{r['removed']} ~{r['changed']}{flag}{cons}{where}")
    return 0


def _started(row: dict[str, Any], failed: list[Any]) -> int:
    """The log position of a failed consolidation's row (its start)."""
    return next((c.started_seq for c in failed if c.id == row.get("consolidation")), 0)


def _failed_row(c: Any) -> dict[str, Any]:
    return {"kind": "failed", "time": c.ts, "consolidation": c.id, "session": c.session,
            "model": c.model, "reason": c.reason, "attempts": c.attempts, "redo_of": c.redo_of}


def cmd_diff(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        mem = app.memory
        a = args.rev_a
        b = args.rev_b
        if a is not None and b is None:
            a, b = a, "HEAD"
        if args.raw:

            con().write(mem.raw_diff(a, b))
            return 0
        scope = cli_scopes.name_of(args, app)
        data = cli_scopes.diff_json(app, mem.diff(a, b), a, b, scope)
        if args.json:
            _out(_dumps(data))
            return 0
        if not (data["added"] or data["dropped"] or data["changed"] or data.get("moved")):
            _out("no fact changes")
        for f in data["added"]:
            _out(f"+ {f['id']} [{f['section']}] {f['text']}")
        for f in data["dropped"]:
            _out(f"- {f['id']} [{f['section']}] {f['text']}")
        for c in data["changed"]:
            _out(f"~ {c['new']['id']} [{c['new']['section']}] {c['old']['text']}\n    → {c['new']['text']}")
        for m in data.get("moved") or ():
            _out(cli_scopes.moved_line(m, scope))
    return 0


def cmd_dropped(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        return listing(app.memory.dropped(), args.json, "no fact has ever been removed", _dropped_line)


def _dropped_line(r: dict[str, Any]) -> str:
    now = "back in memory now" if r["present_now"] else "still gone"
    return (f"{(r['rev'] or '?')[:8]} {r['time'][:19].replace('T', ' ')}  {r['text']}\n"
            f"         {dropped_why(r['reason'], r['by'])}; {now}")


#: what wrote the revision that removed a fact (MemoryWritten.reason), for `memory dropped`
DROPPED_BY = {
    "consolidation": "a consolidation", "redo": "a redone consolidation", "agent": "the assistant in a chat",
    "user-edit": "a hand edit", "rollback": "a rollback", "restore": "a restore", "review": "a review",
    "adopt": "an adopted rebuild", "rebuild": "a rebuild", "undo": "an undo",
    "merge": "a merge with another device's memory", "move": "a move between scopes",
    "expired": "the end of its time",
}


def dropped_why(reason: str, by: str | None) -> str:
    """One readable clause: "removed by a consolidation: moved to Paris", never "rollback (rollback)"."""
    who = DROPPED_BY.get(by or "", f"a {by} revision" if by else "a revision")
    if not reason or reason == by or reason in DROPPED_BY:
        return f"removed by {who}"
    if reason == "removed by the model":  # the guard's words when removed_facts gave none
        return f"removed by {who} (no reason given)"
    if reason == "silent":
        return f"dropped by {who} without a reason (silent)"
    if reason.startswith("silent"):
        return f"dropped by {who} without a reason, {reason.removeprefix('silent').strip(' ()')}"
    return f"removed by {who}: {reason}"


def cmd_restore_fact(args: argparse.Namespace, home: Home) -> int:
    words = [args.rev, *args.fact]
    # `restore-fact F12`: an id alone is found in the history; otherwise REV FACT as before
    rev, fact = (None, words[0]) if len(words) == 1 else (words[0], " ".join(words[1:]))
    with app_scope(home) as app:
        new = app.memory.restore_fact(rev, fact)
        _out(f"restored as revision {new.short}")
    return 0


def cmd_undo(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        scope = cli_scopes.name_of(args, app)
        res = app.memory.undo(args.target, scope)
        data = cli_scopes.undo_json(app, res, scope) if args.json else None
    if data is not None:
        _out(_dumps(data))
    else:
        if res.revision is not None:
            _out(f"undid {res.target.short} ({res.target.reason}); new revision {res.revision.short}")
        for d in res.done:
            _out(f"  {d['action']} [{d['id']}] {d['text']}")
        for d in res.not_done:
            _out(f"  not undone [{d['id']}] {d['text']}: {d['why']}")
    if res.revision is None:
        raise MemtrayError(f"nothing to undo in {res.target.short}",
                           hint="Its changes are already undone or were changed again since (listed above).")
    return 0


def cmd_facts(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        rows = app.memory.current_facts()
        if not scopes.known(app.store.state):  # a home without scopes: the shape as it always was
            rows = [{k: v for k, v in r.items() if k != "scope"} for r in rows]
        return listing(rows, args.json, "memory holds no facts yet",
                       lambda f: f"{f['id']:<6} [{f['section']}] {f['text']}"
                                 + (f"  (scope {f['scope']})" if f.get("scope", scopes.GLOBAL) != scopes.GLOBAL else "")
                                 + f"\n       by {f['by']}")


def cmd_edit(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        rev = app.memory.edit_fact(args.id, " ".join(args.text), args.reason or "")
        return _fact_changed(args, app, rev)


def cmd_forget(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        rev = app.memory.forget_fact(args.id, args.reason or "")
        return _fact_changed(args, app, rev)


def _fact_changed(args: argparse.Namespace, app: App, rev: Revision) -> int:
    """What `memory edit|forget` did, from the diff its event recorded (with the reason)."""
    rec = next(r for r in app.store.log.records(rev.event_seq - 1) if r.seq == rev.event_seq)
    diff = rec.data.get("diff") or {}
    keep = ("id", "section", "text")
    if diff.get("changed"):
        item = diff["changed"][0]
        old, new = ({k: item[side][k] for k in keep} for side in ("old", "new"))
    else:
        item = diff["dropped"][0]
        old, new = {k: item[k] for k in keep}, None
    reason = str(item.get("reason") or "")
    if args.json:
        _out(_dumps({"revision": rev.to_json(), "fact": old, "new": new, "reason": reason}))
        return 0
    did = f"edited {old['id']}: {old['text']} → {new['text']}" if new else f"forgot {old['id']}: {old['text']}"
    _out(f"{did} ({reason}); new revision {rev.short}")
    return 0


def cmd_rollback(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        rev = app.memory.rollback(args.rev)
        _out(f"memory rolled back to {args.rev}; new revision {rev.short} (+{rev.added} −{rev.removed} ~{rev.changed})")
    return 0


def cmd_redo(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.memory.consolidation import RedoFailedError

    with app_scope(home) as app:
        try:
            out = app.run(app.consolidation.redo(args.consolidation, model=args.model))
        except RedoFailedError as exc:
            # refused or failed: said, and in the log (`memory log`), never a silent no-op
            if args.json:
                _out(_dumps({"status": "failed", "consolidation": exc.consolidation, "redo_of": exc.redo_of,
                             "reason": exc.reason, "revision": None}))
                return 1
            raise
        rev = app.memory.revision("HEAD")
        if args.json:
            done = app.store.state.consolidations.get(out.consolidation)
            _out(_dumps({"status": "completed", "consolidation": out.consolidation,
                         "redo_of": done.redo_of if done else None,
                         "reason": None, "revision": rev.to_json(), "summary": out.summary(), "notes": out.notes}))
            return 0
        _out(f"redo {out.consolidation}: {out.summary()}; new revision {rev.short}")
        for note in out.notes:
            _out(f"  note: {note}")
    return 0


def cmd_why(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        info = cli_scopes.why(app, " ".join(args.fact), cli_scopes.name_of(args, app))
        if args.json:
            _out(_dumps(info))
            return 0
        rev = info["revision"]
        _out(f"fact:      {info['fact']['text']}  (id {info['fact']['id']}, section {info['fact']['section']})")
        _out(f"added by:  revision {rev['rev'][:8]} at {rev['time']} ({rev['reason']}, model {rev['model']})")
        if info.get("device") and info["device"] != app.memory.device:  # another device's fact, merged here
            its = f", its revision {str(info['device_revision'])[:12]}" if info.get("device_revision") else ""
            name = info.get("device_name")
            _out(f"from device: {name} ({info['device']}{its})" if name else f"from device: {info['device']}"
                 + (f" ({its[2:]})" if its else ""))
        if info["consolidation"]:
            _out(f"consolidation: {info['consolidation']}")
        if info["source"] == "user":
            _out("source:    written by the user")
        receipt = info.get("receipt")
        if receipt:
            kind = "stated by the user" if receipt["stated"] else "inferred (only the assistant said it)"
            _out(f"receipt:   {kind}: \u201c{receipt['quote']}\u201d")
        if info["messages"]:
            _out("from these messages:")
            for m in info["messages"]:
                text = " ".join(str(m["content"]).split())
                if receipt and m["seq"] in receipt["source_seqs"]:
                    text = quoted(text, receipt["quote"])
                _out(f"  #{m['seq']} {m['ts'][:16].replace('T', ' ')} {m['role']}: {text[:300]}")
    return 0


def quoted(text: str, quote: str) -> str:
    """``text`` with the receipt's quote marked \u00bb like this\u00ab where it is (case and spacing
    aside; a quote with an elision or the model's slips is left unmarked)."""
    at = text.casefold().find(" ".join(quote.split()).casefold())
    if at < 0:
        return text
    end = at + len(" ".join(quote.split()))
    return f"{text[:at]}\u00bb{text[at:end]}\u00ab{text[end:]}"


def cmd_review(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.memory import scopes
    from memtray.core.memory.review import actions, scope_of, versions
    from memtray.core.sync.names import names_of

    action = args.action
    if action != "list" and not args.item:
        raise MemtrayError(f"`memory review {args.action}` needs the item's id", hint="See `memtray memory review`.")
    with app_scope(home) as app:
        mem = app.memory
        item: dict[str, Any] = next((i for i in mem.pending_review() if str(i["id"]).startswith(args.item or "\0")), {})
        if action == "list":
            rows = []
            pending = mem.pending_review()
            # once the home has scopes, where `add` would write each held change (absent before scopes)
            scoped = bool(scopes.known(mem.store.state)) or any("scope" in it for it in pending)
            for it in pending:
                row = {**it, "actions": actions(it)}
                if scoped and it.get("kind") != "merge-conflict":
                    row["scope"] = scope_of(it)
                if it.get("kind") == "merge-conflict":
                    now = mem.ledger().get(str(it.get("fact_id")))
                    row["versions"] = versions(it, now.text if now is not None else None)
                    row["device_names"] = names_of(mem.store, row.get("words") or {})
                rows.append(row)
            return listing(rows, args.json, "nothing waiting for review",
                           lambda it: _review_line(it, mem.store.state.device_names))
        if action in ("accept", "restore"):
            return _old_review(args, mem, item)
        if action == "undo":
            rev = mem.undo_review(args.item)
            return _did(args, args.item, "undo", rev, f"undone: {args.item} is waiting for review again "
                                                        f"(revision {rev.short})")
        if action == "keep-out":
            mem.keep_out(args.item, args.reason or "")
            return _did(args, item.get("id", args.item), "keep-out", None,
                        f"kept out {item.get('id', args.item)}: {item.get('text', '')!r} is not in memory; "
                        "`memtray memory dropped` lists it, `memtray memory review undo ID` puts it back in review")
        if action == "keep":
            if args.version not in ("this", "other"):
                raise MemtrayError("`memory review keep` needs --version this or --version other",
                                   hint="this: the words memory holds now; other: the other device's.")
            rev = mem.keep_version(args.item, args.version)
            if args.version == "this":
                msg = f"kept this version of {item.get('id', args.item)}: memory is unchanged (revision {rev.short})"
            elif item.get("conflict") == "removed-reworded":
                msg = (f"kept the other version of {item.get('id', args.item)}: removed {item.get('text')!r} "
                       f"from memory (revision {rev.short})")
            else:
                msg = f"kept the other version of {item.get('id', args.item)}: memory now says {item.get('text')!r} " \
                      f"(revision {rev.short})"
            return _did(args, item.get("id", args.item), f"keep-{args.version}", rev, msg)
        rev = mem.add_review(args.item)
        if item.get("kind") == "proposal" and item.get("section") == "History" and not item.get("replaces"):
            msg = f"added {item.get('id', args.item)}: the diary entry is in HISTORY.md now (revision {rev.short})"
        else:
            msg = f"added {item.get('id', args.item)} to memory (revision {rev.short})"
        return _did(args, item.get("id", args.item), "add", rev, msg)


def _old_review(args: argparse.Namespace, mem: Any, item: dict[str, Any]) -> int:
    """``accept`` (keep out / keep this version) and ``restore`` (add / keep the other), the
    names docs/CLI.md gave first, with the words they always printed."""
    if args.action == "accept":
        mem.accept_review(args.item)
        _out(f"accepted {args.item}: the change stands")
        return 0
    rev = mem.restore_review(args.item)
    if item.get("conflict") == "removed-reworded":  # the other way is the removal
        _out(f"resolved {args.item}: removed {item.get('text')!r} from memory (the removal "
             f"stands over the rewording; revision {rev.short})")
    elif item.get("kind") == "merge-conflict":
        _out(f"resolved {args.item}: memory now says {item.get('text')!r} (revision {rev.short})")
    elif item.get("kind") == "proposal" and item.get("section") == "History" and not item.get("replaces"):
        _out(f"restored {args.item}: the diary entry is in HISTORY.md now (revision {rev.short})")
    else:
        _out(f"restored {args.item} into memory (revision {rev.short})")
    return 0


def _did(args: argparse.Namespace, item: str, action: str, rev: Any, text: str) -> int:
    if args.json:
        _out(_dumps({"item": item, "action": action, "revision": rev.to_json() if rev is not None else None}))
    else:
        _out(text)
    return 0


def _review_line(it: dict[str, Any], names: dict[str, str]) -> str:
    from memtray.core.sync.names import label, named

    head = f"{it['id']}  {it['kind']:<12} [{it.get('section', '')}] {it['text']}\n            {named(str(it.get('reason', '')), names)}"
    cited = it.get("messages") or it.get("source_seqs") or []
    if it.get("quote"):  # a not-remembered item's quote is the user's own sentence
        said = "you said" if it["kind"] == "not-remembered" else "quote"
        head += f"\n            {said}: \"{it['quote']}\"" + (f" (message {', '.join(f'#{m}' for m in cited)})"
                                                                  if cited else "")
    if it["kind"] == "merge-conflict":
        v = it["versions"]
        for key, title in (("this", "this version (in memory now)"), ("other", "the other version")):
            words = v[key]["text"]
            who = label(names, v[key]["device"])
            head += f"\n            {title}{' from ' + who if who else ''}: {words if words is not None else '(removed)'}"
        return head + f"\n            keep this version: memtray memory review keep {it['id']} --version this" \
                      f"\n            keep the other:    memtray memory review keep {it['id']} --version other"
    into = f" (into the memory scope {it['scope']})" if it.get("scope") else ""
    return head + f"\n            add to memory{into}: memtray memory review add {it['id']}" \
                  f"\n            keep out:      memtray memory review keep-out {it['id']} [--reason WHY]"


def add_commands(sub: Any) -> None:
    c = sub.add_parser("consolidate", help="consolidate old messages into memory now")
    c.add_argument("--session", default="cli")
    c.add_argument("--all", action="store_true", help="every session")
    c.set_defaults(fn=cmd_consolidate)

    m = sub.add_parser("memory", help="browse, diff, restore and roll back memory")
    ms = m.add_subparsers(dest="memory_cmd", metavar="SUBCOMMAND", required=True)
    s = ms.add_parser("show", help="MEMORY.md at a revision or a date")
    s.add_argument("rev", nargs="?", default="HEAD")
    s.add_argument("--at", metavar="DATETIME")
    s.add_argument("--history", action="store_true", help="show HISTORY.md instead")
    s.add_argument("--scope", metavar="NAME", help=cli_scopes.SCOPE_HELP)
    s.add_argument("--sources", action="store_true",
                   help="each fact's id and receipt: stated by the user (with the quote), inferred, or none")
    s.set_defaults(fn=cmd_show)
    lg = ms.add_parser("log", help="one line per revision (and failed consolidations)")
    lg.add_argument("--limit", type=int, default=20)
    lg.add_argument("--json", action="store_true")
    lg.add_argument("--scope", metavar="NAME", help="only the revisions that changed facts of this scope")
    lg.set_defaults(fn=cmd_log)
    d = ms.add_parser("diff", help="fact-level diff (default HEAD~1..HEAD)")
    d.add_argument("rev_a", nargs="?")
    d.add_argument("rev_b", nargs="?")
    d.add_argument("--json", action="store_true")
    d.add_argument("--raw", action="store_true", help="the text diff")
    d.add_argument("--scope", metavar="NAME", help=cli_scopes.SCOPE_HELP)
    d.set_defaults(fn=cmd_diff)
    dr = ms.add_parser("dropped", help="every fact ever removed, and why")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(fn=cmd_dropped)
    rf = ms.add_parser("restore-fact", help="add a fact back as it was at REV (or by its id alone)")
    rf.add_argument("rev", metavar="REV|ID")
    rf.add_argument("fact", nargs="*")
    rf.set_defaults(fn=cmd_restore_fact)
    un = ms.add_parser("undo", help="undo one consolidation or revision, fact by fact (a new revision)")
    un.add_argument("target", metavar="CONSOLIDATION|REV")
    un.add_argument("--json", action="store_true")
    un.add_argument("--scope", metavar="NAME", help="undo only its changes to this scope's facts")
    un.set_defaults(fn=cmd_undo)
    fa = ms.add_parser("facts", help="the facts in memory now, with their ids and who wrote them")
    fa.add_argument("--json", action="store_true")
    fa.set_defaults(fn=cmd_facts)
    ed = ms.add_parser("edit", help="reword one fact, under its id (a new revision)")
    ed.add_argument("id", metavar="ID")
    ed.add_argument("text", nargs="+", metavar="TEXT")
    ed.add_argument("--reason", help="why (kept with the revision)")
    ed.add_argument("--json", action="store_true")
    ed.set_defaults(fn=cmd_edit)
    fo = ms.add_parser("forget", help="remove one fact by its id (a new revision)")
    fo.add_argument("id", metavar="ID")
    fo.add_argument("--reason", help="why (kept with the revision)")
    fo.add_argument("--json", action="store_true")
    fo.set_defaults(fn=cmd_forget)
    rb = ms.add_parser("rollback", help="make memory what it was at REV (a new revision)")
    rb.add_argument("rev")
    rb.set_defaults(fn=cmd_rollback)
    rd = ms.add_parser("redo", help="re-run a consolidation on the memory before it")
    rd.add_argument("consolidation")
    rd.add_argument("--model")
    rd.add_argument("--json", action="store_true")
    rd.set_defaults(fn=cmd_redo)
    w = ms.add_parser("why", help="where a fact came from")
    w.add_argument("fact", nargs="+")
    w.add_argument("--json", action="store_true")
    w.add_argument("--scope", metavar="NAME", help="the fact must be of this scope")
    w.set_defaults(fn=cmd_why)
    rv = ms.add_parser("review", help="changes held for review: list, add to memory or keep out, keep a version of a "
                                      "merge conflict, undo a choice")
    rv.add_argument("action", nargs="?", default="list",
                    choices=["list", "add", "keep-out", "keep", "undo", "accept", "restore"],
                    help="add: write the held change into memory; keep-out: leave it out (memory dropped lists it); "
                         "keep: a merge conflict's version (--version this|other); undo: undo the last choice for ID "
                         "(it waits for review again); accept / restore: the older names (keep out or keep this "
                         "version / add or keep the other)")
    rv.add_argument("item", nargs="?")
    rv.add_argument("--reason", default="", help="keep-out: why it stays out (shown by memory dropped)")
    rv.add_argument("--version", choices=["this", "other"],
                    help="keep: this = the words memory holds now, other = the other device's")
    rv.add_argument("--json", action="store_true")
    rv.set_defaults(fn=cmd_review)

    cli_scopes.add_commands(sub, ms)
