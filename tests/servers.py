"""Real HTTP servers for tests: an ASGI app served by uvicorn on 127.0.0.1, on a free port, in a thread."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from types import TracebackType
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp

from gateway.server.connections.uvicorn_options import uvicorn_options


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_held_closed: list[socket.socket] = []


def closed_port() -> int:
    """A port on 127.0.0.1 that refuses connections for as long as the tests run: bound and never listening, so no
    server a later test starts on a free port can take it (a port merely released can be handed out again)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _held_closed.append(sock)
    return int(sock.getsockname()[1])


def wait_answering(process: subprocess.Popen[Any], *urls: str, seconds: float = 20.0, what: str = "it") -> None:
    """Until every URL answers (a server another process runs, started a moment ago); the test fails when `process`
    ends first or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            for url in urls:
                httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            assert time.monotonic() < deadline and process.poll() is None, f"{what} did not start"
            time.sleep(0.05)


class Served:
    """`with Served(app) as server:` serves `app` at `server.url` until the block ends, as `agent-gateway serve`
    serves it (its HTTP and WebSocket protocols: `uvicorn_options`); `options` change uvicorn's settings beyond
    those (a test's quicker keepalive pings; `ssl_certfile` and `ssl_keyfile` serve it over https)."""

    def __init__(self, app: ASGIApp, port: int = 0, **options: Any) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="auto", timeout_graceful_shutdown=1,
                                **{**uvicorn_options(), **options})
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.port = port
        self.scheme = "https" if options.get("ssl_certfile") else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.server.should_exit = True
        self.thread.join(10)
