"""The cryptography of sync, and nothing else: sealed blobs, signatures, wrapped keys, pairing codes.

Pure functions over bytes (the ``cryptography`` package; no keyring, no files, no git):

* a **sealed blob** is what an encrypted remote holds in place of a file: signed by
  the device that wrote it (Ed25519, over its device, path, epoch and the body's
  hash), then encrypted with a sync key shared by the paired devices
  (ChaCha20-Poly1305, the path and device as associated data)::

      b"MTS1" | key id (8) | nonce (12) | AEAD(signature (64) | body)

  Opening checks both: only a paired device can read it, and only the device
  whose key signed it can have written it (a paired device cannot speak for another);
* a **wrapped key** hands a sync key to one device (X25519 with a fresh key,
  HKDF, ChaCha20-Poly1305): a key rotation after a device is removed reaches the
  others and not it;
* a **pairing code** (60 random bits, ``XXXX-XXXX-XXXX``) is stretched with scrypt
  into the name of an invitation on the remote and the key that seals it, so the
  code itself never travels and each guess costs a scrypt.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

MAGIC = b"MTS1"
KEY_ID = 8
NONCE = 12
SIG = 64
HEADER = len(MAGIC) + KEY_ID + NONCE
#: what sealing adds to a body: header, signature, tag
OVERHEAD = HEADER + SIG + 16
#: the pairing code's alphabet (Crockford's base32: no I, L, O, U to misread)
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_CHARS = 12
#: a recovery code (docs/SYNC.md, "Losing the keys"): it never expires, so 100 bits
RECOVERY_CHARS = 20
#: scrypt's cost for a pairing code: ~50 ms and 16 MiB per guess
SCRYPT_N = 2**14


#: a device's signing key and its receiving key (the other modules name these, never the package)
Signer = Ed25519PrivateKey
Box = X25519PrivateKey


class CryptoError(ValueError):
    """A blob, signature or wrapped key that does not open (damaged, forged, another key)."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise CryptoError("not base64") from exc


def raw_private(key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())


def raw_public(key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def new_sync_key() -> bytes:
    return ChaCha20Poly1305.generate_key()


def key_id(key: bytes) -> bytes:
    """The public name of a sync key: a hash, from which the key cannot be found."""
    return hashlib.sha256(b"memtray-sync-key-id\0" + key).digest()[:KEY_ID]


def claim(device: str, path: str, epoch: int, body: bytes) -> bytes:
    """What a device signs for one file of its stream: it cannot be moved to another path,
    device or epoch (a republication) without the signature failing."""
    digest = hashlib.sha256(body).hexdigest()
    return f"memtray-sealed-v1\0{device}\0{path}\0{epoch}\0{digest}".encode()


def _aad(device: str, path: str) -> bytes:
    return f"memtray\0{device}\0{path}".encode()


@dataclass(frozen=True)
class Opened:
    """A sealed blob opened: its body and signature, not verified yet (the signer's key is
    found from the body for a stream's metadata)."""

    body: bytes
    signature: bytes


def is_sealed(blob: bytes) -> bool:
    return blob.startswith(MAGIC)


def sealed_key_id(blob: bytes) -> bytes:
    return blob[len(MAGIC) : len(MAGIC) + KEY_ID]


def seal(key: bytes, signer: Ed25519PrivateKey, device: str, path: str, epoch: int, body: bytes) -> bytes:
    signature = signer.sign(claim(device, path, epoch, body))
    nonce = os.urandom(NONCE)
    head = MAGIC + key_id(key)  # authenticated too: a changed key id is a changed blob
    return head + nonce + ChaCha20Poly1305(key).encrypt(nonce, signature + body, head + _aad(device, path))


def open_sealed(key: bytes, device: str, path: str, blob: bytes) -> Opened:
    """Decrypt ``blob`` (written for ``device`` at ``path``); :class:`CryptoError` if it was not
    sealed with ``key`` for that place, or was changed."""
    if not is_sealed(blob) or len(blob) < HEADER + SIG + 16:
        raise CryptoError("not a sealed blob")
    nonce = blob[len(MAGIC) + KEY_ID : HEADER]
    try:
        plain = ChaCha20Poly1305(key).decrypt(nonce, blob[HEADER:], blob[: len(MAGIC) + KEY_ID] + _aad(device, path))
    except InvalidTag as exc:
        raise CryptoError("it does not decrypt with the sync key (changed, or sealed for another place)") from exc
    return Opened(plain[SIG:], plain[:SIG])


def verify(public: bytes, signature: bytes, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
        return True
    except (InvalidSignature, ValueError):
        return False


def sign(signer: Ed25519PrivateKey, message: bytes) -> bytes:
    return signer.sign(message)


def _hkdf(secret: bytes, info: bytes, length: int = 32) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(secret)


def wrap(recipient: bytes, payload: bytes, context: bytes) -> bytes:
    """``payload`` readable only with the X25519 private key of ``recipient`` (raw public bytes)."""
    eph = X25519PrivateKey.generate()
    shared = eph.exchange(X25519PublicKey.from_public_bytes(recipient))
    key = _hkdf(shared, b"memtray-wrap\0" + context)
    nonce = os.urandom(NONCE)
    return raw_public(eph) + nonce + ChaCha20Poly1305(key).encrypt(nonce, payload, context)


def unwrap(private: X25519PrivateKey, wrapped: bytes, context: bytes) -> bytes:
    if len(wrapped) < 32 + NONCE + 16:
        raise CryptoError("a wrapped key too short")
    try:
        shared = private.exchange(X25519PublicKey.from_public_bytes(wrapped[:32]))
        key = _hkdf(shared, b"memtray-wrap\0" + context)
        return ChaCha20Poly1305(key).decrypt(wrapped[32 : 32 + NONCE], wrapped[32 + NONCE :], context)
    except (InvalidTag, ValueError) as exc:
        raise CryptoError("the wrapped key is not for this device") from exc


def new_code(length: int = CODE_CHARS) -> str:
    chars = "".join(secrets.choice(ALPHABET) for _ in range(length))
    return "-".join(chars[i : i + 4] for i in range(0, length, 4))


def normal_code(code: str) -> str:
    """A code as typed (lower case, spaces, dashes, O for 0, I/L for 1) in its one spelling;
    :class:`CryptoError` if it cannot be one."""
    text = code.strip().upper().replace(" ", "").replace("-", "")
    text = text.replace("O", "0").replace("I", "1").replace("L", "1")
    if len(text) not in (CODE_CHARS, RECOVERY_CHARS) or any(c not in ALPHABET for c in text):
        raise CryptoError(f"a pairing code has {CODE_CHARS} letters and digits, like {new_code()} (a recovery "
                          f"code {RECOVERY_CHARS})")
    return "-".join(text[i : i + 4] for i in range(0, len(text), 4))


@dataclass(frozen=True)
class CodeKeys:
    """What a pairing code stretches to: the invitation's name on the remote, and its key."""

    name: str
    key: bytes


def code_keys(code: str) -> CodeKeys:
    stretched = Scrypt(salt=b"memtray-pairing-v1", length=64, n=SCRYPT_N, r=8, p=1).derive(
        normal_code(code).encode())
    return CodeKeys(stretched[:16].hex(), stretched[32:])


def seal_with(key: bytes, payload: bytes, context: bytes) -> bytes:
    nonce = os.urandom(NONCE)
    return nonce + ChaCha20Poly1305(key).encrypt(nonce, payload, context)


def open_with(key: bytes, sealed: bytes, context: bytes) -> bytes:
    try:
        return ChaCha20Poly1305(key).decrypt(sealed[:NONCE], sealed[NONCE:], context)
    except (InvalidTag, ValueError) as exc:
        raise CryptoError("it does not open with this code") from exc


def name_key(key: bytes) -> bytes:
    return _hkdf(key, b"memtray-names")


def hidden_name(key: bytes, name: str) -> str:
    """A name (an attachment's hash) as the remote sees it: keyed, so a known file cannot be
    recognised by its hash."""
    return hmac.new(key, name.encode(), hashlib.sha256).hexdigest()
