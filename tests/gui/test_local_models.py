"""The first run offers a model on this computer: the catalogue with its sizes and speeds,
a download with progress from a local hub-like server (the bundled SmolLM2 GGUF under the
hub's path), then "Use this model"; and a model server found on localhost (a fake Ollama)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import config
from memtray.core.llm import catalogue, localmodel

from tests.fixtures.model_hub import Hub, bundled_gguf, serve
from tests.gui.conftest import close_desktop, make_desktop

pytestmark = pytest.mark.gui
GGUF = bundled_gguf()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    if GGUF is None:
        pytest.skip("offline model not installed (memtray[local]): nothing to serve")
    with serve({catalogue.find("smollm2").file: GGUF.read_bytes()}) as h:
        monkeypatch.setenv(catalogue.HUB_ENV, h.base_url)
        # the bundled copy is hidden, so SmolLM2 is a model this computer does not have yet
        monkeypatch.setenv(localmodel.GGUF_ENV, str(Path(h.base_url.replace(":", "_")) / "absent.gguf"))
        yield h


@pytest.fixture
def ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = json.dumps({"models": [{"name": "llama3.2:latest"}, {"name": "qwen2.5:1.5b"}]}).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    # a llama.cpp place where nothing listens: not offered
    monkeypatch.setenv("MEMTRAY_LOCAL_SERVERS", f"ollama=127.0.0.1:{port},llama.cpp=127.0.0.1:9")
    yield f"http://127.0.0.1:{port}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def fresh(home: Any, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.setenv("MEMTRAY_HOTKEY_BACKEND", "none")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    return home


def test_download_a_model_in_the_first_run_and_use_it(qtbot: Any, fresh: Any, hub: Hub, ollama: str) -> None:
    d = make_desktop(qtbot, fresh, show_dialogs=True)
    try:
        qtbot.waitUntil(lambda: d.onboarding is not None and d.onboarding.isVisible(), timeout=5000)
        ob = d.onboarding
        local = ob.local
        ob.choices.setCurrentIndex(ob.choices.indexOf(local.parentWidget()))
        assert ob.choices.tabText(ob.choices.currentIndex()) == "On this computer"
        qtbot.waitUntil(lambda: local.models.isEnabled() and local.models.count() == len(catalogue.models()),
                        timeout=60000)
        assert "recommended" in local.models.itemText(0) and "tokens/s here" in local.models.itemText(0)
        local.select("qwen2.5-3b-instruct")
        assert "Writes memory on its own" in local.about.text() and local.download_btn.isEnabled()
        assert not local.use_btn.isEnabled()  # not downloaded yet
        local.select("smollm2")
        assert "waits for your review" in local.about.text()
        seen: list[int] = []
        local.progressed.connect(lambda p: seen.append(p.done))
        local.download_btn.click()
        assert local.bar.isVisible() and local.cancel_btn.isEnabled() and not local.download_btn.isEnabled()
        qtbot.waitUntil(lambda: not local.downloading and local.use_btn.isEnabled(), timeout=120000)
        assert local.bar.value() == 1000 and "checked" in local.status.text()
        assert seen and seen[-1] == catalogue.find("smollm2").size
        assert (fresh.root / "models" / catalogue.find("smollm2").file).read_bytes() == GGUF.read_bytes()
        assert hub.downloads() and hub.downloads()[0].range is None
        # the fake Ollama is offered too
        qtbot.waitUntil(lambda: local.servers.count() == 2, timeout=10000)
        assert "Ollama: qwen2.5:1.5b (memory held for review)" in [local.servers.itemText(i) for i in range(2)]
        local.use_btn.click()
        qtbot.waitUntil(lambda: ob.saved_config is not None, timeout=10000)
        cfg = config.load(fresh, env=False)
        assert cfg.model == "local/smollm2" and cfg.api_base == "" and cfg.onboarded
    finally:
        close_desktop(d)


def test_a_server_found_here_is_one_click_away(qtbot: Any, fresh: Any, ollama: str) -> None:
    d = make_desktop(qtbot, fresh, show_dialogs=True)
    try:
        qtbot.waitUntil(lambda: d.onboarding is not None and d.onboarding.isVisible(), timeout=5000)
        local = d.onboarding.local
        d.onboarding.choices.setCurrentIndex(1)
        qtbot.waitUntil(lambda: local.servers.count() == 2, timeout=10000)
        assert local.servers.isVisibleTo(d.onboarding) and "Found Ollama (2 models)" in local.servers_note.text()
        local.servers.setCurrentIndex(0)
        local.use_server_btn.click()
        qtbot.waitUntil(lambda: d.onboarding.saved_config is not None, timeout=10000)
        cfg = config.load(fresh, env=False)
        assert (cfg.model, cfg.api_base) == ("ollama_chat/llama3.2", ollama)
    finally:
        close_desktop(d)


def test_a_broken_download_says_why_and_can_be_continued(qtbot: Any, fresh: Any, hub: Hub, ollama: str) -> None:
    hub.corrupt = True
    d = make_desktop(qtbot, fresh, show_dialogs=True)
    try:
        qtbot.waitUntil(lambda: d.onboarding is not None and d.onboarding.isVisible(), timeout=5000)
        local = d.onboarding.local
        qtbot.waitUntil(lambda: local.models.isEnabled(), timeout=60000)
        local.select("smollm2")
        local.download_btn.click()
        qtbot.waitUntil(lambda: not local.downloading, timeout=120000)
        assert "does not match its checksum" in local.status.text() and not local.use_btn.isEnabled()
        qtbot.waitUntil(local.download_btn.isEnabled, timeout=30000)  # it can be tried again
    finally:
        close_desktop(d)


def test_the_first_run_says_what_the_bundled_model_can_and_cannot_do(qtbot: Any, fresh: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if GGUF is None:
        pytest.skip("offline model not installed (memtray[local])")
    monkeypatch.delenv(localmodel.DISABLE_ENV, raising=False)
    d = make_desktop(qtbot, fresh, show_dialogs=True)
    try:
        qtbot.waitUntil(lambda: d.onboarding is not None and d.onboarding.isVisible(), timeout=5000)
        note = d.onboarding.model_note.text()
        assert localmodel.NAME in note and "can greet you and chat a little" in note
        assert "cannot answer real questions" in note and "waits for your review" in note
        assert d.onboarding.offline_btn.isVisible()
    finally:
        close_desktop(d)
