"""`X-Forwarded-For` and `X-Forwarded-Proto` from a trusted proxy, applied to a request's scope by the gateway's app
rather than by uvicorn's middleware: the middleware awaits the app, so its frame stays suspended for as long as the
request runs (every open stream's), where the gateway's app hands the server its route's coroutine and keeps none.

The rules are uvicorn's own (`ProxyHeadersMiddleware`, run on the scope and stopped before the app), and so is the
setting: the addresses trusted are `FORWARDED_ALLOW_IPS`, loopback by default."""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from typing import Any

from starlette.types import Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware


class ForwardedHeaders:
    def __init__(self, trusted: list[str] | str | None = None) -> None:
        if trusted is None:
            trusted = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
        self._middleware: Callable[[Scope, Receive, Send], Coroutine[Any, Any, None]] = ProxyHeadersMiddleware(
            _stop, trusted_hosts=trusted)  # type: ignore[arg-type,assignment]  # uvicorn's own typing of ASGI

    def apply(self, scope: Scope) -> None:
        """Set the scope's `client` and `scheme` from the proxy's headers, when the peer is a trusted proxy."""
        step = self._middleware(scope, _no_receive, _no_send)
        try:
            step.send(None)  # the middleware never waits before it calls the app, and `_stop` returns at once
        except StopIteration:
            return
        step.close()
        raise RuntimeError("uvicorn's ProxyHeadersMiddleware waited before calling the app")


async def _stop(scope: Scope, receive: Receive, send: Send) -> None:
    return None


async def _no_receive() -> Message:
    raise RuntimeError("not a request's receive")


async def _no_send(message: Message) -> None:
    raise RuntimeError("not a request's send")
