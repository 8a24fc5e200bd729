"""``remove-device`` names a device by its id, or one invited that never synced by the start of
its key (docs/SYNC.md, "Removing a device"): exactly one device, or a refusal in words."""

from __future__ import annotations

from pathlib import Path

import pytest
from memtray.core.sync.gitcli import SyncError
from memtray.core.sync.identity import Trust
from memtray.core.sync.pairing import find_device


def _trust(tmp_path: Path) -> Trust:
    trust = Trust(tmp_path / "sync-trust.json")
    trust.add("AAAAAAxyz0000000000000000000000000000000000=", "box1", "d0123456789ab")
    trust.add("AAAAAAabc0000000000000000000000000000000000=", "box2", None)  # invited, never synced
    trust.add("d0123456789abKEY00000000000000000000000000=", "box3", None)  # a key that reads like an id
    return trust


def test_an_id_names_its_device_and_a_key_start_names_one_invited(tmp_path: Path) -> None:
    trust = _trust(tmp_path)
    assert find_device(trust, "d0123456789ab") == "AAAAAAxyz0000000000000000000000000000000000="  # the id wins
    assert find_device(trust, " AAAAAAab ") == "AAAAAAabc0000000000000000000000000000000000="
    assert find_device(trust, "d0123456789abK") == "d0123456789abKEY00000000000000000000000000="


@pytest.mark.parametrize(("name", "said"), [("AAAAAA", "more than one device's key"),
                                            ("AAAAA", "not a paired device"),  # too short to be a key
                                            ("zzzzzzzz", "not a paired device"), ("", "not a paired device")])
def test_a_name_that_is_not_exactly_one_device_is_refused_in_words(tmp_path: Path, name: str, said: str) -> None:
    with pytest.raises(SyncError, match=said):
        find_device(_trust(tmp_path), name)
