"""Settings: provider and model, API key (keyring), test connection, hotkey, memory,
recall (recall_view.py), sync (sync_settings.py), MCP servers (mcp_panel.py), imports (import_dialog.py), launch at login, data folder. The first-run onboarding (onboarding.py) reuses the model form.

Everything slow (keyring, the test request, config writes, autostart files) runs
on the worker through the bridge. Saving goes through core: ``config.set_value``
for each changed setting, then ``app.reconfigure(config.load(home))``.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from memtray.core.base import config as cfgmod

from . import autostart, providers, texts
from .bridge import Task
from .context import Context
from .forms import label, section_form
from .hotkeys import HotkeyStatus
from .import_dialog import import_buttons
from .mcp_panel import McpSection
from .qt import (
    QCheckBox,
    QComboBox,
    QDesktopServices,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QKeySequence,
    QKeySequenceEdit,
    QLabel,
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

log = logging.getLogger(__name__)

TEST_PROMPT = "Reply with the single word OK."
DROP_POLICIES = ("keep", "review")  # config.drop_policy; each has a label and help in texts.toml


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


LABEL_WIDTH = 150


def _align_labels(form: QFormLayout) -> None:
    """Same label column width in every card, so the fields line up down the page."""
    for row in range(form.rowCount()):
        item = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        w = item.widget() if item is not None else None
        if w is not None:
            w.setFixedWidth(LABEL_WIDTH)


def _left(w: QWidget) -> QWidget:
    box = QWidget()
    lay = QHBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(w)
    lay.addStretch(1)
    return box


def set_state(label: QLabel, text: str, kind: str = "") -> None:
    label.setText(text)
    for prop in ("ok", "error", "muted"):
        label.setProperty(prop, prop == kind)
    label.style().unpolish(label)
    label.style().polish(label)


def error_text(exc: BaseException) -> str:
    hint = getattr(exc, "hint", "")
    return f"{exc}\n{hint}" if hint else str(exc)


class ModelForm(QWidget):
    """Provider, model, API base, key (with Store) and Test connection."""

    changed = Signal()
    tested = Signal(bool, str)
    key_stored = Signal(bool, str)

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.form = f = section_form(self)
        self.provider = QComboBox()
        for p in providers.PROVIDERS:
            self.provider.addItem(p.label, p.id)
        f.addRow("Provider", self.provider)
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        f.addRow("Model", self.model)
        self.api_base = QLineEdit()
        self.api_base.setPlaceholderText("https://… (empty: the provider's default)")
        f.addRow("API base URL", self.api_base)
        self.help = label("", muted=True)
        f.addRow("", self.help)
        keyrow = QHBoxLayout()
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("Paste the API key")
        keyrow.addWidget(self.key, 1)
        self.store_btn = QPushButton("Store in keyring")
        self.store_btn.clicked.connect(self.store_key)
        keyrow.addWidget(self.store_btn)
        self.key_row = QWidget()
        self.key_row.setLayout(keyrow)
        keyrow.setContentsMargins(0, 0, 0, 0)
        f.addRow("API key", self.key_row)
        self.key_status = label("", muted=True)
        f.addRow("", self.key_status)
        self.keyring_warning = label("", warning=True)
        self.keyring_warning.hide()
        f.addRow("", self.keyring_warning)
        testrow = QHBoxLayout()
        testrow.setContentsMargins(0, 0, 0, 0)
        self.test_btn = QPushButton("Test connection")
        self.test_btn.clicked.connect(self.test)
        testrow.addWidget(self.test_btn)
        self.test_result = label("", muted=True)
        testrow.addWidget(self.test_result, 1)
        tw = QWidget()
        tw.setLayout(testrow)
        f.addRow("", tw)
        _align_labels(f)
        self._test_task: Task | None = None
        self.provider.currentIndexChanged.connect(self._provider_changed)
        self.model.currentTextChanged.connect(lambda _t: self._refresh_key_status())
        self.model.currentTextChanged.connect(lambda _t: self.changed.emit())
        self.api_base.textChanged.connect(lambda _t: self.changed.emit())
        self.load(ctx.app.config)
        self.check_keyring()

    # --- values -----------------------------------------------------------------------

    def current_provider(self) -> providers.Provider:
        return providers.BY_ID[str(self.provider.currentData())]

    def load(self, cfg: cfgmod.Config) -> None:
        p, name = providers.detect(cfg.model, cfg.api_base)
        self.provider.blockSignals(True)
        self.provider.setCurrentIndex(self.provider.findData(p.id))
        self.provider.blockSignals(False)
        self._fill_models(p)
        self.model.setCurrentText(name)
        self.api_base.setText(cfg.api_base)
        self._update_fields(p)
        self._refresh_key_status()

    def model_string(self) -> str:
        return providers.model_string(self.current_provider(), self.model.currentText())

    def values(self) -> dict[str, Any]:
        return {"model": self.model_string(), "api_base": self.api_base.text().strip()}

    def key_provider(self) -> str:
        from memtray.core.base.keys import provider_of

        return provider_of(self.model_string() or self.current_provider().prefix + "x")

    def _fill_models(self, p: providers.Provider) -> None:
        text = self.model.currentText()
        self.model.blockSignals(True)
        self.model.clear()
        self.model.addItems(list(p.models))
        self.model.setCurrentText(text)
        self.model.blockSignals(False)

    def _provider_changed(self) -> None:
        p = self.current_provider()
        self._fill_models(p)
        self.model.setCurrentText(p.models[0] if p.models else "")
        self.api_base.setText(p.api_base)
        self._update_fields(p)
        self._refresh_key_status()
        self.changed.emit()

    def _update_fields(self, p: providers.Provider) -> None:
        self.api_base.setEnabled(p.base_editable)
        self.help.setText(p.help)
        edit = self.model.lineEdit()
        if edit is not None:
            edit.setPlaceholderText("e.g. gemini/gemini-2.0-flash" if p.id == "custom" else "model name")

    # --- keyring (on the worker) ------------------------------------------------------

    def check_keyring(self) -> None:
        from memtray.core.base import keys

        self.ctx.bridge.call(lambda: (keys.backend_is_secure(), keys.backend_name()), name="keyring-check",
                             on_result=self._keyring_checked, on_error=lambda e: self._keyring_checked((False, str(e))))

    def _keyring_checked(self, result: tuple[bool, str]) -> None:
        secure, name = result
        if secure:
            self.keyring_warning.hide()
            self.store_btn.setEnabled(True)
            return
        from memtray.core.base.errors import NoSecureKeyring

        self.keyring_warning.setText(
            f"No secure keyring is available here (found {name}), so memtray will not store API keys. "
            + NoSecureKeyring.hint
        )
        self.keyring_warning.show()
        self.store_btn.setEnabled(False)

    def _refresh_key_status(self) -> None:
        from memtray.core.base import keys

        provider = self.key_provider()

        def shown(src: str) -> None:
            self._show_key_source(provider, src)

        self.ctx.bridge.call(keys.key_source, provider, name="key-source",
                             on_result=shown,
                             on_error=lambda e: set_state(self.key_status, error_text(e), "error"))

    def _show_key_source(self, provider: str, source: str) -> None:
        if provider != self.key_provider():
            return  # the form changed meanwhile
        texts = {
            "keyring": f"A {provider} key is stored in the system keyring.",
            "none": f"No {provider} key stored yet." if self.current_provider().needs_key else "No key needed.",
            "not needed": "No key needed.",
            "keyring (unavailable)": "The keyring refused access; unlock it or store the key again.",
        }
        text = texts.get(source, f"Using the key from the {source}.")
        set_state(self.key_status, text, "error" if "refused" in text else "muted")

    def store_key(self) -> None:
        from memtray.core.base import keys

        secret = self.key.text()
        provider = self.key_provider()
        if not secret.strip():
            set_state(self.key_status, "Paste a key first.", "error")
            return
        self.store_btn.setEnabled(False)
        set_state(self.key_status, "Storing…", "muted")
        self.ctx.bridge.call(keys.set_key, provider, secret, name="key-set",
                             on_result=lambda _r: self._stored(True, provider),
                             on_error=lambda e: self._stored(False, error_text(e)))

    def _stored(self, ok: bool, detail: str) -> None:
        self.store_btn.setEnabled(True)
        if ok:
            self.key.clear()
            set_state(self.key_status, f"Stored the {detail} key in the system keyring.", "ok")
        else:
            set_state(self.key_status, f"Not stored: {detail}", "error")
        self.key_stored.emit(ok, detail)

    # --- test connection ---------------------------------------------------------------

    def candidate_config(self) -> cfgmod.Config:
        v = self.values()
        current: cfgmod.Config = self.ctx.app.config
        return dataclasses.replace(
            current, model=v["model"], api_base=v["api_base"], fallback_model="",
            llm_retries=0, llm_timeout=min(current.llm_timeout, 30.0),
        )

    def test(self) -> None:
        if self._test_task is not None:
            return
        cfg = self.candidate_config()
        typed = self.key.text().strip()
        llm_cls = type(self.ctx.app.llm)

        async def run() -> str:
            from memtray.core.base.keys import get_key
            from memtray.core.llm.client import Request

            client = llm_cls(cfg, key_lookup=(lambda _p: typed) if typed else get_key)
            res = await client.complete(Request(
                messages=[{"role": "user", "content": TEST_PROMPT}], max_tokens=16, temperature=0, stream=False,
            ))
            return (res.content or "").strip()

        self.test_btn.setEnabled(False)
        set_state(self.test_result, f"Asking {cfg.model or 'the model'}…", "muted")
        self._test_task = self.ctx.bridge.submit(run(), name="test-connection",
                                                 on_result=self._test_ok, on_error=self._test_failed)

    def _test_ok(self, reply: str) -> None:
        self._test_task = None
        self.test_btn.setEnabled(True)
        short = reply if len(reply) < 40 else reply[:39] + "…"
        set_state(self.test_result, f"✓ Connected — the model answered “{short}”.", "ok")
        self.tested.emit(True, reply)

    def _test_failed(self, exc: BaseException) -> None:
        self._test_task = None
        self.test_btn.setEnabled(True)
        set_state(self.test_result, "✗ " + error_text(exc), "error")
        self.tested.emit(False, str(exc))


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
            _align_labels(form)
        self.cards_scroll.setWidget(holder)
        self.load()

    def load(self) -> None:
        cfg = self.ctx.app.config
        self.model_form.load(cfg)
        self.hotkey.setKeySequence(QKeySequence(cfg.hotkey))
        self.memory_window.setValue(cfg.memory_window)
        self.drop_policy.setCurrentIndex(max(0, self.drop_policy.findData(cfg.drop_policy)))
        self._policy_changed()
        self.launch.setChecked(cfg.launch_at_login)
        self.recall.load(cfg)
        self.sync.load(cfg)
        set_state(self.result, "", "muted")

    def _policy_changed(self) -> None:
        policy = self.drop_policy.currentData()
        self.drop_policy_help.setText(texts.text(f"drop_policy.{policy}_help") if policy else "")

    def values(self) -> dict[str, Any]:
        v = self.model_form.values()
        seq = self.hotkey.keySequence().toString(QKeySequence.SequenceFormat.PortableText)
        v.update({
            "hotkey": seq or self.ctx.app.config.hotkey,
            "memory_window": self.memory_window.value(),
            "drop_policy": str(self.drop_policy.currentData()),
            "launch_at_login": self.launch.isChecked(),
        })
        v.update(self.recall.values())
        v.update(self.sync.values())
        return v

    def save(self) -> None:
        app = self.ctx.app
        home = app.home
        old = app.config
        changes = {k: v for k, v in self.values().items() if getattr(old, k) != v}
        if not changes:
            set_state(self.result, "Nothing changed.", "muted")
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
            for key, value in changes.items():
                cfgmod.set_value(home, key, value)
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
        set_state(self.result, "Saved.", "ok")
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
