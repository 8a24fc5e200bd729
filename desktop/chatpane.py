"""The pane that drives one chat session: send, stream, stop, retry, /new,
clipboard context and scroll-back, following the log.

Used by the quick chat popup (session "quick") and the main window. Streaming
deltas arrive by queued signal and are coalesced on a 50 ms timer into plain
text; the full markdown render happens once, at the end of the reply. What is
shown comes from the log: a :class:`~.bridge.Follower` asks the worker for the
session's snapshot when the session changes (see docs/ARCHITECTURE.md,
"Desktop: views render pushed state").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memtray.core.agent import reset
from memtray.core.log import transcript

from . import recall_view, texts
from .attach_bar import AttachBar, logged_text, shown_text
from .bridge import Follower, Task
from .chatview import ChatView, ErrorView, InputBox, LoggedFailure, MessageView, divider
from .context import Context
from .mcp_panel import ConsentQuestion, ConsentWatcher
from .qt import (
    QApplication,
    QClipboard,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    Qt,
    QTimer,
    QToolButton,
    QVBoxLayout,
    QWidget,
    Signal,
)

if TYPE_CHECKING:
    from memtray.core.agent.loop import TurnResult

log = logging.getLogger(__name__)

FLUSH_MS = 50
#: messages rendered when a session opens; older ones come with "Show earlier messages"
PAGE = 20
CLIP_LIMIT = 20_000


def compose(text: str, clip: str) -> str:
    """The message sent when the clipboard is attached as context."""
    clip = clip.strip()
    if not clip:
        return text
    if len(clip) > CLIP_LIMIT:
        clip = clip[:CLIP_LIMIT] + "\n[… clipboard text cut]"
    fence = "````" if "```" in clip else "```"
    return f"Context (from my clipboard):\n{fence}\n{clip}\n{fence}\n\n{text}"


#: pages of earlier messages loaded at most to reach a message opened from search
GOTO_PAGES = 200
#: how long an opened message stays marked
MARK_MS = 4000


def _unmark(view: MessageView) -> None:
    try:
        view.mark(False)
    except RuntimeError:  # the view was deleted meanwhile (another session shown)
        pass


class ChatPane(QWidget):
    """Drives one session: the view, the input box and the turn on the worker."""

    escaped = Signal()
    open_main = Signal(str)
    #: after each reply, failure or stop: ("finished"|"failed"|"cancelled", text)
    turn_done = Signal(str, str)
    busy_changed = Signal(bool)
    #: the pane shows another session now (its key)
    session_changed = Signal(str)

    def __init__(self, ctx: Context, session: str, *, compact: bool = False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.session = session
        self.compact = compact
        self.task: Task | None = None
        self._pending = ""
        self._streaming: MessageView | None = None
        self._oldest_seq = 0
        self._at_start = False
        self._error: ErrorView | None = None
        self._held: list[dict[str, Any]] = []
        #: the snapshot last shown (None: render afresh) and the newest seq it covered
        self._shown: transcript.Snapshot | None = None
        self._last_seq = 0
        #: the session's reset count when the view last showed a "new conversation" divider: a
        #: redraw (reload) with no /new since keeps it
        self._divided: int | None = None
        #: this pane's own turn (the message typed, the reply) not yet matched to logged messages
        self._live: list[QWidget] = []
        #: counts turn starts and ends: a snapshot asked for across one is stale
        self._epoch = 0
        #: a message to show once loaded (a search result opened here): its seq, pages left to load
        self._goto: int | None = None
        self._goto_pages = 0
        t = ctx.theme

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.view = ChatView(ctx)
        self.view.load_more.connect(self.load_older)
        self.view.more.setVisible(False)  # until the first snapshot says whether anything is earlier
        lay.addWidget(self.view, 1)

        bottom = QFrame()
        bottom.setObjectName("composer")
        bottom.setStyleSheet(f"QFrame#composer {{ border-top: 1px solid {t.border}; }}")
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(10, 8, 10, 10)
        bl.setSpacing(6)
        self.clip_preview = QLabel()
        self.clip_preview.setProperty("muted", True)
        self.clip_preview.setWordWrap(False)
        self.clip_preview.hide()
        bl.addWidget(self.clip_preview)
        row = QHBoxLayout()
        row.setSpacing(6)
        self.input = InputBox()
        self.input.setPlaceholderText("Message memtray — Enter to send, Shift+Enter for a new line")
        self.input.submitted.connect(self.submit)
        self.input.escaped.connect(self.escaped)
        row.addWidget(self.input, 1)
        self.send_btn = QPushButton("Send")
        self.send_btn.setProperty("primary", True)
        self.send_btn.clicked.connect(self._send_or_stop)
        self.send_btn.setMinimumWidth(72)
        row.addWidget(self.send_btn, 0, Qt.AlignmentFlag.AlignBottom)
        self.attach = AttachBar(ctx, self.input)  # pasted or dropped images and files
        bl.addWidget(self.attach)
        bl.addLayout(row)
        tools = QHBoxLayout()
        tools.setSpacing(2)
        self.clip_btn = QToolButton()
        self.clip_btn.setText("Clipboard as context")
        self.clip_btn.setCheckable(True)
        self.clip_btn.setToolTip("Prefix the next message with the clipboard (or selected) text")
        self.clip_btn.toggled.connect(self._clip_toggled)
        tools.addWidget(self.clip_btn)
        self.new_btn = QToolButton()
        self.new_btn.setText("New chat")
        self.new_btn.setToolTip("Archive this conversation into memory and start over (/new)")
        self.new_btn.clicked.connect(self.new_session)
        tools.addWidget(self.new_btn)
        self.retry_btn = QToolButton()
        self.retry_btn.setText("Retry")
        self.retry_btn.setToolTip("Answer the last message again")
        self.retry_btn.clicked.connect(self.retry)
        self.retry_btn.hide()
        tools.addWidget(self.retry_btn)
        tools.addStretch(1)
        self.status = QLabel()
        self.status.setProperty("muted", True)
        tools.addWidget(self.status)
        if compact:
            self.main_btn = QToolButton()
            self.main_btn.setText("Open in window ↗")
            self.main_btn.setToolTip("Continue this conversation in the main window")
            self.main_btn.clicked.connect(lambda: self.open_main.emit(self.session))
            tools.addWidget(self.main_btn)
        bl.addLayout(tools)
        lay.addWidget(bottom)

        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(FLUSH_MS)
        self._flush_timer.timeout.connect(self._flush)
        self.feed = Follower(ctx.bridge, self._query, self._apply, name=f"chat:{session}", parent=self,
                             wants=lambda change: self.session in change.sessions)
        self.feed.request()
        #: a refused MCP call in this session becomes "Allow tools from <server>?" (mcp_panel.py)
        self.consent = ConsentWatcher(ctx, lambda: self.session, parent=self)
        self.consent.asked.connect(self._ask_consent)

    # --- following the log ----------------------------------------------------------

    def _query(self) -> Callable[[], tuple[int, transcript.Snapshot]]:
        store, session, epoch = self.ctx.app.store, self.session, self._epoch

        def snap() -> tuple[int, transcript.Snapshot]:  # on the worker, where the state is written
            return epoch, transcript.snapshot(store.state, session)

        return snap

    def set_session(self, session: str) -> None:
        if session != self.session:
            if self.busy:
                self.stop()
            self.session = session
            self._shown = None
            self._divided = None
            self.view.clear()
            self.view.more.setVisible(False)  # until this session's snapshot arrives
            self.feed.request()
            self.session_changed.emit(session)

    def reload(self) -> None:
        """Render the session again from the log (the next snapshot rebuilds the view)."""
        self._shown = None
        self.feed.request()

    def _apply(self, answer: tuple[int, transcript.Snapshot]) -> None:
        """Show what changed since the last snapshot (GUI thread)."""
        epoch, snap = answer
        if snap.session != self.session or self.busy or epoch != self._epoch:
            return  # asked before this pane's turn started or ended: its end asks again
        prev, self._shown = self._shown, snap
        if prev is None or snap.resets != prev.resets or snap.base > prev.count:
            # first load, a /new (from here or any front end), or messages consolidated before
            # this pane saw them: render the last page afresh
            self._rebuild(snap, reset=prev is not None and snap.resets != prev.resets)
        else:
            self._add_logged([m for m in snap.messages if int(m["seq"]) > self._last_seq])
        self._last_seq = snap.next_seq - 1
        self._logged_failure(snap)

    def _logged_failure(self, snap: transcript.Snapshot) -> None:
        """A turn that failed keeps its error and Retry after the live card is gone (a redraw,
        another session and back, a restart), until a reply comes (from here or elsewhere)."""
        failed = next((m["failed"] for m in reversed(snap.messages) if m.get("failed")), None)
        if failed is None:
            if self._error is not None and isinstance(self._error.exc, LoggedFailure):
                self._clear_error()
            return
        if self._error is None:
            self._show_error(LoggedFailure(failed["error"], failed.get("kind", "")))

    def _rebuild(self, snap: transcript.Snapshot, *, reset: bool) -> None:
        asking = self._open_questions()  # not log messages: a redraw must not drop them
        self.view.clear()
        self._error = None
        self._live = []
        if reset or self._divided == snap.resets:
            self.view.add(divider(self.ctx, "new conversation"))
            self._divided = snap.resets
        msgs = snap.messages
        # render only the last page: a long unconsolidated session must not slow start-up
        self._held = msgs[:-PAGE] if len(msgs) > PAGE else []
        for m in msgs[-PAGE:]:
            w = self._widget_for(m)
            if w is not None:
                self.view.add(w)
        self._oldest_seq = snap.start_seq
        self._at_start = False
        # only when there is something earlier: held here, consolidated, or before a /new
        self.view.more.setVisible(bool(self._held) or snap.base > 0 or snap.resets > 0)
        for q in asking:
            self.view.add(q)
        self.view.scroll_to_end()
        if len(msgs) < PAGE and snap.base > 0:
            self._fill()
        else:
            self._seek()

    def _fill(self) -> None:
        """A consolidation took what was on screen into memory: the log still has it, so the
        conversation is shown as it was (back to its last /new), not empty until "Show
        earlier messages"."""
        session, epoch = self.session, self._epoch

        def filled(page: transcript.Page) -> None:
            if session != self.session or epoch != self._epoch or self._held:
                return
            msgs = page.messages
            cut = max((i for i, m in enumerate(msgs) if m.get("kind") == "reset"), default=-1)
            keep = msgs[cut + 1:]
            self.view.prepend([w for w in (self._widget_for(m) for m in keep) if w is not None])
            if keep:
                self._oldest_seq = int(keep[0]["seq"])
            if page.at_start and cut < 0:
                self._at_start = True
                self.view.more.setVisible(False)
            self._seek()

        self.ctx.bridge.call(transcript.earlier, self.ctx.app.store.log, session, self._oldest_seq, PAGE,
                             name="history-fill", on_result=filled, on_error=lambda e: log.warning(
                                 "could not read the conversation's earlier messages: %s", e))

    def _add_logged(self, new: list[dict[str, Any]]) -> None:
        """Append logged messages; those of this pane's own turn take over the views already
        showing them (the message typed here, the streamed reply) instead of doubling them."""
        if not new:
            return
        users = [w for w in self._live if isinstance(w, MessageView) and w.role == "user"]
        replies = [w for w in self._live if isinstance(w, MessageView) and w.role == "assistant"]
        bind: dict[int, MessageView] = {}
        first_user = next((i for i, m in enumerate(new) if m.get("role") == "user"), None)
        if users and first_user is not None:
            bind[first_user] = users[0]
        if replies:
            after = first_user if first_user is not None and users else -1
            last = next((i for i in range(len(new) - 1, after, -1)
                         if new[i].get("role") == "assistant" and new[i].get("content")), None)
            if last is not None:
                bind[last] = replies[0]
        anchor: QWidget | None = self._live[0] if self._live else None
        for i, m in enumerate(new):
            view = bind.get(i)
            if view is None:
                w = self._widget_for(m)
                if w is not None:
                    self.view.insert_before(anchor, w)
                continue
            text = logged_text(m)
            if text != view.text:  # stored redacted, or the reply of a turn that was stopped
                view.finish(text, tag=view.tag.text())
            recall_view.attach(self.ctx, view, m.get("recalled"))
            self._live.remove(view)
            later = [w for w in self._live if self.view.col.indexOf(w) > self.view.col.indexOf(view)]
            anchor = later[0] if later else None

    def _widget_for(self, m: dict[str, Any]) -> QWidget | None:
        if m.get("kind") == "reset":
            return divider(self.ctx, "new conversation")
        role = m.get("role", "")
        if role == "assistant" and not m.get("content") and m.get("tool_calls"):
            names = ", ".join(tc.get("function", {}).get("name", "?") for tc in m["tool_calls"])
            return divider(self.ctx, f"used {names}")
        tag = "stopped" if m.get("stop") == "cancelled" else ("not answered" if m.get("failed") else "")
        view = MessageView(self.ctx, role, logged_text(m), tag=tag)
        if "seq" in m:
            view.seq = int(m["seq"])
        if role == "assistant":
            recall_view.attach(self.ctx, view, m.get("recalled"))  # "recalled: N messages"
        return view

    def show_message(self, seq: int) -> None:
        """Scroll to the logged message ``seq`` of this session and mark it for a moment,
        loading earlier pages until it is there (a search result opened here)."""
        self._goto, self._goto_pages = seq, GOTO_PAGES
        if self._shown is not None and self._shown.session == self.session:
            self._seek()  # already showing this session; else its snapshot's rebuild seeks

    def _seek(self) -> None:
        if self._goto is None:
            return
        view = next((v for v in self.view.messages() if v.seq == self._goto), None)
        if view is not None:
            self._goto = None
            for other in self.view.messages():
                if other.marked:
                    other.mark(False)
            view.mark()
            self.view.reveal(view)
            QTimer.singleShot(MARK_MS, view, lambda: _unmark(view))
            return
        earlier = bool(self._held) or (not self._at_start and not self.view.more.isHidden())
        oldest = min((v.seq for v in self.view.messages() if v.seq is not None), default=None)
        if not earlier or self._goto_pages <= 0 or (oldest is not None and oldest < self._goto):
            self._goto = None  # not in this conversation any more (purged, or another session's)
            self.status.setText("That message is no longer in this conversation.")
            return
        self._goto_pages -= 1
        self.load_older()

    def load_older(self) -> None:
        if self._held:
            page, self._held = self._held[-PAGE:], self._held[:-PAGE]
            self.view.prepend([w for w in (self._widget_for(m) for m in page) if w is not None])
            self._seek()
            return
        if self._at_start:
            return
        self.view.more.setEnabled(False)
        self.view.more.setText("Loading…")
        self.ctx.bridge.call(
            transcript.earlier, self.ctx.app.store.log, self.session, self._oldest_seq, 40,
            name="history", on_result=self._got_older, on_error=self._older_failed,
        )

    def _got_older(self, page: transcript.Page) -> None:
        widgets = [w for w in (self._widget_for(m) for m in page.messages) if w is not None]
        self.view.prepend(widgets)
        if page.messages:
            self._oldest_seq = int(page.messages[0]["seq"])
        self._at_start = page.at_start
        self.view.more.setEnabled(True)
        self.view.more.setText("Show earlier messages")
        self.view.more.setVisible(not page.at_start)
        self._seek()

    def _older_failed(self, exc: BaseException) -> None:
        self._goto = None
        self.view.more.setEnabled(True)
        self.view.more.setText("Show earlier messages")
        self._show_error(exc, can_retry=False)

    # --- sending ----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.task is not None

    def focus_input(self) -> None:
        self.input.setFocus(Qt.FocusReason.ActiveWindowFocusReason)

    def _send_or_stop(self) -> None:
        if self.busy:
            self.stop()
        else:
            self.submit()

    def submit(self) -> None:
        text = self.input.toPlainText()
        if (not text.strip() and not self.attach.items) or self.busy:
            return
        agent = self.ctx.app.agent
        refused = self.attach.refusal(agent.model_for(self.session), agent.reads_images)
        if refused:  # said before anything is sent or logged; the text and files stay
            self.attach.say(refused)
            return
        if text.strip() == "/new":
            self.input.clear()
            self.new_session()
            return
        if self.clip_btn.isChecked():
            text = compose(text, self._clip_text())
            self.clip_btn.setChecked(False)
        self.input.clear()
        self.send(text, self.attach.take())

    def send(self, text: str, files: list[Any] | None = None) -> None:
        """Send ``text`` (with ``files``: attachments) as the user's message and stream the reply."""
        self._clear_error()
        user = MessageView(self.ctx, "user", shown_text(text, [f.ref.name for f in files or []]))
        self.view.add(user)
        agent = self.ctx.app.agent
        session = self.session
        self._start(lambda task: agent.turn(session, text, on_delta=task.emit_delta, stream=True,
                                            attachments=files or ()), "turn", user)

    def retry(self) -> None:
        if self.busy:
            return
        self._clear_error()
        agent = self.ctx.app.agent
        session = self.session
        self._start(lambda task: agent.retry(session, on_delta=task.emit_delta, stream=True), "retry")

    def _start(self, make: Any, name: str, user: MessageView | None = None) -> None:
        self.retry_btn.hide()
        self._epoch += 1
        self._streaming = MessageView(self.ctx, "assistant", streaming=True)
        self.view.add(self._streaming)
        self._live = [w for w in (user, self._streaming) if w is not None]
        self.view.scroll_to_end()
        self._pending = ""
        task = self.ctx.bridge.submit(make, name=f"{name}:{self.session}")
        task.delta.connect(self._on_delta)
        task.finished.connect(self._on_finished)
        task.failed.connect(self._on_failed)
        task.cancelled.connect(self._on_cancelled)
        self.task = task
        self._flush_timer.start()
        self._set_busy(True)

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def _on_delta(self, text: str) -> None:
        self._pending += text

    def _flush(self) -> None:
        if self._pending and self._streaming is not None:
            self._streaming.append(self._pending)
            self._pending = ""

    def _end(self) -> MessageView | None:
        self._flush()
        self._flush_timer.stop()
        view, self._streaming = self._streaming, None
        self.task = None
        self._set_busy(False)
        self._epoch += 1
        self.feed.request()  # what the turn logged: matched to the views showing it
        return view

    def _drop_live(self, view: MessageView) -> None:
        if view in self._live:
            self._live.remove(view)
        view.deleteLater()

    def _on_finished(self, result: TurnResult) -> None:
        view = self._end()
        reply = result.reply
        if view is not None:
            view.finish(reply)
        self.turn_done.emit("finished", reply)

    def _on_failed(self, exc: BaseException) -> None:
        view = self._end()
        partial = view.text if view is not None else ""
        if view is not None:
            if partial:
                view.finish(partial, tag="interrupted")
            else:
                self._drop_live(view)
        self._show_error(exc)
        self.turn_done.emit("failed", str(exc))

    def _on_cancelled(self) -> None:
        view = self._end()
        if view is not None:
            if view.text:
                view.finish(view.text, tag="stopped")
            else:
                self._drop_live(view)
        self.retry_btn.show()
        self.status.setText("Stopped.")
        self.turn_done.emit("cancelled", view.text if view is not None else "")

    def _set_busy(self, busy: bool) -> None:
        self.send_btn.setText("Stop" if busy else "Send")
        self.send_btn.setProperty("primary", not busy)
        self.send_btn.setProperty("danger", busy)
        self.send_btn.style().unpolish(self.send_btn)
        self.send_btn.style().polish(self.send_btn)
        self.new_btn.setEnabled(not busy)
        if busy:
            self.status.setText("Thinking…")
        elif self.status.text() == "Thinking…":
            self.status.setText("")
        self.busy_changed.emit(busy)

    def _show_error(self, exc: BaseException, *, can_retry: bool = True) -> None:
        self._clear_error()
        err = ErrorView(self.ctx, exc, can_retry=can_retry)
        err.retry.connect(self.retry)
        err.settings.connect(lambda: self.ctx.nav.open.emit("settings", ""))
        self._error = err
        self.view.add(err)
        self.view.scroll_to_end()
        self.status.setText("")

    def _clear_error(self) -> None:
        if self._error is not None:
            self._error.deleteLater()
            self._error = None
        self.status.setText("")

    # --- MCP consent ------------------------------------------------------------------

    def _ask_consent(self, server: str) -> None:
        q = ConsentQuestion(self.ctx, server)
        q.answered.connect(self.consent.answered)
        q.retry.connect(self._retry_allowed)
        self.view.add(q)
        self.view.scroll_to_end()

    def _open_questions(self) -> list[ConsentQuestion]:
        """The consent questions still waiting for an answer (or offering Retry), taken out
        of the view so that clearing it keeps them: the watcher asks once per server, so a
        question lost to a redraw (the first snapshot arriving after the turn) was never
        asked again."""
        out = []
        for q in self.view.findChildren(ConsentQuestion):
            if q.server in self.consent.pending or q.retry_btn.isVisibleTo(q):
                self.view.col.removeWidget(q)
                out.append(q)
        return out

    def _retry_allowed(self, server: str) -> None:
        if not self.busy:
            self.send(texts.text("mcp.retry_message", server=server))

    # --- /new -------------------------------------------------------------------------

    def new_session(self) -> None:
        if self.busy:
            return
        self.new_btn.setEnabled(False)
        self.status.setText("Saving this conversation to memory…")
        app = self.ctx.app
        self.ctx.bridge.submit(
            reset.new_session(app.agent, app.consolidation, self.session), name=f"new:{self.session}",
            on_result=self._new_done, on_error=self._new_failed,
        )

    def _new_done(self, _r: Any) -> None:
        # the view follows the log: the reset arrives as a change and starts the view afresh
        self.new_btn.setEnabled(True)
        self.status.setText("New conversation.")

    def _new_failed(self, exc: BaseException) -> None:
        self.new_btn.setEnabled(True)
        self._show_error(exc, can_retry=False)

    # --- clipboard --------------------------------------------------------------------

    def _clip_text(self) -> str:
        cb = QApplication.clipboard()
        if cb.supportsSelection():
            sel = cb.text(QClipboard.Mode.Selection)
            if sel.strip():
                return sel
        return cb.text()

    def _clip_toggled(self, on: bool) -> None:
        if not on:
            self.clip_preview.hide()
            return
        text = " ".join(self._clip_text().split())
        if not text:
            self.clip_preview.setText("The clipboard is empty.")
        else:
            short = text if len(text) <= 80 else text[:79] + "…"
            self.clip_preview.setText(f"Attaching: “{short}”")
        self.clip_preview.show()
