"""A tiny smart-HTTP git server for the tests: ``git http-backend`` behind http.server on 127.0.0.1.

It asks for HTTP Basic credentials (like a forge), so a test shows that sync gets them
from git's own credential helper and never prompts for them.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GIT = shutil.which("git") or "git"


def _handler(root: Path, user: str, password: str) -> type[BaseHTTPRequestHandler]:
    want = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _serve(self) -> None:
            if self.headers.get("Authorization") != want:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="memtray-test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            env = {**os.environ, "GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1",
                   "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
                   "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                   "REMOTE_USER": user, "REMOTE_ADDR": "127.0.0.1",
                   "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                   "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.receivepack", "GIT_CONFIG_VALUE_0": "true"}
            proc = subprocess.run([GIT, "http-backend"], input=body, env=env, capture_output=True, timeout=120)
            head, _, payload = proc.stdout.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _serve
        do_POST = _serve

    return Handler


@contextlib.contextmanager
def http_git(root: Path, user: str = "ada", password: str = "s3cret-token") -> Iterator[str]:
    """Serve the repositories under ``root``; yields ``http://127.0.0.1:PORT``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(root, user, password))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
