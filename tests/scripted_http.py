"""A scripted HTTP/1.1 server on 127.0.0.1 for the upstream client's tests: each connection reads one request head and
body at a time and answers with the bytes a test scripts, so framing, keep-alive, closes and backpressure are what a
real peer would do on the wire."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable

from gateway.upstream.http1 import Response

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[bool]]
"""Answers the request numbered `int` on this connection (0-based); returns whether to keep the connection."""


class Server:
    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        if self.tasks:  # connections the client closed end by themselves; the rest are ended here
            await asyncio.wait(self.tasks, timeout=1)
            for task in self.tasks:
                task.cancel()

    def url(self, path: str = "/run?x=1") -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            for number in range(100):
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                self.requests.append(head + await reader.readexactly(length))
                if not await self.handler(reader, writer, number):
                    return
        finally:
            writer.close()


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(main())


async def read_all(response: Response) -> bytes:
    body = b""
    while chunk := await response.read():
        body += chunk
    return body


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
