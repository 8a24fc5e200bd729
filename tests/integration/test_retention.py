"""`memtray eval retention`: the score, the guard's effect on it, the table, the JSON and the plot."""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.audit.retention import StepInput, chunks, score, supported, synthetic_corpus
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.memory import factdiff

from tests.fixtures.corpus_model import HALLUCINATION, CorpusModel
from tests.fixtures.llm_server import ScriptedLLMServer
from tests.support import ROOT, cli_env, cli_here


def _eval(home: Home, server: ScriptedLLMServer, model: str, *args: str) -> Any:
    return cli_here(home.root, "eval", "retention", "--model", f"openai/{model}", *args,
                   MEMTRAY_API_BASE=server.base_url, OPENAI_API_KEY="sk-test")


def _report(home: Home, server: ScriptedLLMServer, model: str, *args: str) -> dict[str, Any]:
    out = _eval(home, server, model, "--json", *args)
    assert out.returncode == 0, out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def _tree_digest(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def corpus_server(llm_server: ScriptedLLMServer) -> ScriptedLLMServer:
    llm_server.responder = CorpusModel(fail_from=3)
    return llm_server


def test_forgetful_model_under_keep_drops_silently_but_survival_is_full(
    home: Home, corpus_server: ScriptedLLMServer
) -> None:
    r = _report(home, corpus_server, "forgetful", "--corpus", "synthetic", "--consolidations", "8", "--policy", "keep")
    assert r["corpus"] == "synthetic-v1" and r["model"] == "openai/forgetful" and r["guard"] is True
    assert r["consolidations"] == 8 and len(r["steps"]) == 8
    # the model dropped a fact silently in every consolidation after the first ...
    assert [s["silent"] for s in r["steps"]] == [0, 1, 1, 1, 1, 1, 1, 1]
    assert r["silent_drops"] == 7 and r["silent_drop_rate"] > 0
    # ... and the guard kept every one of them: nothing was lost
    assert [s["kept"] for s in r["steps"]] == [s["silent"] for s in r["steps"]]
    assert r["survival"] == 1.0 and r["lost"] == [] and r["facts_ever"] == r["facts_survived"] == 23
    assert r["supersession"]["correct"] == r["supersession"]["total"] == 4
    assert r["unsupported_insertions"] == [] and r["failures"] == 0
    assert not home.root.exists() or _tree_digest(home.root) == {}, "the evaluation wrote to the user's home"


def test_guard_off_survival_falls_and_the_table_says_what_was_lost(
    home: Home, corpus_server: ScriptedLLMServer
) -> None:
    out = _eval(home, corpus_server, "forgetful", "--no-guard", "-k", "8")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "guard OFF" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("survival@8:"))
    pct = float(line.split()[1].rstrip("%"))
    assert pct < 80.0, line
    lost = [ln for ln in text.splitlines() if ln.startswith("  lost: ")]
    assert len(lost) == 7 and "  lost: Name is Ada Moreau" in lost
    assert any(ln.startswith("never remembered: ") for ln in text.splitlines())
    assert "supersession: 2 of 4 correct" in text  # Paris and Fernbank were forgotten before being replaced
    rows = [ln.split() for ln in text.splitlines() if ln[:3].strip().isdigit()]
    assert len(rows) == 8 and [int(r[8]) for r in rows] == [0, 1, 1, 1, 1, 1, 1, 1]  # the "lost" column
    survival = [float(r[-1].rstrip("%")) for r in rows]
    assert survival == sorted(survival, reverse=True) and survival[0] == 100.0 and survival[-1] == pct


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The chunks of a PNG file, each CRC checked (a truncated or garbled file fails here)."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), "not a PNG file"
    chunks, at = [], 8
    while at < len(data):
        (size,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + size]
        (crc,) = struct.unpack(">I", data[at + 8 + size:at + 12 + size])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        at += 12 + size
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    return chunks


def _colours(data: bytes) -> set[tuple[int, int, int]]:
    """Every colour in the image, decoded by Qt (the renderer's own toolkit)."""
    from memtray.desktop.qt import QImage

    img = QImage.fromData(data, "PNG")
    assert not img.isNull()
    return {img.pixelColor(x, y).getRgb()[:3] for x in range(0, img.width(), 2) for y in range(0, img.height(), 2)}


def test_plot_is_a_png_and_json_matches_the_table(home: Home, corpus_server: ScriptedLLMServer, tmp_path: Path) -> None:
    from memtray.desktop import charts
    from memtray.desktop.qt import QColor

    png = tmp_path / "out" / "retention.png"
    png.parent.mkdir()
    r = _report(home, corpus_server, "careful", "-k", "4", "--plot", str(png))
    data = png.read_bytes()
    ihdr = _png_chunks(data)[0][1]
    assert struct.unpack(">II", ihdr[:8]) == charts.RETENTION_SIZE == (960, 540)
    # the facts line and the survival line are drawn (Qt's renderer, not a blank image)
    seen = _colours(data)
    for name in (charts.BLUE, charts.GREEN):
        assert QColor(name).getRgb()[:3] in seen, name
    assert r["survival"] == 1.0 and r["silent_drops"] == 0 and len(r["steps"]) == 4
    assert r["steps"][-1]["facts"] == 19  # 23 facts, 4 replaced by newer ones
    bad = cli_here(home.root, "eval", "retention", "--plot", str(tmp_path / "x.jpg"), MEMTRAY_MODEL="openai/careful")
    assert bad.returncode == 1 and "PNG" in bad.stderr
    zero = cli_here(home.root, "eval", "retention", "-k", "0", MEMTRAY_MODEL="openai/careful")
    assert zero.returncode == 1 and "at least 1" in zero.stderr


BLOCK_QT = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'shiboken6'):
            raise ImportError('No module named ' + repr(name))
        return None
sys.meta_path.insert(0, Block())
from memtray.core.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_plot_without_pyside6_says_so_and_keeps_the_report(home: Home, corpus_server: ScriptedLLMServer,
                                                           tmp_path: Path) -> None:
    png = tmp_path / "retention.png"
    out = subprocess.run(
        [sys.executable, "-c", BLOCK_QT, "eval", "retention", "--model", "openai/careful", "-k", "2", "--plot", str(png)],
        env=cli_env(home.root, MEMTRAY_API_BASE=corpus_server.base_url, OPENAI_API_KEY="sk-test"),
        capture_output=True, text=True, timeout=120, cwd=str(ROOT),
    )
    assert out.returncode == 1, out.stderr
    assert "PySide6" in out.stderr and out.stderr.startswith("memtray: error:") and "Traceback" not in out.stderr
    assert "survival@2:" in out.stdout  # the evaluation was printed before the chart failed
    assert not png.exists()


def test_unsupported_insertions_and_a_model_that_fails_half_way(
    home: Home, corpus_server: ScriptedLLMServer
) -> None:
    # the guard holds a fact no consolidated message supports: nothing unsupported gets in ...
    r = _report(home, corpus_server, "hallucinating", "-k", "3")
    assert r["unsupported_insertions"] == []
    # ... and the score still sees what the model tried, when the guard is off
    r = _report(home, corpus_server, "hallucinating", "-k", "3", "--no-guard")
    assert [u["fact"] for u in r["unsupported_insertions"]] == [HALLUCINATION[0]]
    assert r["unsupported_insertions"][0]["step"] == 1
    r = _report(home, corpus_server, "flaky", "-k", "6")
    failed = [s["index"] for s in r["steps"] if s["failed"]]
    assert failed == [3, 4, 5, 6] and r["failures"] == 4
    assert "without calling save_memory" in r["steps"][2]["failed"]
    assert r["survival"] == 1.0  # a failed consolidation changes nothing


def test_own_log_is_replayed_in_a_scratch_home_and_left_untouched(home: Home, llm_server: ScriptedLLMServer) -> None:
    model = CorpusModel()
    llm_server.responder = model
    app = App.open(home, config=Config(model="openai/careful", api_base=llm_server.base_url, llm_retries=0,
                                       memory_window=1000))
    try:
        for turn in synthetic_corpus().messages[:24:2]:
            app.run(app.agent.turn("cli", turn["content"], stream=False))
        app.run(app.consolidation.consolidate("cli", trigger="manual"))
        memory_before = app.store.state.memory
    finally:
        app.close()
    before = _tree_digest(home.root)
    r = _report(home, llm_server, "careful", "--corpus", "own", "-k", "3")
    assert _tree_digest(home.root) == before
    assert r["corpus"] == "own" and r["messages"] == 24 and len(r["steps"]) == 3
    assert r["supersession"] is None and r["survival"] == 1.0
    final = {f.norm for f in factdiff.parse(memory_before)}
    assert r["steps"][-1]["facts"] == len(final)
    empty = Home.resolve(home.root.parent / "empty")
    out = cli_here(empty.root, "eval", "retention", "--corpus", "own", MEMTRAY_MODEL="openai/careful")
    assert out.returncode == 1 and "--corpus synthetic" in out.stderr


# --- the score itself (pure) ---------------------------------------------------------------


def test_score_counts_reworded_removed_held_and_lost_facts() -> None:
    m0 = "## A\n\n- Likes tea\n- Lives in Paris\n- Has a dog\n- Plays chess\n"
    m1 = "## A\n\n- Likes green tea\n- Lives in Lyon\n- Plays chess\n"
    steps = [
        StepInput("1", "model", "", m0, sources=["I like tea, live in Paris, have a dog and play chess"]),
        StepInput("2", "model", m0, m1, reasons={factdiff.parse(m0)[1].id: "moved"},
                  silent=[{"id": factdiff.parse(m0)[2].id, "text": "Has a dog"}],
                  sources=["green tea now, and we moved to Lyon"]),
    ]
    s = score(steps)
    assert s.ever == 6 and s.lost == ["Has a dog"] and s.survived == 5
    assert [r.lost for r in s.steps] == [0, 1] and s.steps[1].silent == 1 and s.steps[1].kept == 0
    held = [StepInput(steps[1].label, "model", m0, m1, steps[1].reasons, steps[1].silent,
                      held={factdiff.parse(m0)[2].id}, sources=steps[1].sources)]
    assert score([steps[0], *held]).survival == 1.0


def test_supported_needs_the_words_in_some_message() -> None:
    pool = {"allergic", "peanuts", "lyon"}
    stems = {"aller", "peanu"}
    assert supported("Is allergic to peanuts", pool, stems)
    assert supported("Peanut allergy", pool, stems)
    assert not supported("Has a pet iguana named Rex", pool, stems)


def test_chunks_start_at_user_turns() -> None:
    msgs = synthetic_corpus().messages
    parts = chunks(msgs, 5)
    assert len(parts) == 5 and sum(len(p) for p in parts) == len(msgs)
    assert all(p[0]["role"] == "user" for p in parts)
    assert len(chunks(msgs[:4], 10)) == 2


def test_progress_bar_redraws_in_place_on_a_terminal() -> None:
    from memtray.core.cli.audit import ProgressBar
    from memtray.core.cli.console import Console, using

    err: list[str] = []
    with using(Console(lambda _t: None, err.append, tty=True)):
        bar = ProgressBar()
        bar(0, 4, "consolidation 1/4")
        bar(2, 4, "consolidation 3/4")
        bar.close()
    assert err[0].startswith("\r[------------------------] 0/4")
    assert err[1].startswith("\r[############------------] 2/4")
    assert err[-1].strip() == ""


def test_score_reports_corpus_facts_no_revision_ever_held() -> None:
    from memtray.core.audit.retention import Corpus, CorpusFact

    corpus = Corpus("t", [], {
        "tea": CorpusFact("tea", "Likes tea", "A", ("tea",)),
        "paris": CorpusFact("paris", "Lives in Paris", "A", ("paris",)),
        "lyon": CorpusFact("lyon", "Lives in Lyon", "A", ("lyon",), supersedes="paris"),
        "dog": CorpusFact("dog", "Has a dog", "A", ("dog",)),
        "chess": CorpusFact("chess", "Plays chess", "A", ("chess",)),
    })
    m1 = "## A\n\n- Likes tea\n- Lives in Lyon\n"  # Paris superseded within the step: not missing
    steps = [StepInput("1", "model", "", m1, sources=["tea, Paris, then Lyon, a dog, chess"])]
    s = score(steps, corpus)
    assert s.never == ["Has a dog", "Plays chess"]
    assert s.ever == s.survived == 2 and s.lost == []
    assert s.survival == 0.5  # two of the four facts memory should hold were never written
    assert s.to_json()["never_remembered"] == ["Has a dog", "Plays chess"]
    # the text report says them too, and counts them in survival's total
    from memtray.core.cli.audit import retention_table

    lines = retention_table({**s.to_json(), "corpus": "t", "messages": 1, "model": "m", "policy": "keep"})
    assert "never remembered: 2" in lines
    assert [ln for ln in lines if ln.startswith("  never remembered: ")] == [
        "  never remembered: Has a dog", "  never remembered: Plays chess"]
    survival = next(ln for ln in lines if ln.startswith("survival@1:"))
    assert survival.startswith("survival@1: 50.0%  (2 of 4 facts: the 2 that ever entered memory and the 2 it never")
    full = score([StepInput("1", "model", "", "## A\n\n- Has a dog\n", sources=["a dog"])],
                 Corpus("t", [], {"dog": CorpusFact("dog", "Has a dog", "A", ("dog",))}))
    assert "never remembered: none" in retention_table(
        {**full.to_json(), "corpus": "t", "messages": 1, "model": "m", "policy": "keep"})


def test_score_is_by_fact_id_when_the_steps_know_them() -> None:
    from memtray.core.memory.facts import Ledger

    m0 = "## A\n\n- Lives in Paris\n- Has a daughter named Ada\n"
    m1 = "## A\n\n- Lives in Lyon\n- Daughter: Ada, born 2019\n"
    ids0 = Ledger.with_ids(m0, ["F1", "F2"], 3)
    # by id: Ada's fact was reworded (F2 kept); Paris left without a reason (F1 gone, F3 is new)
    ids1 = Ledger.with_ids(m1, ["F3", "F2"], 4)
    s = score([StepInput("1", "model", m0, m1, ids_before=ids0, ids_after=ids1)])
    assert s.lost == ["Lives in Paris"] and s.ever == 3 and s.survived == 2
    # the same texts scored by words pair Paris with Lyon, and lose Ada's fact
    by_words = score([StepInput("1", "model", m0, m1)])
    assert by_words.lost != s.lost
    # a removal recorded by content id (the text guard names it so) still counts as a reason
    from memtray.core.memory import factdiff

    paris = factdiff.parse(m0)[0].id
    s2 = score([StepInput("1", "model", m0, m1, reasons={paris: "moved"}, ids_before=ids0, ids_after=ids1)])
    assert s2.lost == [] and s2.survival == 1.0
