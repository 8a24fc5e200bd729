"""nanobot's side of the comparison; run by nanobot's own venv python, driven over JSON lines.

Calls nanobot's real persistence and prompt code (nanobot-ai from PyPI):
``SessionManager`` / ``Session.add_message`` / ``SessionManager.save`` (the
session file is rewritten whole on every save), ``SessionManager.get_or_create``
(reads the whole file at start-up), ``Session.get_history`` +
``ContextBuilder.build_messages`` (the prompt) and
``LLMProvider._sanitize_empty_content`` (what leaves for the provider). Nothing of
nanobot is reimplemented; the glue only stands in for the model and for the
turn bookkeeping of ``AgentLoop`` (user message saved early, reply saved after).

The driver (``run.py``) sets HOME to a scratch directory so nothing touches the
real ``~/.nanobot``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    KEEP,
    WINDOW,
    conversation,
    memory_text,
    message,
    pointer_after,
    prefix_shares,
    serialize,
    serve_side,
    timed,
)
from nanobot.agent.context import ContextBuilder
from nanobot.agent.memory import MemoryStore
from nanobot.providers.base import LLMProvider
from nanobot.session.manager import Session, SessionManager

KEY = "cli:direct"
CHANNEL = "cli"


class Side:
    def __init__(self) -> None:
        self.ws = self.root = Path()
        self.n = 0
        self.manager: SessionManager | None = None
        self.session: Session | None = None
        self.context: ContextBuilder | None = None

    def setup(self, dir: str, n: int, seed: int = 7) -> dict[str, Any]:
        base = Path(dir)
        self.ws, self.root = base / "workspace", base / "sessions"
        self.ws.mkdir(parents=True, exist_ok=True)
        cons = pointer_after(n)
        messages: list[dict[str, Any]] = []
        for role, text in conversation(n, seed):
            messages.append({"role": role, "content": text, "timestamp": "2026-11-30T09:00:00.000000"})
        manager = SessionManager(self.ws, sessions_root=self.root)
        session = Session(key=KEY, messages=messages, last_consolidated=cons[-1][1] if cons else 0)
        manager.save(session, fsync=True)
        MemoryStore(self.ws).write_memory(memory_text(len(cons)))
        self.n = n
        path = manager._get_session_path(KEY)
        return {"file_bytes": path.stat().st_size, "unconsolidated": n - session.last_consolidated}

    def load(self) -> tuple[float, float]:
        """Start-up: a fresh SessionManager reads the session file."""
        box: dict[str, Any] = {}

        def go() -> None:
            m = SessionManager(self.ws, sessions_root=self.root)
            box["s"] = m.get_or_create(KEY)
            box["m"] = m

        t = timed(go)
        self.manager, self.session = box["m"], box["s"]
        assert len(self.session.messages) >= self.n, len(self.session.messages)
        return t

    def open(self) -> None:
        if self.manager is None:
            self.load()
        self.context = ContextBuilder(self.ws)

    def _build(self, text: str) -> list[dict[str, Any]]:
        assert self.session is not None and self.context is not None
        history = self.session.get_history()
        return self.context.build_messages(history, text, channel=CHANNEL)

    def build(self) -> tuple[float, float]:
        """The prompt for the next turn: history + system prompt + the new message."""
        _role, text = message(self.n, 99)
        return timed(lambda: self._build(text))

    def persist(self, fsync: bool = False) -> tuple[float, float]:
        """One more message made durable the way AgentLoop does it: add, then save the session.

        AgentLoop calls ``sessions.save(session)`` (fsync off) after the user message
        and again after the reply: one save per message, here timed with ``add_message``.
        """
        assert self.session is not None and self.manager is not None
        role, text = message(len(self.session.messages), 11)
        s, m = self.session, self.manager

        def go() -> None:
            s.add_message(role, text)
            m.save(s, fsync=fsync)

        return timed(go)

    def prefix(self, turns: int, save: bool = False) -> dict[str, Any]:
        """Requests of ``turns`` consecutive turns (consolidating like memtray); no timing.

        The session is saved only when ``save`` (it does not change the prompt, and
        at 100 000 messages each save rewrites the whole file).
        """
        assert self.session is not None and self.manager is not None
        s = self.session
        memory = MemoryStore(self.ws)
        revision = len(pointer_after(self.n))
        prompts: list[bytes] = []
        consolidated: list[bool] = []
        pending = False
        for _ in range(turns):
            i = len(s.messages)
            _, text = message(i, 23)
            request = LLMProvider._sanitize_empty_content(self._build(text))
            prompts.append(serialize(request))
            consolidated.append(pending)
            pending = False
            s.add_message("user", text)
            if save:
                self.manager.save(s)
            _, reply = message(i + 1, 23)
            s.add_message("assistant", reply)
            if save:
                self.manager.save(s)
            if len(s.messages) - s.last_archived >= WINDOW:
                revision += 1
                memory.write_memory(memory_text(revision))
                s.last_archived = len(s.messages) - KEEP
                self.manager.save(s)
                pending = True
        return prefix_shares(prompts, consolidated)


def main() -> None:
    serve_side(Side(), lambda: __import__("importlib.metadata").metadata.version("nanobot-ai"))


if __name__ == "__main__":
    main()
