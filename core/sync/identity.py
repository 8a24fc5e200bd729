"""This device's sync identity (in the OS keyring) and the devices it trusts (in the data home).

* The **identity** is private: this device's signing key (Ed25519), its key for
  receiving wrapped keys (X25519) and every generation of the **sync key** the
  paired devices share. It lives in the OS keyring only, as one entry whose name
  ``<home>/sync-identity.json`` holds beside the public halves; it never reaches
  the log, a file in clear, or the remote.
* The **trust** (``<home>/sync-trust.json``, public keys only) is the set of devices
  the user paired: each signing key, the device id it signs for once known, its
  receiving key, and whether it was removed. Each device publishes it signed on
  the remote (:mod:`memtray.core.sync.pairing`), and a device takes in what a
  device it trusts published: added devices and removals (a removal is for good),
  and the sync keys wrapped for it.
* :class:`Seal` is what the stream layer uses: it seals this device's files and
  opens a peer's, refusing one that is not signed by a paired device
  (:class:`Refused`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtray.core.base import keys as keyring_keys
from memtray.core.base.errors import KeyringError, NoSecureKeyring
from memtray.core.base.faults import crash_point
from memtray.core.base.fsutil import atomic_write
from memtray.core.base.secret_rules import add_known_secret
from memtray.core.sync import crypto
from memtray.core.sync.crypto import Box, CryptoError, Signer, b64, unb64
from memtray.core.sync.gitcli import SyncError

#: what the set-up and the pairing say about losing keys (docs/SYNC.md)
LOSS_WARNING = ("The remote's data can only be read with a paired device's keys, which live in this "
                "computer's keyring. If every paired device is lost, the remote's data is lost with them: "
                "keep two devices paired, or keep a recovery code (`memtray sync recovery-code`) somewhere safe.")
PAIR_HINT = ("Pair this device with one that syncs already: there, run `memtray sync pair`; here, "
             "`memtray sync pair --join CODE`.")


class Refused(SyncError):
    """A file of a stream that is not sealed and signed by a device the user paired."""


def _keyring_get(name: str) -> str | None:
    import keyring

    if not keyring_keys.backend_is_secure():
        raise NoSecureKeyring(f"no secure keyring backend is available (found {keyring_keys.backend_name()})")
    try:
        return keyring.get_password(keyring_keys.SERVICE, name)
    except Exception as exc:  # the backend's own errors: locked, refused, D-Bus gone
        raise KeyringError(f"the keyring failed: {type(exc).__name__}: {exc}") from exc


def _keyring_set(name: str, value: str) -> None:
    import keyring

    if not keyring_keys.backend_is_secure():
        raise NoSecureKeyring(f"no secure keyring backend is available (found {keyring_keys.backend_name()})")
    try:
        keyring.set_password(keyring_keys.SERVICE, name, value)
    except Exception as exc:
        raise KeyringError(f"the keyring refused to store the sync keys: {type(exc).__name__}: {exc}") from exc


@dataclass
class SyncKey:
    gen: int
    key: bytes

    @property
    def id(self) -> str:
        return crypto.key_id(self.key).hex()


@dataclass
class Identity:
    """This device's private keys (from the keyring)."""

    signer: Signer
    box: Box
    keys: dict[str, SyncKey] = field(default_factory=dict)

    @classmethod
    def new(cls, keys: Mapping[str, SyncKey] | None = None) -> Identity:
        return cls(Signer.generate(), Box.generate(), dict(keys or {}))

    @property
    def sign_pub(self) -> str:
        return b64(crypto.raw_public(self.signer))

    @property
    def box_pub(self) -> str:
        return b64(crypto.raw_public(self.box))

    def current(self) -> SyncKey:
        """The sync key new files are sealed with: the newest generation (ties: by id, the same
        choice on every device)."""
        return max(self.keys.values(), key=lambda k: (k.gen, k.id))

    def oldest(self) -> SyncKey:
        return min(self.keys.values(), key=lambda k: (k.gen, k.id))

    def to_secret(self) -> str:
        return json.dumps({"sign": b64(crypto.raw_private(self.signer)), "box": b64(crypto.raw_private(self.box)),
                           "keys": {k.id: {"gen": k.gen, "key": b64(k.key)} for k in self.keys.values()}},
                          sort_keys=True)

    @classmethod
    def from_secret(cls, text: str) -> Identity:
        try:
            body = json.loads(text)
            keys = {}
            for entry in body["keys"].values():
                k = SyncKey(int(entry["gen"]), unb64(entry["key"]))
                keys[k.id] = k
            ident = cls(Signer.from_private_bytes(unb64(body["sign"])),
                        Box.from_private_bytes(unb64(body["box"])), keys)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise KeyringError("the sync keys in the keyring are damaged") from exc
        for secret in (body["sign"], body["box"], *(e["key"] for e in body["keys"].values())):
            add_known_secret(secret)  # never in a log line, even by accident
        return ident


def _read_json(path: Path) -> dict[str, Any]:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        return body if isinstance(body, dict) else {}
    except (OSError, ValueError):
        return {}


class Trust:
    """The devices this home accepts streams from (public keys only; ``sync-trust.json``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        body = _read_json(path)
        self.devices: dict[str, dict[str, Any]] = {
            k: dict(v) for k, v in (body.get("devices") or {}).items() if isinstance(v, dict)}
        #: sync keys handed to devices: key id -> {"gen", "for": {receiving key: wrapped}}
        self.wrapped: dict[str, dict[str, Any]] = {
            k: dict(v) for k, v in (body.get("wrapped") or {}).items() if isinstance(v, dict)}
        self.dirty = False

    def to_json(self) -> dict[str, Any]:
        return {"devices": self.devices, "wrapped": self.wrapped}

    def save(self) -> None:
        if self.dirty:
            atomic_write(self.path, json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")
            self.dirty = False

    def add(self, sign_pub: str, box_pub: str, device: str | None) -> None:
        entry = self.devices.setdefault(sign_pub, {"device": None, "box": box_pub, "removed": False})
        if device is not None and entry.get("device") is None:
            entry["device"] = device
        self.dirty = True

    def remove(self, sign_pub: str) -> None:
        self.devices[sign_pub]["removed"] = True
        self.dirty = True

    def key_of(self, device: str) -> str | None:
        """The signing key bound to ``device`` (removed or not), if any."""
        for pub, entry in self.devices.items():
            if entry.get("device") == device:
                return pub
        return None

    def accepts(self, pub: str) -> bool:
        entry = self.devices.get(pub)
        return entry is not None and not entry.get("removed")

    def active(self) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.devices.items() if not v.get("removed")}

    def merge(self, other: Mapping[str, Any]) -> bool:
        """Take in a roster a trusted device published: devices added, removals (for good), the
        devices' ids once known, wrapped keys. Whether anything changed."""
        changed = False
        for pub, entry in (other.get("devices") or {}).items():
            if not isinstance(pub, str) or not isinstance(entry, Mapping) or not isinstance(entry.get("box"), str):
                continue
            mine = self.devices.get(pub)
            dev = entry.get("device") if isinstance(entry.get("device"), str) else None
            if mine is None:
                self.devices[pub] = {"device": dev, "box": entry["box"], "removed": bool(entry.get("removed"))}
                if entry.get("recovery"):
                    self.devices[pub]["recovery"] = True
                changed = True
                continue
            if dev is not None and mine.get("device") is None and self.key_of(dev) is None:
                mine["device"] = dev
                changed = True
            if entry.get("removed") and not mine.get("removed"):
                mine["removed"] = True
                changed = True
        for kid, entry in (other.get("wrapped") or {}).items():
            if not isinstance(entry, Mapping) or not isinstance(entry.get("for"), Mapping):
                continue
            mine = self.wrapped.setdefault(kid, {"gen": int(entry.get("gen", 0)), "for": {}})
            for box, blob in entry["for"].items():
                if isinstance(box, str) and isinstance(blob, str) and box not in mine["for"]:
                    mine["for"][box] = blob
                    changed = True
        self.dirty = self.dirty or changed
        return changed


class Seal:
    """Seals this device's stream files and opens its peers' (the stream layer's one door to
    the keys). Without an identity, everything stays in clear as before, and a sealed stream
    is refused (this device is not paired)."""

    def __init__(self, identity: Identity | None, trust: Trust, device: str) -> None:
        self.identity = identity
        self.trust = trust
        self.device = device

    @property
    def secured(self) -> bool:
        return self.identity is not None

    def seal(self, device: str, path: str, epoch: int, body: bytes) -> bytes:
        assert self.identity is not None
        return crypto.seal(self.identity.current().key, self.identity.signer, device, path, epoch, body)

    def attachment_name(self, sha: str) -> str:
        """Where an attachment is kept in a sealed stream (its hash hidden)."""
        assert self.identity is not None
        return crypto.hidden_name(crypto.name_key(self.identity.oldest().key), sha)

    def _decrypt(self, device: str, path: str, blob: bytes) -> crypto.Opened:
        if self.identity is None:
            raise Refused(f"the stream of {device} is encrypted and this device is not paired", hint=PAIR_HINT)
        kid = crypto.sealed_key_id(blob).hex()
        key = self.identity.keys.get(kid)
        if key is None:
            raise Refused(f"{path} of {device} is sealed with a sync key this device does not have",
                          hint="This device was removed from the paired devices, or has not synced since a "
                          "key rotation: sync again, or pair it again.")
        try:
            return crypto.open_sealed(key.key, device, path, blob)
        except CryptoError as exc:
            raise Refused(f"{path} of {device} does not open: {exc}",
                          hint=f"Someone changed it on the remote. Nothing was imported from {device}.") from None

    def _signer(self, device: str, claimed: str | None) -> str:
        """The signing key ``device``'s files must be signed with; Refused when it has none."""
        if device == self.device and self.identity is not None:
            return self.identity.sign_pub  # its own stream, even once removed elsewhere
        bound = self.trust.key_of(device)
        if bound is not None:
            if not self.trust.accepts(bound):
                raise Refused(f"device {device} was removed from the paired devices: its stream is not imported",
                              hint="Pair it again (`memtray sync pair`) if that was a mistake.")
            return bound
        if claimed is not None and self.trust.accepts(claimed):
            entry = self.trust.devices[claimed]
            if entry.get("device") in (None, device):
                return claimed
        raise Refused(f"the stream of {device} is signed by a device you did not pair",
                      hint=f"Nothing was imported from {device}. If it is yours, pair it (`memtray sync pair`).")

    def open_meta(self, device: str, path: str, blob: bytes) -> bytes:
        """The body of a stream's sealed metadata, after checking that ``device`` signed it (a
        device paired but not known by id yet is recognised by the key it names)."""
        opened = self._decrypt(device, path, blob)
        try:
            claimed = json.loads(opened.body).get("key")
        except (ValueError, AttributeError):
            claimed = None
        pub = self._signer(device, claimed if isinstance(claimed, str) else None)
        if not crypto.verify(unb64(pub), opened.signature, crypto.claim(device, path, 0, opened.body)):
            raise Refused(f"the stream of {device} is not signed by {device} ({path}: a forged or re-signed copy)",
                          hint=f"Nothing was imported from {device}; someone with access to the remote wrote it.")
        if self.trust.devices[pub].get("device") is None:
            self.trust.add(pub, self.trust.devices[pub]["box"], device)  # bound on first sight
        return opened.body

    def open(self, device: str, path: str, epoch: int, blob: bytes) -> bytes:
        opened = self._decrypt(device, path, blob)
        pub = self._signer(device, None)
        if not crypto.verify(unb64(pub), opened.signature, crypto.claim(device, path, epoch, opened.body)):
            raise Refused(f"{path} of {device} is not signed by {device} (a forged or re-signed copy)",
                          hint=f"Nothing was imported from {device}; someone with access to the remote wrote it.")
        return opened.body


class Keys:
    """The identity and trust of one data home: where they are kept, and their set-up."""

    def __init__(self, root: Path) -> None:
        # beside device.json, not in sync/ (a cache that may be deleted: losing these unpairs)
        self.dir = root
        self.public_path = root / "sync-identity.json"
        self.trust_path = root / "sync-trust.json"

    def exists(self) -> bool:
        return self.public_path.exists()

    def public(self) -> dict[str, Any]:
        return _read_json(self.public_path)

    def load(self) -> Identity | None:
        """This device's identity, or None when it was never set up (a clear remote)."""
        pub = self.public()
        name = pub.get("keyring")
        if not isinstance(name, str):
            return None
        secret = _keyring_get(name)
        if secret is None:
            raise KeyringError("this device's sync keys are missing from the keyring",
                               hint="They were deleted, or the keyring was reset. Pair this device again "
                               "(`memtray sync pair --join CODE` with a code from a paired device).")
        return Identity.from_secret(secret)

    def trust(self) -> Trust:
        return Trust(self.trust_path)

    def store(self, identity: Identity, device: str) -> None:
        """Keep ``identity`` (the keyring first, then the public file naming it: a crash in between
        leaves this home as it was), and trust this device's own key."""
        name = self.public().get("keyring")
        if not isinstance(name, str):
            name = f"sync-{secrets.token_hex(8)}"
        secret = identity.to_secret()
        for part in json.loads(secret)["keys"].values():
            add_known_secret(part["key"])
        add_known_secret(json.loads(secret)["sign"])
        add_known_secret(json.loads(secret)["box"])
        _keyring_set(name, secret)
        crash_point("sync.keys_stored")  # in the keyring, not named yet: this home is as it was
        trust = self.trust()
        trust.add(identity.sign_pub, identity.box_pub, device)
        trust.save()
        atomic_write(self.public_path, json.dumps({"keyring": name, "sign": identity.sign_pub,
                                                   "box": identity.box_pub}, indent=1) + "\n")

    def seal(self, device: str) -> Seal:
        return Seal(self.load(), self.trust(), device)
