"""Recall in the turn on real conversations: how often a LoCoMo question's evidence reaches the prompt.

Run: nice -n 10 .venv/bin/python bench/locomo_turn_recall.py [--data DIR] [--convs 26,30,41,42,43]
     [--limits 3,5] [--workdir DIR]

bench/locomo_recall.py measures ``history search``; this measures what a *turn* is given.
For each conversation, in a fresh data home, the conversation is imported the way a user
does (``memtray import chatgpt``, the same export as bench/locomo_recall.py), then the app
is opened with the ``recall`` setting on and every answerable question (categories 1-4)
is asked as a turn would ask it, each in a new conversation of its own:

1. ``Agent._recall`` — the step ``Agent.turn`` takes before it logs the user's message:
   the search service's recall (the same ranking as ``history search``, limited to
   ``recall_limit`` snippets, weak or empty matches left out);
2. ``Agent.log_user`` with that recall, as the turn logs it;
3. ``Agent.messages_for`` — the request the model would be sent (system prompt with
   memory, the conversation, the recalled block), serialised as JSON the way it goes
   over HTTP.

An evidence turn *reaches the prompt* when its text (whitespace-folded, the first 80
characters, which a recalled snippet always keeps) is in that request. A question
counts when at least one of its evidence turns reaches it; evidence is the share of all
evidence turns that do. Memory is empty here (importing does not consolidate: no model
is reachable), so everything that arrives comes through recall. No model is called.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from locomo_recall import (  # noqa: E402
    CATEGORIES,
    Conversation,
    import_once,
    load_asked,
    seq_to_turn,
)

PROBE_CHARS = 80


def probe(text: str) -> str:
    return " ".join(text.split())[:PROBE_CHARS]


def run_conversation(conv: Conversation, home: Path, limits: list[int],
                     tally: dict[int, dict[str, dict[int, list[float]]]]) -> None:
    from memtray.core.app import App
    from memtray.core.base.clock import FakeClock
    from memtray.core.base.config import Config
    from memtray.core.base.home import Home
    from memtray.core.log import chats

    import_once(conv, home)
    text = {t.dia_id: probe(t.text) for t in conv.turns}
    # the questions are asked the day after the conversation's last session
    clock = FakeClock(max(t.when for t in conv.turns) + timedelta(days=1))
    for limit in limits:
        cfg = Config(model="openai/bench-no-model", timezone="UTC", recall=True, recall_limit=limit)
        app = App.open(Home.resolve(home), clock=clock, config=cfg, start_services=False)
        try:
            agent = app.agent
            turns = seq_to_turn(app, conv)
            # the questions asked before (another --limits round in this home included) are the
            # bench's messages, not the conversation's: `history search` leaves them out
            asked = [r.seq for r in app.store.log.records(0) if r.session and r.session.startswith("bench-")]
            t0 = time.perf_counter()
            for i, q in enumerate(conv.questions):
                session = f"bench-{limit}-{i}"
                # the same question asked of `history search` (the earlier questions' own
                # messages left out: they are the bench's, not the conversation's)
                found = app.run(app.search.asearch(q.text, mode="hybrid", limit=limit, kind="message",
                                                   exclude=asked))
                searched = {turns[h.seq] for h in found.hits if h.seq in turns} & q.evidence
                recall = app.run(agent._recall(session, q.text))
                asked.append(agent.log_user(session, q.text, recall).seq)
                request = " ".join(json.dumps([m.get("content") for m in agent.messages_for(session)],
                                              ensure_ascii=False).split())
                got = {e for e in q.evidence if json.dumps(text[e], ensure_ascii=False)[1:-1] in request}
                # a deleted conversation is never recalled into another: the next question
                # does not find this one
                chats.delete(app.store, session)
                cell = tally[limit][conv.name].setdefault(q.category, [0, 0.0, 0.0, 0.0])
                cell[0] += 1
                cell[1] += bool(got)
                cell[2] += len(got) / len(q.evidence)
                cell[3] += bool(searched)
            per_q = (time.perf_counter() - t0) / max(1, len(conv.questions)) * 1000
            print(f"  conversation {conv.name}: recall_limit {limit}: {per_q:.1f} ms a turn's recall and prompt",
                  file=sys.stderr)
        finally:
            app.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="folder of the LoCoMo conversations (default: ../shared/data/locomo)")
    ap.add_argument("--convs", default="26,30,41,42,43")
    ap.add_argument("--limits", default="3,5", help="recall_limit values to measure (the setting's default is 3)")
    ap.add_argument("--workdir", help="keep the data homes here and reuse them (default: a temp dir)")
    args = ap.parse_args()
    convs = load_asked(args.data, args.convs)
    if convs is None:
        return 0
    limits = [int(x) for x in args.limits.split(",") if x.strip()]
    tally: dict[int, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(dict))
    with tempfile.TemporaryDirectory(prefix="locomo-turn-") as tmp:
        root = Path(args.workdir) if args.workdir else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        for conv in convs:
            run_conversation(conv, root / f"home-{conv.name}", limits, tally)
    print(f"LoCoMo: the evidence of {sum(len(c.questions) for c in convs)} questions in the prompt of a turn "
          "that asks them (recall on, memory empty)")
    print("| recall_limit | category | questions | evidence reaches the prompt (≥ 1 turn) | evidence turns "
          "| `history search`, first recall_limit (≥ 1 turn) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for limit in limits:
        rows: dict[str, list[float]] = {}
        for per_cat in tally[limit].values():
            for cat, cell in per_cat.items():
                row = rows.setdefault(CATEGORIES[cat], [0, 0.0, 0.0, 0.0])
                for i in range(4):
                    row[i] += cell[i]
        total = [sum(r[i] for r in rows.values()) for i in range(4)]
        for name in [*CATEGORIES.values(), "all"]:
            n, hit, frac, searched = total if name == "all" else rows.get(name, [0, 0.0, 0.0, 0.0])
            if n:
                label = f"**{name}**" if name == "all" else name
                print(f"| {limit} | {label} | {int(n)} | {hit / n:.3f} | {frac / n:.3f} | {searched / n:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
