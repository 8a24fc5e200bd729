"""`memtray model ...` as a user runs it: the bundled SmolLM2 GGUF served by a local hub-like
server (MEMTRAY_MODEL_HUB), a download killed and resumed, a corrupt one refused, the
downloaded file run by `memtray ask`; model servers found on localhost (a fake Ollama and
llama.cpp server, and a hostile one) and one of their models put to use."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from memtray.core.base.home import Home
from memtray.core.llm import catalogue, localmodel
from memtray.core.llm.download import part_path

from tests.fixtures.model_hub import Hub, bundled_gguf, serve
from tests.support import ROOT, cli_env, run_cli

GGUF = bundled_gguf()
real = pytest.mark.skipif(GGUF is None, reason=f"offline model not installed: {localmodel.missing(check_disabled=False)}")
ENTRY = catalogue.find("smollm2")


@pytest.fixture
def hub() -> Iterator[Hub]:
    assert GGUF is not None
    with serve({ENTRY.file: GGUF.read_bytes()}) as h:
        yield h


def model_cli(home: Home, hub: Hub, *args: str, **env: str) -> subprocess.CompletedProcess[Any]:
    return run_cli(home.root, "model", *args, timeout=300, MEMTRAY_MODEL_HUB=hub.base_url, **env)


@real
def test_download_with_progress_then_list_and_use(home: Home, hub: Hub) -> None:
    out = model_cli(home, hub, "download", "smollm2")
    assert out.returncode == 0, out.stderr
    dest = home.root / "models" / ENTRY.file
    assert dest.read_bytes() == GGUF.read_bytes() and not part_path(dest).exists()
    lines = out.stderr.splitlines()
    # progress from the start to the end, never backwards (how many lines depends on the speed:
    # they are paced by time)
    percents = [int(line.split("(")[1].split("%")[0]) for line in lines if line.startswith("smollm2: ")]
    assert len(percents) >= 2 and percents == sorted(percents), out.stderr
    assert percents[0] < 100 and lines[-1].startswith("smollm2: 98 MB of 98 MB (100%)"), out.stderr
    assert "sha256 checked" in out.stdout and "memtray model use smollm2" in out.stdout
    assert next(s.path for s in hub.seen) == "/" + ENTRY.path  # the hub's own URL, then its redirect
    listed = json.loads(model_cli(home, hub, "list", "--json").stdout)
    row = next(r for r in listed["models"] if r["id"] == "smollm2")
    assert row["downloaded"] and row["url"] == f"{hub.base_url}/{ENTRY.path}" and not row["writes_memory"]
    assert row["estimate"]["tokens_per_second"] > 0 and row["estimate"]["basis"] == "measured"
    qwen = next(r for r in listed["models"] if r["id"] == "qwen2.5-3b-instruct")
    assert not qwen["downloaded"] and qwen["writes_memory"]
    assert qwen["estimate"]["tokens_per_second"] < row["estimate"]["tokens_per_second"] / 10  # 20x the bytes
    used = model_cli(home, hub, "use", "smollm2")
    assert used.returncode == 0 and "held for your review" in used.stdout
    assert run_cli(home.root, "config", "get", "model").stdout.strip() == "local/smollm2"
    not_there = model_cli(home, hub, "use", "qwen2.5-3b-instruct")
    assert not_there.returncode == 1 and "memtray model download qwen2.5-3b-instruct" in not_there.stderr


def test_the_list_needs_no_network_and_no_model(home: Home) -> None:
    out = run_cli(home.root, "model", "list")
    assert out.returncode == 0, out.stderr
    assert "qwen2.5-3b-instruct" in out.stdout and "tokens/s" in out.stdout
    assert "memory held for review" in out.stdout and "writes memory" in out.stdout


@real
def test_a_killed_download_resumes_where_it_stopped(home: Home, hub: Hub) -> None:
    hub.stall_at = ENTRY.size // 3
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "model", "download", "smollm2"],
                            env=cli_env(home.root, MEMTRAY_MODEL_HUB=hub.base_url), cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    part = part_path(home.root / "models" / ENTRY.file)
    _wait(lambda: (part.is_file() and part.stat().st_size >= ENTRY.size // 3) or proc.poll() is not None)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "what was fetched is kept" in err, err
    assert part.stat().st_size == ENTRY.size // 3
    hub.stall_at = None
    again = run_cli(home.root, "model", "download", "smollm2", "--json", MEMTRAY_MODEL_HUB=hub.base_url)
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert result["resumed_from"] == ENTRY.size // 3 and result["fetched"] == ENTRY.size - ENTRY.size // 3
    assert hub.downloads()[-1].range == f"bytes={ENTRY.size // 3}-"
    assert (home.root / "models" / ENTRY.file).read_bytes() == GGUF.read_bytes()


@real
def test_a_corrupt_download_is_refused(home: Home, hub: Hub) -> None:
    hub.corrupt = True
    out = model_cli(home, hub, "download", "smollm2")
    assert out.returncode == 1 and "does not match its checksum" in out.stderr and "Traceback" not in out.stderr
    assert not any((home.root / "models").iterdir()) or [p.name for p in (home.root / "models").iterdir()] == [
        f".{ENTRY.file}.lock"]
    assert model_cli(home, hub, "use", "smollm2", MEMTRAY_LOCAL_GGUF=str(home.root / "none")).returncode == 1


@real
def test_the_downloaded_copy_answers(home: Home, hub: Hub) -> None:
    assert model_cli(home, hub, "download", "smollm2").returncode == 0
    assert run_cli(home.root, "model", "use", "smollm2").returncode == 0
    assert run_cli(home.root, "config", "set", "max_tokens", "16").returncode == 0
    # the bundled file is hidden: what answers is the copy in the data home's models/ folder
    out = run_cli(home.root, "ask", "Say hello.", timeout=300, MEMTRAY_LOCAL_GGUF=str(home.root / "none"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()


# --- model servers on this computer ------------------------------------------------------------


def _json_server(routes: dict[str, Callable[[], bytes]]) -> tuple[http.server.ThreadingHTTPServer, int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            make = routes.get(self.path)
            if make is None:
                self.send_response(404)
                self.end_headers()
                return
            body = make()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


@pytest.fixture
def servers() -> Iterator[str]:
    hang = threading.Event()
    ollama, p1 = _json_server({"/api/tags": lambda: json.dumps({"models": [
        {"name": "llama3.2:latest", "details": {"parameter_size": "3.2B"}},
        {"name": "qwen2.5:0.5b", "details": {"parameter_size": "494.03M"}},
        {"name": "bad name; rm -rf /"}, "not a dict"]}).encode()})
    llamacpp, p2 = _json_server({"/v1/models": lambda: json.dumps(
        {"object": "list", "data": [{"id": "Qwen2.5-3B-Instruct-Q4_K_M.gguf"}]}).encode()})
    liar, p3 = _json_server({"/v1/models": lambda: b"<html>not json</html>"})
    slow, p4 = _json_server({"/v1/models": lambda: (hang.wait(30), b"{}")[1]})
    spec = f"ollama=127.0.0.1:{p1},llama.cpp=127.0.0.1:{p2},lm-studio=127.0.0.1:{p3},lm-studio=127.0.0.1:{p4}"
    yield spec
    hang.set()
    for s in (ollama, llamacpp, liar, slow):
        s.shutdown()
        s.server_close()


def test_servers_found_on_localhost_and_one_put_to_use(home: Home, servers: str) -> None:
    out = run_cli(home.root, "model", "servers", "--json", MEMTRAY_LOCAL_SERVERS=servers)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    kinds = {s["kind"]: s for s in found["servers"]}
    assert set(kinds) == {"ollama", "llama.cpp"}  # the liar and the silent one are not offered
    assert [m["model"] for m in kinds["ollama"]["models"]] == ["ollama_chat/llama3.2", "ollama_chat/qwen2.5:0.5b"]
    assert kinds["ollama"]["models"][1]["params_b"] == pytest.approx(0.494, abs=0.001)
    assert kinds["llama.cpp"]["models"] == [{"name": "Qwen2.5-3B-Instruct-Q4_K_M.gguf",
                                            "model": "openai/Qwen2.5-3B-Instruct-Q4_K_M.gguf", "params_b": None}]
    assert kinds["llama.cpp"]["api_base"].endswith("/v1")
    assert any("did not answer with JSON" in p for p in found["problems"])
    text = run_cli(home.root, "model", "servers", MEMTRAY_LOCAL_SERVERS=servers)
    assert f"memtray model use ollama_chat/llama3.2 --api-base {kinds['ollama']['api_base']}" in text.stdout
    assert "qwen2.5:0.5b --api-base" in text.stdout and "held for review" in text.stdout
    use = run_cli(home.root, "model", "use", "ollama_chat/qwen2.5:0.5b", "--api-base", kinds["ollama"]["api_base"])
    assert use.returncode == 0 and "held for your review" in use.stdout
    cfg = {k: run_cli(home.root, "config", "get", k).stdout.strip() for k in ("model", "api_base")}
    assert cfg == {"model": "ollama_chat/qwen2.5:0.5b", "api_base": kinds["ollama"]["api_base"]}


def test_nothing_running_is_said_plainly(home: Home) -> None:
    out = run_cli(home.root, "model", "servers", MEMTRAY_LOCAL_SERVERS="ollama=127.0.0.1:9,llama.cpp=127.0.0.1:9")
    assert out.returncode == 0 and out.stdout.startswith("no model server found on this computer")


def _wait(cond: Callable[[], bool]) -> None:
    import time

    deadline = time.monotonic() + 120
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_use_refuses_what_it_cannot_use(home: Home) -> None:
    for args, said in ((["gpt-5"], "neither a catalogue id"), (["openai/x", "--api-base", "ftp://x"], "http(s)"),
                       (["qwen2.5-3b-instruct", "--api-base", "http://x"], "--api-base is for a server")):
        out = run_cli(home.root, "model", "use", *args)
        assert out.returncode == 1 and said in out.stderr, (args, out.stderr)
    assert run_cli(home.root, "config", "get", "model").stdout.strip() == ""
    assert os.environ.get("MEMTRAY_MODEL") is None
