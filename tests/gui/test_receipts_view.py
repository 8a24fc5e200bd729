"""Receipts in the memory browser (issue 27): the Facts tab tells a fact the user said from one
only the assistant said, and "Why?" shows the quote highlighted in its message."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.log.events import Message

pytestmark = pytest.mark.gui

MEMORY = "# About the user\n\n- Is a hobby beekeeper\n- Is a morning person\n- Lives in Graz\n"


@pytest.fixture
def receipted(desktop: Any) -> Any:
    app = desktop.app
    mem = app.memory

    def seed() -> None:
        said = app.store.append(Message(role="user", content="Sam keeps bees in the garden."), session="s")
        guess = app.store.append(Message(role="assistant", content="You must be a morning person."), session="s")
        mem.write(MEMORY, reason="consolidation", source="model", model="openai/test-model", provenance={
            "F1": {"consolidation": "c1", "source_seqs": [said.seq], "text": "Is a hobby beekeeper",
                   "quote": "Sam keeps bees in the garden", "stated": True},
            "F2": {"consolidation": "c1", "source_seqs": [guess.seq], "text": "Is a morning person",
                   "quote": "You must be a morning person", "stated": False},
        })

    app.worker.call(seed)
    return desktop


def test_the_facts_tab_tells_stated_from_inferred(qtbot: Any, receipted: Any) -> None:
    receipted.open("memory")
    browser = receipted.window.memory
    browser.tabs.setCurrentWidget(browser.facts_tab)
    tab = browser.facts_tab
    qtbot.waitUntil(lambda: len(tab.rows) == 3, timeout=10000)
    meta = {r.fact.text: r.fact.section for r in tab.rows}
    assert meta["Is a hobby beekeeper"].endswith("· you said it")
    assert meta["Is a morning person"].endswith("· inferred, not said by you")
    assert "said" not in meta["Lives in Graz"] and "inferred" not in meta["Lives in Graz"]
    tips = {r.fact.text: r.toolTip() for r in tab.rows}
    assert "You said: \u201cSam keeps bees in the garden\u201d" in tips["Is a hobby beekeeper"]
    assert "Only the assistant said: \u201cYou must be a morning person\u201d" in tips["Is a morning person"]


def test_why_shows_the_quote_in_its_message(qtbot: Any, receipted: Any) -> None:
    from memtray.desktop.memory_rows import WhyDialog

    info = receipted.app.worker.call(lambda: receipted.app.memory.why("F1"))
    dlg = WhyDialog(receipted.ctx, info)
    qtbot.addWidget(dlg)
    dlg.resize(1280 // 2, 720 // 2)
    dlg.show()
    assert dlg.receipt is not None and dlg.receipt.text() == "You said it: \u201cSam keeps bees in the garden\u201d"
    html = dlg.body.toHtml()
    assert "background-color:#fff3a3" in html.replace(" ", "") and "Sam keeps bees in the garden" in html
    assert dlg.body.toPlainText().startswith("You")
    inferred = WhyDialog(receipted.ctx, receipted.app.worker.call(lambda: receipted.app.memory.why("F2")))
    qtbot.addWidget(inferred)
    assert inferred.receipt is not None and inferred.receipt.text().startswith("Inferred: only memtray said this")
    old = WhyDialog(receipted.ctx, receipted.app.worker.call(lambda: receipted.app.memory.why("F3")))
    qtbot.addWidget(old)
    assert old.receipt is None  # a fact without a receipt: nothing claimed
