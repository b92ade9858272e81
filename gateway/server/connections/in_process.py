"""A call a `Listener` hands to the gateway's own app, served in process as the HTTP request it stands for
(`gateway.core.listeners.InProcess`): the app cannot tell it from one an HTTP client sent, so keys, limits,
routes, principals, replicas and draining hold for it as they do over HTTP. The listener leaving before the answer
ends (its client gone, its deadline past) is the client disconnecting; a listener reading slowly holds the app's
writes back, as a slow socket does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

from starlette.types import ASGIApp, Message

PIECES_HELD = 64
"""Pieces of an answer written and not yet read by the listener; past them the app's next write waits."""


class Left(OSError):
    """What the app's write meets once the listener left, as a server's write on a closed connection."""


class Answer:
    """What the app answered: its status and headers once it starts, then its body as it writes it."""

    __slots__ = ("_gone", "_pieces", "headers", "status")

    def __init__(self, gone: asyncio.Event) -> None:
        self.status = 500
        self.headers: dict[str, str] = {}
        self._pieces: asyncio.Queue[bytes | None] = asyncio.Queue(PIECES_HELD)
        self._gone = gone

    async def body(self) -> AsyncIterator[bytes]:
        while (piece := await self._pieces.get()) is not None:
            yield piece

    async def put(self, piece: bytes | None) -> None:
        """A piece of the body (None: its end), once the listener has room for it; `Left` once it left."""
        if self._gone.is_set():
            raise Left("the listener's client left")
        try:
            self._pieces.put_nowait(piece)
            return
        except asyncio.QueueFull:
            pass
        putting = asyncio.ensure_future(self._pieces.put(piece))
        leaving = asyncio.ensure_future(self._gone.wait())
        done, _ = await asyncio.wait((putting, leaving), return_when=asyncio.FIRST_COMPLETED)
        leaving.cancel()
        if putting not in done:
            putting.cancel()
            raise Left("the listener's client left")


class InProcessApp:
    """The app, as listeners call it."""

    __slots__ = ("app",)

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    @asynccontextmanager
    async def __call__(self, method: str, path: str, headers: Sequence[tuple[str, str]], body: bytes,
                       client: tuple[str, int] | None = None) -> AsyncIterator[Answer]:
        gone = asyncio.Event()
        answer = Answer(gone)
        started = asyncio.Event()
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
                    await answer.put(message["body"])
                if not message.get("more_body", False):
                    await answer.put(None)
            if gone.is_set():
                raise Left("the listener's client left")

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
                with suppress(Left):
                    await answer.put(None)  # the end, for an app that raised before it wrote its own

        task = asyncio.get_running_loop().create_task(serve())
        try:
            await started.wait()
            yield answer
        finally:
            gone.set()
            with suppress(Exception):  # what the app raised after its client left is the app's to log
                await task
