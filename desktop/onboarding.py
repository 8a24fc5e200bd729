"""The first-run flow: one window, whatever started memtray (plain, ``toggle``, ``show``).

Page one chooses the model: a capable one on this computer (downloaded from the
catalogue, or a model server found here: local_models.py) or a provider (the
Settings form); it says which model is in use now, e.g. the bundled offline one,
and what that can and cannot do. It also offers the imports from
nanobot and ChatGPT (import_dialog.py). Page two appears only when
something else needs saying: the global hotkey is not available (how to bind
``memtray toggle`` instead) and/or there is no system tray. Nothing opens on
top of it; :class:`memtray.desktop.main.Desktop` routes the hotkey notice and
``show``/``toggle`` here while it is open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memtray.core.base import config as cfgmod

from . import texts
from .context import Context
from .forms import ask, error_text, label, set_state
from .hotkey_dialog import HotkeyHelp
from .hotkeys import HotkeyStatus
from .import_dialog import import_buttons
from .local_models import LocalModels
from .model_form import ModelForm
from .qt import (
    QCloseEvent,
    QDialog,
    QFrame,
    QGuiApplication,
    QHBoxLayout,
    QKeyEvent,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    Qt,
    QTabWidget,
    QVBoxLayout,
    QWidget,
    Signal,
)
from .wheel import guard_wheel


def _padded(inner: QWidget) -> QWidget:
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(10, 12, 10, 10)
    lay.addWidget(inner)
    lay.addStretch(1)
    return box


def _scrolling(inner: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(inner)
    return area


class Onboarding(QDialog):
    """Choose a model (or keep the offline one), then, if needed, the hotkey and tray notes."""

    completed = Signal(object)  # the Config, once a choice was saved
    flow_done = Signal()  # the window closed: the flow is over, whichever way

    def __init__(self, ctx: Context, parent: QWidget | None = None, *, offline_model: str = "",
                 offline_missing: str = "") -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWindowTitle("Welcome to memtray")
        self.setMinimumWidth(600)
        self.hotkey_status: HotkeyStatus | None = None
        self.no_tray_text = ""
        self.saved_config: cfgmod.Config | None = None
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.pages = QStackedWidget()
        outer.addWidget(self.pages, 1)

        # --- page 1: the model ------------------------------------------------------
        page = QWidget()
        pl = QVBoxLayout(page)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.setSpacing(0)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(24, 20, 24, 8)
        lay.setSpacing(12)
        lay.addWidget(label("Welcome to memtray", heading=True))
        self.intro = label(texts.text("first_run.intro"), muted=True)
        lay.addWidget(self.intro)
        self.offline_model = offline_model
        if offline_model:
            self.model_note = label(texts.text("first_run.offline", name=offline_model), warning=True)
        else:
            self.model_note = label(texts.text("first_run.no_offline", why=offline_missing or "not set up"),
                                    muted=True)
        lay.addWidget(self.model_note)
        # two ways to a model: a provider (the Settings form), or one on this computer
        # (downloaded from the catalogue, or a model server found here)
        self.choices = QTabWidget()
        self.form = ModelForm(ctx)
        self.choices.addTab(_padded(self.form), "A provider")
        self.local = LocalModels(ctx)
        self.local.chosen.connect(self.use_local)
        self.choices.addTab(_padded(self.local), "On this computer")
        lay.addWidget(self.choices)
        self._initial = self.form.values()
        #: asks before a typed set-up is thrown away (tests answer it)
        self.confirm: Callable[[QWidget, str, str], bool] = ask
        lay.addWidget(label(texts.text("import.offer"), muted=True))
        imports, self.import_btns = import_buttons(ctx, self)
        lay.addWidget(imports)
        self.message = label("", muted=True)
        lay.addWidget(self.message)
        lay.addStretch(1)
        pl.addWidget(_scrolling(body), 1)
        guard_wheel(body)
        row = QHBoxLayout()
        row.setContentsMargins(24, 8, 24, 16)
        self.later_btn = QPushButton("Later")
        self.later_btn.setToolTip("Close this; it opens again at the next start until a model is chosen")
        self.later_btn.clicked.connect(self._later)
        row.addWidget(self.later_btn)
        row.addStretch(1)
        self.offline_btn = QPushButton("Keep the offline model")
        self.offline_btn.setVisible(bool(offline_model))
        self.offline_btn.clicked.connect(self.keep_offline)
        row.addWidget(self.offline_btn)
        self.start_btn = QPushButton("Save and start")
        self.start_btn.setProperty("primary", True)
        self.start_btn.clicked.connect(self.finish)
        row.addWidget(self.start_btn)
        pl.addLayout(row)
        self.pages.addWidget(page)
        self.more_page: QWidget | None = None
        self.hotkey_help: HotkeyHelp | None = None
        self.tray_note: Any = None
        self._fit_screen()

    def _fit_screen(self) -> None:
        screen = QGuiApplication.primaryScreen()
        if screen is not None:
            free = screen.availableGeometry()
            self.setMaximumHeight(free.height())
            self.resize(min(680, free.width()), min(640, free.height()))

    # --- what else the flow must say -------------------------------------------------

    def set_hotkey_status(self, status: HotkeyStatus) -> None:
        """The hotkey failed: its notice becomes the second page (not a dialog on top)."""
        self.hotkey_status = status if status.state in ("failed", "none") else None

    def set_no_tray(self, text: str) -> None:
        self.no_tray_text = text

    @property
    def needs_more(self) -> bool:
        return self.hotkey_status is not None or bool(self.no_tray_text)

    def _build_more(self) -> QWidget:
        page = QWidget()
        pl = QVBoxLayout(page)
        pl.setContentsMargins(24, 20, 24, 16)
        pl.setSpacing(12)
        pl.addWidget(label(texts.text("first_run.more_heading"), heading=True))
        if self.no_tray_text:
            self.tray_note = label(self.no_tray_text, warning=True)
            self.tray_note.setObjectName("noTrayNote")
            pl.addWidget(self.tray_note)
        if self.hotkey_status is not None:
            self.hotkey_help = HotkeyHelp(self.hotkey_status, self.ctx.theme)
            pl.addWidget(self.hotkey_help, 1)
        else:
            pl.addStretch(1)
        row = QHBoxLayout()
        row.addStretch(1)
        self.done_btn = QPushButton("Done")
        self.done_btn.setProperty("primary", True)
        self.done_btn.clicked.connect(self.accept)
        row.addWidget(self.done_btn)
        pl.addLayout(row)
        self.pages.addWidget(page)
        return page

    def _next(self) -> None:
        """After the model page: the notes if any, else the end of the flow."""
        if self.needs_more:
            if self.more_page is None:
                self.more_page = self._build_more()
            self.pages.setCurrentWidget(self.more_page)
        else:
            self.accept()

    def typed(self) -> bool:
        """Whether the model page holds something the user entered (a model, an address, a key)."""
        return self.form.values() != self._initial or bool(self.form.key.text().strip())

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape and not self._may_close():
            event.accept()
            return
        super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.result() == 0 and not self._may_close():
            event.ignore()
            return
        super().closeEvent(event)

    def _may_close(self) -> bool:
        """Escape or the close button on a set-up with typed values asks first: the set-up
        (a typed URL, a pasted key) is otherwise lost, with no way back shown."""
        if self.pages.currentIndex() != 0 or self.saved_config is not None or not self.typed():
            return True
        return self.confirm(self, "Discard the set-up?",
                            "What you entered here is not saved yet. Close the set-up and discard it?\n\n"
                            "(It opens again at the next start until a model is chosen.)")

    def done(self, result: int) -> None:  # accept, reject, Escape, the close button
        super().done(result)
        self.flow_done.emit()

    # --- the model page ----------------------------------------------------------------

    def _later(self) -> None:
        if self.needs_more:
            self._next()
        else:
            self.reject()

    def keep_offline(self) -> None:
        self._save({"onboarded": True})

    def use_local(self, model: str, api_base: str) -> None:
        """A downloaded model, or one of a server on this computer (:class:`LocalModels`)."""
        self._save({"model": model, "api_base": api_base, "onboarded": True})

    def finish(self) -> None:
        values = self.form.values()
        if not values["model"]:
            set_state(self.message, "Choose or type a model first.", "error")
            return
        self._save({**values, "onboarded": True}, secret=self.form.key.text().strip(),
                   provider=self.form.key_provider())

    def _save(self, values: dict[str, Any], *, secret: str = "", provider: str = "") -> None:
        app = self.ctx.app
        home = app.home

        def apply() -> cfgmod.Config:
            from memtray.core.base import keys

            if secret:
                keys.set_key(provider, secret)
            cfgmod.set_values(home, values)  # merged onto the file as it is now, one atomic write
            cfg = cfgmod.load(home)
            app.reconfigure(cfg)
            return cfg

        self.start_btn.setEnabled(False)
        self.offline_btn.setEnabled(False)
        self.ctx.bridge.call(apply, name="onboarding", on_result=self._applied, on_error=self._failed)

    def _applied(self, cfg: cfgmod.Config) -> None:
        self.saved_config = cfg
        self.completed.emit(cfg)
        self._next()

    def _failed(self, exc: BaseException) -> None:
        self.start_btn.setEnabled(True)
        self.offline_btn.setEnabled(True)
        set_state(self.message, error_text(exc), "error")
