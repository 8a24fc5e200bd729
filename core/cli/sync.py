"""``memtray sync [REMOTE]``: share this home with the user's other devices (docs/SYNC.md).

Runs through ``cli.app_scope``, so with the desktop or daemon running the sync
happens in that instance (the one writer), whichever terminal asked.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from typing import Any

from memtray.core.admin.tombstones import follow_tombstones
from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli.console import app_scope, out
from memtray.core.sync.digest import state_digest
from memtray.core.sync.gitcli import safe_url
from memtray.core.sync.identity import LOSS_WARNING
from memtray.core.sync.names import named
from memtray.core.sync.service import SyncService, check_remote
from memtray.core.sync.status import complete, read_status, status_file


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "sync",
        help="push this device's log and pull the others' through a git remote",
        description="Sync the event log and memory with the user's other devices through a git remote "
        "(a bare repository path, ssh or https; credentials come from git). Each device pushes only its "
        "own stream, fast-forward only; peers' events are imported and their memory merged by fact id.",
    )
    p.add_argument("remote", nargs="?", help="the remote (default: the sync_remote setting); or one of "
                   "setup, pair, devices, remove-device, recovery-code (docs/SYNC.md, \"Encrypted remotes\")")
    p.add_argument("target", nargs="?", help="after `pair`: the remote; after `remove-device`: the device id")
    p.add_argument("--join", metavar="CODE", help="with `pair`: pair this device with the code another device showed")
    p.add_argument("--init", action="store_true",
                   help="use a remote that already holds other refs (memtray adds refs/memtray/ only)")
    p.add_argument("--new-device", action="store_true",
                   help="give this home a new device id first (a copied data home), publishing its own events "
                   "under it")
    p.add_argument("--republish", action="store_true",
                   help="publish this device's stream again from its log (its copy on the remote was rewritten)")
    p.add_argument("--clear", action="store_true",
                   help="a new remote stays in clear (by default this device makes its sync keys at its first "
                   "sync with a new remote, which is then encrypted)")
    p.add_argument("--status", action="store_true", help="only say what the last sync did")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(fn=cmd_sync)

    d = sub.add_parser("device", help="the devices this home syncs with, and their names",
                       description="List the devices this home knows (this one first), or name one: "
                       "`memtray device name Laptop` names this device, `memtray device name DEVICE Desktop` another "
                       "(by id, a prefix of it, or its current name). A name travels with sync; an empty name removes it.")
    d.add_argument("action", nargs="?", choices=["list", "name"], default="list")
    d.add_argument("words", nargs="*", help="name: [DEVICE] NAME")
    d.add_argument("--json", action="store_true")
    d.set_defaults(fn=cmd_device)


#: how a clear remote is reported, with the way to an encrypted one (docs/SYNC.md)
CLEAR_NOTE = ("the remote holds everything in clear; to encrypt it, move to a new remote: docs/SYNC.md, "
              "\"From a clear remote to an encrypted one\"")


def _remote_arg(remote: str | None) -> str | None:
    if remote is None:
        return None
    # a local path is made absolute here: a forwarded command runs in another working directory
    if "://" not in remote and not remote.startswith("git@") and os.path.exists(remote):
        return os.path.abspath(remote)
    return remote


def cmd_sync(args: argparse.Namespace, home: Home) -> int:
    if args.remote in ACTIONS:
        if args.clear:
            raise MemtrayError("`--clear` goes with `memtray sync [REMOTE]`",
                               hint="It keeps a new remote in clear: `memtray sync --clear REMOTE`.")
        return ACTIONS[args.remote](args, home)
    if args.target is not None or args.join is not None:
        raise MemtrayError("`memtray sync` takes one remote; `--join` goes with `memtray sync pair`",
                           hint="Usage: memtray sync [REMOTE] | memtray sync pair [REMOTE] [--join CODE]")
    if args.status:
        return _status(args, home)
    remote = _remote_arg(args.remote)
    with app_scope(home) as app:
        svc: SyncService | None = app.sync
        assert svc is not None
        follow_tombstones(app)  # a purge made on another device is applied here too
        rep = svc.sync(remote, init=args.init, new_device=args.new_device, republish=args.republish,
                       clear=args.clear)
        names = dict(app.store.state.device_names)  # a name imported by this sync counts too
    if args.json:
        out(json.dumps(rep.to_json(), ensure_ascii=False, sort_keys=True))
        return 0
    if rep.new_device:
        out(f"this home is now device {rep.new_device}; its own events are published under that id")
    peers = ", ".join(f"{names[d]} ({d}): {n}" if d in names else f"{d}: {n}"
                      for d, n in sorted(rep.peers.items())) or "no new events"
    out(f"synced with {rep.remote}: pushed {rep.pushed} event(s), imported {rep.imported} ({peers})")
    if rep.keys_created:
        out(f"  a new remote, encrypted: this device made its sync keys (in the keyring); {LOSS_WARNING}")
        where = shlex.quote(rep.remote)  # `pair` without REMOTE needs sync_remote, which a one-off sync does not set
        out(f"  Pair your other devices: `memtray sync pair {where}` here, then "
            f"`memtray sync pair --join CODE {where}` there.")
    elif not rep.encrypted:
        out(f"  {CLEAR_NOTE}")
    if rep.republished:
        out("  this device's stream was published again as a new history (all its events counted as pushed)")
    if rep.merged_heads:
        out(f"  {rep.merged_heads} memory revision(s) of other devices merged into memory "
            "(they travel with the events but are not imported as events)")
    for line in rep.merges:
        out(f"  memory: {named(line, names)}")
    if rep.conflicts:
        out(f"  {len(rep.conflicts)} conflict(s) kept for review: memtray memory review")
    if rep.purges:
        out(f"  applied {rep.purges} purge(s) made on other devices")
    for note in rep.notes:
        out(f"  note: {note}")
    if rep.refusals:
        out(f"  refused {rep.refusals} event(s) or stream(s) from other devices (kept in quarantine/, see "
            "`memtray doctor`):")
        for r in rep.refused[:10]:
            where = f"{r['source']['name']} {r['source']['where']}".strip()
            out(f"    {where}: {r['reason']}")
    return 0


def cmd_device(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.base.errors import MemtrayError
    from memtray.core.sync.names import listing, name_device, resolve

    with app_scope(home) as app:
        here = app.memory.device
        if args.action == "name":
            if not args.words or len(args.words) > 2:
                raise MemtrayError("`memtray device name` takes [DEVICE] NAME",
                                   hint='e.g. `memtray device name Laptop` or `memtray device name d1a2b3 "Desktop"`.')
            device = resolve(app.store, here, args.words[0] if len(args.words) == 2 else None)
            name = args.words[-1]
            app.write(lambda: name_device(app.store, device, name))
        rows = listing(app.store, here)
    if args.json:
        out(json.dumps(rows, ensure_ascii=False))
        return 0
    for r in rows:
        out(f"{r['device']}  {r['name'] or '(no name)'}{'  (this device)' if r['this'] else ''}")
    return 0


def _status(args: argparse.Namespace, home: Home) -> int:
    """``--status``: the last sync with the configured remote, or with REMOTE (its own file)."""
    asked = (_remote_arg(args.remote) or "").strip() or None
    with app_scope(home) as app:
        where = status_file(home, asked, app.settings.current.sync_remote)
        st = read_status(home, where)
        # the conflicts waiting now (a review since the last sync resolved some): from the state
        pending = len(app.write(app.memory.merge_conflicts)) if st else 0
        digest = app.write(lambda: state_digest(app.store))
        names = dict(app.store.state.device_names)
    if args.json:  # every documented key, known or not (docs/CLI.md)
        body = {**complete(st), "conflicts_pending": pending, "digest": digest,
                "device_names": {d: n for d, n in names.items() if d == st.get("device") or d in (st.get("peers") or [])}}
        if not st and asked:
            body["remote"] = safe_url(asked)
        out(json.dumps(body, ensure_ascii=False, sort_keys=True))
        return 1 if st.get("last_error") else 0
    if not st:
        out(f"never synced with {safe_url(asked)}" if asked else "never synced")
        return 0
    me = st.get("device")
    out(f"remote: {st.get('remote')}  device: {names[me] + ' (' + me + ')' if me in names else me}")
    if st.get("peers"):
        out("other devices: " + ", ".join(f"{names[p]} ({p})" if p in names else p for p in st["peers"]))
    if st.get("encrypted"):
        out(f"encrypted: yes, signed and encrypted on the devices ({st.get('devices')} paired device(s))")
    elif st.get("encrypted") is False:
        out(f"encrypted: no, {CLEAR_NOTE}")
    out(f"last sync: {st.get('last_success') or 'never succeeded'}")
    if st.get("last_error"):
        out(f"last attempt {st.get('last_attempt')} failed: {st['last_error']}")
    if st.get("refusals"):
        out(f"refused in the last sync: {st['refusals']} (kept in quarantine/, see `memtray doctor`)")
    if pending:
        out(f"conflicts waiting for review: {pending} (memtray memory review)")
    elif st.get("conflicts"):
        out(f"conflicts of the last merge: {len(st['conflicts'])}, all resolved since")
    out(f"state digest: {digest[:16]} (the same on every device that synced and made nothing since)")
    return 1 if st.get("last_error") else 0


def _setup(args: argparse.Namespace, home: Home) -> int:
    """``memtray sync setup``: this device's keys; from then on it publishes only sealed streams."""
    with app_scope(home) as app:
        assert app.sync is not None
        made = app.sync.pairing.set_up()
        device = app.sync.device
    if args.json:
        out(json.dumps({"device": device, "created": made, "encrypted": True}, sort_keys=True))
        return 0
    out(f"device {device} has its sync keys (in the keyring){'' if made else ' already'}: everything it "
        "publishes from now on is signed and encrypted")
    out(f"  {LOSS_WARNING}")
    out("  Pair your other devices: `memtray sync pair` here, then `memtray sync pair --join CODE` there.")
    return 0


def _pair(args: argparse.Namespace, home: Home) -> int:
    """``memtray sync pair [REMOTE]`` shows a code; ``--join CODE`` on the new device takes it, then syncs."""
    remote = _remote_arg(args.target)
    with app_scope(home) as app:
        svc = app.sync
        assert svc is not None
        url = check_remote(remote or svc.settings.current.sync_remote)
        if args.join is None:
            code = svc.pairing.invite(url)
            body: dict[str, Any] = {"code": code, "remote": safe_url(url), "device": svc.device}
        else:
            inviter = svc.pairing.join(url, args.join)
            follow_tombstones(app)
            rep = svc.sync(url)
            body = {"paired_with": inviter, "device": svc.device, "sync": rep.to_json()}
    if args.json:
        out(json.dumps(body, ensure_ascii=False, sort_keys=True))
        return 0
    if args.join is None:
        out(f"pairing code: {body['code']}")
        out(f"  on the new device: memtray sync pair --join {body['code']} {body['remote']}")
        out("  the code works once, for 24 hours; it is not stored anywhere")
        out(f"  {LOSS_WARNING}")
        return 0
    out(f"paired with device {body['paired_with']}; synced: imported {body['sync']['imported']} event(s), "
        f"pushed {body['sync']['pushed']}")
    return 0


def _devices(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        assert app.sync is not None
        listed = app.sync.pairing.devices()
        encrypted = app.sync.pairing.encrypted
    if args.json:
        out(json.dumps({"encrypted": encrypted, "devices": listed}, sort_keys=True))
        return 0
    if not encrypted:
        out("this device has no sync keys: its remote is in clear (`memtray sync setup`)")
        return 0
    for d in listed:
        name = d["device"] or "(invited, not synced yet: `remove-device` takes its key)"
        flags = " (this device)" if d["this"] else ""
        flags += " removed" if d["removed"] else ""
        flags += " (the recovery code's keys)" if d["recovery"] else ""
        out(f"{name}  key {d['key']}…{flags}")
    return 0


def _remove(args: argparse.Namespace, home: Home) -> int:
    """``memtray sync remove-device DEVICE``: in one step, and synced at once when a remote is set.
    DEVICE is a device id, or for a device invited that never synced, its key as listed."""
    if not args.target:
        raise MemtrayError("name the device to remove: `memtray sync remove-device DEVICE`",
                           hint="`memtray sync devices` lists the paired devices (one invited that never "
                           "synced by its key).")
    with app_scope(home) as app:
        svc = app.sync
        assert svc is not None
        done = svc.pairing.remove(args.target)
        synced = bool(svc.settings.current.sync_remote.strip())
        if synced:
            svc.sync()
    if args.json:
        out(json.dumps({"removed": args.target, "device": done.device, "key": done.key[:16],
                        "key_generation": done.gen, "synced": synced}, sort_keys=True))
        return 0
    what = f"device {done.device}" if done.device else f"the device invited with key {done.key[:16]}… (it never synced)"
    out(f"{what} removed: its stream is no longer imported, and what is written from now on is "
        f"sealed with a new sync key it does not have (generation {done.gen})")
    if not synced:
        out("  sync now so the other devices learn it: memtray sync REMOTE")
    return 0


def _recovery(args: argparse.Namespace, home: Home) -> int:
    """``memtray sync recovery-code [REMOTE]``: a code that pairs a new device after every device is lost."""
    with app_scope(home) as app:
        svc = app.sync
        assert svc is not None
        url = check_remote(_remote_arg(args.target) or svc.settings.current.sync_remote)
        code = svc.pairing.recovery_code(url)
    if args.json:
        out(json.dumps({"code": code, "remote": safe_url(url)}, sort_keys=True))
        return 0
    out(f"recovery code: {code}")
    out("  write it down and keep it away from your devices: with it and the remote, a new device gets "
        f"everything back (memtray sync pair --join CODE {safe_url(url)}), even if every device is lost")
    out("  it does not expire; anyone holding it and the remote can read everything")
    return 0


ACTIONS = {"setup": _setup, "pair": _pair, "devices": _devices, "remove-device": _remove,
           "recovery-code": _recovery}
