"""HISTORY.md after sync: one diary on every device, each entry once (real litellm, scripted model).

The diary of a merge (or fast-forward) revision is made of the diaries of the
revisions it follows, so two devices that both consolidated end with every entry
of both, in date order, the same text on each, and a rebuild of ``memory/`` from
the log makes it again. The model here is as careless as real ones: some entries
come without the date they should start with, one in another language.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memtray.core.app import App
from memtray.core.log.events import Message
from memtray.core.memory.revisions import diary_entries

from tests.fixtures.llm_server import Response, ScriptedLLMServer, tool_call
from tests.fixtures.receipting import with_receipts
from tests.integration.sync_support import bare, git, homes, open_app, sync

JSON = dict[str, Any]
FACT = re.compile(r"Remember this: (User [^.\n]+)\.")


class Diarist:
    """Keeps the memory it is shown, adds the conversation's facts, and writes a diary entry
    that names them: dated by hand on some calls, undated (memtray dates it) on others."""

    def __init__(self) -> None:
        self.calls = itertools.count()

    def __call__(self, req: JSON) -> Response:
        text = req["messages"][-1]["content"]
        memory = text.split("## Current memory\n\n", 1)[1].split("\n\n## Conversation to consolidate", 1)[0]
        facts = FACT.findall(text.split("## Conversation to consolidate\n\n", 1)[1])
        n = next(self.calls)
        about = "; ".join(facts)
        entry = (f"[2026-11-{10 + n:02d} 09:{n:02d}] Talked about: {about}" if n % 3 == 0
                 else f"Conversation: {about}" if n % 3 == 1 else f"On a parlé de : {about}")
        base = "" if memory == "(empty)" else memory + "\n"
        return tool_call("save_memory", {"history_entry": entry,
                                         "memory_update": base + "".join(f"- {f}\n" for f in facts),
                                         "removed_facts": []})


def _open(root: Path, server: ScriptedLLMServer) -> App:
    return open_app(root, model="openai/test-model", api_base=server.base_url, llm_retries=0,
                    memory_window=1000, idle_consolidate_minutes=0)


@contextlib.contextmanager
def _devices(tmp_path: Path, names: str = "ab") -> Iterator[tuple[Path, ScriptedLLMServer, list[App]]]:
    """A bare remote, the careless diarist behind the real litellm client, and one home per letter."""
    remote = bare(tmp_path / "remote.git")
    with ScriptedLLMServer(responder=with_receipts(Diarist())) as server, homes(
            tmp_path, names, model="openai/test-model", api_base=server.base_url, llm_retries=0,
            memory_window=1000, idle_consolidate_minutes=0) as apps:
        yield remote, server, apps


def _tell(app: App, fact: str, session: str = "quick") -> None:
    app.store.append_many([(Message(role="user", content=f"Remember this: {fact}."), session, None),
                           (Message(role="assistant", content="Noted."), session, None)])
    out = app.run(app.consolidation.consolidate(session, archive_all=True), timeout=60)
    assert out.added == 1, out.summary()


def _diary(app: App) -> str:
    return (app.home.memory / "HISTORY.md").read_text(encoding="utf-8")


def _entries_naming(app: App, fact: str) -> int:
    return sum(fact in e for e in diary_entries(_diary(app)))


def test_two_devices_that_both_consolidated_hold_one_diary_with_every_entry_once(tmp_path: Path) -> None:
    with _devices(tmp_path) as (remote, _server, (a, b)):
        _tell(a, "User lives in Lyon")
        sync(remote, a, b)  # a fast-forward: b takes a's revision, and its diary
        assert _diary(b) == _diary(a) and _entries_naming(b, "User lives in Lyon") == 1
        _tell(a, "User plays chess on Sundays")
        _tell(a, "User reads Japanese novels")
        _tell(b, "User has a cat named Rex", "work")
        assert sync(remote, b, a)[1].merges
        sync(remote, b, a)
        facts = ["User lives in Lyon", "User plays chess on Sundays", "User reads Japanese novels",
                 "User has a cat named Rex"]
        assert _diary(a) == _diary(b)
        for f in facts:
            assert _entries_naming(a, f) == 1, (f, _diary(a))
        # both diaries are in the commits, not just the work tree
        assert git("show", "HEAD:HISTORY.md", cwd=a.home.memory) == _diary(a).rstrip("\n")
        # more syncs change nothing, and the next consolidation appends to the merged diary
        before = _diary(b)
        sync(remote, a, b)
        assert _diary(b) == before
        _tell(b, "User drinks green tea")
        assert _diary(b).startswith(before) and _entries_naming(b, "User drinks green tea") == 1


def test_a_rebuild_of_the_memory_repository_makes_the_same_merged_diary(tmp_path: Path) -> None:
    with _devices(tmp_path) as (remote, server, (a, b)):
        _tell(a, "User lives in Lyon")
        sync(remote, a, b)
        _tell(a, "User plays chess on Sundays")
        _tell(b, "User has a cat named Rex")
        sync(remote, b, a, b)
        diary, head = _diary(b), git("rev-parse", "HEAD", cwd=b.home.memory)
        b.close()
        shutil.rmtree(tmp_path / "b" / "memory")
        again = _open(tmp_path / "b", server)
        try:
            assert _diary(again) == diary
            assert git("rev-parse", "HEAD", cwd=again.home.memory) == head
        finally:
            again.close()


def test_three_devices_criss_cross_converge_on_one_diary(tmp_path: Path) -> None:
    with _devices(tmp_path, "abc") as (remote, _server, apps):
        sync(remote, *apps)
        facts = []
        for rnd in range(3):
            for i, app in enumerate(apps):
                fact = f"User visited city number {rnd * 3 + i} in 2025"
                facts.append(fact)
                _tell(app, fact)
            sync(remote, apps[rnd % 3], apps[(rnd + 1) % 3])  # only two of them sync each round
        sync(remote, *apps, *apps)
        diaries = {_diary(app) for app in apps}
        assert len(diaries) == 1, diaries
        for f in facts:
            assert _entries_naming(apps[0], f) == 1, (f, _diary(apps[0]))


def test_an_entry_removed_by_hand_on_one_device_stays_removed_after_the_merge(tmp_path: Path) -> None:
    with _devices(tmp_path) as (remote, _server, (a, b)):
        _tell(a, "User lives in Lyon")
        _tell(a, "User plays chess on Sundays")
        sync(remote, a, b)
        # the user deletes one diary entry by hand on a; b consolidates meanwhile
        path = a.home.memory / "HISTORY.md"
        kept = [e for e in diary_entries(path.read_text(encoding="utf-8")) if "chess" not in e]
        path.write_text("".join(e + "\n\n" for e in kept), encoding="utf-8")
        a.write(a.memory.projection.adopt_worktree)  # what a start or the next write does
        _tell(b, "User has a cat named Rex")
        sync(remote, a, b, a)
        assert _diary(a) == _diary(b)
        assert _entries_naming(b, "chess") == 0
        assert _entries_naming(b, "User lives in Lyon") == 1 and _entries_naming(b, "User has a cat named Rex") == 1
        assert "User plays chess on Sundays" in b.store.state.memory  # the fact itself stays
