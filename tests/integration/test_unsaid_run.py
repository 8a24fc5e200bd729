"""200 consolidations by a hostile model through real litellm: nothing the user said is skipped silently.

The user (tests/fixtures/saying_model.py ``Talk``) says things about themselves among chit-chat,
questions, requests, hypotheticals, quotes and code; the model rewords, reformats as key:
value, merges, switches language, puts some only in the diary, lists some in ``skipped`` (some
of those entries broken), drops others without a word, invents facts (with and without fake
receipts), drops old facts silently, and now and then answers late or breaks its response.

At the end every statement the user made about themselves is in memory (a fact or the
diary), held for review, listed as not remembered, or recorded as skipped with a reason on
its consolidation — none silently skipped; no invented fact was written; no fact the user
stated was held as unsupported.

Figures of one run (seed 20261203, 40 to 100 s here): 644 statements; 375 kept as facts, 61 in
the diary, 49 skipped with a reason, 160 listed as not remembered (the model dropped 113
without a word and sent 28 broken skips); 1 statement listed although a fact kept it; 44
facts invented, none written; 19 broken or late answers (cut off, malformed, broken
arguments, too late), each retried. What the run found
on the way: ``facts.pair`` took "Aunt: Lyon" for a translation of "Has a grandmother in
Lyon" and lost the grandmother silently, and ``facts.has_word`` made "养了一只叫Qiuqiu的猫" a
duplicate of "养了一只叫Doudou的猫" (both fixed); the receipt check holds some wordings the
user's words support (tests/fixtures/saying_model.py lists them; they are left out here).
"""

from __future__ import annotations

import random

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import ConsolidationCompleted, Message
from memtray.core.memory import factdiff
from memtray.core.memory.consolidation import ConsolidationFailedError

from tests.fixtures.llm_server import ScriptedLLMServer
from tests.fixtures.saying_model import SayingModel, Talk

SEED = 20261203
ROUNDS = 200


@pytest.fixture
def model() -> SayingModel:
    rng = random.Random(SEED)
    return SayingModel(rng, talk=Talk(random.Random(SEED + 1)))


@pytest.mark.slow
# litellm leaves a coroutine un-awaited when a response is cut off or times out (its own, not
# memtray's; seen with HTTP 500 and broken responses): Python reports it at garbage collection
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <coroutine object OpenAIChatCompletion.acompletion:pytest.PytestUnraisableExceptionWarning")
def test_200_hostile_consolidations_skip_nothing_the_user_said_silently(
        home: Home, served: ScriptedLLMServer, model: SayingModel) -> None:
    clock = FakeClock()
    cfg = Config(model="openai/test-model", api_base=served.base_url, llm_retries=0, llm_timeout=20.0,
                 consolidation_timeout=3.0, memory_window=1000, idle_consolidate_minutes=0, drop_policy="keep")
    app = App.open(home, config=cfg, clock=clock, ids=seeded_ids(clock, SEED), start_services=False)
    failures = 0
    try:
        for _n in range(ROUNDS):
            clock.advance(60)
            app.store.append_many([(Message(role=r, content=t), "chat", None) for r, t in model.talk.round()])
            for _attempt in range(4):
                try:
                    app.run(app.consolidation.consolidate("chat", archive_all=True, trigger="manual"))
                    break
                except ConsolidationFailedError:
                    failures += 1
            else:
                raise AssertionError("four failed attempts in a row")
            model.commit()
        assert not model.errors, model.errors
        memory = app.store.state.memory
        history = (home.memory / "HISTORY.md").read_text()
        pending = app.memory.pending_review()
        completed = [ConsolidationCompleted.of(r) for r in app.store.log.records() if r.type == ConsolidationCompleted.TYPE]
        skipped = {(s["seq"], factdiff.normalize(s["quote"])) for c in completed for s in c.skipped or []}
        records = list(app.store.log.records())
    finally:
        app.close()

    in_memory = {k for f in factdiff.parse(memory) for k in model.says(f.text)}
    in_diary = {k for k, s in model.talk.said.items() if s.sentence in history}
    held = {k for i in pending if i["kind"] != "not-remembered" for k in model.says(i["text"])}
    quotes = [factdiff.normalize(i["quote"]) for i in pending if i["kind"] == "not-remembered"]
    listed = {k for k, s in model.talk.said.items() if any(q and (q in (n := factdiff.normalize(s.sentence)) or n in q)
                                                            for q in quotes)}
    in_skipped = {k for k, s in model.talk.said.items()
                  if any(q in factdiff.normalize(s.sentence) or factdiff.normalize(s.sentence).startswith(q)
                         for _seq, q in skipped)}
    everything = set(model.talk.said)
    silent = everything - in_memory - in_diary - held - listed - in_skipped
    def trail(k: int) -> list[str]:
        texts = {t for t, ks in model.written.items() if k in ks}
        out = []
        for r in records:
            if r.type != "memory.written":
                continue
            d = r.data.get("diff") or {}
            for what in ("added", "dropped"):
                out += [f"{r.seq} {what} {f['text']}" for f in d.get(what, []) if factdiff.normalize(f["text"]) in texts]
            out += [f"{r.seq} changed {c['old']['text']} -> {c['new']['text']}" for c in d.get("changed", [])
                    if texts & {factdiff.normalize(c["old"]["text"]), factdiff.normalize(c["new"]["text"])}]
            out += [f"{r.seq} held {i['kind']} {i['text']}: {i['reason']}" for i in r.data.get("flagged") or []
                    if factdiff.normalize(i["text"]) in texts or model.talk.said[k].sentence in str(i.get("quote"))]
        return out

    if silent:  # say what kept each, so a failure can be read
        from memtray.core.memory import unsaid
        keep = [f.text for f in factdiff.parse(memory)] + unsaid.pieces(history) + [i["text"] for i in pending]
        why = {model.talk.said[k].sentence: ([t for t in keep if unsaid.covered(model.talk.said[k].sentence, t)][:2],
                                             k in model.dropped, k in model.broken_skips, k in model.skipped,
                                             [t for t, ks in model.written.items() if k in ks], trail(k))
               for k in sorted(silent)[:12]}
        raise AssertionError(f"{len(silent)} statements skipped silently: {why}")

    # the model's silent drops and broken skips are what "not remembered" is for
    assert model.dropped | model.broken_skips <= listed | in_memory | in_diary
    # no invented fact was written; each is held for review
    facts_now = {f.norm for f in factdiff.parse(memory)}
    assert not model.invented & facts_now
    assert model.invented <= {factdiff.normalize(i["text"]) for i in pending}
    # no fact the user stated was held as unsupported (or inferred)
    stated_held = [i for i in pending if i["kind"] in ("unsupported", "inferred") and model.says(i["text"])]
    assert stated_held == [], [(i["text"], i["reason"], i.get("quote")) for i in stated_held[:12]]
    # the run was as hostile as it says
    for what in ("invented", "silent-drop", "edits", "full"):
        assert model.stats.get(what, 0) > 0, (what, model.stats)
    assert failures > 0 and len(model.dropped) > 10 and len(model.skipped) > 10 and len(model.broken_skips) > 5
    assert len(everything) > 400
    # not noisy: a statement kept in memory is rarely also listed as not remembered
    noise = listed & (in_memory | in_diary)
    assert len(noise) <= 0.05 * len(in_memory | in_diary), [model.talk.said[k].sentence for k in sorted(noise)][:10]
