"""200 consolidations by a model that rephrases like real ones, through real litellm over HTTP.

The scripted consolidator (tests/fixtures/rephrasing_model.py) rewords a third of the
facts, renames headings, reorders, drops facts silently, removes some with a reason,
keeps the ids most of the time but sometimes drops all of them, answers with edits
now and then, and invents facts. After every consolidation: nothing lost silently,
nothing doubled, nothing invented, nothing refused; at the end every explicitly
removed fact is still absent, and the memory in git is the log's.
"""

from __future__ import annotations

import random
import subprocess

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.memory import factdiff

from tests.fixtures.llm_server import ScriptedLLMServer
from tests.fixtures.rephrasing_model import RephrasingModel

SEED = 20261201
ROUNDS = 200


@pytest.fixture
def model() -> RephrasingModel:
    return RephrasingModel(random.Random(SEED))


def test_rephrasing_model_loses_nothing_doubles_nothing_and_is_never_refused(
        home: Home, served: ScriptedLLMServer, model: RephrasingModel) -> None:
    clock = FakeClock()
    cfg = Config(model="openai/test-model", api_base=served.base_url, llm_retries=0, llm_timeout=30.0,
                 memory_window=2, idle_consolidate_minutes=0, drop_policy="keep")
    app = App.open(home, config=cfg, clock=clock, ids=seeded_ids(clock, SEED), start_services=False)
    ever: set[int] = set()
    try:
        for n in range(1, ROUNDS + 1):
            clock.advance(60)
            text = model.new_fact()
            app.store.append_many([
                (Message(role="user", content=f"Please remember that {text}."), "chat", None),
                (Message(role="assistant", content="Noted."), "chat", None),
            ])
            out = app.run(app.consolidation.consolidate("chat", trigger="window"))  # raises if refused
            assert not out.nothing_to_do
            model.commit()
            memory = app.store.state.memory
            ever |= {k for f in memory.splitlines() if (k := model.k_of(f[2:])) is not None}
            wrong = model.check(memory, ever)
            assert not any(wrong.values()), f"after consolidation {n}: {wrong}"
        assert not model.errors, model.errors
        for what in ("reword", "silent-drop", "listed-removal", "ids-dropped", "heading-renamed", "reorder",
                     "edits", "invented"):
            assert model.stats.get(what, 0) > 0, (what, model.stats)
        failed = [c for c in app.store.state.consolidations.values() if c.status == "failed"]
        assert failed == []
        final = app.store.state.memory
        assert model.removed and not model.removed & {model.k_of(f[2:]) for f in final.splitlines()}
        # every fact of the final memory has one id, and ids never repeat
        ids = app.memory.ledger().ids
        assert len(ids) == len(set(ids)) == len([line for line in final.splitlines() if line.startswith("- ")])
        # invented facts were held for review, never written
        held = {factdiff.normalize(i["text"]) for i in app.memory.pending_review() if i["kind"] == "unsupported"}
        assert model.invented <= held
    finally:
        app.close()
    shown = subprocess.run(["git", "-C", str(home.memory), "show", "HEAD:MEMORY.md"], capture_output=True,
                           text=True, check=True).stdout
    assert shown == final == (home.memory / "MEMORY.md").read_text()
