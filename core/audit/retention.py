"""Retention score: how well consolidations keep what entered memory, measured, not assumed.

A *step* is one memory change (a consolidation, or an edit): the memory before
and after it, the removals it listed with a reason, the facts the model dropped
without one (before the guard put them back), and the messages it consumed.
:func:`score` folds steps into:

* **survival@K** -- of the facts that ever entered memory, the share still
  present after step K or removed with a recorded reason (listed by the model,
  held for review, or removed by the user); a reworded fact survives as its
  new wording. A fact that disappeared without a reason is *lost*.
* **silent drops** per step -- facts the model's proposal dropped without a
  reason, before the guard kept them (policy ``keep``) or held them (``review``).
* **unsupported insertions** -- facts a model added whose content words trace to
  no message seen so far (:func:`supported`).
* **supersession accuracy** (corpora with known supersessions) -- the newer fact
  kept, the older gone with a reason.

Steps come from three places: :func:`run_eval` (a scratch data home: the
conversation is replayed through K consolidations by the real consolidation
service, with any litellm model), :func:`history_steps` (the current memory's
own history, from the log) and the rebuild module (a rebuild branch's steps).
The user's data home is only ever read here.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtray import resources
from memtray.core.base.clock import Clock, parse_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.llm.client import DeltaCallback, LLMClient, LLMResult, Request
from memtray.core.log.events import ConsolidationCompleted, MemoryWritten, Message, Record
from memtray.core.memory import factdiff
from memtray.core.memory.facts import Ledger
from memtray.core.memory.ledgers import diff_by_id

if TYPE_CHECKING:
    from memtray.core.base.config import Config
    from memtray.core.base.home import Home

Progress = Callable[[int, int, str], None]


class RetentionError(MemtrayError):
    """The retention evaluation could not run as asked."""


# --- the corpus --------------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusFact:
    id: str
    text: str
    section: str
    match: tuple[str, ...]
    unless: tuple[str, ...] = ()
    supersedes: str | None = None

    def matches(self, fact_text: str) -> bool:
        """True if a memory fact states this corpus fact (every ``match`` word, no ``unless`` word)."""
        tokens = re.findall(r"\w+", factdiff.normalize(fact_text))

        def has(word: str) -> bool:
            parts = word.casefold().split()
            return all(any(t.startswith(p) for t in tokens) for p in parts)

        return all(has(w) for w in self.match) and not any(has(w) for w in self.unless)


@dataclass
class Corpus:
    """A conversation to replay, and (for the synthetic one) the facts it states."""

    name: str
    messages: list[dict[str, Any]]  # role, content, ts
    facts: dict[str, CorpusFact] = field(default_factory=dict)

    @property
    def supersessions(self) -> list[tuple[CorpusFact, CorpusFact]]:
        return [(self.facts[f.supersedes], f) for f in self.facts.values() if f.supersedes]


def synthetic_corpus() -> Corpus:
    """The built-in corpus (resources/corpus/synthetic.json)."""
    doc = json.loads(resources.text("corpus/synthetic.json"))
    facts = {
        f["id"]: CorpusFact(f["id"], f["text"], f["section"], tuple(f["match"]), tuple(f.get("unless", ())),
                            f.get("supersedes"))
        for f in doc["facts"]
    }
    start = parse_ts(doc["start"])
    step = timedelta(minutes=doc["minutes_between_turns"])
    messages: list[dict[str, Any]] = []
    for i, turn in enumerate(doc["turns"]):
        t = start + i * step
        messages.append({"role": "user", "content": turn["user"], "ts": _iso(t)})
        messages.append({"role": "assistant", "content": turn["assistant"], "ts": _iso(t + timedelta(seconds=20))})
    return Corpus(doc["name"], messages, facts)


def own_corpus(home: Home) -> Corpus:
    """The user's own conversation, read from the log (read-only; every session, in log order)."""
    from memtray.core.log.eventlog import EventLog

    if not home.events.exists():
        raise RetentionError(f"there is no event log in {home.root} yet",
                             hint="Chat first, or use --corpus synthetic.")
    elog = EventLog.open(home.events, readonly=True)
    try:
        messages = [
            {"role": m.role, "content": m.content, "ts": r.ts, "seq": r.seq}
            for r in elog.records()
            if r.type == Message.TYPE and (m := Message.of(r)).role in ("user", "assistant") and m.content
        ]
    finally:
        elog.close()
    if not any(m["role"] == "user" for m in messages):
        raise RetentionError("your log has no conversation to replay yet", hint="Use --corpus synthetic.")
    return Corpus("own", messages)


def _iso(t: datetime) -> str:
    from memtray.core.base.clock import format_ts

    return format_ts(t)


def chunks(messages: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    """Split a conversation into at most ``k`` consecutive parts of similar size, each
    starting at a user message (a consolidation never splits a question from its answer)."""
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"] or [0]
    if starts[0] != 0:
        starts[0] = 0
    k = max(1, min(k, len(starts)))
    cut = [starts[round(j * len(starts) / k)] for j in range(k)] + [len(messages)]
    return [messages[cut[j]:cut[j + 1]] for j in range(k) if cut[j] < cut[j + 1]]


# --- steps and the score -----------------------------------------------------------------


@dataclass
class StepInput:
    """One memory change, as the scorer sees it."""

    label: str
    kind: str  # model | user
    before: str
    after: str
    #: facts (id in ``before``) removed with a recorded reason
    reasons: dict[str, str] = field(default_factory=dict)
    #: facts the model dropped without a reason, before the guard acted
    silent: list[dict[str, Any]] = field(default_factory=list)
    silent_count: int | None = None  # when only the number is known (history of main)
    held: set[str] = field(default_factory=set)  # fact ids held for review
    sources: list[str] = field(default_factory=list)  # texts of the messages consumed
    failed: str | None = None
    ts: str | None = None
    #: the fact ids of ``before`` and ``after`` (their events' ``facts``): the step is then
    #: scored by id, never by pairing words; ``reasons``, ``silent`` and ``held`` may name
    #: facts by fact id or by content id
    ids_before: Ledger | None = None
    ids_after: Ledger | None = None

    def ledgers(self) -> tuple[Ledger, Ledger] | None:
        """(before, after) with ids when both are known and name this step's texts."""
        a, b = self.ids_before, self.ids_after
        if a is None or b is None:
            return None
        if [f.norm for f in a.facts] != [f.norm for f in factdiff.parse(self.before)] or [
                f.norm for f in b.facts] != [f.norm for f in factdiff.parse(self.after)]:
            return None
        return a, b


@dataclass
class StepScore:
    index: int
    label: str
    kind: str
    facts: int
    added: int
    removed: int
    changed: int
    silent: int
    silent_rate: float
    kept: int
    lost: int
    unsupported: list[str]
    survival: float
    failed: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Score:
    steps: list[StepScore]
    ever: int
    survived: int
    lost: list[str]
    unsupported: list[dict[str, Any]]
    supersession: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    #: corpus facts the conversation stated that no revision of memory ever held
    never: list[str] = field(default_factory=list)

    @property
    def survival(self) -> float:
        """Of the facts that entered memory or should have (a corpus fact never written counts
        as lost), the share still there or removed with a reason."""
        total = self.ever + len(self.never)
        return self.survived / total if total else 1.0

    @property
    def silent_total(self) -> int:
        return sum(s.silent for s in self.steps)

    @property
    def silent_rate(self) -> float:
        """Mean share of the memory's facts silently dropped per model step."""
        rates = [s.silent_rate for s in self.steps if s.kind == "model" and not s.failed]
        return sum(rates) / len(rates) if rates else 0.0

    @property
    def failures(self) -> int:
        return sum(1 for s in self.steps if s.failed)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.meta,
            "consolidations": sum(1 for s in self.steps if s.kind == "model"),
            "survival": round(self.survival, 4),
            "facts_ever": self.ever,
            "facts_survived": self.survived,
            "lost": self.lost,
            "never_remembered": self.never,
            "silent_drops": self.silent_total,
            "silent_drop_rate": round(self.silent_rate, 4),
            "unsupported_insertions": self.unsupported,
            "failures": self.failures,
            "supersession": self.supersession,
            "steps": [s.to_json() for s in self.steps],
        }


@functools.cache
def _stopwords() -> frozenset[str]:
    text: str = resources.text("corpus/stopwords.txt")
    return frozenset(w for line in text.splitlines() if not line.startswith("#") for w in line.split())


def _tokens(text: str) -> set[str]:
    words = re.findall(r"[^\W_]+", factdiff.normalize(text))
    stop = _stopwords()
    return {w for w in words if w not in stop and (len(w) > 2 or w.isdigit())}


def supported(fact: str, pool: set[str], stems: set[str]) -> bool:
    """True if at least half of the fact's content words occur in the messages seen so far
    (a shared 5-letter stem counts, so "allergic" is supported by "allergy")."""
    toks = _tokens(fact)
    if not toks:
        return True
    hits = sum(1 for t in toks if t in pool or (len(t) >= 5 and t[:5] in stems))
    return hits * 2 >= len(toks)


def score(steps: Iterable[StepInput], corpus: Corpus | None = None, meta: dict[str, Any] | None = None) -> Score:
    """Fold steps into the retention score (see the module doc). Pure."""
    status: dict[str, Any] = {}  # fact id -> "present" | "removed" | "held" | "lost" | ("reworded", id)
    texts: dict[str, str] = {}
    pool: set[str] = set()
    stems: set[str] = set()
    rows: list[StepScore] = []
    unsupported: list[dict[str, Any]] = []
    current: list[factdiff.Fact] = []
    held_ever: list[str] = []  # every memory text any step started from or left
    consolidated: list[str] = []  # the messages of the steps that did not fail
    for i, st in enumerate(steps, 1):
        held_ever += [st.before, st.after]
        if not st.failed:
            consolidated += st.sources
        for text in st.sources:
            toks = _tokens(text)
            pool |= toks
            stems |= {t[:5] for t in toks if len(t) >= 5}
        led = st.ledgers()
        if i == 1:
            for f in led[0].facts if led else factdiff.parse(st.before):  # memory the run started from
                status[f.id] = "present"
                texts[f.id] = f.text
        silent = st.silent_count if st.silent_count is not None else len(st.silent)
        before_n = len(factdiff.parse(st.before))
        if st.failed:
            rows.append(StepScore(i, st.label, st.kind, before_n, 0, 0, 0, 0, 0.0, 0, 0, [],
                                  _survival(status, {f.id for f in current}), st.failed))
            continue
        if led is not None:
            d = diff_by_id(*led)
            after = list(led[1].facts)
            # content id -> fact id of the memory before, for reasons and drops named by their words
            alias = {c.id: f.id for c, f in zip(factdiff.parse(st.before), led[0].facts, strict=True)}
        else:
            d = factdiff.diff(st.before, st.after)
            after = factdiff.parse(st.after)
            alias = {}
        reasons = {alias.get(k, k) for k in st.reasons}
        held = {alias.get(k, k) for k in st.held}
        after_ids = {f.id for f in after}
        lost = 0
        for f in d.dropped:
            texts[f.id] = f.text
            if f.id in reasons:
                status[f.id] = "removed"
            elif f.id in held:
                status[f.id] = "held"
            else:
                status[f.id] = "lost"
                lost += 1
        for old, new in d.changed:
            texts[old.id] = old.text
            status[old.id] = "removed" if old.id in reasons else ("reworded", new.id)
        bad: list[str] = []
        for f in d.added + [n for _o, n in d.changed]:
            if st.kind == "model" and not supported(f.text, pool, stems):
                bad.append(f.text)
                unsupported.append({"step": i, "label": st.label, "fact": f.text})
        for f in after:
            status[f.id] = "present"
            texts[f.id] = f.text
        current = after
        kept = sum(1 for s in st.silent if alias.get(str(s.get("id")), s.get("id")) in after_ids) \
            if st.silent_count is None else silent
        rows.append(StepScore(
            i, st.label, st.kind, len(after), len(d.added), len(d.dropped), len(d.changed), silent,
            silent / before_n if before_n else 0.0, kept, lost, bad, _survival(status, after_ids),
        ))
    final_ids = {f.id for f in current}
    survived = sum(1 for fid in status if _survives(status, fid, final_ids))
    lost_texts = [texts[fid] for fid in status if not _survives(status, fid, final_ids)]
    out = Score(rows, len(status), survived, lost_texts, unsupported, meta=dict(meta or {}))
    if corpus is not None and corpus.facts:
        out.supersession = _supersession(corpus, current, status, texts)
        out.never = _never_remembered(corpus, held_ever, consolidated)
    return out


def _never_remembered(corpus: Corpus, memories: list[str], consolidated: list[str]) -> list[str]:
    """Corpus facts that a consolidated message states and no revision ever held. A superseded
    fact whose successor was held is not counted: writing only the newer one (both stated in
    one consolidation) is right."""
    texts = {f.text for m in set(memories) for f in factdiff.parse(m)}
    held = {cf.id for cf in corpus.facts.values() if any(cf.matches(t) for t in texts)}
    successor = {cf.supersedes: cf.id for cf in corpus.facts.values() if cf.supersedes}
    return [cf.text for cf in corpus.facts.values()
            if cf.id not in held and successor.get(cf.id) not in held
            and any(cf.matches(m) for m in consolidated)]


def _survives(status: dict[str, Any], fid: str, present: set[str]) -> bool:
    seen: set[str] = set()
    while True:
        st = status.get(fid)
        if isinstance(st, tuple):
            if fid in seen:
                return False
            seen.add(fid)
            fid = st[1]
            continue
        if st == "present":
            return fid in present
        return st in ("removed", "held")


def _survival(status: dict[str, Any], present: set[str]) -> float:
    if not status:
        return 1.0
    return sum(1 for fid in status if _survives(status, fid, present)) / len(status)


def _supersession(
    corpus: Corpus, final: list[factdiff.Fact], status: dict[str, Any], texts: dict[str, str]
) -> dict[str, Any]:
    pairs = []
    for old, new in corpus.supersessions:
        new_kept = any(new.matches(f.text) for f in final)
        old_present = any(old.matches(f.text) for f in final)
        old_seen = [fid for fid, t in texts.items() if old.matches(t)]
        # an unlisted rewording of the old fact is not a recorded removal: the model gave no reason
        old_recorded = all(status.get(fid) in ("removed", "held", "present") for fid in old_seen)
        ok = new_kept and not old_present and old_recorded
        pairs.append({"old": old.text, "new": new.text, "new_kept": new_kept, "old_removed": not old_present,
                      "old_ever_in_memory": bool(old_seen), "reason_recorded": old_recorded, "correct": ok})
    correct = sum(1 for p in pairs if p["correct"])
    return {"correct": correct, "total": len(pairs), "accuracy": round(correct / len(pairs), 4) if pairs else None,
            "pairs": pairs}


# --- evaluating a model in a scratch data home -------------------------------------------


class _ReplayClock(Clock):
    """The scratch home's clock: set to each replayed message's time, so prompts carry it."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        self._now = max(self._now, when)


class _RecordingLLM(LLMClient):
    """The real client, remembering each ``save_memory`` call's raw arguments (the proposal
    before the guard)."""

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self.proposals: list[str] = []

    async def complete(self, req: Request, on_delta: DeltaCallback | None = None) -> LLMResult:
        result = await super().complete(req, on_delta)
        self.proposals.extend(tc.arguments for tc in result.tool_calls if tc.name == "save_memory")
        return result


def proposal_drops(before: str, proposed: str, removed: list[dict[str, str]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Silently dropped facts of a proposal and the listed removals, as the guard judges them."""
    from memtray.core.memory.guard import guard

    try:
        g = guard(before, proposed, removed, "review", enabled=True)
        silent = [{"id": it["fact_id"], "text": it["text"], "section": it.get("section", "")}
                  for it in g.flagged if it["kind"] == "silent-drop"]
        return silent, g.reasons
    except ValueError:  # a shrunken proposal: the guard refuses it whole
        g = guard(before, proposed, removed, "review", enabled=False)
        d = factdiff.diff(before, proposed)
        return [{"id": f.id, "text": f.text, "section": f.section} for f in d.dropped if f.id not in g.reasons], g.reasons


def run_eval(
    corpus: Corpus,
    config: Config,
    *,
    consolidations: int,
    policy: str = "keep",
    guard: bool = True,
    on_progress: Progress | None = None,
) -> Score:
    """Replay ``corpus`` through ``consolidations`` consolidations in a throw-away data home."""
    from memtray.core.app import App
    from memtray.core.base.home import Home
    from memtray.core.memory.consolidation import ConsolidationFailedError
    from memtray.core.memory.guard import parse_arguments

    model = config.model or LLMClient(config).model  # the offline model when none is configured
    if not model:
        raise RetentionError("no model to evaluate", hint="Pass --model MODEL or set one with `memtray config set model`.")
    parts = chunks(corpus.messages, consolidations)
    cfg = replace(config, model=model, drop_policy=policy, memory_window=100_000, idle_consolidate_minutes=0)
    steps: list[StepInput] = []
    with tempfile.TemporaryDirectory(prefix="memtray-eval-") as tmp:
        home = Home.resolve(Path(tmp) / "home")
        clock = _ReplayClock(parse_ts(corpus.messages[0]["ts"]) if corpus.messages else datetime.now(UTC))
        llm = _RecordingLLM(cfg)
        app = App.open(home, clock=clock, config=cfg, llm=llm, start_services=False)
        try:
            cons = app.consolidation
            cons.guard_enabled = guard
            pending: list[str] = []
            for i, part in enumerate(parts, 1):
                if on_progress is not None:
                    on_progress(i - 1, len(parts), f"consolidation {i}/{len(parts)}")
                for m in part:
                    clock.set(parse_ts(m["ts"]))
                    app.store.append(Message(role=m["role"], content=m["content"]), session="eval")
                    pending.append(m["content"])
                before = app.store.state.memory
                llm.proposals.clear()
                failed = None
                held: set[str] = set()
                ids_before = app.memory.ledger()
                ids_after: Ledger | None = None
                try:
                    out = app.run(cons.consolidate("eval", archive_all=True, trigger="eval"))
                    for r in app.store.log.tail(4):
                        if r.seq == out.memory_seq:
                            w = MemoryWritten.of(r)
                            held = {it["fact_id"] for it in w.flagged or [] if it["kind"] == "silent-drop"}
                            ids_after = Ledger.of(w.memory, w.facts)
                except ConsolidationFailedError as exc:
                    failed = str(exc)
                after = app.store.state.memory
                silent: list[dict[str, Any]] = []
                reasons: dict[str, str] = {}
                if llm.proposals and not failed:
                    try:
                        _entry, update, removed = parse_arguments(llm.proposals[-1])
                        silent, reasons = proposal_drops(before, update, removed)
                    except ValueError:
                        pass
                steps.append(StepInput(f"consolidation {i}", "model", before, after, reasons, silent, None, held,
                                       [] if failed else list(pending), failed, _iso(clock.now()),
                                       ids_before, ids_after if ids_after is not None else ids_before))
                if not failed:
                    pending = []
            if on_progress is not None:
                on_progress(len(parts), len(parts), "done")
        finally:
            app.close()
    meta = {"corpus": corpus.name, "model": cfg.model, "policy": policy, "guard": guard,
            "messages": len(corpus.messages), "requested_consolidations": consolidations}
    return score(steps, corpus, meta)


# --- scoring memory history from the log -------------------------------------------------


def _keys(item: Mapping[str, Any]) -> list[str]:
    """The ids a diff item may be scored under: its fact id (newer events diff by fact id)
    and the content id :func:`score` computes from the text (older events used that)."""
    keys = [str(item["id"])]
    parsed = factdiff.parse(f"- {item.get('text', '')}\n")
    if parsed and parsed[0].id not in keys:
        keys.append(parsed[0].id)
    return keys


def history_steps(records: Iterable[Record]) -> list[StepInput]:
    """The current memory's history as steps: every ``memory.written`` in the log.

    Silent drops are known only by number here: the guard's ``kept`` count of each
    consolidation plus the silent drops it held for review.
    """
    steps: list[tuple[StepInput, str | None]] = []
    memory = ""
    pending: list[str] = []
    kept: dict[str, int] = {}
    ids_prev = Ledger(())
    for rec in records:
        if rec.type == Message.TYPE:
            m = Message.of(rec)
            if m.role in ("user", "assistant") and m.content:
                pending.append(m.content)
            continue
        if rec.type == ConsolidationCompleted.TYPE:
            c = ConsolidationCompleted.of(rec)
            kept[c.consolidation] = c.kept
            continue
        if rec.type != MemoryWritten.TYPE:
            continue
        d = MemoryWritten.of(rec)
        reason = d.reason
        by_model = d.source == "model"
        reasons: dict[str, str] = {}
        for item in d.diff["dropped"] if d.diff else []:
            # the writer records the write's own reason for a drop nobody explained: that one is lost
            if not (by_model and reason in ("consolidation", "redo") and item.get("reason") == reason):
                for key in _keys(item):
                    reasons[key] = item.get("reason") or reason
        if not by_model:
            for ch in d.diff["changed"] if d.diff else []:
                for key in _keys(ch["old"]):
                    reasons[key] = reason
        held = {it["fact_id"] for it in d.flagged or [] if it["kind"] == "silent-drop"}
        ids = Ledger.of(d.memory, d.facts) if d.facts is not None else None
        st = StepInput(f"{reason} #{rec.seq}", "model" if by_model else "user", memory, d.memory, reasons,
                       held=held, sources=pending, ts=rec.ts, ids_before=ids_prev if ids is not None else None,
                       ids_after=ids)
        steps.append((st, d.consolidation))
        pending = []
        memory = d.memory
        ids_prev = ids if ids is not None else Ledger(())
    for st, cid in steps:
        st.silent_count = len(st.held) + kept.get(cid or "", 0)
    return [st for st, _cid in steps]
