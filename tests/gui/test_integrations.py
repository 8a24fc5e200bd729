"""Settings' MCP section (servers from mcp.toml, Allow / Deny), the chat's consent question on a
refused call of a real MCP server, and the import dialog (dry run, then import) on a ChatGPT export."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from memtray.core.mcp import servers
from memtray.desktop.import_dialog import ImportDialog
from memtray.desktop.mcp_panel import ConsentQuestion
from memtray.desktop.qt import Qt

from tests.fixtures.llm_server import reply, tool_call
from tests.gui.conftest import close_desktop, make_desktop
from tests.integration.test_import_chatgpt import export

pytestmark = pytest.mark.gui

HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_hostile.py"


def _write_servers(home: Any, body: str) -> None:
    home.root.mkdir(parents=True, exist_ok=True)
    servers.path(home).write_text(body, encoding="utf-8")


def _settings(desktop: Any) -> Any:
    desktop.open("settings")
    return desktop.window.settings


def test_settings_lists_mcp_servers_and_allow_flips_consent(qtbot: Any, configured_home: Any,
                                                            runtime_dir: Path) -> None:
    _write_servers(configured_home, '[servers.clock]\ncommand = "no-such-mcp-server"\nargs = ["--utc"]\n'
                                    '[servers.docs]\nurl = "http://127.0.0.1:9/mcp"\nallowed = true\n')
    d = make_desktop(qtbot, configured_home)
    try:
        section = _settings(d).mcp
        qtbot.waitUntil(lambda: section.state is not None and len(section.views) == 2, timeout=10000)
        clock, docs = section.views
        assert clock.row.name == "clock" and "not allowed" in clock.title.text()
        assert "no-such-mcp-server --utc" in clock.state.text() and "not started" in clock.state.text()
        assert "allowed" in docs.title.text() and docs.toggle.text() == "Deny"
        assert not section.empty.isVisibleTo(section)
        assert clock.toggle.text() == "Allow"
        # the pane may redraw from a state read before the click (a refresh already under
        # way); the one after the click shows the consent given
        qtbot.mouseClick(clock.toggle, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: servers.allowed_now(configured_home, "clock"), timeout=10000)
        qtbot.waitUntil(lambda: section.views[0].toggle.text() == "Deny", timeout=10000)
        qtbot.mouseClick(section.views[1].toggle, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not servers.allowed_now(configured_home, "docs"), timeout=10000)
        qtbot.waitUntil(lambda: section.views[1].toggle.text() == "Allow", timeout=10000)
        assert {s.name for s in servers.load(configured_home)} == {"clock", "docs"}
    finally:
        close_desktop(d)


def test_settings_says_plainly_when_no_server_is_listed(qtbot: Any, desktop: Any) -> None:
    section = _settings(desktop).mcp
    qtbot.waitUntil(lambda: section.state is not None, timeout=10000)
    assert section.views == []
    assert section.empty.isVisibleTo(section)
    text = section.empty.text()
    assert str(servers.path(desktop.app.home)) in text
    example = text.splitlines()[-1]
    # the one-line example is valid mcp.toml
    _write_servers(desktop.app.home, example + "\n")
    assert [s.name for s in servers.load(desktop.app.home)] == ["time"]
    from memtray.desktop import autostart

    cmd = autostart.command()  # the running memtray by its absolute path, as the login item has it
    assert json.loads(section.snippet.toPlainText()) == {"mcpServers": {"memtray": {"command": cmd[0],
                                                                                     "args": [*cmd[1:], "mcp"]}}}


def test_a_damaged_mcp_toml_is_shown_not_raised(qtbot: Any, desktop: Any) -> None:
    _write_servers(desktop.app.home, "[servers.x\n")
    section = _settings(desktop).mcp
    with qtbot.waitSignal(section.shown, timeout=10000):
        section.refresh()
    assert "not valid TOML" in section.empty.text() and section.views == []


def test_refused_call_in_the_chat_asks_then_allows_and_retries(qtbot: Any, configured_home: Any, runtime_dir: Path,
                                                              llm_server: Any) -> None:
    _write_servers(configured_home, f'[servers.hostile]\ncommand = "{sys.executable}"\nargs = ["{HOSTILE}"]\n')
    d = make_desktop(qtbot, configured_home)
    try:
        pane = d.popup.pane
        llm_server.script(tool_call("hostile__sneaky", {}, id="c1"), reply("I may not use that tool yet."))
        with qtbot.waitSignal(pane.turn_done, timeout=90000):
            pane.send("use the sneaky tool")
        qtbot.waitUntil(lambda: bool(pane.findChildren(ConsentQuestion)), timeout=10000)
        (q,) = pane.findChildren(ConsentQuestion)
        assert q.question.text() == "Allow tools from hostile?"
        assert not servers.allowed_now(configured_home, "hostile")
        with qtbot.waitSignal(q.allowed, timeout=10000):
            qtbot.mouseClick(q.allow_btn, Qt.MouseButton.LeftButton)
        assert servers.allowed_now(configured_home, "hostile")
        assert q.retry_btn.isVisibleTo(q) and not q.allow_btn.isVisibleTo(q)
        llm_server.script(tool_call("hostile__sneaky", {}, id="c2"), reply("Done, that was data."))
        with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
            qtbot.mouseClick(q.retry_btn, Qt.MouseButton.LeftButton)
        assert sig.args == ["finished", "Done, that was data."]
        calls = [r.data["status"] for r in d.app.store.log.records() if r.type == "mcp.call"]
        assert calls == ["refused", "ok"]
        # an allowed server is not asked about again (the answered question may be gone
        # already when the pane redrew from the log)
        assert len(pane.findChildren(ConsentQuestion)) <= 1
        # Settings shows the connection the turn started, with its tools
        section = _settings(d).mcp
        qtbot.waitUntil(lambda: bool(section.views) and section.views[0].row.status == "running", timeout=10000)
        (view,) = section.views
        assert view.row.allowed and "allowed" in view.title.text() and view.toggle.text() == "Deny"
        assert {"hang", "flood", "sneaky"} <= set(view.row.tools) and "sneaky" in view.tools.text()
    finally:
        close_desktop(d)


def test_a_redraw_from_the_log_keeps_the_consent_question(qtbot: Any, configured_home: Any, runtime_dir: Path,
                                                         llm_server: Any) -> None:
    """Flaky under load before: when the pane's first snapshot came after the turn, its
    redraw cleared the question just asked, and the watcher (asks once per server) never
    asked again, so the user could not allow the server from the chat."""
    _write_servers(configured_home, f'[servers.hostile]\ncommand = "{sys.executable}"\nargs = ["{HOSTILE}"]\n')
    d = make_desktop(qtbot, configured_home)
    try:
        pane = d.popup.pane
        llm_server.script(tool_call("hostile__sneaky", {}, id="c1"), reply("I may not use that tool yet."))
        with qtbot.waitSignal(pane.turn_done, timeout=90000):
            pane.send("use the sneaky tool")
        qtbot.waitUntil(lambda: bool(pane.findChildren(ConsentQuestion)), timeout=10000)
        (q,) = pane.findChildren(ConsentQuestion)
        for _ in range(2):  # a redraw (what a /new elsewhere or a consolidation also cause)
            with qtbot.waitSignal(pane.feed.shown, timeout=10000):
                pane.reload()
            assert pane.findChildren(ConsentQuestion) == [q] and q.allow_btn.isVisibleTo(q)
            assert pane.view.col.indexOf(q) >= 0  # still in the chat, not only alive
        with qtbot.waitSignal(q.allowed, timeout=10000):
            qtbot.mouseClick(q.allow_btn, Qt.MouseButton.LeftButton)
        with qtbot.waitSignal(pane.feed.shown, timeout=10000):
            pane.reload()
        assert pane.view.col.indexOf(q) >= 0 and q.retry_btn.isVisibleTo(q)  # Retry stays offered
    finally:
        close_desktop(d)


def _imported_sessions(app: Any) -> set[str]:
    return {k for k in app.store.state.sessions if k.startswith("chatgpt:")}


def test_import_dialog_dry_run_then_import_of_a_chatgpt_export(qtbot: Any, desktop: Any, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export()), encoding="utf-8")
    ctx = _settings(desktop).ctx
    dlg = ImportDialog(ctx, "chatgpt", path=str(path))
    qtbot.addWidget(dlg)
    assert not dlg.import_btn.isEnabled()
    with qtbot.waitSignal(dlg.finished_run, timeout=20000) as sig:
        qtbot.mouseClick(dlg.check_btn, Qt.MouseButton.LeftButton)
    assert sig.args[0] is True and sig.args[1].items == 3
    assert "Would import 3 items" in dlg.status.text()
    assert "conversation conv-1" in dlg.details.toPlainText()
    assert _imported_sessions(desktop.app) == set()  # a dry run writes nothing
    assert dlg.import_btn.isEnabled()
    progressed: list[tuple[int, int, str]] = []
    dlg.progress.connect(lambda *a: progressed.append(a))
    with qtbot.waitSignal(dlg.finished_run, timeout=20000) as sig:
        qtbot.mouseClick(dlg.import_btn, Qt.MouseButton.LeftButton)
    assert sig.args[0] is False and sig.args[1].messages > 0
    assert "Imported 3 items" in dlg.status.text()
    assert _imported_sessions(desktop.app) == {"chatgpt:conv-1", "chatgpt:conv-2", "chatgpt:conv-3"}
    assert [p[:2] for p in progressed] == [(1, 3), (2, 3), (3, 3)]
    # the log has them too, not only the state
    logged = {r.session for r in desktop.app.store.log.records() if r.type == "message" and r.session}
    assert {"chatgpt:conv-1", "chatgpt:conv-2", "chatgpt:conv-3"} <= logged
    # again: nothing new
    with qtbot.waitSignal(dlg.finished_run, timeout=20000) as sig:
        dlg.dry_run()
    assert sig.args[1].items == 0 and sig.args[1].skipped_items == 3
    assert "Nothing new" in dlg.status.text() and not dlg.import_btn.isEnabled()


def test_import_dialog_shows_the_core_error_for_a_foreign_file(qtbot: Any, desktop: Any, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"id": "x", "messages": []}]), encoding="utf-8")
    dlg = ImportDialog(_settings(desktop).ctx, "chatgpt", path=str(path))
    qtbot.addWidget(dlg)
    with qtbot.waitSignal(dlg.failed, timeout=20000):
        dlg.dry_run()
    assert "not in the ChatGPT export format" in dlg.status.text()
    assert dlg.status.property("error") is True and not dlg.import_btn.isEnabled()
    assert dlg.check_btn.isEnabled()  # it can be tried again with another file


def test_nanobot_import_defaults_to_the_workspace_and_refuses_a_foreign_folder(qtbot: Any, desktop: Any,
                                                                              tmp_path: Path) -> None:
    dlg = ImportDialog(_settings(desktop).ctx, "nanobot")
    qtbot.addWidget(dlg)
    assert dlg.path.text() == str(Path("~/.nanobot/workspace").expanduser())
    dlg.path.setText(str(tmp_path))
    with qtbot.waitSignal(dlg.failed, timeout=20000):
        dlg.dry_run()
    assert "does not look like a nanobot workspace" in dlg.status.text()


def test_settings_and_onboarding_offer_both_imports(qtbot: Any, desktop: Any) -> None:
    from memtray.desktop.onboarding import Onboarding

    page = _settings(desktop)
    assert set(page.import_btns) == {"nanobot", "chatgpt"}
    ob = Onboarding(page.ctx)
    qtbot.addWidget(ob)
    assert ob.import_btns["chatgpt"].text() == "Import a ChatGPT export…"
    qtbot.mouseClick(ob.import_btns["chatgpt"], Qt.MouseButton.LeftButton)
    dialogs = ob.findChildren(ImportDialog)
    assert len(dialogs) == 1 and dialogs[0].source == "chatgpt" and dialogs[0].isVisible()
    dialogs[0].close()


def test_nanobot_import_brings_memory_and_sessions(qtbot: Any, desktop: Any, tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "MEMORY.md").write_text("# Memory\n\n## About\n\n- The user's cat is called Miso.\n",
                                             encoding="utf-8")
    (ws / "sessions").mkdir()
    lines = [{"_type": "metadata", "key": "cli:direct"},
             {"role": "user", "content": "Remind me what my cat is called", "timestamp": "2026-01-02T10:00:00"},
             {"role": "assistant", "content": "Miso.", "timestamp": "2026-01-02T10:00:05"}]
    (ws / "sessions" / "cli_direct.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n{torn",
                                                      encoding="utf-8")
    dlg = ImportDialog(_settings(desktop).ctx, "nanobot", path=str(ws))
    qtbot.addWidget(dlg)
    with qtbot.waitSignal(dlg.finished_run, timeout=20000) as sig:
        dlg.dry_run()
    assert sig.args[1].items == 2 and "damaged" in dlg.details.toPlainText()  # the torn line is a note
    with qtbot.waitSignal(dlg.finished_run, timeout=20000) as sig:
        dlg.start_import()
    assert sig.args[1].messages == 2
    app = desktop.app
    assert "Miso" in app.store.state.memory
    assert any(k.startswith("nanobot:") for k in app.store.state.sessions)
