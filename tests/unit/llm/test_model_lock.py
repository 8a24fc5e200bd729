"""The offline embeddings wait while a chat runs on the offline model (ModelLock): a reply
never shares the cores with that background work."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from memtray.core.llm import localmodel


class FakeLlama:
    def __init__(self, calls: list[int]) -> None:
        self.calls = calls

    def embed(self, texts: list[str], **_kw: Any) -> list[list[float]]:
        self.calls.append(len(texts))
        return [[1.0, 0.0] for _ in texts]


def test_embeddings_wait_for_the_chat_and_then_embed_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    emb = localmodel.Embeddings()
    monkeypatch.setattr(emb, "_load_locked", lambda: FakeLlama(calls))
    emb._centre = [0.0, 0.0]
    chat = localmodel.Engine()
    out: list[list[list[float]]] = []
    with chat.lock:  # a reply is being generated
        assert not localmodel.wait_for_chats(timeout=0.01)
        t = threading.Thread(target=lambda: out.append(emb.embed([f"text {i}" for i in range(20)])), daemon=True)
        t.start()
        t.join(0.3)
        assert t.is_alive() and calls == []  # nothing embedded while the chat runs
    t.join(10)
    assert not t.is_alive() and localmodel.wait_for_chats(timeout=0)
    assert calls == [8, 8, 4] and len(out[0]) == 20  # in chunks, between which a chat may come first
