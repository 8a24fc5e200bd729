"""The Sync card of an encrypted remote under a real X server (Xvfb): docs/screenshots/settings-sync-devices.png.

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/sync_screenshot.py

A data home syncs with a new bare repository (encrypted by default: its keys are made at
that first sync), a second device joins with a code and syncs, the card syncs again and
shows a fresh pairing code. The keys live in an in-memory keyring for the run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _common import grab_window, memory_keyring, screenshot_home

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots" / "settings-sync-devices.png"


def main() -> int:
    tmp = screenshot_home("sync_screenshot.py", prefix="mtsync")
    if tmp is None:
        return 2
    import keyring

    keyring.set_keyring(memory_keyring())  # type: ignore[arg-type]
    from memtray.core.app import App
    from memtray.core.base import config
    from memtray.core.base.home import Home, device_id
    from memtray.core.cli.main import serve
    from memtray.core.log.events import Message
    from memtray.core.sync.names import name_device
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication, QTimer

    remote = tmp / "usb" / "memtray.git"
    remote.parent.mkdir()
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    home = Home.resolve(tmp / "home")
    home.create()
    config.set_value(home, "model", "openai/gpt-4o-mini")
    config.set_value(home, "sync_remote", str(remote))
    config.set_value(home, "onboarded", True)
    qapp = QApplication(["memtray"])
    app = App.open(home)
    app.store.append_many([(Message(role="user", content="Remind me to renew the passport in March"), "quick", None)])
    app.write(lambda: name_device(app.store, device_id(home), "Laptop"))
    assert app.sync is not None
    app.sync.sync()
    other_home = Home(tmp / "desktop-pc")
    other_home.create()
    other = App.open(other_home)
    assert other.sync is not None
    other.sync.pairing.join(str(remote), app.sync.pairing.invite(str(remote)))
    other.write(lambda: name_device(other.store, device_id(other_home), "Desktop PC"))
    other.sync.sync(str(remote))
    other.close()
    d = Desktop(app, qapp, serve, tray_available=False, show_dialogs=False, warm_up=False)
    d.start()
    w = d.window
    w.resize(1180, 860)
    w.open("settings")
    page = w.settings
    card = page.sync
    result = {"code": 1}

    def step1() -> None:
        card.sync_now()
        wait(lambda: card.status.text() == "Synced just now" and card.pairing.devices.count() == 2, step2)

    def step2() -> None:
        card.pairing.pair()
        wait(lambda: "Pairing code:" in card.pairing.message.text(), step3)

    def step3() -> None:
        frame = card.parentWidget()
        page.cards_scroll.verticalScrollBar().setValue(frame.y() - 16)
        QTimer.singleShot(500, shoot)

    def shoot() -> None:
        grab_window(w, OUT)
        print(f"saved {OUT}")
        result["code"] = 0
        qapp.quit()

    def wait(ok: object, then: object, tries: list[int] | None = None) -> None:
        tries = tries if tries is not None else [0]
        tries[0] += 1
        if ok():  # type: ignore[operator]
            then()  # type: ignore[operator]
        elif tries[0] > 600:
            print("timed out", card.status.text(), card.pairing.message.text(), file=sys.stderr)
            qapp.quit()
        else:
            QTimer.singleShot(100, lambda: wait(ok, then, tries))

    QTimer.singleShot(300, step1)
    qapp.exec()
    d.shutdown()
    return result["code"]


if __name__ == "__main__":
    sys.exit(main())
