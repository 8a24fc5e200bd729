"""The cryptography of sync: sealed blobs, signatures, wrapped keys, pairing codes, the trust merge."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memtray.core.sync import crypto
from memtray.core.sync.crypto import CryptoError
from memtray.core.sync.identity import Identity, Refused, Seal, SyncKey, Trust


def _pair() -> tuple[Identity, Trust]:
    key = SyncKey(1, crypto.new_sync_key())
    ident = Identity.new({key.id: key})
    return ident, Trust(Path("/nonexistent/trust.json"))


def test_a_sealed_blob_opens_only_with_its_key_device_and_path() -> None:
    ident, _ = _pair()
    key = ident.current().key
    blob = crypto.seal(key, ident.signer, "d000000000001", "segments/000000/000000000001.jsonl", 0, b"hello\n")
    assert b"hello" not in blob and crypto.is_sealed(blob)
    opened = crypto.open_sealed(key, "d000000000001", "segments/000000/000000000001.jsonl", blob)
    assert opened.body == b"hello\n"
    assert crypto.verify(crypto.raw_public(ident.signer), opened.signature,
                         crypto.claim("d000000000001", "segments/000000/000000000001.jsonl", 0, b"hello\n"))
    with pytest.raises(CryptoError):  # moved to another path
        crypto.open_sealed(key, "d000000000001", "segments/000000/000000000002.jsonl", blob)
    with pytest.raises(CryptoError):  # another device's
        crypto.open_sealed(key, "d000000000002", "segments/000000/000000000001.jsonl", blob)
    with pytest.raises(CryptoError):  # another key
        crypto.open_sealed(crypto.new_sync_key(), "d000000000001", "segments/000000/000000000001.jsonl", blob)


@given(st.integers(min_value=0, max_value=200), st.integers(min_value=1, max_value=255))
def test_any_changed_byte_of_a_sealed_blob_is_refused(where: int, flip: int) -> None:
    ident, _ = _pair()
    key = ident.current().key
    blob = bytearray(crypto.seal(key, ident.signer, "d1", "p", 0, b"x" * 64))
    blob[where % len(blob)] ^= flip
    with pytest.raises(CryptoError):
        crypto.open_sealed(key, "d1", "p", bytes(blob))


def test_the_seal_refuses_a_file_signed_by_another_key_or_for_another_epoch() -> None:
    ident, trust = _pair()
    other = Identity.new(ident.keys)  # holds the sync key, is not the device
    trust.add(ident.sign_pub, ident.box_pub, "d000000000001")
    trust.add(other.sign_pub, other.box_pub, "d000000000002")
    mine = Seal(ident, trust, "d000000000001")
    reader = Seal(Identity.new(ident.keys), trust, "d000000000009")
    good = mine.seal("d000000000001", "segments/x", 3, b"line\n")
    assert reader.open("d000000000001", "segments/x", 3, good) == b"line\n"
    with pytest.raises(Refused, match="not signed by"):
        reader.open("d000000000001", "segments/x", 4, good)  # replayed into another epoch
    forged = Seal(other, trust, "d000000000002").seal("d000000000001", "segments/x", 3, b"forged\n")
    with pytest.raises(Refused, match="forged or re-signed"):
        reader.open("d000000000001", "segments/x", 3, forged)
    trust.remove(ident.sign_pub)
    with pytest.raises(Refused, match="was removed"):
        reader.open("d000000000001", "segments/x", 3, good)


def test_a_wrapped_key_opens_only_for_its_device() -> None:
    a, _ = _pair()
    b = Identity.new(a.keys)
    new = crypto.new_sync_key()
    wrapped = crypto.wrap(crypto.raw_public(b.box), new, b"kid")
    assert crypto.unwrap(b.box, wrapped, b"kid") == new
    with pytest.raises(CryptoError):
        crypto.unwrap(a.box, wrapped, b"kid")
    with pytest.raises(CryptoError):
        crypto.unwrap(b.box, wrapped, b"another kid")


def test_pairing_codes_are_read_as_typed_and_stretch_to_the_same_name_and_key() -> None:
    code = crypto.new_code()
    assert len(code) == 14 and code.count("-") == 2
    typed = code.lower().replace("-", " ").replace("0", "o").replace("1", "l")
    assert crypto.normal_code(typed) == code
    assert crypto.code_keys(typed) == crypto.code_keys(code)
    assert crypto.code_keys(crypto.new_code()).name != crypto.code_keys(code).name
    for bad in ("", "ABCD-EFGH", "ABCD-EFGH-JKMU", "ABCD-EFGH-JKMN-P"):
        with pytest.raises(CryptoError):
            crypto.normal_code(bad)


def test_the_trust_merge_keeps_removals_for_good_and_binds_an_id_once() -> None:
    a, mine = _pair()
    b = Identity.new(a.keys)
    mine.add(a.sign_pub, a.box_pub, "d1")
    mine.add(b.sign_pub, b.box_pub, None)
    theirs = Trust(Path("/nonexistent/other.json"))
    theirs.add(b.sign_pub, b.box_pub, "d2")
    theirs.add(a.sign_pub, a.box_pub, "d1")
    theirs.remove(a.sign_pub)
    assert mine.merge(theirs.to_json())
    assert mine.key_of("d2") == b.sign_pub and not mine.accepts(a.sign_pub)
    undo = Trust(Path("/nonexistent/undo.json"))
    undo.add(a.sign_pub, a.box_pub, "d1")  # a roster that still has a (older, or forged by a)
    assert not mine.merge(undo.to_json())
    assert not mine.accepts(a.sign_pub)
    thief = Trust(Path("/nonexistent/thief.json"))
    thief.add(a.sign_pub, a.box_pub, "d2")  # cannot take an id that is bound
    mine.merge(thief.to_json())
    assert mine.key_of("d2") == b.sign_pub
