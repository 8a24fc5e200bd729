"""The desktop side of MCP: Settings' "AI tools (MCP)" section and the chat's consent question.

The section lists the servers of ``mcp.toml`` (:mod:`memtray.core.mcp.servers`)
with what the running instance knows of each (:meth:`memtray.core.mcp.client.McpTools.describe`:
running, failed, its tools), and toggles consent with the same
:func:`~memtray.core.mcp.servers.set_allowed` as ``memtray mcp allow|deny``. It also
shows the snippet that connects another assistant to ``memtray mcp``.

In the chat, a refused call is an ``mcp.call`` event with status ``refused`` in
the session; :class:`ConsentWatcher` notices it in the log's changes and the
pane shows a :class:`ConsentQuestion` ("Allow tools from <server>?"), whose
Allow calls the same function and then offers Retry. Every file read and write
runs on the worker through the bridge.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memtray.core.mcp import servers as serverlist
from memtray.core.memory import scopes

from . import texts
from .bridge import Change, Follower
from .context import Context
from .forms import error_text
from .qt import (
    QApplication,
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QObject,
    QPlainTextEdit,
    QPushButton,
    QShowEvent,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
)

if TYPE_CHECKING:
    from memtray.core.app import App
    from memtray.core.log.store import Store

log = logging.getLogger(__name__)

#: how Settings names each state of a connection (McpTools' ServerState.status)
STATUS = {"starting": "starting", "ready": "running", "failed": "failed", "stopped": "stopped"}


def mcp_snippet(cmd: list[str] | None = None, *, scope: str | None = None, read_only: bool = False) -> str:
    """The MCP configuration other assistants need, naming this memtray by its absolute path
    (the one the login item and the menu entry use): a bare ``memtray`` fails for a venv or
    pipx install that is not on the client's PATH. ``scope``: the client sees and writes that
    memory scope only (its entry is named ``memtray-SCOPE``, so one client can hold several);
    ``read_only``: it cannot change memory. The limit is in the client's configuration, which
    the user writes, never in what the client says of itself."""
    import json

    from . import autostart

    cmd = cmd or autostart.command()
    args = [*cmd[1:], "mcp", *(["--scope", scope] if scope else []), *(["--read-only"] if read_only else [])]
    name = f"memtray-{scope}" if scope else "memtray"
    return json.dumps({"mcpServers": {name: {"command": cmd[0], "args": args}}}, indent=2)


@dataclass(frozen=True)
class ServerRow:
    name: str
    target: str
    allowed: bool
    status: str  # running | failed | starting | stopped | not started
    reason: str = ""
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class McpState:
    path: str
    rows: list[ServerRow] = field(default_factory=list)
    error: str = ""  # mcp.toml is not valid
    #: the named memory scopes, which the snippet can limit a client to
    scopes: list[str] = field(default_factory=list)


def mcp_state(app: App) -> McpState:
    """mcp.toml's servers and the instance's connections (run on the worker: it reads the file)."""
    where = str(serverlist.path(app.home))
    named = [n for n in scopes.known(app.store.state) if n != scopes.GLOBAL]
    try:
        specs = serverlist.load(app.home)
    except Exception as exc:  # ConfigError: a damaged file is shown, not raised
        return McpState(where, [], error_text(exc), named)
    mcp = app.mcp  # None: no instance runs the servers here
    live = {d["name"]: d for d in (mcp.describe() if mcp is not None else [])}
    rows = []
    for s in specs:
        d = live.get(s.name, {})
        rows.append(ServerRow(s.name, s.describe(), s.allowed, STATUS.get(str(d.get("status")), "not started"),
                              str(d.get("reason") or ""), tuple(str(t) for t in d.get("tools") or ())))
    return McpState(where, rows, scopes=named)


def _label(text: str, **props: Any) -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    for k, v in props.items():
        lab.setProperty(k, v)
    return lab


class ServerView(QFrame):
    """One server: name, target, consent, connection state, tools, and Allow / Deny."""

    toggled = Signal(str, bool)  # (server, allow)

    def __init__(self, row: ServerRow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.row = row
        self.setObjectName("mcpServer")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 6, 0, 6)
        lay.setSpacing(2)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        self.title = _label(f"<b>{row.name}</b> — {'allowed' if row.allowed else 'not allowed'}")
        self.title.setTextFormat(Qt.TextFormat.RichText)
        top.addWidget(self.title, 1)
        self.toggle = QPushButton("Deny" if row.allowed else "Allow")
        self.toggle.setToolTip(f"memtray mcp {'deny' if row.allowed else 'allow'} {row.name}")
        self.toggle.clicked.connect(lambda: self.toggled.emit(row.name, not row.allowed))
        top.addWidget(self.toggle)
        lay.addLayout(top)
        state = row.status + (f": {row.reason}" if row.reason else "")
        self.state = _label(f"{row.target} · {state}", muted=True)
        lay.addWidget(self.state)
        tools = ", ".join(row.tools) if row.tools else ("none" if row.status == "running" else "known once it runs")
        self.tools = _label(f"Tools: {tools}", muted=True)
        lay.addWidget(self.tools)


class McpSection(QWidget):
    """Settings' "AI tools (MCP)" card body: the servers memtray may use and how to reach memtray."""

    #: after a state was shown (tests wait on it)
    shown = Signal()

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.state: McpState | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(8)
        lay.addWidget(_label(texts.text("mcp.client_intro"), muted=True))
        self.list_box = QWidget()
        self.list_lay = QVBoxLayout(self.list_box)
        self.list_lay.setContentsMargins(0, 0, 0, 0)
        self.list_lay.setSpacing(0)
        lay.addWidget(self.list_box)
        self.empty = _label("", muted=True)
        self.empty.hide()
        lay.addWidget(self.empty)
        self.result = _label("", muted=True)
        self.result.hide()
        lay.addWidget(self.result)
        self.views: list[ServerView] = []

        lay.addWidget(_label(texts.text("mcp.server_intro"), muted=True))
        limits = QHBoxLayout()
        limits.setContentsMargins(0, 0, 0, 0)
        limits.addWidget(_label("Memory it sees:"))
        self.scope_box = QComboBox()
        self.scope_box.setAccessibleName("Memory the other assistant sees")
        self.scope_box.addItem("All of it", None)
        self.scope_box.currentIndexChanged.connect(self._limits_changed)
        limits.addWidget(self.scope_box)
        self.read_only = QCheckBox("Read only")
        self.read_only.setToolTip("The assistant can search and read memory, not change it")
        self.read_only.toggled.connect(self._limits_changed)
        limits.addWidget(self.read_only)
        limits.addStretch(1)
        lay.addLayout(limits)
        self.snippet = QPlainTextEdit(mcp_snippet())
        self.snippet.setReadOnly(True)
        self.snippet.setMaximumHeight(self.snippet.fontMetrics().lineSpacing() * 10 + 16)
        lay.addWidget(self.snippet)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.copy_btn = QPushButton("Copy")
        self.copy_btn.clicked.connect(self.copy_snippet)
        row.addWidget(self.copy_btn)
        self.copied = _label("", muted=True)
        row.addWidget(self.copied, 1)
        lay.addLayout(row)
        app = ctx.app
        self.feed = Follower(ctx.bridge, lambda: lambda: mcp_state(app), self._show, name="mcp-servers",
                             wants=lambda c: c.what.mcp, parent=self)
        self.feed.request()

    def refresh(self) -> None:
        self.feed.request()

    def showEvent(self, event: QShowEvent) -> None:  # a connection's state is not in the log: ask again
        super().showEvent(event)
        self.feed.request()

    def _show(self, state: McpState) -> None:
        self.state = state
        for v in self.views:
            v.deleteLater()
        self.views = []
        for r in state.rows:
            v = ServerView(r)
            v.toggled.connect(self.set_allowed)
            self.list_lay.addWidget(v)
            self.views.append(v)
        if state.error:
            self.empty.setText(state.error)
        else:
            self.empty.setText(texts.text("mcp.no_servers", path=state.path))
        self.empty.setVisible(bool(state.error) or not state.rows)
        self._fill_scopes(state.scopes)
        self.shown.emit()

    def _fill_scopes(self, names: list[str]) -> None:
        """The scope choices: all of memory, then each named scope (the choice kept)."""
        chosen = self.scope_box.currentData()
        self.scope_box.blockSignals(True)
        self.scope_box.clear()
        self.scope_box.addItem("All of it", None)
        for n in names:
            self.scope_box.addItem(f"Only the scope {n}", n)
        at = self.scope_box.findData(chosen) if chosen is not None else 0
        self.scope_box.setCurrentIndex(max(at, 0))
        self.scope_box.blockSignals(False)
        self._limits_changed()

    def _limits_changed(self) -> None:
        self.snippet.setPlainText(mcp_snippet(scope=self.scope_box.currentData(),
                                              read_only=self.read_only.isChecked()))
        self.copied.setText("")

    def set_allowed(self, name: str, allow: bool) -> None:
        """The same change as ``memtray mcp allow|deny NAME``, on the worker."""
        home = self.ctx.app.home
        for v in self.views:
            v.toggle.setEnabled(False)
        self.ctx.bridge.call(serverlist.set_allowed, home, name, allow, name="mcp-allow",
                             on_result=lambda _s: self._toggled(), on_error=self._toggle_failed)

    def _toggled(self) -> None:
        self.result.hide()
        self.feed.request()

    def _toggle_failed(self, exc: BaseException) -> None:
        self.result.setText(error_text(exc))
        self.result.show()
        self.feed.request()

    def copy_snippet(self) -> None:
        QApplication.clipboard().setText(self.snippet.toPlainText())
        self.copied.setText("Copied. " + texts.text("mcp.snippet_where"))


# --- first use in the chat -----------------------------------------------------------------


def refused_servers(store: Store, session: str, first_seq: int, last_seq: int) -> list[str]:
    """Servers whose calls in ``session`` between the seqs were refused (run on the worker:
    it reads the log's tail)."""
    from memtray.core.log.events import McpCall

    found: list[str] = []
    # the log may have grown since the change: read back to first_seq from its end
    for rec in store.log.tail(max(store.state.last_seq, last_seq) - first_seq + 1):
        if (first_seq <= rec.seq <= last_seq and rec.type == McpCall.TYPE and rec.session == session
                and (call := McpCall.of(rec)).status == "refused"):
            name = call.server
            if name and name not in found:
                found.append(name)
    return found


class ConsentWatcher(QObject):
    """Notices refused MCP calls in one chat's session and asks once per server."""

    asked = Signal(str)  # the server

    def __init__(self, ctx: Context, session: Callable[[], str], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.session = session
        self.pending: set[str] = set()  # asked and not answered: not asked again
        ctx.bridge.on_change(self._changed)

    def _changed(self, change: Change) -> None:
        session = self.session()
        if not change.what.mcp_calls or session not in change.sessions:
            return
        store, home = self.ctx.app.store, self.ctx.app.home

        def find() -> list[str]:
            names = refused_servers(store, session, change.first_seq, change.last_seq)
            return [n for n in names if not serverlist.allowed_now(home, n)]

        self.ctx.bridge.call(find, name="mcp-refusals", on_result=self._found,
                             on_error=lambda e: log.warning("could not read refused MCP calls: %s", e))

    def _found(self, names: list[str]) -> None:
        for n in names:
            if n not in self.pending:
                self.pending.add(n)
                self.asked.emit(n)

    def answered(self, server: str) -> None:
        self.pending.discard(server)


class ConsentQuestion(QFrame):
    """"Allow tools from <server>?" inline in the chat: Allow / Not now, then Retry."""

    #: the user allowed the server and asks to try again
    retry = Signal(str)
    #: Allow or Not now was answered (the server)
    answered = Signal(str)
    #: after the allow was written (tests wait on it)
    allowed = Signal(str)

    def __init__(self, ctx: Context, server: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.server = server
        t = ctx.theme
        self.setObjectName("consent")
        self.setStyleSheet(f"QFrame#consent {{ background: {t.surface}; border: 1px solid {t.accent}; "
                           f"border-radius: 10px; }}")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 10)
        lay.setSpacing(4)
        self.question = _label(texts.text("mcp.consent_question", server=server))
        self.question.setStyleSheet("font-weight: 600;")
        lay.addWidget(self.question)
        self.detail = _label(texts.text("mcp.consent_detail", server=server), muted=True)
        lay.addWidget(self.detail)
        row = QHBoxLayout()
        row.addStretch(1)
        self.not_now_btn = QPushButton("Not now")
        self.not_now_btn.clicked.connect(self.not_now)
        row.addWidget(self.not_now_btn)
        self.allow_btn = QPushButton("Allow")
        self.allow_btn.setProperty("primary", True)
        self.allow_btn.clicked.connect(self.allow)
        row.addWidget(self.allow_btn)
        self.retry_btn = QPushButton("Retry")
        self.retry_btn.setProperty("primary", True)
        self.retry_btn.clicked.connect(lambda: self.retry.emit(self.server))
        self.retry_btn.hide()
        row.addWidget(self.retry_btn)
        lay.addLayout(row)

    def allow(self) -> None:
        self.allow_btn.setEnabled(False)
        self.not_now_btn.setEnabled(False)
        self.ctx.bridge.call(serverlist.set_allowed, self.ctx.app.home, self.server, True, name="mcp-allow",
                             on_result=lambda _s: self._allowed(), on_error=self._failed)

    def _allowed(self) -> None:
        self.question.setText(texts.text("mcp.consent_allowed", server=self.server))
        self.detail.hide()
        self.allow_btn.hide()
        self.not_now_btn.hide()
        self.retry_btn.show()
        self.answered.emit(self.server)
        self.allowed.emit(self.server)

    def _failed(self, exc: BaseException) -> None:
        self.allow_btn.setEnabled(True)
        self.not_now_btn.setEnabled(True)
        self.detail.setText(error_text(exc))
        self.detail.show()

    def not_now(self) -> None:
        self.answered.emit(self.server)
        self.hide()
        self.deleteLater()
