"""A fork server for crash tests: imports memtray (and litellm) once, forks a writer per kill.

Starting a fresh interpreter costs ~0.3 s (8 s with litellm), which would make
hundreds of kills too slow for CI. This process imports everything once, then
for each request (one JSON line on stdin) forks a child that opens the data
home exactly as memtray does and writes until it is killed. The child prints
``start <pid> <last_seq>``, then ``ack <seq> ...`` after each durable append
(the store calls its listeners only after fsync), then ``done``. When the child
is gone the server prints ``exit <pid> <signal or -code>``. The parent
(:mod:`tests.crash.harness`) reads the acks and sends SIGKILL to the child.

Modes:

* ``log`` -- append message events (group commits of 1-3, 0-3000 bytes each,
  optionally written in several pieces so a kill can tear a record), with the
  odd checkpoint in between.
* ``consolidate`` -- the whole app against the scripted LLM server: append a
  few messages, consolidate, repeat. ``crash_at`` names a point where the child
  SIGKILLs itself: ``consolidation.started`` (the event is durable),
  ``consolidation.replied`` (the reply arrived, nothing written),
  ``memory.appended`` (the memory.written append is durable, no commit),
  ``git.ref-updated`` (the branch moved, the work tree not yet written),
  ``memory.committed`` (after the commit), ``consolidation.completed`` (after
  everything). The ``crash_point`` hooks in core/ (memory service, consolidation,
  git repo) are used where they exist (MEMTRAY_TEST_CRASH_AT); otherwise the
  point is made here. Without ``crash_at`` the parent kills at a random moment.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")

from memtray.core.base.faults import SplitWriteFileOps  # noqa: E402
from memtray.core.base.home import Home  # noqa: E402
from memtray.core.log.events import Message  # noqa: E402
from memtray.core.log.store import Store  # noqa: E402

#: every step a consolidation is killed at, in order
CRASH_POINTS = ("consolidation.started", "consolidation.replied", "memory.appended", "git.ref-updated",
                "memory.committed", "consolidation.completed")


def _hooked() -> frozenset[str]:
    """Points with a ``crash_point(name)`` hook in core (MEMTRAY_TEST_CRASH_AT); the others
    are done here: a store listener (after a durable append) or a wrapper around the model."""
    src = "".join(p.read_text() for p in (ROOT / "core").rglob("*.py"))
    return frozenset(p for p in CRASH_POINTS if f'crash_point("{p}")' in src)


HOOK_POINTS = _hooked()
LOCAL_POINTS = tuple(p for p in CRASH_POINTS if p not in HOOK_POINTS)
WORDS = ("apple", "river", "violin", "garden", "Lyon", "tea", "chess", "Ada", "piano", "orchard",
         "kayak", "Oslo", "basil", "comet", "maple", "sonnet")


def out(line: str) -> None:
    os.write(1, (line + "\n").encode())


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def child_log(p: dict[str, Any]) -> None:
    rng = random.Random(p["seed"])
    files = SplitWriteFileOps(rng) if p.get("split") else None
    store = Store.open(Home.resolve(p["home"]), segment_bytes=int(p["segment_bytes"]), files=files)
    out(f"start {os.getpid()} {store.log.last_seq}")
    for i in range(int(p["n"])):
        items = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            body = f"m{i} " + "x" * rng.choice((0, 10, 200, 1500, 3000))
            items.append((Message(role=rng.choice(("user", "assistant")), content=body),
                          f"s{rng.randrange(3)}", None))
        recs = store.append_many(items)
        out("ack " + " ".join(str(r.seq) for r in recs))
        if rng.random() < 0.04:
            store.checkpoint()
    store.close()
    out("done")


def child_consolidate(p: dict[str, Any]) -> None:
    from memtray.core.app import App
    from memtray.core.base.config import Config
    from memtray.core.memory.consolidation import ConsolidationFailedError

    rng = random.Random(p["seed"])
    crash_at = p.get("crash_at")
    if crash_at in HOOK_POINTS:
        os.environ["MEMTRAY_TEST_CRASH_AT"] = crash_at
    cfg = Config(model="openai/test-model", api_base=p["base_url"], llm_retries=0, llm_timeout=30.0,
                 memory_window=6, consolidation_timeout=60.0, idle_consolidate_minutes=0)
    app = App.open(Home.resolve(p["home"]), config=cfg)

    def acker(recs: list[Any], _state: Any) -> None:
        out("ack " + " ".join(str(r.seq) for r in recs))
        types = {r.type for r in recs}
        if crash_at in LOCAL_POINTS and crash_at in types:
            die()

    app.store.subscribe(acker)
    if crash_at == "consolidation.replied" and crash_at in LOCAL_POINTS:
        complete = app.llm.complete

        async def replied_then_die(*a: Any, **kw: Any) -> Any:
            await complete(*a, **kw)
            die()

        app.llm.complete = replied_then_die  # type: ignore[method-assign]
    out(f"start {os.getpid()} {app.store.log.last_seq}")
    cons = app.consolidation
    memory = app.memory
    for _ in range(int(p["rounds"])):
        for _ in range(rng.randint(2, 5)):
            words = " ".join(rng.sample(WORDS, 3))
            app.store.append(Message(role="user", content=f"note {rng.randrange(10**6)} {words}"),
                             session="quick")
            app.store.append(Message(role="assistant", content="noted"), session="quick")
        if rng.random() < 0.2:
            memory.remember(f"likes {rng.choice(WORDS)} {rng.randrange(1000)}", "Preferences",
                            model=None, source_seq=None)
        out("phase consolidating")
        try:
            res = app.run(cons.consolidate("quick", trigger="manual"))
        except ConsolidationFailedError as exc:
            out(f"failed {exc}")
        else:
            out(f"consolidated {res.memory_seq}")
    app.close()
    out("done")


#: the commands of the campaign (``ops`` mode), as a user types them
OPS = ("ask", "ask-remember", "consolidate", "rollback", "restore-fact", "redo", "rebuild", "undo")


def _log_records(home: Path) -> list[Any]:
    from memtray.core.log.eventlog import EventLog

    elog = EventLog.open(home / "events", readonly=True)
    try:
        return list(elog.records())
    finally:
        elog.close()


def _argv_for(op: str, home: Path, rng: random.Random, n: int) -> list[str] | None:
    """The command line for ``op`` given what the log holds now (None: nothing to do)."""
    recs = _log_records(home)
    words = " ".join(rng.sample(WORDS, 3))
    if op == "ask":
        return ["ask", f"note {n} {words}"]
    if op == "ask-remember":
        return ["ask", f"please remember {n} {words}"]
    if op == "consolidate":
        return ["consolidate"]
    if op == "rollback":
        written = [r for r in recs if r.type == "memory.written"]
        return ["memory", "rollback", "HEAD~1"] if len(written) >= 2 else None
    if op == "restore-fact":  # a fact some revision dropped that memory does not hold now
        written = [r for r in recs if r.type == "memory.written"]
        held = set(((written[-1].data.get("facts") or {}).get("ids") or []) if written else [])
        for r in reversed(written):
            for d in (r.data.get("diff") or {}).get("dropped") or []:
                fid = d.get("id") if isinstance(d, dict) else None
                if fid and fid not in held:
                    return ["memory", "restore-fact", str(fid)]
        return None
    if op == "redo":  # mostly the last consolidation (an older one's redo drops the facts after it)
        done = [r.data["consolidation"] for r in recs if r.type == "consolidation.completed"]
        if not done:
            return None
        return ["memory", "redo", done[-1] if rng.random() < 0.7 else rng.choice(done)]
    if op == "rebuild":
        return ["memory", "rebuild", "--model", "openai/test-model", "--name", f"r{rng.randrange(3)}"]
    if op == "undo":  # a consolidation, or the last revision
        done = [r.data["consolidation"] for r in recs if r.type == "consolidation.completed"]
        written = [r for r in recs if r.type == "memory.written"]
        if done and rng.random() < 0.5:
            return ["memory", "undo", rng.choice(done)]
        return ["memory", "undo", "HEAD"] if written else None
    return None


def child_ops(p: dict[str, Any]) -> None:
    """Run ``p["commands"]`` random memtray commands through the real CLI entry, one after
    another (each opens the home, works, closes it, as a process would), acknowledging
    every durable append; the parent kills at a random moment."""
    import contextlib
    import io

    from memtray.core.cli.main import main
    from memtray.core.log.store import Store

    home = Path(p["home"])
    os.environ.update({"MEMTRAY_HOME": str(home), "MEMTRAY_MODEL": "openai/test-model",
                       "MEMTRAY_API_BASE": p["base_url"], "MEMTRAY_NO_DESKTOP": "1", "MEMTRAY_NO_WARM": "1",
                       "OPENAI_API_KEY": "sk-test-crash-campaign"})
    append_many = Store.append_many

    def acking(self: Store, items: Any) -> Any:
        recs = append_many(self, items)
        out("ack " + " ".join(str(r.seq) for r in recs))
        return recs

    Store.append_many = acking  # type: ignore[method-assign]
    rng = random.Random(p["seed"])
    ops = list(p.get("ops") or OPS)
    out(f"start {os.getpid()} 0")
    for i in range(int(p["commands"])):
        op = rng.choice(ops)
        argv = _argv_for(op, home, rng, p["seed"] % 100_000 + i)
        if argv is None:
            continue
        out("cmd " + op)
        buf_out, buf_err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(buf_out), contextlib.redirect_stderr(buf_err):
                code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0) if not isinstance(exc.code, str) else 2
        except BaseException as exc:  # a raw exception out of the CLI: what a user must never see
            out(f"broken {op} {type(exc).__name__}: {exc}".replace("\n", " ")[:500])
            continue
        err = buf_err.getvalue()
        if "Traceback" in err or (op.startswith("ask") and code != 0):
            out(f"broken {op} exit {code}: {err}".replace("\n", " ")[:500])
        elif code != 0:  # a refusal: say why, so the campaign can tell a command that never runs
            why = (err.strip().splitlines() or ["(nothing on stderr)"])[0]
            out(f"did {op} {code} {why}".replace("\n", " ")[:300])
        else:
            out(f"did {op} {code}")
    out("done")


def _warm_litellm() -> None:
    """One real completion (stream and not) before any fork: litellm's first call in a
    process spends seconds on lazy imports and set-up that every child would repeat."""
    import asyncio

    from memtray.core.base.config import Config
    from memtray.core.llm.client import LLMClient, Request

    from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call

    with ScriptedLLMServer() as server:
        server.script(reply("warm"), reply("warm"), tool_call("save_memory", {"history_entry": "", "memory_update": ""}))
        client = LLMClient(Config(model="openai/warm", api_base=server.base_url, llm_retries=0),
                           key_lookup=lambda _p: "sk-warm")
        msgs = [{"role": "user", "content": "hi"}]
        for stream in (True, False, False):
            asyncio.run(client.complete(Request(messages=msgs, stream=stream)))


def serve() -> None:
    if "--preload-llm" in sys.argv:
        from memtray.core.llm.client import load_litellm

        load_litellm()
        import memtray.core.app
        import memtray.core.cli.main
        import memtray.core.memory.consolidation

        memtray.core.cli.main.build_parser()  # imports every command's module once, before the forks
        _warm_litellm()
    out("ready")
    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        p = json.loads(raw)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                {"log": child_log, "ops": child_ops}.get(p["mode"], child_consolidate)(p)
            except BaseException:
                traceback.print_exc()
                out("error")
                code = 70
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status)
        out(f"exit {pid} {sig}")


if __name__ == "__main__":
    serve()
