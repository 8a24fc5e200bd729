"""No secret from the redaction corpus survives anywhere on disk.

A seeded conversation pastes every corpus sample (API keys, tokens, passwords,
private keys...) into user messages; the scripted model echoes them back in its
replies, in a ``remember`` tool call, in a provider error message, and inside
``save_memory``'s ``memory_update``, ``history_entry`` and ``removed_facts``
during consolidations. Then a scan finds none of the secrets in any event
(segments and side files), MEMORY.md, HISTORY.md, any git object of any
revision (``git rev-list --all --objects`` + ``git cat-file``, and every object
in the store, reachable or not), state/ (checkpoint, search index) or
logs/memtray.log -- nor in any request the model received. A token used as a
session name and the configured API key pasted into a message count too.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import logsetup
from memtray.core.base.errors import LLMError
from memtray.core.base.home import Home

from tests.crash.harness import check_app
from tests.faults.support import open_app
from tests.fixtures.llm_server import ScriptedLLMServer, error, last_user_text, reply, tool_call
from tests.unit.base.redaction_corpus import CORPUS

# litellm's streaming path warns once per process about a pydantic TypedDict (not ours)
pytestmark = pytest.mark.filterwarnings("ignore:.*on TypedDict class .* using the `ReadOnly` qualifier:UserWarning")


BATCH = 5
SAMPLES = [sample for _kind, sample, _secret in CORPUS]
# Every secret of the corpus, but a short number (a PIN): it is a secret only beside its name
# ("PIN is 4711", redacted there), and the scripted model repeats each secret bare ("rotated
# 4711"), where no rule can tell it from any other number. The PIN's own sample is checked
# like the rest (its redacted form must reach the log, not the digits beside their name).
SECRETS = [secret for _kind, _sample, secret in CORPUS if not (secret.isdigit() and len(secret) < 8)]
CONFIGURED_KEY = "memtray-configured-provider-key-of-words"


def _current_memory(prompt: str) -> str:
    head = prompt.split("## Conversation to consolidate", 1)[0]
    current = head.split("## Current memory", 1)[1].strip()
    return "" if current == "(empty)" else current


class EchoingModel:
    """Answers chat turns by echoing secrets, consolidations by writing them into memory."""

    def __init__(self) -> None:
        self.consolidations = 0
        self.remembered = itertools.count()

    def __call__(self, req: dict[str, Any]) -> Any:
        tools = {t["function"]["name"] for t in req.get("tools") or []}
        messages = req.get("messages") or []
        if "save_memory" in tools and len(tools) == 1:
            n = self.consolidations
            self.consolidations += 1
            picked = [SAMPLES[(n * 7 + i) % len(SAMPLES)] for i in range(6)]
            prompt = str(messages[-1]["content"])
            current = _current_memory(prompt)
            bullets = "".join(f"- The user's credential: {' '.join(s.split())}\n" for s in picked)
            update = (current + "\n\n" if current else "## Notes\n\n") + bullets
            return tool_call("save_memory", {
                "history_entry": "[2026-01-01 10:00] The user shared " + " ; ".join(picked),
                "memory_update": update,
                "removed_facts": [{"fact": SAMPLES[n % len(SAMPLES)], "reason": f"rotated {SECRETS[n % len(SECRETS)]}"}],
            })
        if messages and messages[-1].get("role") == "tool":
            return reply("Saved. For the record: " + SAMPLES[next(self.remembered) % len(SAMPLES)])
        text = last_user_text(req)
        if "remember this" in text:
            return tool_call("remember", {"fact": "API key " + SECRETS[next(self.remembered) % len(SECRETS)],
                                          "section": "Keys"})
        return reply("You said:\n" + text.split("]", 1)[-1])


def _git_objects(repo: Path) -> bytes:
    git = shutil.which("git")
    assert git is not None
    listed = subprocess.run([git, "-C", str(repo), "rev-list", "--all", "--objects"], capture_output=True,
                            text=True, check=True).stdout.split("\n")
    out = []
    for line in listed:
        if line.strip():
            sha = line.split()[0]
            out.append(subprocess.run([git, "-C", str(repo), "cat-file", "-p", sha], capture_output=True,
                                      check=True).stdout)
    everything = subprocess.run([git, "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                                capture_output=True, check=True).stdout
    assert len(out) >= 10
    return b"\n".join(out) + everything


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


@pytest.mark.slow
def test_no_secret_reaches_the_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Home.resolve(tmp_path / "home")
    # the configured key has no shape a rule knows: only exact matching finds it
    monkeypatch.setenv("OPENAI_API_KEY", CONFIGURED_KEY)
    root_logger = logging.getLogger()
    handlers = list(root_logger.handlers)
    model = EchoingModel()
    with ScriptedLLMServer(responder=model) as server:
        try:
            logsetup.setup(home)
            app = open_app(home, model="openai/test-model", api_base=server.base_url, llm_retries=0,
                           llm_timeout=20.0, memory_window=8)
            try:
                for i in range(0, len(SAMPLES), BATCH):
                    batch = SAMPLES[i : i + BATCH]
                    text = "Here are my notes:\n" + "\n".join(batch)
                    app.run(app.agent.turn("quick", text, stream=i % 2 == 0))
                    logging.getLogger("memtray.core.agent.loop").warning("turn input was: %s", text)
                    if i % 15 == 0:
                        app.run(app.agent.turn("quick", "please remember this key", stream=False))
                # a token as a session name; the configured key pasted into a message
                app.run(app.agent.turn(SECRETS[1], "this session is named after a token", stream=False))
                app.run(app.agent.turn("quick", f"is this my key? {CONFIGURED_KEY}", stream=False))
                # a provider error whose message carries a secret
                server.responder = lambda _req: error(500, {"error": {"message": f"bad key {SECRETS[0]}",
                                                                      "type": "server_error"}})
                with pytest.raises(LLMError):
                    app.run(app.agent.turn("quick", "one more", stream=False))
                server.responder = model
                cons = app.consolidation
                app.run(cons.archive("quick"))
                cons.close()
                assert app.store.state.memory_revisions >= 3
                assert model.consolidations >= 3
                app.search.sync()
            finally:
                app.close()
        finally:
            for h in root_logger.handlers[:]:
                if h not in handlers:
                    root_logger.removeHandler(h)
                    h.close()
            logsetup._configured = None
            logsetup._installed.clear()
        assert not server.errors
        sent = b"\n".join(r.body for r in server.requests)  # what reached the model

    check_app(home.root, set(), fsck=True)
    files = _files(home.root)
    assert any(k.startswith("events/") for k in files) and "logs/memtray.log" in files
    assert "memory/MEMORY.md" in files and "memory/HISTORY.md" in files
    assert b"You said" in files["events/000001.jsonl"]  # the echoes were logged (redacted)
    assert b"turn input was" in files["logs/memtray.log"]
    git_bytes = _git_objects(home.memory)
    events = [json.loads(line) for line in files["events/000001.jsonl"].splitlines()]
    assert {"turn.failed", "memory.written", "consolidation.completed"} <= {e["type"] for e in events}

    leaks = []
    assert len(SECRETS) >= 150
    # a short number is looked for beside its name: the sample as the user wrote it
    in_context = [sample for _kind, sample, secret in CORPUS if secret not in SECRETS]
    for secret in [*SECRETS, *in_context, CONFIGURED_KEY]:
        needle = secret.encode()
        escaped = json.dumps(secret)[1:-1].encode()
        for name, data in [*files.items(), ("git objects", git_bytes), ("model requests", sent)]:
            if needle in data or escaped in data:
                leaks.append((name, secret[:12] + "..."))
    assert leaks == [], "\n".join(map(str, leaks))
