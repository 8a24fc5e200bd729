"""What both sides of the nanobot comparison share: the conversation, the policy, the wire.

Standard library only: this module is imported by the memtray worker (memtray's
venv) and by the nanobot worker (nanobot's own throwaway venv).

* :func:`conversation` is the synthetic conversation, identical on both sides.
* :func:`pointer_after` is the one consolidation policy both sides follow
  (memtray's default: when ``WINDOW`` messages are unconsolidated, fold all but
  the newest ``WINDOW // 2``), so both send the same unconsolidated tail.
* :func:`serve` is the JSON-lines loop a worker runs: one request per line on
  stdin, one reply per line on the *original* stdout (library chatter that
  prints is sent to stderr so it cannot corrupt the protocol);
  :func:`serve_side` serves a side's methods named in :data:`OPS`.
* :func:`prefix_shares` measures prompt-prefix stability on serialised requests.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

WINDOW = 100
KEEP = WINDOW // 2

_TOPICS = ["tea", "trains", "the weather in Lyon", "a birthday present", "the quarterly report",
           "sourdough", "a flight to Lisbon", "the dentist", "chess openings", "a Python traceback"]
_MEMORY_FACTS = [f"- The user {verb} {obj}." for verb, obj in zip(
    ["likes", "prefers", "lives near", "works on", "plays", "avoids", "is learning", "visits",
     "drinks", "reads"] * 3,
    ["green tea", "dark mode", "Lyon", "a Rust parser", "chess", "meetings before 10",
     "Portuguese", "Lisbon every spring", "oat milk", "science fiction", "jazz", "cycling",
     "the Alps", "vim", "board games", "sushi", "podcasts", "photography", "yoga", "sourdough",
     "Kubernetes", "Berlin", "the quarterly report", "trains", "Python", "hiking", "mornings",
     "the dentist", "chess openings", "tea"], strict=False)]


def memory_text(revision: int = 0) -> str:
    """MEMORY.md after ``revision`` consolidations: each adds a fact, the oldest of
    more than 30 such facts is folded away, so memory stays a few KiB as it would."""
    facts = _MEMORY_FACTS + [f"- Consolidation {i} noted topic {_TOPICS[i % len(_TOPICS)]}."
                             for i in range(max(0, revision - 30), revision)]
    return "# About the user\n\n" + "\n".join(facts) + "\n"


def message(i: int, seed: int = 7) -> tuple[str, str]:
    """(role, text) of message ``i``: a user question, then an assistant answer."""
    rng = random.Random(seed * 1_000_003 + i)
    topic = rng.choice(_TOPICS)
    if i % 2 == 0:
        return "user", f"Message {i}: what should I know about {topic}? " + " ".join(
            rng.choice(["please", "briefly", "today", "again", "also", "maybe"]) for _ in range(rng.randint(4, 16)))
    words = " ".join(rng.choice(["Sure", "the", "of", topic, "is", "and", "a", "you", "can", "it"])
                     for _ in range(rng.randint(40, 90)))
    return "assistant", f"About {topic} (reply {i}): {words}."


def conversation(n: int, seed: int = 7) -> list[tuple[str, str]]:
    return [message(i, seed) for i in range(n)]


def pointer_after(n: int) -> list[tuple[int, int]]:
    """Consolidations ``(start, end)`` that the policy makes over ``n`` messages.

    Checked after every assistant message (end of a turn), as memtray's trigger is.
    """
    out: list[tuple[int, int]] = []
    pointer = 0
    for count in range(1, n + 1):
        if count % 2 == 0 and count - pointer >= WINDOW:
            out.append((pointer, count - KEEP))
            pointer = count - KEEP
    return out


def prefix_shares(prompts: list[bytes], consolidated: list[bool]) -> dict[str, Any]:
    """Prompt-prefix stability between consecutive requests.

    For each turn t > 0, ``c`` = length of the longest common prefix of the
    serialised requests t-1 and t. ``reuse`` = c / len(request t-1): the share of
    the previous request that a provider prompt cache can serve again (1.0 minus
    the closing bracket when history is append-only). ``cached`` = c / len(request t):
    the share of the new request that was already cached; it is bounded by how much
    new text a turn adds, whatever the design. ``consolidated[t]`` marks turns
    where a consolidation landed between t-1 and t (memory and history start move).
    """
    steady_reuse, steady_cached, cons_reuse, cons_cached = [], [], [], []
    for t in range(1, len(prompts)):
        a, b = prompts[t - 1], prompts[t]
        c = _common_prefix(a, b)
        if consolidated[t]:
            cons_reuse.append(c / len(a))
            cons_cached.append(c / len(b))
        else:
            steady_reuse.append(c / len(a))
            steady_cached.append(c / len(b))

    def summary(xs: list[float]) -> dict[str, float] | None:
        if not xs:
            return None
        s = sorted(xs)
        return {"min": s[0], "median": s[len(s) // 2], "mean": sum(s) / len(s), "n": len(s)}

    return {
        "steady_reuse": summary(steady_reuse), "steady_cached": summary(steady_cached),
        "consolidation_reuse": summary(cons_reuse), "consolidation_cached": summary(cons_cached),
        "prompt_bytes_last": len(prompts[-1]) if prompts else 0,
    }


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def serialize(messages: list[dict[str, Any]]) -> bytes:
    """The request's messages as the HTTP body carries them (order kept, compact)."""
    return json.dumps(messages, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of one call: CPU time is the load-robust figure on a busy machine."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def serve(handlers: dict[str, Callable[..., Any]]) -> None:
    """Answer JSON-lines requests ``{"op": name, ...}`` until stdin closes."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # anything a library prints goes to stderr, not the wire
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.pop("op")
        try:
            reply = {"ok": True, "result": handlers[op](**req)}
        except Exception as exc:  # reported to the driver, which stops
            import traceback

            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        out.write(json.dumps(reply) + "\n")


#: The operations the driver asks of a side (a side that has no need of one, e.g. ``close``, leaves it out).
OPS = ("setup", "load", "open", "build", "persist", "prefix", "close")


def serve_side(side: object, version: Callable[[], str]) -> None:
    """:func:`serve` ``side``'s methods named in :data:`OPS`, and ``version`` (of the system measured)."""
    serve({op: getattr(side, op) for op in OPS if hasattr(side, op)} | {"version": version})
