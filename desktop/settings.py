"""Settings: the model (model_form.py), hotkey, memory, recall (recall_view.py), sync
(sync_settings.py), MCP servers (mcp_panel.py), imports (import_dialog.py), launch at
login, data folder.

The form follows the live settings: a change through any other door (``memtray config
set``, a hand edit of config.toml) shows at once; a setting the user is editing keeps the
edit, and a bar says it changed elsewhere. The footer marks what is unsaved. Save writes
only the settings the user edited, merged onto config.toml as it is then
(``config.set_values``: one validated, atomic write), on the worker, then
``app.reconfigure``. Combo and spin boxes ignore the wheel until focused (wheel.py).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from memtray.core.base import config as cfgmod

from . import autostart, texts
from .context import Context
from .forms import align_labels, error_text, label, set_state
from .hotkeys import HotkeyStatus
from .import_dialog import import_buttons
from .mcp_panel import McpSection
from .model_form import ModelForm
from .qt import (
    QCheckBox,
    QComboBox,
    QDesktopServices,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QKeySequence,
    QKeySequenceEdit,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    Qt,
    QUrl,
    QVBoxLayout,
    QWidget,
    Signal,
)
from .recall_view import RecallSection
from .sync_settings import SyncSection
from .usage_view import UsageRow
from .wheel import guard_wheel

log = logging.getLogger(__name__)

DROP_POLICIES = ("keep", "review")  # config.drop_policy; each has a label and help in texts.toml
#: how the footer and the "changed elsewhere" bar name a setting
FIELD_NAMES = {
    "model": "Model", "api_base": "API base URL", "hotkey": "Hotkey", "memory_window": "Consolidate after",
    "drop_policy": "When a fact is dropped", "launch_at_login": "Start at login", "recall": "Recall",
    "recall_limit": "Recall limit", "embedding_model": "Embedding model", "embedding_api_base": "Embedding API base",
    "vision_models": "Reads images",
    "sync_remote": "Sync remote", "sync_enabled": "Sync automatically", "sync_interval_minutes": "Sync interval",
    "sync_encrypt": "Encrypt a new remote",
}


def _card(title: str) -> tuple[QFrame, QFormLayout]:
    card = QFrame()
    card.setProperty("card", True)
    outer = QVBoxLayout(card)
    outer.setContentsMargins(18, 14, 18, 16)
    outer.setSpacing(10)
    outer.addWidget(label(title, subheading=True))
    form = QFormLayout()
    form.setHorizontalSpacing(14)
    form.setVerticalSpacing(10)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    outer.addLayout(form)
    return card, form


def _left(w: QWidget) -> QWidget:
    box = QWidget()
    lay = QHBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(w)
    lay.addStretch(1)
    return box


class SettingsPage(QWidget):
    """The settings view of the main window: the cards scroll, Save and Revert stay in view."""

    saved = Signal(object)  # the new Config
    hotkey_help = Signal()

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        page = QVBoxLayout(self)
        page.setContentsMargins(0, 0, 0, 0)
        page.setSpacing(0)
        self._loading = False
        self.shown_config: cfgmod.Config = ctx.app.config
        self.baseline: dict[str, Any] = {}
        self.clashes: list[str] = []
        # another door changed a setting being edited here: said above the cards, not lost
        self.changed_bar = QFrame()
        self.changed_bar.setObjectName("changedBar")
        self.changed_bar.setStyleSheet(
            f"QFrame#changedBar {{ background: {ctx.theme.error_bg}; border-bottom: 1px solid {ctx.theme.border}; }}")
        bar = QHBoxLayout(self.changed_bar)
        bar.setContentsMargins(24, 8, 24, 8)
        self.changed_text = label("")
        bar.addWidget(self.changed_text, 1)
        self.take_theirs_btn = QPushButton(texts.text("settings.take_theirs"))
        self.take_theirs_btn.clicked.connect(self.take_theirs)
        bar.addWidget(self.take_theirs_btn, 0, Qt.AlignmentFlag.AlignVCenter)
        self.changed_bar.hide()
        page.addWidget(self.changed_bar)
        self.cards_scroll = QScrollArea()
        self.cards_scroll.setWidgetResizable(True)
        self.cards_scroll.setFrameShape(QFrame.Shape.NoFrame)
        page.addWidget(self.cards_scroll, 1)
        inner = QWidget()
        col = QVBoxLayout(inner)
        col.setContentsMargins(24, 20, 24, 24)
        col.setSpacing(16)
        col.addWidget(label("Settings", heading=True))

        card = QFrame()
        card.setProperty("card", True)
        cl = QVBoxLayout(card)
        cl.setContentsMargins(18, 14, 18, 16)
        cl.setSpacing(10)
        cl.addWidget(label("Model", subheading=True))
        self.model_form = ModelForm(ctx)
        cl.addWidget(self.model_form)
        col.addWidget(card)

        card, f = _card("Hotkey")
        self.hotkey = QKeySequenceEdit()
        self.hotkey.setMaximumSequenceLength(1)
        self.hotkey.setClearButtonEnabled(True)
        f.addRow("Quick chat", self.hotkey)
        self.hotkey_status = label("", muted=True)
        f.addRow("Status", self.hotkey_status)
        self.hotkey_help_btn = QPushButton("How to bind it in your desktop's settings…")
        self.hotkey_help_btn.clicked.connect(self.hotkey_help)
        f.addRow("", _left(self.hotkey_help_btn))
        col.addWidget(card)

        card, f = _card("Memory")
        self.memory_window = QSpinBox()
        self.memory_window.setRange(4, 100_000)
        self.memory_window.setSuffix(" messages")
        f.addRow("Consolidate after", self.memory_window)
        self.usage = UsageRow(ctx)
        f.addRow("Spent", self.usage)
        self.upkeep_usd = QDoubleSpinBox()
        self.upkeep_usd.setRange(0, 100_000)
        self.upkeep_usd.setDecimals(2)
        self.upkeep_usd.setSingleStep(0.1)
        self.upkeep_usd.setPrefix("$")
        self.upkeep_usd.setSpecialValueText("no limit")
        self.upkeep_usd.setToolTip("A day's limit for the memory upkeep memtray starts by itself (consolidation, "
                                   "embedding); past it, it waits for the next day or Run now. What you ask for "
                                   "always runs.")
        f.addRow("Background upkeep a day", self.upkeep_usd)
        self.drop_policy = QComboBox()
        for policy in DROP_POLICIES:
            self.drop_policy.addItem(texts.text(f"drop_policy.{policy}"), policy)
            self.drop_policy.setItemData(self.drop_policy.count() - 1, texts.text(f"drop_policy.{policy}_help"),
                                         Qt.ItemDataRole.ToolTipRole)
        self.drop_policy.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.drop_policy.setMinimumContentsLength(20)
        f.addRow("When a fact is dropped", self.drop_policy)
        self.drop_policy_help = label("", muted=True)
        f.addRow("", self.drop_policy_help)
        self.drop_policy.currentIndexChanged.connect(self._policy_changed)
        col.addWidget(card)

        card, f = _card("Recall")
        self.recall = RecallSection(ctx)
        f.addRow(self.recall)
        col.addWidget(card)

        card, f = _card("Sync")
        self.sync = SyncSection(ctx)
        self.saved.connect(self.sync.config_saved)
        f.addRow(self.sync)
        col.addWidget(card)

        card, f = _card("AI tools (MCP)")
        self.mcp = McpSection(ctx)
        f.addRow(self.mcp)
        col.addWidget(card)

        card, f = _card("Import")
        f.addRow(label(texts.text("import.offer"), muted=True))
        imports, self.import_btns = import_buttons(ctx, self)
        f.addRow(imports)
        col.addWidget(card)

        card, f = _card("General")
        self.launch = QCheckBox("Start memtray when I log in")
        f.addRow("", self.launch)
        folder = QHBoxLayout()
        folder.setContentsMargins(0, 0, 0, 0)
        self.data_path = label(str(ctx.app.home.root), muted=True)
        self.data_path.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        folder.addWidget(self.data_path, 1)
        open_btn = QPushButton("Open")
        open_btn.clicked.connect(self.open_data_folder)
        folder.addWidget(open_btn)
        fw = QWidget()
        fw.setLayout(folder)
        f.addRow("Data folder", fw)
        col.addWidget(card)

        col.addStretch(1)
        footer = QFrame()
        footer.setObjectName("settingsFooter")
        footer.setStyleSheet(f"QFrame#settingsFooter {{ border-top: 1px solid {ctx.theme.border}; }}")
        row = QHBoxLayout(footer)
        row.setContentsMargins(24, 10, 24, 12)
        self.result = label("", muted=True)
        row.addWidget(self.result, 1)
        self.revert_btn = QPushButton("Revert")
        self.revert_btn.clicked.connect(self.load)
        row.addWidget(self.revert_btn)
        self.save_btn = QPushButton("Save")
        self.save_btn.setProperty("primary", True)
        self.save_btn.clicked.connect(self.save)
        row.addWidget(self.save_btn)
        page.addWidget(footer)
        inner.setMaximumWidth(880)
        holder = QWidget()
        hl = QHBoxLayout(holder)
        hl.setContentsMargins(0, 0, 0, 0)
        hl.addWidget(inner, 1)
        hl.addStretch(0)
        for form in inner.findChildren(QFormLayout):
            align_labels(form)
        guard_wheel(inner)
        self._watch_edits()
        ctx.bridge.on_config_change(self.config_changed)
        self.cards_scroll.setWidget(holder)
        self.load()

    # --- following the live settings ------------------------------------------------------

    def load(self) -> None:
        """Show the settings in force now, dropping unsaved edits (Revert)."""
        self._show(self.ctx.app.config)
        self.changed_bar.hide()
        self._mark()

    def _show(self, cfg: cfgmod.Config, *, edits: dict[str, Any] | None = None) -> None:
        """Fill the form from ``cfg`` (its values become the baseline edits are measured
        from), then put ``edits`` back over it."""
        self._loading = True
        try:
            self._fill(cfg)
            self.shown_config = cfg
            self.baseline = self.values()
            if edits:
                self._fill(dataclasses.replace(cfg, **edits))
        finally:
            self._loading = False

    def _fill(self, cfg: cfgmod.Config) -> None:
        self.model_form.load(cfg)
        self.hotkey.setKeySequence(QKeySequence(cfg.hotkey))
        self.memory_window.setMaximum(max(100_000, cfg.memory_window))
        self.memory_window.setValue(cfg.memory_window)
        self.upkeep_usd.setValue(cfg.upkeep_daily_usd)
        self.drop_policy.setCurrentIndex(max(0, self.drop_policy.findData(cfg.drop_policy)))
        self._policy_changed()
        self.launch.setChecked(cfg.launch_at_login)
        self.recall.load(cfg)
        self.sync.load(cfg)

    def edits(self) -> dict[str, Any]:
        """The settings the user changed in the form and has not saved (name: new value)."""
        return {k: v for k, v in self.values().items() if v != self.baseline.get(k)}

    def config_changed(self, cfg: cfgmod.Config) -> None:
        """The live settings changed (another door, a hand edit, or this page's own Save):
        the form shows them at once; the user's unsaved edits stay, and where another door
        changed a setting the user is editing, the bar says so and offers its value."""
        if cfg == self.shown_config:
            return
        before = self.baseline
        edits = self.edits()
        self._show(cfg)
        edits = {k: v for k, v in edits.items() if v != self.baseline.get(k)}  # saved, or set alike elsewhere
        if edits:
            self._show(cfg, edits=edits)
        clashes = [k for k in edits if self.baseline.get(k) != before.get(k)]
        if clashes:
            self.clashes = clashes
            names = ", ".join(FIELD_NAMES.get(k, k) for k in clashes)
            self.changed_text.setText(texts.text("settings.changed_elsewhere", names=names))
            self.changed_bar.show()
        elif not edits:
            self.changed_bar.hide()
        self._mark()

    def take_theirs(self) -> None:
        """The bar's button: the settings changed elsewhere get their new values; the
        user's other edits stay."""
        edits = {k: v for k, v in self.edits().items() if k not in self.clashes}
        self._show(self.shown_config, edits=edits)
        self.changed_bar.hide()
        self._mark()

    def _edited(self, *_: Any) -> None:
        if not self._loading:
            self._mark()

    def _mark(self) -> None:
        """The footer says what is unsaved (it replaces a "Saved." that no longer holds)."""
        edits = self.edits()
        if edits:
            names = ", ".join(FIELD_NAMES.get(k, k) for k in edits)
            set_state(self.result, texts.text("settings.unsaved", names=names), "")
        elif self.result.text() != "Saved.":
            set_state(self.result, "", "muted")
        self.revert_btn.setEnabled(bool(edits))

    def _watch_edits(self) -> None:
        """Every field's change signal re-marks the footer (the MCP and import sections
        act at once and hold nothing to save, so they are not watched)."""
        fields: list[QWidget] = [self.model_form, self.hotkey, self.memory_window, self.upkeep_usd, self.drop_policy,
                                 self.launch, self.recall, self.sync]
        for root in fields:
            for w in [root, *root.findChildren(QWidget)]:
                if isinstance(w, QLineEdit):
                    w.textChanged.connect(self._edited)
                elif isinstance(w, QComboBox):
                    w.currentIndexChanged.connect(self._edited)
                    w.currentTextChanged.connect(self._edited)
                elif isinstance(w, QSpinBox | QDoubleSpinBox):
                    w.valueChanged.connect(self._edited)
                elif isinstance(w, QCheckBox):
                    w.toggled.connect(self._edited)
                elif isinstance(w, QKeySequenceEdit):
                    w.keySequenceChanged.connect(self._edited)

    def _policy_changed(self) -> None:
        policy = self.drop_policy.currentData()
        self.drop_policy_help.setText(texts.text(f"drop_policy.{policy}_help") if policy else "")

    def values(self) -> dict[str, Any]:
        v = self.model_form.values()
        seq = self.hotkey.keySequence().toString(QKeySequence.SequenceFormat.PortableText)
        v.update({
            "hotkey": seq or self.shown_config.hotkey,
            "memory_window": self.memory_window.value(),
            "upkeep_daily_usd": round(self.upkeep_usd.value(), 2),
            "drop_policy": str(self.drop_policy.currentData()),
            "launch_at_login": self.launch.isChecked(),
        })
        v.update(self.recall.values())
        v.update(self.sync.values())
        return v

    # --- saving -----------------------------------------------------------------------------

    def save(self) -> None:
        """Write the settings the user edited, merged onto config.toml as it is now."""
        app = self.ctx.app
        home = app.home
        changes = self.edits()
        if not changes:
            set_state(self.result, "Nothing changed.", "muted")
            return
        if "model" in changes and not changes["model"]:
            set_state(self.result, "Not saved: " + texts.text("settings.empty_model"), "error")
            return
        if "hotkey" in changes:
            from .hotkeys import parse

            try:
                parse(changes["hotkey"])
            except Exception as exc:
                set_state(self.result, error_text(exc), "error")
                return
        if "sync_remote" in changes:
            try:
                self.sync.check()  # core's refusal (a password in the address), before anything is saved
            except Exception as exc:
                set_state(self.result, "Not saved: " + error_text(exc), "error")
                return

        def apply() -> cfgmod.Config:
            cfgmod.set_values(home, changes)
            if "launch_at_login" in changes:
                autostart.set_enabled(bool(changes["launch_at_login"]))
            cfg = cfgmod.load(home)
            app.reconfigure(cfg)
            return cfg

        self.save_btn.setEnabled(False)
        set_state(self.result, "Saving…", "muted")
        self.ctx.bridge.call(apply, name="save-settings", on_result=self._saved, on_error=self._save_failed)

    def _saved(self, cfg: cfgmod.Config) -> None:
        self.save_btn.setEnabled(True)
        self.changed_bar.hide()
        self.config_changed(cfg)  # usually here already, by the live settings' signal
        set_state(self.result, "Saved.", "ok")
        self._mark()
        self.saved.emit(cfg)

    def _save_failed(self, exc: BaseException) -> None:
        self.save_btn.setEnabled(True)
        set_state(self.result, "Not saved: " + error_text(exc), "error")

    def show_hotkey_status(self, status: HotkeyStatus) -> None:
        kind = "ok" if status.ok else ("muted" if status.state == "pending" else "error")
        text = ("✓ " if status.ok else "") + status.describe()
        if status.state in ("failed", "none"):
            text += "\nBind `memtray toggle` in your desktop's keyboard settings instead."
        set_state(self.hotkey_status, text, kind)

    def open_data_folder(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.ctx.app.home.root)))
