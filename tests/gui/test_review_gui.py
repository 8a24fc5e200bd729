"""The review tab at 1280×720, through real widgets: a held fact shows the message it comes
from with the quote highlighted; "Add to memory" and "Keep out" do what they say and each is
undone; a merge conflict shows both versions side by side, wrapped, under the devices' names,
its buttons inside the window; "Keep this version" and "Keep the other" and their undo."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.log.events import Message
from memtray.core.memory.items import review_item
from memtray.core.sync.names import name_device
from memtray.desktop.qt import QApplication, Qt

pytestmark = pytest.mark.gui

MEM0 = "# Memory\n\n## About\n- Lives in Lyon, in a flat near the river with a view of the old town and the bridges\n"
SAID = "By the way, I play the cello in a string quartet on Thursdays."
OTHER = "Lives in Paris, in the 11th arrondissement, a short walk from the canal and the market on Sundays"
PEER = "d0123456789ab"


@pytest.fixture
def queued(desktop: Any) -> Any:
    app = desktop.app
    mem = app.memory

    def seed() -> None:
        mem.write(MEM0, reason="user-edit", source="user")
        seq = app.store.append_many([(Message(role="user", content=SAID), "quick", None)])[0].seq
        held = [review_item("unsupported", "Is a cellist", "About", None, "no consolidated message says this",
                            messages=[seq], quote="play the CELLO"),
                review_item("unsupported", "Keeps bees", "About", None, "no consolidated message says this")]
        fact = mem.ledger().facts[0]
        conflict = {"id": "c0ffee0001", "kind": "merge-conflict", "text": OTHER, "section": "About",
                    "fact_id": fact.id, "conflict": "reworded",
                    "reason": f"reworded on {mem.device} and on {PEER}; {mem.device}'s words kept, these are {PEER}'s",
                    "words": {mem.device: fact.text, PEER: OTHER}}
        mem.write(MEM0, reason="consolidation", source="model", flagged=[*held, conflict])
        name_device(app.store, mem.device, "Laptop")
        name_device(app.store, PEER, "Desktop")
        mem.write(MEM0, reason="consolidation", source="model", flagged=[review_item(
            "instruction", "<b>Always</b> obey <img src='x'>", "About", None, "looks like an instruction")])

    app.worker.call(seed)
    return desktop


def _review(qtbot: Any, desktop: Any) -> Any:
    window = desktop.main_window()
    window.resize(1280, 720)
    desktop.open("memory")
    browser = window.memory
    qtbot.waitUntil(lambda: len(browser.review_tab.cards) == 4, timeout=10000)
    browser.show_review()
    QApplication.processEvents()
    return window, browser


def _memory(desktop: Any) -> str:
    return (desktop.app.home.memory / "MEMORY.md").read_text(encoding="utf-8")


def _inside(window: Any, widget: Any) -> bool:
    """The whole widget is inside the window and shown."""
    top_left = widget.mapTo(window, widget.rect().topLeft())
    bottom_right = widget.mapTo(window, widget.rect().bottomRight())
    return window.rect().contains(top_left) and window.rect().contains(bottom_right) and widget.isVisible()


def test_add_to_memory_and_its_undo(qtbot: Any, queued: Any) -> None:
    window, browser = _review(qtbot, queued)
    tab = browser.review_tab
    card = tab.card("Is a cellist")
    assert card.found_quote and "background" in card.sources.text() and "play the cello" in card.sources.text()
    assert "#" in card.sources.text() and "You" in card.sources.text()
    assert tab.card("Keeps bees").sources.text().count("No source message") == 1
    markup = tab.card("Always")  # a model's words are shown as they are, never as markup
    assert markup.text.textFormat() == Qt.TextFormat.PlainText and markup.text.text().startswith("<b>Always</b>")
    assert [b.text() for b in card.buttons.values()] == ["Add to memory", "Keep out"]
    assert all(_inside(window, b) for b in card.buttons.values())
    with qtbot.waitSignal(browser.changed, timeout=10000) as sig:
        qtbot.mouseClick(card.buttons["add"], Qt.MouseButton.LeftButton)
    assert sig.args[0].reason == "review" and "- Is a cellist" in _memory(queued)
    assert tab.undo_bar.isVisible() and "Added “Is a cellist” to memory" in tab.undo_text.text()
    qtbot.waitUntil(lambda: len(tab.cards) == 3, timeout=10000)
    with qtbot.waitSignal(browser.changed, timeout=10000) as sig:
        qtbot.mouseClick(tab.undo_btn, Qt.MouseButton.LeftButton)
    assert sig.args[0].reason == "undo" and "Is a cellist" not in _memory(queued)
    qtbot.waitUntil(lambda: len(tab.cards) == 4, timeout=10000)
    assert tab.card("Is a cellist").found_quote  # back, with its receipt
    assert not tab.undo_btn.isVisible()


def test_keep_out_is_listed_with_its_reason_and_undone(qtbot: Any, queued: Any) -> None:
    window, browser = _review(qtbot, queued)
    tab = browser.review_tab
    head = queued.app.memory.revision("HEAD").rev
    card = tab.card("Keeps bees")
    qtbot.keyClicks(card.why, "gave the hives away")
    qtbot.mouseClick(card.buttons["keep-out"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(tab.kept) == 1, timeout=10000)
    assert "Kept “Keeps bees” out of memory" in tab.undo_text.text()
    row = tab.kept[0]
    assert row.text.text() == "Keeps bees" and "Kept out: gave the hives away" in row.reason.text()
    tab.ensureWidgetVisible(row.button)
    qtbot.waitUntil(lambda: _inside(window, row.button), timeout=5000)
    assert queued.app.memory.revision("HEAD").rev == head and "Keeps bees" not in _memory(queued)
    assert [d["reason"] for d in queued.app.memory.dropped() if d["text"] == "Keeps bees"] == ["gave the hives away"]
    # the bar's Undo puts it back in the queue
    with qtbot.waitSignal(browser.changed, timeout=10000):
        qtbot.mouseClick(tab.undo_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(tab.cards) == 4 and not tab.kept, timeout=10000)
    # kept out again without a reason, then "Review again" on its row in the kept-out list
    qtbot.mouseClick(tab.card("Keeps bees").buttons["keep-out"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(tab.kept) == 1, timeout=10000)
    assert "Kept out: kept out in review" in tab.kept[0].reason.text()
    with qtbot.waitSignal(browser.changed, timeout=10000):
        qtbot.mouseClick(tab.kept[0].button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(tab.cards) == 4 and not tab.kept, timeout=10000)


def test_conflict_side_by_side_wrapped_named_and_both_choices_undone(qtbot: Any, queued: Any) -> None:
    window, browser = _review(qtbot, queued)
    tab = browser.review_tab
    card = tab.card(OTHER)
    here = queued.app.memory.device
    this, other = card.columns["this"], card.columns["other"]
    # side by side, each wrapped within its half, nothing past the right edge
    assert this.wordWrap() and other.wordWrap()
    left, right = this.parentWidget(), other.parentWidget()  # each version's box
    this_pos, other_pos = left.mapTo(window, left.rect().topLeft()), right.mapTo(window, right.rect().topLeft())
    assert other_pos.x() > this_pos.x() + left.width() - 1 and other_pos.y() == this_pos.y()
    assert abs(left.width() - right.width()) <= 2  # halves
    assert this.height() > this.fontMetrics().height() * 1.5, "long words are wrapped onto more lines"
    for w in (this, other, *card.buttons.values()):
        assert _inside(window, w), w
    assert [b.text() for b in card.buttons.values()] == ["Keep this version", "Keep the other"]
    heads = [lab.text() for lab in card.findChildren(type(this)) if "from" in lab.text()]
    assert "In memory now · from Laptop (this device)" in heads and "The other version · from Desktop" in heads
    assert any(lab.toolTip() == f"device {PEER}" for lab in card.findChildren(type(this)))
    assert "reworded on Laptop and on Desktop" in card.findChildren(type(this))[1].text()
    assert here not in " ".join(lab.text() for lab in card.findChildren(type(this)))  # the id only as detail

    with qtbot.waitSignal(browser.changed, timeout=10000):
        qtbot.mouseClick(card.buttons["keep-other"], Qt.MouseButton.LeftButton)
    assert OTHER in _memory(queued)
    qtbot.waitUntil(lambda: len(tab.cards) == 3, timeout=10000)
    with qtbot.waitSignal(browser.changed, timeout=10000):
        qtbot.mouseClick(tab.undo_btn, Qt.MouseButton.LeftButton)
    assert OTHER not in _memory(queued) and "Lives in Lyon" in _memory(queued)
    qtbot.waitUntil(lambda: len(tab.cards) == 4, timeout=10000)

    before = _memory(queued)
    with qtbot.waitSignal(browser.changed, timeout=10000):
        qtbot.mouseClick(tab.card(OTHER).buttons["keep-this"], Qt.MouseButton.LeftButton)
    assert _memory(queued) == before and queued.app.memory.merge_conflicts() == []
    qtbot.waitUntil(lambda: len(tab.cards) == 3, timeout=10000)
    with qtbot.waitSignal(browser.changed, timeout=10000):
        qtbot.mouseClick(tab.undo_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(tab.cards) == 4, timeout=10000)
    assert [i["id"] for i in queued.app.memory.merge_conflicts()] == ["c0ffee0001"]


def test_why_names_the_device_a_fact_came_from(qtbot: Any, desktop: Any) -> None:
    from memtray.desktop.memory_rows import WhyDialog

    info = {"fact": {"id": "F3", "section": "About", "text": "Keeps bees"}, "revision": {"rev": "abc", "time": ""},
            "source": "model", "messages": [], "device": PEER, "device_revision": "01JREV", "device_name": "Desktop"}
    dlg = WhyDialog(desktop.ctx, info)
    qtbot.addWidget(dlg)
    assert dlg.device_line is not None and dlg.device_line.text() == "From the device Desktop"
    assert PEER in dlg.device_line.toolTip() and "01JREV" in dlg.device_line.toolTip()
    unnamed = WhyDialog(desktop.ctx, {**info, "device_name": None})
    qtbot.addWidget(unnamed)
    assert unnamed.device_line is not None and unnamed.device_line.text() == f"From the device {PEER}"
    own = WhyDialog(desktop.ctx, {**info, "device_revision": None})  # this device's own fact: no line
    qtbot.addWidget(own)
    assert own.device_line is None


def test_a_statement_nothing_kept_is_one_click_from_memory_with_its_message_as_receipt(
        qtbot: Any, desktop: Any) -> None:
    app = desktop.app
    mem = app.memory
    said = "By the way, I don't like cilantro."

    def seed() -> None:
        mem.write(MEM0, reason="user-edit", source="user")
        seq = app.store.append_many([(Message(role="user", content=said), "quick", None)])[0].seq
        item = review_item("not-remembered", "User doesn't like cilantro", "", None,
                           "you said this (message #1); no fact, diary entry or skip keeps it",
                           quote="I don't like cilantro.")
        item["source_seqs"] = [seq]
        mem.write(MEM0, reason="consolidation", source="model", flagged=[item])

    app.worker.call(seed)
    window = desktop.main_window()
    window.resize(1280, 720)
    desktop.open("memory")
    browser = window.memory
    tab = browser.review_tab
    qtbot.waitUntil(lambda: len(tab.cards) == 1, timeout=10000)
    browser.show_review()
    card = tab.card("cilantro")
    assert "nothing kept it" in card.meta.text()  # says what it is, in words
    assert card.found_quote and "cilantro" in card.sources.text()  # its message, the quote marked
    assert [b.text() for b in card.buttons.values()] == ["Add to memory", "Keep out"]
    with qtbot.waitSignal(browser.changed, timeout=10000):
        qtbot.mouseClick(card.buttons["add"], Qt.MouseButton.LeftButton)
    assert "- User doesn't like cilantro" in _memory(desktop)
    receipt = app.worker.call(lambda: mem.why("User doesn't like cilantro"))["receipt"]
    assert receipt is not None and receipt["stated"] and receipt["quote"] == "I don't like cilantro."
