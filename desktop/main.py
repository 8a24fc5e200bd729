"""The desktop app: start-up, single instance, tray/window, popup, hotkey, notifications.

``memtray`` (no arguments) starts in :mod:`.early`, which shows the tray icon
before this module (and the core's services) is imported, then lands in
:func:`run`: open the App (lock, store, worker), listen on the IPC socket,
adopt the icon (or show the window where there is no tray), then set up the
rest. What is not needed to show the tray or window (the reminder scheduler,
the popup) starts once start-up is idle; the model client's warm-up waits until
a window is on screen (no tray) or the user opens the popup or window.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from memtray.core.base.home import Home

from . import icons, texts, theme
from .actions import NotificationActions
from .bridge import Bridge
from .context import Context, Navigator
from .early import EXPOSE_WAIT_SECONDS, REPORT_ENV, EarlyStart, ReadyProbe, report, tray_window
from .hotkey_dialog import HotkeyHelpDialog
from .hotkeys import HotkeyService, HotkeyStatus
from .instance import InstanceServer, Serve
from .notify import Notifier
from .qt import QApplication, QGuiApplication, QObject, QSettings, QSystemTrayIcon, QTimer
from .quickchat import QuickChat
from .tray import Tray
from .usage_view import TrayUsage

if TYPE_CHECKING:  # for their types only: start-up imports them when it needs them
    from memtray.core.app import App

    from .mainwindow import MainWindow
    from .onboarding import Onboarding
    from .sync_status import SyncStatusMenu

log = logging.getLogger(__name__)

__all__ = ["REPORT_ENV", "Desktop", "report", "run"]


class Desktop(QObject):
    """Owns every desktop object; one per process."""

    def __init__(self, app: App, qapp: QApplication, serve: Serve, *, tray_available: bool | None = None,
                 show_dialogs: bool = True, warm_up: bool = True, deliver: bool = True,
                 early: EarlyStart | None = None) -> None:
        super().__init__()
        self.app = app
        self.qapp = qapp
        self.serve = serve  # runs a forwarded command (the CLI's, handed down: the desktop never imports it)
        self.early = early  # the tray icon or window shown before this existed (see .early)
        self.tray_available = (early.tray is not None if early is not None
                               else QSystemTrayIcon.isSystemTrayAvailable() if tray_available is None
                               else tray_available)
        self.show_dialogs = show_dialogs
        self.theme = theme.current()
        self.nav = early.nav if early is not None else Navigator(self)
        self.bridge = Bridge(app.worker, self)
        self.ctx = Context(app, self.bridge, self.theme, self.nav)
        self.actions = NotificationActions(app, self.bridge, self.main_window, self._say)
        self.tray: Tray | None = None
        self.tray_usage: TrayUsage | None = None
        self.sync_menu: SyncStatusMenu | None = None  # the tray's sync line, when sync is set up
        self.window: MainWindow | None = None
        self.popup: QuickChat | None = None
        self.server: InstanceServer | None = None
        self.hotkeys: HotkeyService | None = None
        self.notifier: Notifier | None = None
        self.hotkey_dialog: HotkeyHelpDialog | None = None
        self.onboarding: Onboarding | None = None
        self.first_run = False
        self._pending_hotkey: HotkeyStatus | None = None
        self._after_flow = ""
        self.no_tray_banner: Any = None
        self._idle_started = False  # the tray icon or window was on screen before start() ended
        self._after_shown_done = False
        self.problems: list[str] = []
        # import litellm when the user first opens the popup or window (tests turn it off:
        # an import still running when a test's app closes would race the next test's)
        self._warmed = not warm_up
        self.deliver = deliver  # start reminder delivery (and idle maintenance) once shown
        self.delivering: bool | None = None  # None until the scheduler answered
        self.prefs = QSettings(str(app.home.root / "desktop.ini"), QSettings.Format.IniFormat)

    # --- start-up ---------------------------------------------------------------------

    def start(self) -> None:
        theme.apply_palette(self.theme)
        self.qapp.setWindowIcon(icons.app_icon())
        self._listen()
        pending: list[tuple[str, ...]] = []
        if self.early is not None and self.early.tray is not None:
            self.tray = self.early.tray
            self.tray.set_dark(self.theme.dark)  # the early icon went by the palette alone
            self.tray.set_hotkey_text(self.app.config.hotkey)
            pending = self.early.handed_over()
            self.tray.toggle.connect(self.toggle_popup)
            self.tray.quit.connect(self.quit)
        elif self.early is not None:
            pending = self.early.handed_over()
            self.main_window()  # adopts the early window and builds its chats page
            report("window_filled")
        elif self.tray_available:
            self.tray = Tray(self.nav, dark_panel=self.theme.dark, hotkey_text=self.app.config.hotkey)
            self.tray.toggle.connect(self.toggle_popup)
            self.tray.quit.connect(self.quit)
            self.tray.show()
            self._probe = ReadyProbe(tray_window(self.tray.icon), self._shown)
        else:
            self.main_window().present()
            self._probe = ReadyProbe(self.window, self._shown)
        self.nav.open.connect(self.open)
        self._follow_sync()
        self.notifier = Notifier(tray=self.tray.icon if self.tray else None, banner=self._banner,
                                 icon_path=str(icons.path("memtray.svg")))
        self.notifier.clicked.connect(lambda target: self.open("target", target))
        self.notifier.actions_for = self.actions.offered
        self.notifier.action_invoked.connect(self.notification_action)
        self.app.notifier.set(self.notifier)
        if self.tray is not None:
            self.tray_usage = TrayUsage(self.bridge, self.app, self.tray.icon)  # today's cost in the tooltip
        self.popup = QuickChat(self.ctx, self.app.config.hotkey)
        self.popup.shown.connect(self._popup_shown)
        self.popup.pane.turn_done.connect(self._turn_done)
        self.hotkeys = HotkeyService(QGuiApplication.platformName(), parent=self)
        self.hotkeys.activated.connect(self.toggle_popup)
        self.hotkeys.status_changed.connect(self._hotkey_status)
        # the first start ever: one onboarding window, which also carries the hotkey and
        # no-tray notes (nothing else opens on top of it; show/toggle raise it)
        self.first_run = not self.app.config.model and not self.app.config.onboarded
        self.hotkeys.apply(self.app.config.hotkey)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._scheme_changed)
        memory = self.app.memory
        self.problems += memory.problems  # e.g. a damaged repository rebuilt at start
        if self.app.store.readonly:
            self.problems.append(
                "The event log is damaged, so memtray opened it read-only: everything is readable, but "
                "new messages and reminders wait until you run `memtray doctor --repair`."
            )
        for problem in self.problems:
            self.notifier.notify("memtray", problem, kind="failure")
        if self.first_run:
            QTimer.singleShot(0, self.show_onboarding)
        elif self.tray is None:
            QTimer.singleShot(0, self.show_no_tray_notice)
        if pending:  # the early tray icon was clicked (or the window closed) before the desktop existed
            QTimer.singleShot(0, lambda: self._replay(pending))
        report("started")  # the App is open, the instance listens, the popup is built
        if self.early is not None or self._idle_started:
            self._after_shown()
        else:  # once the tray icon or window is on screen (or after a while regardless)
            QTimer.singleShot(int(EXPOSE_WAIT_SECONDS * 1000), self._after_shown)

    def _shown(self, exposed: bool) -> None:
        report("ready", tray=self.tray is not None, exposed=exposed)
        if self.popup is not None:  # start() is past building the views
            self._after_shown()
        else:
            self._idle_started = True  # shown during start(): it calls _after_shown at its end

    def _after_shown(self) -> None:
        """What start-up does once the tray icon or window is on screen, in the GUI's idle time."""
        if self._after_shown_done:
            return
        self._after_shown_done = True
        if self.deliver:
            # the scheduler (and apscheduler's import) is not on the path to the tray
            # or window, and runs on the worker, not the GUI thread
            QTimer.singleShot(0, self.start_delivery)
        # polish the hidden popup while idle: the first hotkey press shows it as fast as later ones
        if self.popup is not None:  # the popup as the timer's context: not after it is deleted
            QTimer.singleShot(300, self.popup, self._prepare_popup)
        # the model client only where the user is about to type: a window on screen (the popup
        # or a window opened from the tray warm it then: _warm_up's doc)
        if self.tray is None or self.window is not None:
            QTimer.singleShot(600, self._warm_up)

    def _replay(self, pending: list[tuple[str, ...]]) -> None:
        for what in pending:
            if what[0] == "toggle":
                self.toggle_popup()
            elif what[0] == "quit":
                self.quit()
            elif what[0] == "open":
                self.open(what[1], what[2])

    def _prepare_popup(self) -> None:
        if self.popup is None or self.popup.isVisible():
            return
        self.popup.ensurePolished()
        self.popup.winId()  # the native window, created now rather than on the first show
        layout = self.popup.layout()
        if layout is not None:
            layout.activate()

    def start_delivery(self) -> None:
        """Start reminder delivery and idle maintenance (consolidation sweep, git gc)."""
        svc = self.app.reminders
        if svc is None:
            return

        def started(ok: Any) -> None:
            self.delivering = bool(ok)
            if not ok and not self.app.store.readonly and self.notifier is not None:
                self.notifier.notify("memtray", "Reminders are not being delivered; the log says why "
                                     "(`memtray doctor` checks the data home).", kind="failure")

        def failed(exc: BaseException) -> None:
            self.delivering = False
            log.error("reminder delivery did not start: %s", exc)
            if self.notifier is not None:
                self.notifier.notify("memtray", f"Reminders are not being delivered: {exc}", kind="failure")

        self.bridge.call(svc.start, name="reminders", on_result=started, on_error=failed)

    def _listen(self) -> None:
        from memtray.core.base import ipc

        self.server = InstanceServer(ipc.socket_path(self.app.home), lambda req, send: self.serve(self.app, req, send),
                                     self, home=self.app.home)
        self.server.local_commands.update({
            "toggle": self._cmd_toggle, "show": self._cmd_show, "quit": self._cmd_quit,
            "__ping__": lambda _a, _e: 0,
        })
        try:
            self.server.listen()
        except Exception as exc:
            log.error("single-instance socket: %s", exc)
            self.problems.append(f"`memtray toggle` will not reach this instance: {exc}")

    # --- IPC commands (GUI thread) ------------------------------------------------------

    def _activation(self, env: dict[str, str]) -> None:
        # Wayland: Qt's xdg-activation support reads the token from the environment
        # when a window asks to be activated; X11 startup notification likewise.
        for var in ("XDG_ACTIVATION_TOKEN", "DESKTOP_STARTUP_ID"):
            if env.get(var):
                os.environ[var] = env[var]

    def _cmd_toggle(self, argv: list[str], env: dict[str, str]) -> int:
        self._activation(env)
        if self._in_flow("popup"):
            return 0
        self.toggle_popup()
        return 0

    def _cmd_show(self, argv: list[str], env: dict[str, str]) -> int:
        self._activation(env)
        if self._in_flow("window" if "--window" in argv[1:] else "popup"):
            return 0
        if "--window" in argv[1:]:
            self.main_window().present()
        else:
            self.show_popup()
        return 0

    def _cmd_quit(self, argv: list[str], env: dict[str, str]) -> int:
        QTimer.singleShot(0, self.quit)
        return 0

    # --- views ------------------------------------------------------------------------

    def toggle_popup(self) -> None:
        if self._in_flow("popup"):  # the tray icon or the hotkey during the first run
            return
        if self.popup is not None:
            self.popup.toggle()

    def show_popup(self) -> None:
        if self.popup is not None:
            self.popup.present()

    def _follow_sync(self) -> None:
        """The tray's sync line and "Sync now"; purges made on other devices applied as they arrive."""
        if self.app.sync is None:
            return
        from memtray.core.admin.tombstones import follow_tombstones

        from .sync_status import SyncStatusMenu

        follow_tombstones(self.app)
        if self.tray is not None:
            quit_ = next((a for a in self.tray.menu.actions() if a.text() == "Quit memtray"), None)
            self.sync_menu = SyncStatusMenu(self.tray.menu, quit_, self.app.sync, self.app.settings,
                                            bridge=self.bridge, conflicts=self.app.memory.merge_conflicts,
                                            open_review=self.open_review)

    def open_review(self) -> None:
        """The memory browser on its review (the tray's sync line while conflicts wait)."""
        window = self.main_window()
        window.open("memory")
        window.memory.show_review()

    def _popup_shown(self) -> None:
        report("popup_shown")
        self._warm_up()

    def _warm_up(self) -> None:
        """Import litellm when the user opens something to type in, so a reply does not wait for it
        (a tray app idle all day does not carry its ~230 MiB: bench/BENCHMARKS.md, idle RSS).

        In a thread of its own, not on the worker: the import takes seconds, and the
        worker must stay free to log the user's message meanwhile (a turn that needs
        litellm before the import is done waits on the import's lock, not from zero).
        """
        if self._warmed:
            return
        self._warmed = True
        import threading

        from memtray.core.llm.client import load_litellm

        def warm() -> None:
            if self.app.llm.runs_here:  # an offline model: loaded before the first message, not at it
                try:
                    self.app.llm.preload()
                except Exception as exc:  # the first message says what is wrong with it
                    log.warning("loading the offline model failed: %s", exc)
                report("client_warm")
                return
            try:
                load_litellm()
            except Exception:  # the first real call reports a broken install; this is a head start
                log.exception("warming up the model client failed")
                return
            report("client_warm")

        threading.Thread(target=warm, name="memtray-warm-up", daemon=True).start()

    def main_window(self) -> Any:
        if self.window is None:
            from .mainwindow import MainWindow

            if self.early is not None and self.early.window is not None:
                self.window = self.early.window  # shown at start, before the App was open
                self.window.attach(self.ctx)
            else:
                self.window = MainWindow(self.ctx, quit_on_close=self.tray is None)
            self.window.closing.connect(self._window_closing)
            self.window.page_created.connect(self._page_created)
            self.window.banner_invoked.connect(self.notification_action)
            if self._after_shown_done:  # opened from the tray: the user is about to type
                self._warm_up()
        return self.window

    def _page_created(self, name: str, page: Any) -> None:
        if name == "settings":
            page.saved.connect(self._settings_saved)
            page.hotkey_help.connect(lambda: self.show_hotkey_help(force=True))
            if self.hotkeys is not None:
                page.show_hotkey_status(self.hotkeys.status)

    def open(self, page: str, arg: str = "") -> None:
        if page == "target":
            kind = arg.partition(":")[0]
            if kind in ("memory", "consolidation"):
                page = "memory"
            elif kind == "session":
                page, arg = "chat", arg.partition(":")[2]
            elif kind == "reminder":
                page, arg = "reminders", arg.partition(":")[2]
            elif kind == "check":  # "Still true?": the quick chat asks it, with its buttons
                self.show_popup()
                return
            elif kind == "upkeep":  # upkeep paused or stopped: Settings shows why, with "Run now"
                page, arg = "settings", ""
            else:
                page, arg = "chat", ""
        if self.popup is not None and self.popup.isVisible():
            # the popup stays on top of every window: left open, the window opened from it
            # ("Open settings", "Open in window") came up behind it
            self.popup.hide()
        self.main_window().open(page, arg)

    def _banner(self, title: str, body: str, kind: str, target: str,
                actions: list[tuple[str, str]] | None = None) -> None:
        self.main_window().show_banner(title, body, kind, target, actions or [])
        self.main_window().present()

    def notification_action(self, action: str, target: str) -> None:
        """A notification's or banner's extra button (Undo, Review, Snooze, Done, Yes, No longer, Edit)."""
        if target.startswith("check:") and action == "edit":
            self.show_popup()  # the check-in line has the edit field
            return
        self.actions.invoke(action, target)

    def _say(self, title: str, body: str, kind: str) -> None:
        if self.notifier is not None:
            self.notifier.notify(title, body, kind=kind)

    def _turn_done(self, outcome: str, _text: str) -> None:
        if self.window is not None:
            self.window.chats.refresh()

    def _window_closing(self) -> None:
        if self.tray is None:
            # no tray: the window is the app; closing it quits (a hotkey or
            # `memtray toggle` starts it again)
            QTimer.singleShot(0, self.quit)

    def _scheme_changed(self, *_: Any) -> None:
        self.theme = theme.current()
        self.ctx.theme = self.theme
        theme.apply_palette(self.theme)
        if self.tray is not None:
            self.tray.set_dark(self.theme.dark)

    # --- hotkey -----------------------------------------------------------------------

    def _hotkey_status(self, status: HotkeyStatus) -> None:
        log.info("hotkey: %s", status.describe())
        text = status.hotkey if status.ok else ""
        if self.popup is not None:
            self.popup.set_hotkey_text(text)
        if self.tray is not None:
            self.tray.set_hotkey_text(text)
        if self.window is not None and self.window.settings_built:
            self.window.settings.show_hotkey_status(status)
        if status.state in ("failed", "none"):
            self.show_hotkey_help()

    def show_hotkey_help(self, *, force: bool = False) -> None:
        if self.hotkeys is None:
            return
        if self.first_run and not force:
            # inside the first-run flow, as its second page, not a dialog on top of it
            self._pending_hotkey = self.hotkeys.status
            if self.onboarding is not None:
                self.onboarding.set_hotkey_status(self.hotkeys.status)
            return
        if not force and (not self.show_dialogs or self.prefs.value("hide_hotkey_help", False, type=bool)):
            return
        if self.hotkey_dialog is not None:
            self.hotkey_dialog.close()
        dlg = HotkeyHelpDialog(self.hotkeys.status, self.theme)
        dlg.finished.connect(lambda _r: self.prefs.setValue("hide_hotkey_help", dlg.dont_show.isChecked()))
        self.hotkey_dialog = dlg
        dlg.show()

    def _settings_saved(self, cfg: Any) -> None:
        if self.hotkeys is not None and cfg.hotkey != self.hotkeys.status.hotkey:
            self.hotkeys.apply(cfg.hotkey)
        menu = self.sync_menu
        if menu is not None:  # a remote set or cleared: the tray's line and its "Sync now" follow
            menu.show_status(menu.last)

    def show_onboarding(self) -> None:
        from memtray.core.llm import localmodel

        from .onboarding import Onboarding

        if self.onboarding is not None:
            return
        missing = localmodel.missing()
        self.onboarding = Onboarding(self.ctx, self.window if self.tray is None else None,
                                     offline_model="" if missing else localmodel.NAME,
                                     offline_missing=missing or "")
        self.onboarding.completed.connect(self._onboarded)
        self.onboarding.flow_done.connect(self._flow_done)
        if self._pending_hotkey is not None:
            self.onboarding.set_hotkey_status(self._pending_hotkey)
        if self.tray is None:
            self.onboarding.set_no_tray(self.no_tray_text())
            self.prefs.setValue("no_tray_notice_shown", True)
        self.onboarding.show()
        self.onboarding.raise_()
        self.onboarding.activateWindow()

    def _in_flow(self, then: str) -> bool:
        """While the first-run flow is open, show/toggle bring it forward; ``then`` (the
        popup or the window) opens when it ends."""
        if not self.first_run:
            return False
        self._after_flow = then
        if self.onboarding is None:
            self.show_onboarding()
        elif self.onboarding.isVisible():
            self.onboarding.raise_()
            self.onboarding.activateWindow()
        return True

    def _onboarded(self, cfg: Any) -> None:
        if self.window is not None and self.window.settings_built:
            self.window.settings.load()

    def _flow_done(self) -> None:
        self.first_run = False
        chosen = self.onboarding is not None and self.onboarding.saved_config is not None
        then, self._after_flow = self._after_flow, ""
        if then == "window":
            self.main_window().present()
        elif then == "popup" or chosen:
            self.show_popup()

    # --- no tray ----------------------------------------------------------------------

    def no_tray_text(self) -> str:
        from .hotkey_dialog import toggle_command

        gnome = "gnome" in os.environ.get("XDG_CURRENT_DESKTOP", "").lower()
        fix = texts.text("no_tray.fix_gnome" if gnome else "no_tray.fix_other")
        return texts.text("no_tray.body", fix=fix, command=toggle_command())

    def show_no_tray_notice(self) -> None:
        """Once per data home: there is no tray, and what to do about it (a banner in the window)."""
        if self.tray is not None or not self.show_dialogs:
            return
        if self.prefs.value("no_tray_notice_shown", False, type=bool):
            return
        self.prefs.setValue("no_tray_notice_shown", True)
        self.no_tray_banner = self.main_window().show_banner(texts.text("no_tray.title"), self.no_tray_text(),
                                                             "notice", "")

    # --- shutdown ---------------------------------------------------------------------

    def quit(self) -> None:
        self.qapp.quit()

    def shutdown(self) -> None:
        """Release everything (after the event loop ended)."""
        # stop the timer while the notifier is still there: a reminder firing now is
        # shown, not only logged as delivered
        self.app.scheduler.close()
        self.app.reminders.close()
        if self.hotkeys is not None:
            self.hotkeys.close()
        if self.server is not None:
            self.server.close()
        if self.tray is not None:
            self.tray.hide()
        if self.notifier is not None:
            self.notifier.close()
            if self.app.notifier.current is self.notifier:
                self.app.notifier.set(None)
        self.bridge.close()
        for w in (self.popup, self.window, self.hotkey_dialog, self.onboarding):
            if w is not None:
                w.close()


def _forward_show(home: Home, argv: list[str]) -> int:
    """Another instance holds the data home: ask it to show itself."""
    from memtray.core.base import ipc

    deadline = time.monotonic() + 10.0
    while True:
        try:
            return ipc.request(home, {"argv": ["show"], "env": ipc.forward_env(), "tty": False},
                               lambda _m: None, timeout=10.0)
        except ipc.NoInstance:
            # the other process may hold the lock but not listen yet (starting), or be
            # a CLI command that holds the home briefly
            if time.monotonic() > deadline:
                sys.stderr.write(
                    "memtray: error: another memtray process is using this data home and does not answer\n"
                    "  Close it (or wait for the running command to finish), then start memtray again.\n"
                )
                return 1
            time.sleep(0.2)


def _open_after_early(home: Home) -> Any:
    """Open the App right after the early start let go of the lock.

    Something that only looks whether the home is held (`memtray toggle` while this
    starts takes and drops the lock) may hold it for an instant: try again for a
    moment before concluding another process has the home.
    """
    from memtray.core.app import App
    from memtray.core.base.errors import AlreadyRunning

    deadline = time.monotonic() + 1.0
    while True:
        try:
            return App.open(home)
        except AlreadyRunning:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def run(home: Home, argv: list[str], serve: Serve, *, checked: bool = False, early: EarlyStart | None = None) -> int:
    """Start the desktop app (or hand over to the running one). Returns the exit status.

    ``serve`` runs the commands forwarded to it. ``checked``: :mod:`.early` has already checked the display. ``early``: the tray
    icon it shows, holding the home's lock (released here just before the App
    takes it).
    """
    from memtray.core.app import App
    from memtray.core.base import logsetup
    from memtray.core.base.errors import AlreadyRunning

    logsetup.setup(home)
    if QApplication.instance() is None and not checked:
        # Qt aborts (SIGABRT) when it finds no display or its platform plugin cannot
        # load: look first, and say what is missing in one error line
        from .display import DisplayUnavailable, check

        try:
            check()
        except DisplayUnavailable as exc:
            log.info("not started: %s", exc)  # INFO: the file log only; stderr gets the one error line
            raise
    try:
        if early is not None:
            early.release_lock()
        app = _open_after_early(home) if early is not None else App.open(home)
    except AlreadyRunning:
        if early is not None:
            early.abandon()  # taken in the instant between (a one-shot command): not our icon
            early = None
        # a background instance started by a CLI command hands the home over (after
        # finishing what it started) and exits; the app or a daemon is asked to show
        from memtray.core.base import handover

        taken = handover.take_over(home, lambda: App.open(home))
        if taken is None:
            return _forward_show(home, argv)
        app = taken
    try:
        QGuiApplication.setDesktopFileName("memtray")
        QApplication.setApplicationName("memtray")
        qapp = QApplication.instance() or QApplication(["memtray", *argv])
        from .display import release

        release()  # the display check's X connection, if it kept one: Qt has its own now
        assert isinstance(qapp, QApplication)
        qapp.setQuitOnLastWindowClosed(False)
        desktop = Desktop(app, qapp, serve, early=early)
        desktop.start()
        # let Ctrl+C in a terminal quit cleanly (Python only sees signals between Qt events)
        signal.signal(signal.SIGINT, lambda *_: qapp.quit())
        signal.signal(signal.SIGTERM, lambda *_: qapp.quit())
        tick = QTimer()
        tick.start(500)
        tick.timeout.connect(lambda: None)
        code = int(qapp.exec())
        desktop.shutdown()
        return code
    finally:
        app.close()
