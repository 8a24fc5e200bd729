"""``memtray mcp --http``: the MCP server over streamable HTTP, on 127.0.0.1 only, behind a token.

Every request must carry ``Authorization: Bearer <token>`` (compared in constant
time); anything else gets 401 before the MCP layer sees it. The SDK's DNS-rebinding
protection stays on (Host and Origin must be localhost).
"""

from __future__ import annotations

import hmac
from typing import Any

HOST = "127.0.0.1"


class TokenGate:
    """ASGI middleware: refuse HTTP requests without the bearer token."""

    def __init__(self, app: Any, token: str) -> None:  # the SDK's ASGI app
        self.app = app
        self.want = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            got = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.want):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"memtray: a valid bearer token is required\n"})
                return
        await self.app(scope, receive, send)


def app(server: Any, token: str) -> Any:
    """The ASGI app: the SDK's streamable HTTP app at ``/mcp``, behind :class:`TokenGate`."""
    return TokenGate(server.streamable_http_app(host=HOST), token)


def serve(server: Any, *, port: int, token: str) -> None:
    import anyio
    import uvicorn

    config = uvicorn.Config(app(server, token), host=HOST, port=port, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve)
