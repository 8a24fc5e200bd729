"""CLI commands for conversations (names, flags and ``--json`` shapes are a contract).

``memtray chats list [--all | --deleted] [--json]``, ``memtray chats rename KEY TITLE…``,
``memtray chats delete KEY``, ``memtray chats restore KEY``, ``memtray chats pin KEY``,
``memtray chats unpin KEY`` and ``memtray chats model KEY [MODEL | --default]``: what the
desktop's Chats list does, through the same core functions (core/log/chats.py,
``transcript.rename``). They run through ``cli.app_scope``, so while the desktop or the
daemon holds the data home they are forwarded to it and its open views follow at once.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from memtray.core.base.home import Home
from memtray.core.cli.console import app_scope
from memtray.core.cli.console import out as _out
from memtray.core.log import chats, transcript
from memtray.core.log.transcript import SessionInfo

if TYPE_CHECKING:
    from memtray.core.app import App


def as_json(i: SessionInfo) -> dict[str, Any]:
    """One conversation as ``chats list --json`` prints it (docs/CLI.md)."""
    return {"key": i.key, "title": i.title, "titled": i.titled or None, "started": i.first_ts, "last": i.last_ts,
            "preview": i.preview, "failed": i.failed, "pinned": i.pinned, "deleted": i.deleted, "model": i.model, "scope": i.scope}


def cmd_list(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        infos = app.worker.call(lambda: transcript.sessions(app.store.state))
    if args.deleted:
        infos = [i for i in infos if i.deleted is not None]
    elif not args.all:
        infos = [i for i in infos if i.deleted is None]
    if args.json:
        _out(json.dumps([as_json(i) for i in infos], ensure_ascii=False))
        return 0
    if not infos:
        _out("no deleted conversations" if args.deleted else "no conversations")
        return 0
    for i in infos:
        flags = [f for f, on in (("pinned", i.pinned), (f"deleted {str(i.deleted)[:10]}", i.deleted),
                                 ("not answered", i.failed), (f"model {i.model}", i.model),
                                 (f"scope {i.scope}", i.scope)) if on]
        extra = f"  [{', '.join(flags)}]" if flags else ""
        when = (i.last_ts or "")[:16].replace("T", " ")
        _out(f"{i.key:<24} {when:<16}  {i.title or '-'}{extra}")
    return 0


def cmd_rename(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        title = app.worker.call(lambda: _rename(app, args.key, " ".join(args.title)))
    _out(f"renamed {args.key}: {title}")
    return 0


def _rename(app: App, key: str, title: str) -> str:
    chats.find(app.store.state, key)  # a typo names no conversation: never a new, empty one
    return transcript.rename(app.store, key, title)


def cmd_delete(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        app.worker.call(lambda: chats.delete(app.store, args.key))
    _out(f"deleted {args.key} (`memtray chats restore {args.key}` brings it back; its messages stay in the log "
         "until `memtray purge`)")
    return 0


def cmd_restore(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        app.worker.call(lambda: chats.restore(app.store, args.key))
    _out(f"restored {args.key}")
    return 0


def cmd_pin(args: argparse.Namespace, home: Home) -> int:
    pinned = args.chats_cmd == "pin"
    with app_scope(home) as app:
        changed = app.worker.call(lambda: chats.pin(app.store, args.key, pinned))
    word = "pinned" if pinned else "unpinned"
    _out(f"{word} {args.key}" if changed else f"{args.key} was already {word}")
    return 0


def cmd_model(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        if args.model is None and not args.default:
            chosen = app.worker.call(lambda: chats.model_of(app.store.state, args.key))
            _out(chosen or f"{app.config.model or '-'} (the configured model)")
            return 0
        model = "" if args.default else args.model
        app.worker.call(lambda: chats.choose_model(app.store, args.key, model))
    _out(f"{args.key} now uses {model}" if model else f"{args.key} now uses the configured model")
    return 0


def add_commands(sub: Any) -> None:
    """Add ``chats`` to the top-level subparsers of ``cli.build_parser``."""
    c = sub.add_parser("chats", help="list, rename, delete, restore and pin conversations")
    cs = c.add_subparsers(dest="chats_cmd", metavar="SUBCOMMAND", required=True)

    ls = cs.add_parser("list", help="the conversations: pinned first, then the latest")
    which = ls.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="deleted ones too")
    which.add_argument("--deleted", action="store_true", help="only the deleted ones (they can be restored)")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_list)

    rn = cs.add_parser("rename", help="give a conversation a title")
    rn.add_argument("key", help="the conversation's key (`chats list`)")
    rn.add_argument("title", nargs="+")
    rn.set_defaults(fn=cmd_rename)

    for name, fn, text in (("delete", cmd_delete, "hide a conversation under \"Recently deleted\" (restorable)"),
                           ("restore", cmd_restore, "bring a deleted conversation back"),
                           ("pin", cmd_pin, "keep a conversation at the top of the list"),
                           ("unpin", cmd_pin, "let a pinned conversation go back in date order")):
        p = cs.add_parser(name, help=text)
        p.add_argument("key", help="the conversation's key (`chats list`)")
        p.set_defaults(fn=fn)

    m = cs.add_parser("model", help="the model a conversation's turns go to: show or choose it")
    m.add_argument("key", help="the conversation's key (`chats list`)")
    m.add_argument("model", nargs="?", help="a litellm model string, e.g. ollama/llava")
    m.add_argument("--default", action="store_true", help="use the configured model again")
    m.set_defaults(fn=cmd_model)
