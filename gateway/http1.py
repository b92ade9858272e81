"""A small HTTP/1.1 client for upstream calls: an asyncio protocol over httptools, with a keep-alive pool.

The gateway asks little of a client: POST a body, read the answer as it streams, keep connections alive, speak TLS.
What a general client adds on top costs it on every chunk. Reading a 200-event chunked stream (one HTTP chunk per
event, as streaming frameworks write them) took aiohttp about 370 µs of CPU and this about 35 µs, measured in one
process on one core; `bench/run.py` shows the same difference per translated event.

Connections are per origin and kept idle for `keepalive` seconds at most, less than common servers keep theirs
(gunicorn 2 s; uvicorn and Node 5 s): a POST sent on a connection the server is closing may or may not have reached
it, and cannot be sent again. For the same reason, an idle connection that has anything to read (the server's
close, or stray bytes) is dropped rather than used.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import zlib
from typing import cast
from urllib.parse import urlsplit

import httptools

HIGH_WATER = 256 * 1024
"""Unread response bytes held per connection before it stops reading from the socket: past that, a client that
reads slowly makes the upstream's writes block instead of the gateway's memory grow."""


class HTTPError(Exception):
    """Any failure of an upstream call: connecting, the connection breaking, or an answer that is not HTTP."""


class ConnectError(HTTPError):
    """No connection could be made."""


class ConnectionBroken(HTTPError):
    """The connection closed, or failed, before the response was whole."""

    def __init__(self, cause: Exception | None) -> None:
        super().__init__("the upstream closed the connection" if cause is None else f"the connection failed: {cause}")
        self.clean = cause is None


class ProtocolError(HTTPError):
    """The upstream's bytes are not a valid HTTP/1.1 response."""


class Target:
    """A URL parsed once per route, and how long connecting to it may take."""

    __slots__ = ("connect_timeout", "host", "host_header", "key", "path", "port", "tls", "url")

    def __init__(self, url: str, connect_timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream URL must be http:// or https:// with a host, got {url!r}")
        self.url = url
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        name = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = name if parts.port is None else f"{name}:{self.port}"
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.key = (self.tls, self.host, self.port)
        self.connect_timeout = connect_timeout


class Response:
    """One response, read as it arrives: `await read()` gives whatever body bytes came since the last call
    (b"" once the body is whole). `release()` when done: a connection whose response was read to the end goes
    back to the pool, any other is closed."""

    __slots__ = ("_chunks", "_connection", "_decompress", "_error", "_head", "_interim", "_paused", "_raw_headers",
                 "_size", "_until_close", "_waiter", "complete", "headers", "keep_alive", "status")

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self._chunks: list[bytes] = []
        self._size = 0
        self._paused = False
        self._until_close = False
        self._interim = False
        self._decompress: zlib._Decompress | None = None
        self._error: HTTPError | None = None
        self._head: asyncio.Future[None] = connection.loop.create_future()
        self._waiter: asyncio.Future[None] | None = None
        self.complete = False
        self.keep_alive = False
        self.status = 0
        self.headers: dict[str, str] = {}

    async def read(self) -> bytes:
        while not self._chunks:
            if self.complete:
                return b""
            if self._error is not None:
                raise self._error
            self._waiter = self._connection.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        chunks = self._chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._size = 0
        if self._paused:
            self._paused = False
            self._connection.resume_reading()
        if self._decompress is not None:
            data = self._decompress.decompress(data)
        return data

    async def drain(self, timeout: float, limit: int = 65536) -> None:
        """Read what is left of the body for up to `timeout` seconds and `limit` bytes, so the connection can go
        back to the pool: a streaming server writes its body's end (the chunked terminator) after the last event."""
        if self.complete or self._error is not None:
            return
        try:
            async with asyncio.timeout(timeout):
                left = limit
                while left > 0 and (chunk := await self.read()):
                    left -= len(chunk)
        except (TimeoutError, HTTPError):
            pass

    def release(self) -> None:
        self._connection.finished(self)

    # fed by the connection

    def on_header(self, name: bytes, value: bytes) -> None:
        self._raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        headers: dict[str, str] = {}
        for raw_name, raw_value in self._raw_headers:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        parser = self._connection.parser
        if 100 <= parser.get_status_code() < 200:  # an interim answer (103 Early Hints): the real one follows
            self._raw_headers.clear()
            self._interim = True
            return
        self.headers = headers
        self.status = parser.get_status_code()
        self.keep_alive = parser.should_keep_alive()  # known now; once the message is complete, llhttp forgets
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("gzip", "deflate"):  # never asked for, but some servers compress anyway
            self._decompress = zlib.decompressobj(47)  # gzip or zlib, detected from the header
        elif encoding != "identity":
            raise ProtocolError(f"upstream sent content-encoding {encoding!r}, which the gateway cannot read")
        self._until_close = ("content-length" not in headers and "chunked" not in headers.get("transfer-encoding", "")
                             and self.status not in (204, 304) and self.status >= 200)
        if not self._head.done():
            self._head.set_result(None)

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)
        self._size += len(body)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
        else:
            self.complete = True

    def fed(self) -> None:
        """After each read from the socket: wake the reader, and stop reading while it lags far behind."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self._size > HIGH_WATER and not self._paused and not self.complete:
            self._paused = True
            self._connection.pause_reading()

    def fail(self, error: HTTPError) -> None:
        """The first failure is the one reported; a connection closed after it adds nothing."""
        if self.complete or self._error is not None:
            return
        if self._until_close and self._head.done() and isinstance(error, ConnectionBroken) and error.clean:
            self.complete = True  # a body without a length ends where the connection does
        else:
            self._error = error
            if not self._head.done():
                self._head.set_exception(error)
                self._head.exception()  # retrieved: nobody may be waiting any more
        self.fed()


class Connection(asyncio.Protocol):
    """One socket to an origin, and httptools' parser over it, which routes the parse to the current response."""

    def __init__(self, pool: Pool, key: tuple[bool, str, int]) -> None:
        self.pool = pool
        self.key = key
        self.loop = asyncio.get_running_loop()
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.response: Response | None = None
        self.closed = False
        self.expiry: asyncio.TimerHandle | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports don't subclass asyncio's
        self.pool.opened(self)

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None or response.complete:  # bytes nobody asked for: the connection can't be trusted
            self.close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            response.fail(cause if isinstance(cause, HTTPError) else ProtocolError(f"invalid HTTP response: {exc}"))
            self.close()
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            response.fail(ProtocolError(f"invalid HTTP response: {exc}"))
            self.close()
        response.fed()

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.response is not None:
            self.response.fail(ConnectionBroken(exc))

    # httptools callbacks, for the response in flight

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.response is not None:
            self.response.on_header(name, value)

    def on_headers_complete(self) -> None:
        if self.response is not None:
            self.response.on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self.response is not None:
            self.response.on_body(body)

    def on_message_complete(self) -> None:
        if self.response is not None:
            self.response.on_message_complete()

    # used by the pool and the response

    def send(self, head: bytes, body: bytes) -> Response:
        assert self.transport is not None
        response = self.response = Response(self)
        self.transport.write(head + body)
        return response

    def finished(self, response: Response) -> None:
        if self.response is not response:
            return
        self.response = None
        if response.complete and response.keep_alive and not self.closed:
            self.pool.keep(self)
        else:
            self.close()

    def readable(self) -> bool:
        """Whether an idle connection has something to read: the server closed it, or sent what nobody asked."""
        assert self.transport is not None
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return True
        try:
            ready, _, _ = select.select([sock.fileno()], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(ready)

    def pause_reading(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def close(self) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.transport is not None:
            self.transport.close()


class Pool:
    """Connections by origin, made on demand and kept idle for `keepalive` seconds at most. Unbounded in number:
    the routes' `max_streams` limits bound the streams, and a pool that queued the next stream silently would be
    worse than one that opens a connection for it."""

    def __init__(self, keepalive: float = 1.5, user_agent: str = "agent-gateway") -> None:
        self.keepalive = keepalive
        self.user_agent = user_agent
        self._idle: dict[tuple[bool, str, int], list[Connection]] = {}
        self._open: set[Connection] = set()
        self._ssl: ssl.SSLContext | None = None

    async def post(self, target: Target, body: bytes, headers: dict[str, str]) -> Response:
        """Send the request and wait for the response's head; the body is then read with `Response.read()`."""
        head = self._head(target, body, headers)
        connection = self._take(target.key) or await self._connect(target)
        response = connection.send(head, body)
        try:
            await response._head
        except BaseException:
            connection.close()
            raise
        return response

    async def close(self) -> None:
        """Close every connection, idle or in use (at shutdown, after the server has stopped its requests)."""
        for connection in list(self._open):
            connection.close()
        self._idle.clear()

    def opened(self, connection: Connection) -> None:
        self._open.add(connection)

    def keep(self, connection: Connection) -> None:
        self._idle.setdefault(connection.key, []).append(connection)
        connection.expiry = connection.loop.call_later(self.keepalive, connection.close)

    def forget(self, connection: Connection) -> None:
        """The connection is closing: out of the pool."""
        self._open.discard(connection)
        if connection.expiry is not None:
            connection.expiry.cancel()
            connection.expiry = None
            idle = self._idle.get(connection.key)
            if idle and connection in idle:
                idle.remove(connection)

    def _take(self, key: tuple[bool, str, int]) -> Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()  # the most recently used: the least likely to be closing
            assert connection.expiry is not None
            connection.expiry.cancel()
            connection.expiry = None
            if not connection.closed and not connection.readable():
                return connection
            connection.close()
        return None

    async def _connect(self, target: Target) -> Connection:
        loop = asyncio.get_running_loop()
        context = self._ssl_context() if target.tls else None
        try:
            async with asyncio.timeout(target.connect_timeout):
                _, connection = await loop.create_connection(
                    lambda: Connection(self, target.key), target.host, target.port, ssl=context,
                    server_hostname=target.host if context else None)
        except TimeoutError:  # an OSError too: the caller tells a slow connect from a refused one
            raise
        except OSError as exc:  # refused, unresolvable, TLS (ssl.SSLError is an OSError)
            raise ConnectError(f"cannot connect to {target.host_header}: {exc}") from exc
        return connection

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()  # the system's CAs; SSL_CERT_FILE points elsewhere
        return self._ssl

    def _head(self, target: Target, body: bytes, headers: dict[str, str]) -> bytes:
        lines = [f"POST {target.path} HTTP/1.1", f"host: {target.host_header}", f"content-length: {len(body)}"]
        if "user-agent" not in headers:
            lines.append(f"user-agent: {self.user_agent}")
        for name, value in headers.items():
            if name in ("host", "content-length", "transfer-encoding", "connection"):
                continue
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
                raise ValueError(f"header {name!r} has a line break or a colon in it")
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
