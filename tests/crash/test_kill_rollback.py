"""kill -9 in the middle of a git write (``memory rollback``) leaves a dulwich lock file
behind (``memory/.git/objects/xx/yyyy.lock``); every later command used to die on it with
a raw ``FileLocked`` traceback, ``ask`` included, and the user's message was lost.

The child is a real ``memtray memory rollback`` process that SIGKILLs itself right after
dulwich created the lock file of a loose object (before writing it): exactly what a
kill at that moment leaves on disk.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memtray.core.base.home import Home

from tests.faults.support import git, open_app, write_memory
from tests.fixtures.llm_server import ScriptedLLMServer, reply
from tests.support import ROOT, cli_env, run_cli

KILL_IN_OBJECT_WRITE = """
import os, signal, sys
import dulwich.file as f
real = f._GitFile.__init__
def init(self, filename, *a, **kw):
    real(self, filename, *a, **kw)
    name = os.fsdecode(filename)
    if os.sep + "objects" + os.sep in name and os.path.basename(os.path.dirname(name)) != "pack":
        os.kill(os.getpid(), signal.SIGKILL)  # the lock file exists, the object is not written
f._GitFile.__init__ = init
from memtray.core.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _texts(home: Home) -> list[str]:
    from memtray.core.log.eventlog import EventLog

    elog = EventLog.open(home.events, readonly=True)
    try:
        return [r.data.get("content") or "" for r in elog.records() if r.data.get("role") == "user"]
    finally:
        elog.close()


def test_kill_during_rollback_then_ask_works_and_logs_the_message(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "home")
    app = open_app(home)
    try:
        app.write(lambda: write_memory(app, ["likes tea"]))
        app.write(lambda: write_memory(app, ["likes tea", "plays chess"]))
    finally:
        app.close()
    child = subprocess.run([sys.executable, "-c", KILL_IN_OBJECT_WRITE, "memory", "rollback", "HEAD~1"],
                           env=cli_env(home.root), cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert child.returncode == -9, child.stderr
    locks = sorted(p.relative_to(home.memory / ".git").as_posix()
                   for p in (home.memory / ".git" / "objects").rglob("*.lock"))
    assert locks and all(len(p.split("/")[2]) == 38 + len(".lock") for p in locks), locks  # objects/xx/yyyy.lock

    with ScriptedLLMServer() as server:
        server.script(reply("still here"))
        out = run_cli(home.root, "ask", "did the rollback break you?",
                      MEMTRAY_MODEL="openai/test-model", MEMTRAY_API_BASE=server.base_url,
                      OPENAI_API_KEY="sk-test-0000")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "still here"
    assert "Traceback" not in out.stderr and "FileLocked" not in out.stderr
    assert _texts(home)[-1] == "did the rollback break you?"
    assert not list((home.memory / ".git").rglob("*.lock"))
    # the rollback that was logged before the kill is in git now: memory == the log's last write
    assert (home.memory / "MEMORY.md").read_text() == "# Facts\n\n- likes tea\n"
    git(home.memory, "fsck", "--strict")
    assert run_cli(home.root, "events", "verify").returncode == 0
    assert run_cli(home.root, "memory", "log").returncode == 0
