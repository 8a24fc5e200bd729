"""The Sync card's devices (issue 33): which kind the remote is, pairing a new device from
the card (the code shown here, joined on another device; or a code typed here), and removing
a device, every command on the worker, with real homes and a real bare remote."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from memtray.desktop.qt import QApplication, QMessageBox, Qt, QTimer

from tests.integration.sync_support import bare, contents, open_app, say

pytestmark = pytest.mark.gui


def _card(qtbot: Any, desktop: Any, remote: Path) -> Any:
    desktop.open("settings")
    page = desktop.window.settings
    card = page.sync
    card.remote.setText(str(remote))
    with qtbot.waitSignal(page.saved, timeout=10_000):
        qtbot.mouseClick(page.save_btn, Qt.MouseButton.LeftButton)
    return card


def _sync_now(qtbot: Any, card: Any) -> None:
    qtbot.mouseClick(card.now_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: card.status.text() == "Synced just now", timeout=60_000)


def _rows(card: Any) -> list[str]:
    return [card.pairing.devices.item(i).text() for i in range(card.pairing.devices.count())]


def _answer_yes() -> None:
    box = QApplication.activeModalWidget()
    assert isinstance(box, QMessageBox), box
    box.button(QMessageBox.StandardButton.Yes).click()


def test_the_card_pairs_a_new_device_with_a_code_then_removes_it(qtbot: Any, desktop: Any, tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    say(desktop.app, "the spare key is under the blue pot")
    card = _card(qtbot, desktop, remote)
    pairing = card.pairing
    assert card.kind.text().startswith("Not synced yet: a new remote will be encrypted")
    assert pairing.pair_btn.isEnabled() and not pairing.remove_btn.isEnabled()
    _sync_now(qtbot, card)  # the first sync with a new remote: this device makes its keys
    assert card.kind.text() == "Encrypted: signed and encrypted on your devices (1 paired device)"
    qtbot.waitUntil(lambda: _rows(card) == [f"{desktop.app.sync.device} · this device"], timeout=10_000)
    assert not pairing.join_btn.isEnabled()  # paired already: nothing to join
    # the only device holding the keys: the card says what losing it means, as `memtray sync setup` does
    qtbot.waitUntil(lambda: "only one holding the keys" in pairing.message.text(), timeout=10_000)
    assert "every paired device is lost" in pairing.message.text()

    qtbot.mouseClick(pairing.pair_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Pairing code:" in pairing.message.text(), timeout=60_000)
    found = re.search(r"Pairing code: (\S+)", pairing.message.text())
    assert found is not None and "every paired device is lost" in pairing.message.text()
    qtbot.waitUntil(lambda: any("invited, has not synced yet" in r for r in _rows(card)), timeout=10_000)

    other = open_app(tmp_path / "laptop")
    try:
        assert other.sync is not None
        other.sync.pairing.join(str(remote), found.group(1))
        assert other.sync.sync(str(remote)).refusals == 0
        assert "the spare key is under the blue pot" in contents(other)  # readable right after
        laptop = other.sync.device
        _sync_now(qtbot, card)
        qtbot.waitUntil(lambda: laptop in " ".join(_rows(card)), timeout=10_000)
        assert card.kind.text().endswith("(2 paired devices)")

        # the laptop is lost: removed from the card, in one step (asked first), then synced
        row = next(i for i, r in enumerate(_rows(card)) if laptop in r)
        pairing.devices.setCurrentRow(row)
        assert pairing.remove_btn.isEnabled()
        QTimer.singleShot(0, _answer_yes)
        qtbot.mouseClick(pairing.remove_btn, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: pairing.message.text().startswith(f"Removed {laptop}"), timeout=30_000)
        qtbot.waitUntil(lambda: any(laptop in r and "removed" in r for r in _rows(card)), timeout=60_000)
        qtbot.waitUntil(lambda: card.status.text() == "Synced just now" and card.kind.text().endswith("(1 paired device)"),
                        timeout=60_000)
        say(desktop.app, "the new alarm code is 4471")
        _sync_now(qtbot, card)
        rep = other.sync.sync(str(remote))
        assert "the new alarm code is 4471" not in contents(other)
        assert any("this device was removed" in n for n in rep.notes)
    finally:
        other.close()


def test_the_card_joins_with_a_code_and_says_a_wrong_one_in_words(qtbot: Any, desktop: Any, tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    first = open_app(tmp_path / "desktop-pc")
    try:
        assert first.sync is not None
        first.sync.pairing.set_up()
        say(first, "the boiler is serviced every October")
        first.sync.sync(str(remote))
        code = first.sync.pairing.invite(str(remote))
        card = _card(qtbot, desktop, remote)
        pairing = card.pairing
        pairing.code.setText("ZZZZ-ZZZZ-ZZZZ")  # typed wrong: said in words, nothing changes
        qtbot.mouseClick(pairing.join_btn, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "no invitation for this code" in pairing.message.text(), timeout=60_000)
        assert "Traceback" not in pairing.message.text() and not desktop.app.sync.pairing.encrypted
        pairing.code.setText(code.lower())
        qtbot.mouseClick(pairing.join_btn, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: pairing.message.text().startswith(f"Paired with {first.sync.device}"),
                        timeout=60_000)
        # then the card syncs on its own thread: the first device's data is here right after
        qtbot.waitUntil(lambda: "the boiler is serviced every October" in contents(desktop.app), timeout=60_000)
        qtbot.waitUntil(lambda: card.status.text() == "Synced just now", timeout=60_000)
        assert card.kind.text().startswith("Encrypted")
        qtbot.waitUntil(lambda: len(_rows(card)) == 2, timeout=10_000)
        assert not pairing.join_btn.isEnabled()
    finally:
        first.close()
