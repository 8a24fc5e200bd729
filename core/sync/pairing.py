"""Pairing devices, removing one, and the roster of paired devices on the remote.

* **Set-up** (the first device): a signing key, a receiving key and the first
  sync key, in the keyring (:class:`~memtray.core.sync.identity.Keys`). From then
  on everything this device publishes is sealed.
* **Pairing** (``memtray sync pair`` on a paired device, ``memtray sync pair
  --join CODE`` on the new one): the paired device makes the new device's keys,
  trusts them at once, and leaves an **invitation** on the remote, sealed with a
  key stretched from a 12-character code (scrypt) and named by it: the new
  device's keys, every sync key, the roster. The code is shown, never stored or
  sent; typed on the new device it finds and opens the invitation, which the new
  device then deletes. The new device reads everything right away (it holds every
  sync key), and its stream is accepted everywhere: its key is in the roster.
* **The roster** (``refs/memtray/devices/<device>/keys``, one per device, a
  fast-forward chain): each device's trust, signed by it and sealed with the
  oldest sync key. A device takes in the roster of every device it trusts:
  devices added, removals (for good), and the sync keys wrapped for it.
* **Removing a device**: its key is marked removed (its stream is refused from
  then on, everywhere), and a new sync key is made and wrapped for each remaining
  device only, so what is written from then on is unreadable to the removed one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from memtray.core.base.clock import Clock, format_ts, parse_ts
from memtray.core.base.errors import KeyringError
from memtray.core.base.faults import crash_point
from memtray.core.sync import crypto
from memtray.core.sync.crypto import CryptoError, b64, unb64
from memtray.core.sync.gitcli import NETWORK_TIMEOUT, SyncError, last_words, safe_url
from memtray.core.sync.identity import Identity, Keys, SyncKey, Trust
from memtray.core.sync.plan import INVITE_PREFIX
from memtray.core.sync.stream import PREFIX, LocalRepo

#: how long an invitation can be used
INVITE_LIFE = timedelta(hours=24)
ROSTER_FILE = "keys.json"
INVITE_FILE = "invitation"


def keys_ref(device: str) -> str:
    return f"{PREFIX}{device}/keys"


def invite_ref(name: str) -> str:
    return f"{INVITE_PREFIX}{name}"


def _roster_key(identity: Identity) -> bytes:
    return crypto.name_key(b"roster\0" + identity.oldest().key)


def set_up(keys: Keys, device: str) -> Identity:
    """This device's first keys (a new encrypted remote); the existing ones if it has them."""
    ident = keys.load()
    if ident is not None:
        return ident
    first = SyncKey(1, crypto.new_sync_key())
    ident = Identity.new({first.id: first})
    keys.store(ident, device)
    return ident


# --- the roster on the remote ---------------------------------------------------------

def _signed_roster(identity: Identity, device: str, trust: Trust) -> bytes:
    body = json.dumps({"device": device, "by": identity.sign_pub, "roster": trust.to_json()}, sort_keys=True)
    sig = crypto.sign(identity.signer, b"memtray-roster\0" + body.encode())
    plain = json.dumps({"body": body, "sig": b64(sig)}).encode()
    return crypto.seal_with(_roster_key(identity), plain, b"memtray-roster\0" + device.encode())


def _open_roster(identity: Identity, device: str, blob: bytes) -> tuple[str, dict[str, Any]] | None:
    """(signer's key, roster) of ``device``'s published roster; None if it does not open."""
    try:
        plain = json.loads(crypto.open_with(_roster_key(identity), blob, b"memtray-roster\0" + device.encode()))
        body = json.loads(plain["body"])
        if body.get("device") != device or not isinstance(body.get("roster"), dict):
            return None
        if not crypto.verify(unb64(body["by"]), unb64(plain["sig"]), b"memtray-roster\0" + plain["body"].encode()):
            return None
        return str(body["by"]), body["roster"]
    except (CryptoError, ValueError, KeyError, TypeError, AttributeError):
        return None


def take_rosters(repo: LocalRepo, url: str, remote_key: str, refs: dict[str, str], keys: Keys, identity: Identity,
                 trust: Trust, device: str, notes: list[str]) -> Identity:
    """Fetch every device's roster and take in those a trusted device signed (repeated until
    nothing changes: a device trusted through one roster makes another readable); then the
    sync keys wrapped for this device. The identity, with any new sync key."""
    names = {name[len(PREFIX):-len("/keys")]: sha for name, sha in refs.items()
             if name.startswith(PREFIX) and name.endswith("/keys")}
    names.pop(device, None)
    if names:
        specs = [f"+{keys_ref(d)}:refs/memtray/remotes/{remote_key}/{d}/keys" for d in names]
        res = repo.git.run(["fetch", "--no-tags", "--quiet", "--no-write-fetch-head", "--", url, *specs],
                           timeout=NETWORK_TIMEOUT, check=False)
        if res.code != 0:
            raise SyncError(f"could not fetch from {safe_url(url)}: {safe_url(last_words(res.err))}",
                            hint="Nothing was changed here. Sync again once the remote is reachable.")
    rosters: dict[str, tuple[str, dict[str, Any]]] = {}
    for dev, sha in names.items():
        blob = repo.git.blobs([f"{sha}:{ROSTER_FILE}"])[0]
        got = _open_roster(identity, dev, blob) if blob is not None else None
        if got is not None:
            rosters[dev] = got
    changed = True
    while changed:
        changed = False
        for dev, (by, roster) in rosters.items():
            bound = trust.devices.get(by, {}).get("device")
            if trust.accepts(by) and bound in (None, dev) and trust.merge(roster):
                changed = True
    new = False
    for kid, entry in trust.wrapped.items():
        blob = entry.get("for", {}).get(identity.box_pub)
        if kid in identity.keys or not isinstance(blob, str):
            continue
        try:
            key = crypto.unwrap(identity.box, unb64(blob), kid.encode())
        except CryptoError:
            notes.append(f"a sync key handed to this device does not open ({kid})")
            continue
        if crypto.key_id(key).hex() == kid:
            identity.keys[kid] = SyncKey(int(entry.get("gen", 0)), key)
            new = True
    if new:
        keys.store(identity, device)
        notes.append("a new sync key from another device is in use (a device was removed)")
    mine = trust.devices.get(identity.sign_pub, {})
    if mine.get("removed"):
        notes.append("this device was removed from the paired devices: its stream is no longer imported elsewhere")
    return identity


def _one_file_commit(repo: LocalRepo, name: str, blob: bytes, parent: str | None, when: str) -> str:
    sha = repo.git.text(["hash-object", "-w", "--stdin"], input=blob)
    fd, index = tempfile.mkstemp(prefix="index-", dir=repo.path)
    os.close(fd)
    os.unlink(index)
    env = {"GIT_INDEX_FILE": index}
    try:
        repo.git.run(["read-tree", "--empty"], env=env)
        repo.git.run(["update-index", "--add", "--cacheinfo", f"100644,{sha},{name}"], env=env)
        tree = repo.git.text(["write-tree"], env=env)
    finally:
        if os.path.exists(index):
            os.unlink(index)
    stamp = {"GIT_AUTHOR_NAME": "memtray", "GIT_AUTHOR_EMAIL": "sync@memtray.invalid",
             "GIT_COMMITTER_NAME": "memtray", "GIT_COMMITTER_EMAIL": "sync@memtray.invalid",
             "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    return repo.git.text(["commit-tree", tree] + (["-p", parent] if parent else []), input=b"memtray\n", env=stamp)


def publish_roster(repo: LocalRepo, url: str, refs: dict[str, str], identity: Identity, trust: Trust,
                   device: str, when: str) -> bool:
    """Push this device's roster when it differs from the one on the remote (a fast-forward of
    its own ref). Whether it was pushed."""
    remote = refs.get(keys_ref(device))
    if remote is not None and repo.git.has_object(remote):
        blob = repo.git.blobs([f"{remote}:{ROSTER_FILE}"])[0]
        got = _open_roster(identity, device, blob) if blob is not None else None
        if got is not None and got[1] == json.loads(json.dumps(trust.to_json())):
            return False
    elif remote is not None:
        repo.git.run(["fetch", "--no-tags", "--quiet", "--no-write-fetch-head", "--", url,
                      f"+{keys_ref(device)}:refs/memtray/own-keys"], timeout=NETWORK_TIMEOUT, check=False)
        if not repo.git.has_object(remote):
            remote = None
    commit = _one_file_commit(repo, ROSTER_FILE, _signed_roster(identity, device, trust), remote, when)
    repo.push(url, commit, keys_ref(device))
    return True


# --- pairing ------------------------------------------------------------------------

def invite(repo: LocalRepo, url: str, keys: Keys, device: str, clock: Clock, *, recovery: bool = False) -> str:
    """Make a new device's keys, trust them, and leave them on the remote for the code this
    returns (shown once; the code is never stored). ``recovery``: a code that never expires
    and stays on the remote, for when every device is lost; its keys count as a paired device,
    so every later sync key is handed to it too."""
    identity = keys.load()
    if identity is None:
        raise SyncError("this device has no sync keys yet", hint="Run `memtray sync setup` first.")
    newcomer = Identity.new(identity.keys)
    trust = keys.trust()
    trust.add(newcomer.sign_pub, newcomer.box_pub, None)
    if recovery:
        trust.devices[newcomer.sign_pub]["recovery"] = True
    code = crypto.new_code(crypto.RECOVERY_CHARS if recovery else crypto.CODE_CHARS)
    stretched = crypto.code_keys(code)
    # the invitation's name (not the code: the name is on the remote anyway), so removing the
    # invited device before it joins also takes its invitation off the remote
    trust.devices[newcomer.sign_pub]["invite"] = stretched.name
    now = clock.now()
    body = json.dumps({"identity": json.loads(newcomer.to_secret()), "roster": trust.to_json(), "by": device,
                       "expires": None if recovery else format_ts(now + INVITE_LIFE)}).encode()
    blob = crypto.seal_with(stretched.key, body, b"memtray-invitation\0" + stretched.name.encode())
    when = str(int(now.timestamp())) + " +0000"
    refs = repo.ls_remote(url)
    publish_roster(repo, url, refs, identity, trust, device, when)
    trust.save()  # trusted here once the roster that names it is on the remote
    crash_point("pair.roster")  # trusted, no invitation yet: this code opens nothing; a new one works
    repo.push(url, _one_file_commit(repo, INVITE_FILE, blob, None, when), invite_ref(stretched.name))
    return code


def join(repo: LocalRepo, url: str, keys: Keys, device: str, code: str, clock: Clock) -> str:
    """Take the invitation ``code`` names on the remote: this device's keys, the sync keys, the
    roster. The device that invited. The invitation is deleted from the remote afterwards."""
    try:
        stretched = crypto.code_keys(code)
    except CryptoError as exc:
        raise SyncError(f"that is not a pairing code: {exc}") from None
    ref = invite_ref(stretched.name)
    refs = repo.ls_remote(url)
    if ref not in refs:
        raise SyncError(f"no invitation for this code on {safe_url(url)}",
                        hint="Check the code and the remote (the same as on the other device), or make a new "
                        "code there: `memtray sync pair` (a code is used once and lasts 24 hours).")
    res = repo.git.run(["fetch", "--no-tags", "--quiet", "--no-write-fetch-head", "--", url,
                        f"+{ref}:refs/memtray/invitation"], timeout=NETWORK_TIMEOUT, check=False)
    if res.code != 0:
        raise SyncError(f"could not fetch the invitation: {safe_url(last_words(res.err))}")
    blob = repo.git.blobs([f"{refs[ref]}:{INVITE_FILE}"])[0] or b""
    try:
        body = json.loads(crypto.open_with(stretched.key, blob, b"memtray-invitation\0" + stretched.name.encode()))
        if body["expires"] is not None and parse_ts(body["expires"]) < clock.now():
            raise SyncError("this pairing code has expired", hint="Make a new one on the other device: "
                            "`memtray sync pair`.")
        identity = Identity.from_secret(json.dumps(body["identity"]))
        roster = body["roster"]
        inviter = str(body["by"])
    except (CryptoError, ValueError, KeyError, TypeError) as exc:
        raise SyncError(f"the invitation for this code does not open ({exc})",
                        hint="Someone changed it on the remote; make a new code on the other device.") from None
    try:
        have = keys.load()
    except KeyringError:  # its keys are gone from this keyring (a copied home, a reset keyring): pair again
        have = None
    if have is not None and have.sign_pub != identity.sign_pub:
        raise SyncError("this device is paired already", hint="`memtray sync devices` lists the paired devices.")
    if have is None:  # (the same keys: a join that was interrupted, finished now)
        trust = keys.trust()
        trust.merge(roster)
        trust.save()
        keys.store(identity, device)  # the keyring, trust of its own key, then sync-identity.json
    crash_point("pair.joined")  # paired; the invitation still on the remote: the same code finishes it
    if body["expires"] is not None:  # a recovery code's stays (for a device lost again later)
        repo.git.run(["push", "--quiet", "--", url, f":{ref}"], timeout=NETWORK_TIMEOUT, check=False)
    return inviter


#: the shortest start of a public key that names a device to remove (``memtray sync devices`` shows 16)
KEY_PREFIX_MIN = 6


def find_device(trust: Trust, name: str) -> str:
    """The signing key ``name`` stands for: a device id, or the start of a public key as
    ``memtray sync devices`` shows it (a device invited that never synced has no id yet)."""
    name = name.strip()
    pub = trust.key_of(name)
    if pub is not None:
        return pub
    starting = [k for k in trust.devices if len(name) >= KEY_PREFIX_MIN and k.startswith(name)]
    if len(starting) == 1:
        return starting[0]
    known = ", ".join(sorted(str(v.get("device") or f"key {k[:16]}") for k, v in trust.active().items()))
    if len(starting) > 1:
        raise SyncError(f"{name} starts more than one device's key", hint="Give more of the key, as "
                        "`memtray sync devices` shows it.")
    raise SyncError(f"{name} is not a paired device (paired: {known or 'none'})",
                    hint="Name a device by its id, or one invited that never synced by its key, as "
                    "`memtray sync devices` shows them.")


@dataclass(frozen=True)
class Removal:
    """What ``remove-device`` did: the key removed, its device id (None: invited, never synced),
    and the generation of the new sync key."""

    key: str
    device: str | None
    gen: int


def remove_device(keys: Keys, device: str, gone: str) -> Removal:
    """Remove the device ``gone`` names (an id, or a key's start, :func:`find_device`): its stream
    is refused from now on, and a new sync key, wrapped for each remaining device (this one
    included), seals everything written from now on."""
    identity = keys.load()
    if identity is None:
        raise SyncError("this device has no sync keys", hint="Only a paired device can remove another.")
    trust = keys.trust()
    if trust.devices.get(identity.sign_pub, {}).get("removed"):
        # another device removed this one (its roster said so at a sync): a removal from here
        # would reach nobody, so it is not reported as done
        raise SyncError("this device was removed from the paired devices by another one: it can no longer "
                        "remove devices", hint="Remove devices from one that is still paired (`memtray sync "
                        "devices` there lists them); if this device was removed by a device you lost, "
                        "move to a new remote (docs/SYNC.md, 'From a clear remote to an encrypted one').")
    pub = find_device(trust, gone)
    if pub == identity.sign_pub or gone == device:
        raise SyncError("a device cannot remove itself", hint="Remove it from another paired device.")
    if not trust.accepts(pub):
        raise SyncError(f"{gone} was removed already", hint="`memtray sync devices` lists the paired devices.")
    trust.remove(pub)
    new = SyncKey(identity.current().gen + 1, crypto.new_sync_key())
    wrapped = {}
    for entry in trust.active().values():
        wrapped[entry["box"]] = b64(crypto.wrap(unb64(entry["box"]), new.key, new.id.encode()))
    trust.wrapped[new.id] = {"gen": new.gen, "for": wrapped}
    # the trust first: a crash before the keyring holds the new key leaves it wrapped for this
    # device too, and the next sync takes it from there (take_rosters); the other order would
    # seal with a key no other device was handed
    trust.dirty = True
    trust.save()
    crash_point("sync.removing")
    identity.keys[new.id] = new
    keys.store(identity, device)
    return Removal(pub, trust.devices[pub].get("device"), new.gen)


def withdraw_invitations(repo: LocalRepo, url: str, refs: dict[str, str], trust: Trust) -> int:
    """Delete from the remote the invitations this device left for devices removed since (an
    invitation never used); how many."""
    gone = 0
    for entry in trust.devices.values():
        name = entry.get("invite")
        if entry.get("removed") and isinstance(name, str) and invite_ref(name) in refs:
            res = repo.git.run(["push", "--quiet", "--", url, f":{invite_ref(name)}"], timeout=NETWORK_TIMEOUT,
                               check=False)
            gone += res.code == 0
    return gone


def devices(keys: Keys, device: str) -> list[dict[str, Any]]:
    """The paired devices as ``memtray sync devices`` lists them (docs/CLI.md)."""
    trust = keys.trust()
    out = []
    for pub, entry in sorted(trust.devices.items(), key=lambda kv: (str(kv[1].get("device")), kv[0])):
        out.append({"device": entry.get("device"), "key": pub[:16], "removed": bool(entry.get("removed")),
                    "this": entry.get("device") == device, "recovery": bool(entry.get("recovery"))})
    return out


class Pairing:
    """The pairing commands of one data home (``app.sync.pairing``; ``memtray sync pair``, ...)."""

    def __init__(self, keys: Keys, repo: Callable[[], LocalRepo], device: Callable[[], str], clock: Clock,
                 syncs_in_clear: Callable[[], bool] = lambda: False) -> None:
        self.keys = keys
        self._repo = repo
        self._device = device
        self.clock = clock
        #: whether this device already syncs in clear with other devices (they could not read
        #: what it publishes once it has keys)
        self._syncs_in_clear = syncs_in_clear

    def _first_keys(self) -> None:
        """Keys for a device that has none, made as a side effect of pairing: not for a device
        that syncs in clear with others (its next syncs there would lock them out), whose
        move to encryption is the migration the user starts with `memtray sync setup`."""
        if self.keys.exists():
            return
        if self._syncs_in_clear():
            raise SyncError("this device syncs in clear with other devices: pairing would encrypt what it "
                            "publishes, which they could no longer read",
                            hint="To move to encryption, follow docs/SYNC.md, 'From a clear remote to an "
                            "encrypted one' (it starts with `memtray sync setup`).")
        set_up(self.keys, self._device())

    @property
    def encrypted(self) -> bool:
        """Whether this device has sync keys (everything it publishes is sealed)."""
        return self.keys.exists()

    def set_up(self) -> bool:
        """This device's first keys; whether they were made now (False: it had them)."""
        had = self.keys.exists()
        set_up(self.keys, self._device())
        return not had

    def invite(self, url: str) -> str:
        self._first_keys()
        return invite(self._repo(), url, self.keys, self._device(), self.clock)

    def recovery_code(self, url: str) -> str:
        """A code that pairs a new device even once every device is lost (docs/SYNC.md)."""
        self._first_keys()
        return invite(self._repo(), url, self.keys, self._device(), self.clock, recovery=True)

    def join(self, url: str, code: str) -> str:
        return join(self._repo(), url, self.keys, self._device(), code, self.clock)

    def remove(self, gone: str) -> Removal:
        """Remove a device by its id, or one invited that never synced by its key's start."""
        return remove_device(self.keys, self._device(), gone)

    def devices(self) -> list[dict[str, Any]]:
        return devices(self.keys, self._device())
