"""The model form: provider, model, API base, API key (keyring) and Test connection.

Settings' Model card and the first-run onboarding both use it. Everything slow (the
keyring, the test request) runs on the worker through the bridge.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from memtray.core.base import config as cfgmod

from . import providers
from .bridge import Task
from .context import Context
from .forms import align_labels, error_text, label, section_form, set_state
from .qt import QCheckBox, QComboBox, QHBoxLayout, QLineEdit, QPushButton, QWidget, Signal

log = logging.getLogger(__name__)

TEST_PROMPT = "Reply with the single word OK."


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
        modelrow = QHBoxLayout()
        modelrow.setContentsMargins(0, 0, 0, 0)
        modelrow.addWidget(self.model, 1)
        self.refresh_btn = QPushButton("↻")
        self.refresh_btn.setToolTip("Ask the server for its models again")
        self.refresh_btn.clicked.connect(lambda: self.fetch_models(force=True))
        modelrow.addWidget(self.refresh_btn)
        mw = QWidget()
        mw.setLayout(modelrow)
        f.addRow("Model", mw)
        self.models_status = label("", muted=True)
        self.models_status.hide()
        f.addRow("", self.models_status)
        # the user's word over litellm's list, which knows hosted models only (a local llava or
        # qwen-vl through api_base is never in it): setting vision_models
        self.vision = QCheckBox("Reads images")
        self.vision.setToolTip("Send pictures to this model even if memtray does not know it reads them "
                               "(a local vision model: llava, qwen-vl, gemma 3…)")
        f.addRow("", self.vision)
        #: the models marked "Reads images" (config vision_models), this form's model among them or not
        self._vision: list[str] = []
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
        align_labels(f)
        self._test_task: Task | None = None
        #: (secure, backend name) once the worker answered, and where the key comes from
        self._keyring: tuple[bool | None, str] = (None, "")
        self._key_source = ""
        self.provider.currentIndexChanged.connect(self._provider_changed)
        self.model.currentTextChanged.connect(lambda _t: self._refresh_key_status())
        self.model.currentTextChanged.connect(lambda _t: self._show_vision())
        self.vision.toggled.connect(self._vision_toggled)
        self.model.currentTextChanged.connect(lambda _t: self.changed.emit())
        self.api_base.textChanged.connect(lambda _t: self.changed.emit())
        self.api_base.editingFinished.connect(self.fetch_models)
        #: a server's model list by api_base (GET /v1/models), asked once; ↻ asks again
        self._served: dict[str, list[str]] = {}
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
        self._vision = cfgmod.split_models(cfg.vision_models)
        self._show_vision()
        self._update_fields(p)
        self._refresh_key_status()
        self.fetch_models()

    def model_string(self) -> str:
        return providers.model_string(self.current_provider(), self.model.currentText())

    def values(self) -> dict[str, Any]:
        return {"model": self.model_string(), "api_base": self.api_base.text().strip(),
                "vision_models": ",".join(self._vision)}

    def _vision_toggled(self, on: bool) -> None:
        model = self.model_string()
        self._vision = [m for m in self._vision if m != model] + ([model] if on and model else [])

    def _show_vision(self) -> None:
        """The box says whether the model in the field is marked (it follows the field; each
        model keeps its own mark), without counting as an edit."""
        self.vision.blockSignals(True)
        self.vision.setChecked(self.model_string() in self._vision)
        self.vision.blockSignals(False)

    def key_provider(self) -> str:
        from memtray.core.base.keys import provider_of

        return provider_of(self.model_string() or self.current_provider().prefix + "x")

    def _fill_models(self, p: providers.Provider) -> None:
        self._replace_models(list(p.models), self.model.currentText())

    def _replace_models(self, ids: list[str], text: str) -> None:
        """The list under the model field, its text kept, without a signal: the combo's
        own line edit is silenced too (its text passes through "" on clear(), which an
        open Settings page took for an edit and then cleared its "Saved.")."""
        edit = self.model.lineEdit()
        self.model.blockSignals(True)
        if edit is not None:
            edit.blockSignals(True)
        try:
            self.model.clear()
            self.model.addItems(ids)
            self.model.setCurrentText(text)
        finally:
            if edit is not None:
                edit.blockSignals(False)
            self.model.blockSignals(False)

    def _provider_changed(self) -> None:
        p = self.current_provider()
        self._fill_models(p)
        self.model.setCurrentText(p.models[0] if p.models else "")
        self.api_base.setText(p.api_base)
        self._update_fields(p)
        self._refresh_key_status()
        self.changed.emit()
        self.fetch_models()

    def fetch_models(self, *, force: bool = False) -> None:
        """For a server the user runs (Ollama, an OpenAI-compatible one): its own model list,
        on the worker, once per address (↻ asks again)."""
        p = self.current_provider()
        base = self.api_base.text().strip()
        if not p.base_editable or not base:
            return
        if base in self._served and not force:
            self._show_served(base, self._served[base])
            return
        from memtray.core.base.keys import get_key
        from memtray.core.llm.models import list_models

        typed, provider = self.key.text().strip(), self.key_provider()

        def ask() -> list[str]:  # the keyring and the network: in a thread, not on the worker's loop
            key = typed or (get_key(provider) if p.needs_key else None)
            return list_models(base, key)

        self.refresh_btn.setEnabled(False)
        set_state(self.models_status, f"Asking {base} for its models…", "muted")
        self.models_status.show()
        self.ctx.bridge.submit(asyncio.to_thread(ask), name="list-models",
                               on_result=lambda ids: self._served_models(base, ids), on_error=self._models_failed)

    def _served_models(self, base: str, ids: list[str]) -> None:
        self.refresh_btn.setEnabled(True)
        self._served[base] = ids
        if base == self.api_base.text().strip():
            self._show_served(base, ids)

    def _show_served(self, base: str, ids: list[str]) -> None:
        text = self.model.currentText()
        self._replace_models(ids, text or (ids[0] if ids else ""))
        if not text and ids:
            self.changed.emit()
        n = len(ids)
        set_state(self.models_status, f"{n} model{'s' if n != 1 else ''} on {base}." if n else
                  f"{base} lists no models; type the model's name.", "muted")
        self.models_status.show()

    def _models_failed(self, exc: BaseException) -> None:
        self.refresh_btn.setEnabled(True)
        set_state(self.models_status, "Could not read the server's models: " + error_text(exc), "error")
        self.models_status.show()

    def _update_fields(self, p: providers.Provider) -> None:
        self.refresh_btn.setVisible(p.base_editable)
        if not p.base_editable:
            self.models_status.hide()
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
        self._keyring = result
        self._keyring_box()

    def _keyring_box(self) -> None:
        """The "no secure keyring" box only where it matters: the provider needs a key and none
        comes from the environment (a local server, or OPENAI_API_KEY set, needs no keyring)."""
        secure, name = self._keyring
        if secure is None or secure:
            self.keyring_warning.hide()
            self.store_btn.setEnabled(True)
            return
        self.store_btn.setEnabled(False)
        needed = self.current_provider().needs_key and self._key_source in ("none", "keyring", "keyring (unavailable)")
        if not needed:
            self.keyring_warning.hide()
            return
        from memtray.core.base.errors import NoSecureKeyring

        self.keyring_warning.setText("No secure keyring is available here, so memtray will not store API keys. "
                                     + NoSecureKeyring.hint)
        self.keyring_warning.setToolTip(f"keyring backend: {name}")
        self.keyring_warning.show()

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
        self._key_source = source
        self._keyring_box()

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
