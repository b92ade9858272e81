"""A call a `Listener` hands to the gateway's own app, served in process as the HTTP request it stands for
(`gateway.core.capabilities.InProcess`): the app cannot tell it from one an HTTP client sent, so keys, limits,
routes, principals, replicas and draining hold for it as they do over HTTP. The listener leaving before the answer
ends (its client gone, its deadline past) is the client disconnecting."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

from starlette.types import ASGIApp, Message

_END = b""


class Answer:
    """What the app answered: its status and headers once it starts, then its body as it writes it."""

    __slots__ = ("_pieces", "headers", "status")

    def __init__(self) -> None:
        self.status = 500
        self.headers: dict[str, str] = {}
        self._pieces: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def body(self) -> AsyncIterator[bytes]:
        while (piece := await self._pieces.get()) is not None:
            yield piece


class InProcessApp:
    """The app, as listeners call it."""

    __slots__ = ("app",)

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    @asynccontextmanager
    async def __call__(self, method: str, path: str, headers: Sequence[tuple[str, str]], body: bytes,
                       client: tuple[str, int] | None = None) -> AsyncIterator[Answer]:
        answer = Answer()
        started = asyncio.Event()
        gone = asyncio.Event()
        sent_body = False

        async def receive() -> Message:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer.status = message["status"]
                answer.headers = {name.decode("latin-1").lower(): value.decode("latin-1")
                                  for name, value in message.get("headers", [])}
                started.set()
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    answer._pieces.put_nowait(message["body"])
                if not message.get("more_body", False):
                    answer._pieces.put_nowait(None)
            if gone.is_set():
                raise OSError("the listener's client left")  # what a server's send does on a closed connection

        path_only, _, query = path.partition("?")
        scope: dict[str, Any] = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "2",
            "method": method, "scheme": "http", "path": path_only, "raw_path": path_only.encode(),
            "query_string": query.encode(), "root_path": "", "client": client, "server": None, "state": {},
            "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]}

        async def serve() -> None:
            try:
                await self.app(scope, receive, send)
            finally:
                started.set()
                answer._pieces.put_nowait(None)

        task = asyncio.get_running_loop().create_task(serve())
        try:
            await started.wait()
            yield answer
        finally:
            gone.set()
            with suppress(Exception):  # what the app raised after its client left is the app's to log
                await task
