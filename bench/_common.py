"""Shared helpers for benchmarks: synthetic logs, timing, printing."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def synthetic_log(events_dir: Path, n: int, *, segment_bytes: int | None = None, sessions: int = 3,
                  consolidate_every: int = 100) -> None:
    """Write ``n`` valid events straight to segment files (fast path, same codec).

    A conversation of user/assistant messages across a few sessions, with a
    consolidation every ``consolidate_every`` messages per session so that, like
    real use, the unconsolidated tail stays bounded.
    """
    from memtray.core.log.events import Record, encode
    from memtray.core.log.segments import DEFAULT_SEGMENT_BYTES

    segment_bytes = segment_bytes or DEFAULT_SEGMENT_BYTES

    events_dir.mkdir(parents=True, exist_ok=True)
    seg = 1
    fh = open(events_dir / f"{seg:06d}.jsonl", "wb")  # noqa: SIM115
    size = 0
    counts = [0] * sessions
    pointer = [0] * sessions  # each session's last_consolidated
    seq = 0
    while seq < n:
        seq += 1
        s = seq % sessions
        key = f"s{s}"
        if counts[s] - pointer[s] >= consolidate_every and seq + 2 <= n:
            # fold all but the newest half, as the consolidation service does
            c = f"c{seq}"
            start, end = pointer[s], counts[s] - consolidate_every // 2
            recs = [
                Record(seq, f"01BENCH{seq:019d}", "2026-11-30T09:00:00.000Z", "consolidation.started", 1, key,
                       {"consolidation": c, "start": start, "end": end, "model": "m"}),
                Record(seq + 1, f"01BENCH{seq + 1:019d}", "2026-11-30T09:00:00.000Z", "consolidation.completed", 1, key,
                       {"consolidation": c, "end": end}),
            ]
            seq += 1
            pointer[s] = end
        else:
            role = "user" if counts[s] % 2 == 0 else "assistant"
            recs = [Record(seq, f"01BENCH{seq:019d}", "2026-11-30T09:00:00.000Z", "message", 1, key,
                           {"role": role, "content": f"message {seq} about tea, trains and the weather in Lyon"})]
        for rec in recs:
            line = encode(rec)
            if size + len(line) > segment_bytes:
                fh.close()
                seg += 1
                fh = open(events_dir / f"{seg:06d}.jsonl", "wb")  # noqa: SIM115
                size = 0
            fh.write(line)
            size += len(line)
        if recs[0].type == "message":
            counts[s] += 1
    fh.close()


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def pct(values: list[float], p: float) -> float:
    xs = sorted(values)
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


def median(values: list[float]) -> float:
    return statistics.median(values)


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms"


def screenshot_home(script: str, prefix: str = "mtshot") -> Path | None:
    """For the screenshot scripts: None (and how to run it) unless under an X server
    (Xvfb); else a fresh temporary folder with the data home, runtime and config
    folders pointed into it, a fake API key, no global hotkey, litellm offline."""
    if os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb" or not os.environ.get("DISPLAY"):
        print(f"run under Xvfb: xvfb-run -a -s '-screen 0 1440x900x24' python bench/{script}", file=sys.stderr)
        return None
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["MEMTRAY_HOME"] = str(tmp / "home")
    os.environ["XDG_RUNTIME_DIR"] = str(tmp)
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    os.environ["OPENAI_API_KEY"] = "sk-screenshot"
    os.environ["MEMTRAY_HOTKEY_BACKEND"] = "none"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    return tmp


def grab_window(widget: object, path: Path) -> None:
    """Save what the X server shows of ``widget``'s window (frame and all) as a PNG, once
    Qt has painted what is pending: the screenshot scripts' one way to take a picture."""
    from memtray.desktop.qt import QApplication, QGuiApplication

    QApplication.processEvents()
    screen = QGuiApplication.primaryScreen()
    pix = screen.grabWindow(0, widget.x(), widget.y(), widget.width(), widget.height())  # type: ignore[attr-defined]
    pix.save(str(path))


def memory_keyring() -> object:
    """An in-memory keyring (the benches and screenshot scripts never touch the OS keyring):
    ``keyring.set_keyring(memory_keyring())``."""
    from keyring.backend import KeyringBackend

    class Backend(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def __init__(self) -> None:
            super().__init__()
            self.store: dict[tuple[str, str], str] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.store.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.store[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            self.store.pop((service, username), None)

    return Backend()


class ScreenshotSession:
    """What every screenshot script of the desktop starts from, once :func:`screenshot_home`
    has set the environment up: the data home with a model that answers nothing (nothing is
    sent), a QApplication in the chosen colour scheme, the App opened on it, and then (after
    the script seeded the App) the desktop, with :meth:`grab` saving each picture to ``out``."""

    def __init__(self, out: Path, *, dark: bool) -> None:
        from memtray.core.app import App
        from memtray.core.base import config
        from memtray.core.base.home import Home
        from memtray.desktop.qt import QApplication, QGuiApplication, Qt

        self.out = out
        self.suffix = "-dark" if dark else ""
        self.home = Home.resolve(os.environ["MEMTRAY_HOME"])
        config.set_value(self.home, "model", "openai/gpt-4o-mini")
        config.set_value(self.home, "api_base", "http://127.0.0.1:9/v1")
        self.qapp = QApplication(["memtray"])
        if dark:
            QGuiApplication.styleHints().setColorScheme(Qt.ColorScheme.Dark)
        self.app = App.open(self.home)
        self.shots: list[str] = []

    def desktop(self) -> Any:
        """The desktop on the App (no tray: the main window is its face), started."""
        from memtray.core.cli.main import serve
        from memtray.desktop.main import Desktop

        d = Desktop(self.app, self.qapp, serve, tray_available=False, show_dialogs=False, warm_up=False)
        d.start()
        return d

    def grab(self, widget: object, name: str) -> None:
        grab_window(widget, self.out / f"{name}{self.suffix}.png")
        self.shots.append(name)

    def saved(self) -> list[Path]:
        return [self.out / f"{name}{self.suffix}.png" for name in self.shots]

    def run(self, desktop: Any, first: Any, expected: int) -> int:
        """Run the script's steps (``first`` schedules the next), never longer than a minute;
        print each picture's path; 0 when all ``expected`` pictures were taken."""
        from memtray.desktop.qt import QTimer

        QTimer.singleShot(300, first)
        QTimer.singleShot(60_000, self.qapp.quit)  # never hang
        self.qapp.exec()
        desktop.shutdown()
        self.app.close()
        for path in self.saved():
            print(path)
        return 0 if len(self.shots) == expected else 1
