"""The device id a running app holds follows device.json: `memtray sync --new-device` made in
another process changes the id the memory merge and the sync use here, without a restart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memtray.core.base.home import DeviceId, Home, device_id


def _set_elsewhere(home: Home, ident: str) -> None:
    """Another process gives the home a new id (as `memtray sync --new-device` does)."""
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from memtray.core.base.home import Home, set_device_id; "
                    "set_device_id(Home(Path(sys.argv[1])), sys.argv[2])", str(home.root), ident], check=True)


def test_the_cached_id_is_read_again_when_device_json_changes(tmp_path: Path) -> None:
    home = Home(tmp_path / "h")
    home.create()
    cached = DeviceId(home)
    first = cached.get()
    assert first == device_id(home) == cached.get()
    _set_elsewhere(home, "d0123456789ab")
    assert cached.get() == "d0123456789ab"
    # a same-size rewrite in the same instant is still seen: the file is replaced, a new inode
    _set_elsewhere(home, "d0123456789ac")
    assert cached.get() == "d0123456789ac"
    home.device_file.unlink()  # gone: a new id is chosen, as at first use, and kept
    new = cached.get()
    assert new not in (first, "d0123456789ac") and json.loads(home.device_file.read_text())["id"] == new
    assert cached.get() == new


def test_the_memory_merge_and_the_sync_of_a_running_app_take_a_new_id(tmp_path: Path) -> None:
    from memtray.core.app import App
    from memtray.core.base.config import Config

    home = Home(tmp_path / "h")
    home.create()
    app = App.open(home, config=Config(), start_services=False)
    try:
        assert app.sync is not None
        old = app.memory.device
        assert app.sync.device == old
        _set_elsewhere(home, "d00000000000e" if old != "d00000000000e" else "d00000000000f")
        new = json.loads(home.device_file.read_text())["id"]
        assert new != old and app.memory.device == new and app.sync.device == new
    finally:
        app.close()
