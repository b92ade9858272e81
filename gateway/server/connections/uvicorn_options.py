"""The uvicorn options the gateway is served with, by `serve` (one process or several) and by the tests' servers
alike: its HTTP protocol (`http_server`), its WebSocket protocol (`ws_server`), and their limits."""

from __future__ import annotations

from typing import Any

from gateway.server.connections.http_server import HeadDeadlineProtocol
from gateway.server.connections.ws_server import BoundedWebSocketProtocol


def uvicorn_options(max_connections: int | None = None) -> dict[str, Any]:
    """Keyword arguments for `uvicorn.Config`. WebSocket messages are not compressed: a compressed message is
    inflated as it is read, so a few KiB read at once could be several messages of megabytes each, all held before
    the app asks for one; uncompressed, what one read holds is what was read. The gateway's app applies a trusted
    proxy's forwarded headers itself (`forwarded`): uvicorn's middleware for them would await it for every request's
    life."""
    return {"http": HeadDeadlineProtocol, "ws": BoundedWebSocketProtocol, "ws_per_message_deflate": False,
            "limit_concurrency": max_connections, "log_level": "warning", "proxy_headers": False}
