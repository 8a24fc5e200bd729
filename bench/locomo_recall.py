"""Recall of history search on real conversations: LoCoMo, against BM25 and a dense baseline.

Run: nice -n 10 .venv/bin/python bench/locomo_recall.py [--data DIR] [--convs 26,30,41,42,43]
     [--tune 26,30,41] [--embed] [--cli N] [--workdir DIR] [--show-misses N] [--latency]

LoCoMo (Maharana et al., ACL 2024; snap-research/locomo) is a set of very long
two-person conversations whose questions name the dialog turns that hold each
answer. Five of its ten conversations are kept beside the repository in
``../shared/data/locomo/`` (evaluation data only: never copied into the product or
the tests' fixtures); without them this prints why and exits 0.

For each conversation, in a fresh data home:

1. the conversation is written as a ChatGPT export (``conversations.json``: one
   conversation per LoCoMo session, titled with the speakers and the session's
   number, every message dated by the session's own date and time, the first
   speaker as ``user`` and the second as ``assistant``; a shared photo's caption
   follows the turn's text as ``[shares <caption>]``, the way LoCoMo's own
   baselines read it) and imported the way a user does: ``memtray import chatgpt
   FILE`` in a subprocess;
2. each answerable question (categories 1-4) is asked of memtray's default search:
   ``history search QUESTION --mode hybrid --limit 10 --kind message``, through the
   same ``SearchService.asearch`` in-process (``--cli N`` also runs the first N
   questions through the real command and checks it returns the same messages);
3. the same questions are asked of two baselines over the same texts, in the same
   run: a plain Okapi BM25 (k1 1.2, b 0.75, lower-cased words, NLTK's English stop
   words dropped, no stemming) and a plain dense retriever (the nearest by cosine of
   the offline embedding model's vectors, as memtray stores them, with no similarity
   floor; only with ``--embed``, which makes those vectors first with ``history
   embed``'s backfill, the way a running instance makes them in the background, and
   then memtray's hybrid search uses them too).

``--latency`` measures time instead: every conversation imported into *one* data
home (all sessions of all of them, the index a person with that history has), then
every question asked of the default search in-process (wall and CPU time per
question, p50/p90/p99) and the first ten through the real ``memtray history search``
command (wall time, the Python start included), with the load average beside them
(the machine may be shared: wall times grow with the load, CPU times much less).

Printed per retriever and category: recall@5 and recall@10 (the question counts if
at least one of its evidence turns is in the top k) and the fraction of all
evidence turns in the top k. Conversations ``--tune`` (default 26, 30, 41) are what
the search was tuned on; the others are reported apart, so the figure is not fit
to the questions it is scored on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import pct  # noqa: E402
from memtray.core.search.query import NLTK_STOP_WORDS  # noqa: E402

# The JSON's category numbers, as LoCoMo's own evaluation code reads them (task_eval/evaluation.py
# scores 1 by sub-answers: multi-hop; snap-research/locomo issue 29). The data agrees: 1 holds the
# questions with several evidence turns, 2 the "When did..." ones, 3 "Would X likely..." (inference,
# open-domain), 4 the largest set, one evidence turn each (single-hop). Until 2026-12-04 this bench
# labelled 1 single-hop, 3 multi-hop and 4 open-domain (mem0's reading), which swapped those rows.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
TURN_SECONDS = 30  # LoCoMo dates sessions, not turns: turns are spaced this far apart

# NLTK's English stop-word list (nltk.corpus.stopwords, 179 words), for the BM25 baseline
NLTK_STOP = NLTK_STOP_WORDS


# --- the data --------------------------------------------------------------------------


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    when: datetime
    session: int


@dataclass
class Question:
    text: str
    category: int
    evidence: set[str]


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]
    skipped: int = 0  # answerable questions without a usable evidence id


def find_data(given: str | None) -> Path | None:
    """``--data``, else ``../shared/data/locomo`` beside this checkout or beside the main
    checkout of a git worktree."""
    if given:
        return Path(given)
    candidates = [ROOT.parent / "shared" / "data" / "locomo"]
    try:
        common = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--git-common-dir"],
                                capture_output=True, text=True, check=True).stdout.strip()
        candidates.append((ROOT / common).resolve().parent.parent / "shared" / "data" / "locomo")
    except (OSError, subprocess.CalledProcessError):
        pass
    return next((c for c in candidates if c.is_dir()), None)


def session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as a UTC time (LoCoMo gives no zone)."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(t: dict[str, Any]) -> str:
    text = str(t.get("text") or "").strip()
    caption = t.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [shares {caption.strip()}]".strip()
    return text


def load_asked(given: str | None, asked: str) -> list[Conversation] | None:
    """The conversations ``--convs`` names from ``--data`` (or the shared folder), or None after
    saying why the bench is skipped (no data here, or a conversation missing from it)."""
    data = find_data(given)
    if data is None or not data.is_dir():
        print("LoCoMo data not found (../shared/data/locomo beside the checkout, or --data DIR): skipped")
        return None
    names = [c.strip() for c in asked.split(",") if c.strip()]
    missing = [n for n in names if not (data / f"{n}.json").is_file()]
    if missing:
        print(f"LoCoMo conversations {', '.join(missing)} not in {data}: skipped")
        return None
    return [load(data / f"{n}.json") for n in names]


def load(path: Path) -> Conversation:
    raw = json.loads(path.read_text(encoding="utf-8"))
    conv = raw.get("conversation", raw)
    turns: list[Turn] = []
    n = 1
    while f"session_{n}" in conv:
        start = session_time(conv[f"session_{n}_date_time"])
        for i, t in enumerate(conv[f"session_{n}"]):
            text = turn_text(t)
            if text:
                turns.append(Turn(t["dia_id"], t["speaker"], text, start + timedelta(seconds=TURN_SECONDS * i), n))
        n += 1
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    skipped = 0
    for q in raw["qa"]:
        if q.get("category") not in CATEGORIES:
            continue
        ids = {m for e in q.get("evidence", []) for m in re.findall(r"D\d+:\d+", str(e))} & known
        if not ids:
            skipped += 1
            continue
        questions.append(Question(str(q["question"]), int(q["category"]), ids))
    return Conversation(path.stem, (conv["speaker_a"], conv["speaker_b"]), turns, questions, skipped)


def chatgpt_export(conv: Conversation) -> list[dict[str, Any]]:
    """The conversation as ChatGPT's ``conversations.json``: one conversation per session."""
    out = []
    by_session: dict[int, list[Turn]] = defaultdict(list)
    for t in conv.turns:
        by_session[t.session].append(t)
    a, b = conv.speakers
    for n, turns in sorted(by_session.items()):
        mapping: dict[str, Any] = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
        parent = "root"
        for t in turns:
            node = f"n-{t.dia_id}"
            mapping[parent]["children"].append(node)
            mapping[node] = {
                "id": node, "parent": parent, "children": [],
                "message": {
                    "id": node, "author": {"role": "user" if t.speaker == a else "assistant"},
                    "create_time": t.when.timestamp(),
                    "content": {"content_type": "text", "parts": [t.text]},
                },
            }
            parent = node
        out.append({"id": f"locomo-{conv.name}-{n}", "title": f"{a} and {b}, session {n}",
                    "create_time": turns[0].when.timestamp(), "update_time": turns[-1].when.timestamp(),
                    "current_node": parent, "mapping": mapping})
    return out


# --- running memtray -------------------------------------------------------------------


def memtray(home: Path, *args: str) -> str:
    env = dict(os.environ, MEMTRAY_HOME=str(home))
    done = subprocess.run([sys.executable, "-m", "memtray.core.cli", *args], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"memtray {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def seq_to_turn(app: Any, conv: Conversation) -> dict[int, str]:
    """Which dialog turn each imported message event is (the importer keeps their order)."""
    by_session: dict[int, list[Turn]] = defaultdict(list)
    for t in conv.turns:
        by_session[t.session].append(t)
    pending = {f"chatgpt:locomo-{conv.name}-{n}": list(ts) for n, ts in by_session.items()}
    out: dict[int, str] = {}
    for rec in app.store.log.records(0):
        if rec.type == "message" and rec.session in pending and pending[rec.session]:
            out[rec.seq] = pending[rec.session].pop(0).dia_id
    left = sum(len(v) for v in pending.values())
    if left:
        raise SystemExit(f"conversation {conv.name}: {left} turns were not imported as messages")
    return out


# --- the baselines ---------------------------------------------------------------------


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()) if w not in NLTK_STOP]


class BM25:
    """Okapi BM25 over the turns (k1 1.2, b 0.75; Robertson-Sparck Jones idf, floored at 0)."""

    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.tf = [Counter(words(d)) for d in docs]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(docs)
        self.idf = {w: max(0.0, math.log((n - f + 0.5) / (f + 0.5) + 1)) for w, f in df.items()}
        self.k1, self.b = k1, b

    def top(self, query: str, k: int) -> list[int]:
        q = set(words(query))
        scores = []
        for i, (tf, dl) in enumerate(zip(self.tf, self.len, strict=True)):
            s = 0.0
            for w in q:
                f = tf.get(w)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * dl / self.avg))
            if s > 0:
                scores.append((s, i))
        scores.sort(key=lambda x: (-x[0], x[1]))
        return [i for _s, i in scores[:k]]


# --- scoring ---------------------------------------------------------------------------


@dataclass
class Tally:
    n: int = 0
    hit: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))
    frac: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))

    def add(self, ranked: Sequence[str], evidence: set[str]) -> None:
        self.n += 1
        for k in KS:
            got = evidence & set(ranked[:k])
            self.hit[k] += bool(got)
            self.frac[k] += len(got) / len(evidence)


Results = dict[str, dict[str, dict[int, Tally]]]  # retriever -> conversation -> category -> tally


def import_once(conv: Conversation, home: Path) -> None:
    """Import ``conv`` into ``home`` as a user would (``memtray import chatgpt`` of a ChatGPT
    export written beside it), unless the home holds events already (a reused ``--workdir``)."""
    export = home.parent / f"{conv.name}-conversations.json"
    export.write_text(json.dumps(chatgpt_export(conv), ensure_ascii=False), encoding="utf-8")
    if not (home / "events").exists():
        t0 = time.perf_counter()
        summary = json.loads(memtray(home, "import", "chatgpt", str(export), "--json"))
        print(f"  conversation {conv.name}: imported {summary['messages']} messages in "
              f"{summary['items']} sessions ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)


def run_conversation(conv: Conversation, home: Path, args: argparse.Namespace, results: Results,
                     misses: list[str]) -> None:
    from memtray.core.app import App
    from memtray.core.base.home import Home

    import_once(conv, home)
    cli_seqs: list[list[int]] = []
    for q in conv.questions[: args.cli]:
        hits = json.loads(memtray(home, "history", "search", q.text, "--json", "--limit", "10", "--kind", "message"))
        cli_seqs.append([int(h["seq"]) for h in hits])

    app = App.open(Home.resolve(home))
    try:
        svc = app.search
        turns = seq_to_turn(app, conv)
        if args.embed:
            t0 = time.perf_counter()
            done = app.run(svc.backfill())
            print(f"  conversation {conv.name}: embedded {done} messages "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

        def ask(mode: str) -> Callable[[str], list[str]]:
            def go(question: str) -> list[str]:
                found = app.run(svc.asearch(question, mode=mode, limit=max(KS), kind="message"))
                return [turns[h.seq] for h in found.hits if h.seq in turns]
            return go

        bm25 = BM25([t.text for t in conv.turns])
        ids = [t.dia_id for t in conv.turns]
        retrievers: dict[str, Callable[[str], list[str]]] = {
            "memtray": ask("hybrid"),
            "bm25": lambda q: [ids[i] for i in bm25.top(q, max(KS))],
        }
        if args.embed:
            def dense(question: str) -> list[str]:  # plain cosine, no noise floor: the baseline
                (vec,) = app.run(svc.embedder.embed([question]))
                return [turns[s] for s, _cos in svc.vectors.search(vec, limit=max(KS)) if s in turns]
            retrievers["dense"] = dense
        for name, fn in retrievers.items():
            per_cat = results[name][conv.name]
            t0 = time.perf_counter()
            for q in conv.questions:
                ranked = fn(without_names(q.text, conv.speakers) if args.drop_names else q.text)
                per_cat[q.category].add(ranked, q.evidence)
                if name == "memtray" and args.show_misses and not q.evidence & set(ranked[:5]):
                    text = {t.dia_id: t.text for t in conv.turns}
                    misses.append(f"[{conv.name} c{q.category}] {q.text}\n    want: "
                                  + " | ".join(f"{e}: {text[e][:120]}" for e in sorted(q.evidence))
                                  + "\n    got:  " + " | ".join(f"{r}: {text[r][:60]}" for r in ranked[:3]))
            per_q = (time.perf_counter() - t0) / max(1, len(conv.questions)) * 1000
            print(f"  conversation {conv.name}: {name} {per_q:.1f} ms a question", file=sys.stderr)
        for i, q in enumerate(conv.questions[: args.cli]):
            found = app.run(svc.asearch(q.text, mode="hybrid", limit=max(KS), kind="message"))
            if [h.seq for h in found.hits] != cli_seqs[i]:
                raise SystemExit(f"`memtray history search` and the in-process search differ on {q.text!r}")
    finally:
        app.close()


def without_names(question: str, speakers: tuple[str, str]) -> str:
    """``question`` without the two speakers' names (``--drop-names``: an analysis of what
    the names cost, never the figure reported as recall)."""
    for name in speakers:
        question = re.sub(rf"\b{re.escape(name)}(?:'s)?\b", " ", question)
    return question


def latency(convs: Sequence[Conversation], home: Path) -> None:
    """Time the default search over all ``convs`` in one data home (module doc)."""
    from memtray.core.app import App
    from memtray.core.base.home import Home

    export = home.parent / "all-conversations.json"
    export.write_text(json.dumps([c for conv in convs for c in chatgpt_export(conv)], ensure_ascii=False),
                      encoding="utf-8")
    if not (home / "events").exists():
        summary = json.loads(memtray(home, "import", "chatgpt", str(export), "--json"))
        print(f"  one home: imported {summary['messages']} messages in {summary['items']} sessions", file=sys.stderr)
    questions = [q.text for conv in convs for q in conv.questions]
    load_before = os.getloadavg()
    app = App.open(Home.resolve(home))
    try:
        svc = app.search
        app.run(svc.asearch(questions[0], mode="hybrid", limit=10, kind="message"))  # the index caught up
        walls: list[float] = []
        cpus: list[float] = []
        for q in questions:
            w0, c0 = time.perf_counter(), time.process_time()
            app.run(svc.asearch(q, mode="hybrid", limit=10, kind="message"))
            walls.append((time.perf_counter() - w0) * 1000)
            cpus.append((time.process_time() - c0) * 1000)
        documents = svc.index.count()
    finally:
        app.close()
    cli: list[float] = []
    for q in questions[:10]:
        w0 = time.perf_counter()
        memtray(home, "history", "search", q, "--json", "--limit", "10", "--kind", "message")
        cli.append((time.perf_counter() - w0) * 1000)
    load_after = os.getloadavg()
    print(f"LoCoMo latency: {len(questions)} questions over one index of {documents} documents "
          f"({len(convs)} conversations)")
    print(f"  in-process wall ms  p50 {pct(walls, 50):.1f}  p90 {pct(walls, 90):.1f}  "
          f"p99 {pct(walls, 99):.1f}  max {max(walls):.1f}")
    print(f"  in-process CPU ms   p50 {pct(cpus, 50):.1f}  p90 {pct(cpus, 90):.1f}  p99 {pct(cpus, 99):.1f}")
    print(f"  `memtray history search` wall ms (10 questions, a new process each)  "
          f"p50 {pct(cli, 50):.0f}  max {max(cli):.0f}")
    print(f"  load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} CPUs)")


def table(results: Results, convs: Sequence[str], title: str) -> list[str]:
    lines = [f"{title} ({', '.join(convs)})", "",
             "| retriever | category | questions | recall@5 | recall@10 | evidence@5 | evidence@10 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, by_conv in results.items():
        total = Tally()
        for cat, label in [*CATEGORIES.items(), (0, "all")]:
            t = Tally()
            for c in convs:
                for k, tally in by_conv[c].items():
                    if cat in (0, k):
                        t.n += tally.n
                        for kk in KS:
                            t.hit[kk] += tally.hit[kk]
                            t.frac[kk] += tally.frac[kk]
            if cat == 0:
                total = t
            if not t.n:
                continue
            bold = "**" if cat == 0 else ""
            lines.append(f"| {name} | {label} | {t.n} | {bold}{t.hit[5] / t.n:.3f}{bold} | {t.hit[10] / t.n:.3f} "
                         f"| {t.frac[5] / t.n:.3f} | {t.frac[10] / t.n:.3f} |")
        del total
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="folder of the LoCoMo conversations (default: ../shared/data/locomo)")
    ap.add_argument("--convs", default="26,30,41,42,43")
    ap.add_argument("--tune", default="26,30,41", help="conversations the search was tuned on")
    ap.add_argument("--embed", action="store_true",
                    help="make the offline embeddings first; adds the dense baseline")
    ap.add_argument("--cli", type=int, default=3, metavar="N",
                    help="also run the first N questions of each conversation through `memtray history search`")
    ap.add_argument("--workdir", help="keep the data homes here and reuse them (default: a temp dir)")
    ap.add_argument("--show-misses", type=int, default=0, metavar="N", help="print N of memtray's misses at 5")
    ap.add_argument("--drop-names", action="store_true",
                    help="analysis: ask every retriever the questions without the speakers' names")
    ap.add_argument("--latency", action="store_true",
                    help="time the search over all the conversations in one data home instead")
    args = ap.parse_args()

    convs = load_asked(args.data, args.convs)
    if convs is None:
        return 0
    names = [c.name for c in convs]
    results: Results = defaultdict(lambda: defaultdict(lambda: defaultdict(Tally)))
    misses: list[str] = []
    if args.latency:
        with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
            root = Path(args.workdir) if args.workdir else Path(tmp)
            root.mkdir(parents=True, exist_ok=True)
            latency(convs, root / "home-all")
        return 0
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        root = Path(args.workdir) if args.workdir else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        for conv in convs:
            run_conversation(conv, root / f"home-{conv.name}", args, results, misses)

    print(f"LoCoMo recall, {sum(len(c.questions) for c in convs)} answerable questions over "
          f"{sum(len(c.turns) for c in convs)} turns ({sum(c.skipped for c in convs)} without usable evidence left out)")
    tune = [n for n in names if n in args.tune.split(",")]
    held = [n for n in names if n not in tune]
    print("\n".join(table(results, names, "all conversations")))
    for group, label in ((tune, "tuned on"), (held, "held out")):
        if group and group != names:
            print()
            print("\n".join(table(results, group, label)))
    for m in misses[: args.show_misses]:
        print(m)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
