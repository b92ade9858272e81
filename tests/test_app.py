"""The gateway's ASGI app as servers see it: an ASGI 3 app, whichever way a server tells one."""

from __future__ import annotations

import asyncio
import inspect

import uvicorn
from starlette.types import Message

from gateway.config import GatewayConfig
from gateway.server.app import create_app

CONFIG = GatewayConfig.model_validate({"routes": [{
    "name": "a", "paths": ["/a"], "client_dialects": ["ag-ui"],
    "upstream": {"url": "http://127.0.0.1:9/agui", "dialect": "ag-ui"}}]})


def test_servers_tell_the_app_is_asgi_3_though_its_call_returns_the_requests_coroutine() -> None:
    app = create_app(CONFIG)
    assert asyncio.iscoroutinefunction(app.__call__)
    config = uvicorn.Config(app, log_level="warning")  # as the agent and demo commands serve it: no options
    config.load()
    assert config.interface == "asgi3"


def test_a_call_of_the_app_is_a_coroutine_to_await() -> None:
    app = create_app(CONFIG)
    said: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        said.append(message)

    scope = {"type": "http", "method": "GET", "path": "/healthz", "raw_path": b"/healthz", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2),
             "scheme": "http", "http_version": "1.1", "root_path": "", "asgi": {"version": "3.0"}}
    request = app(scope, receive, send)
    assert inspect.isawaitable(request)
    asyncio.run(request)  # type: ignore[arg-type]
    assert said[0]["type"] == "http.response.start" and said[0]["status"] == 200
