"""A small HTTP/1.1 client for upstream calls: an asyncio protocol over httptools, with a keep-alive pool.

The gateway asks little of a client: POST a body, read the answer as it streams, keep connections alive, speak TLS.
What a general client adds on top costs it on every chunk, and streaming frameworks write one HTTP chunk per event,
so that cost is paid per event (README, Performance, has the measurements).

Connections are per origin and kept idle for `keepalive` seconds at most, less than common servers keep theirs
(gunicorn 2 s; uvicorn and Node 5 s): a POST sent on a connection the server is closing may or may not have reached
it, and cannot be sent again. For the same reason, an idle connection that has anything to read (the server's
close, or stray bytes) is dropped rather than used.

What a hostile or broken upstream can do is bounded, as httpx and aiohttp bound it: a response head (and trailers)
of at most 64 KiB, no line of it longer than 16 KiB, a compressed body inflated only as it is read and never more
than 64 KiB at a time, a response that ends where llhttp says it ends (a connection with anything after it is
closed, never pooled), `Transfer-Encoding` other than `chunked` and statuses outside 100-599 refused.

Every failure is one of these, and nothing else escapes a call:

```
HTTPError
 ├── ConnectError            no connection could be made (refused, unresolvable, TLS, proxy)
 │    └── ConnectTimeout     ... within the connect timeout
 ├── ConnectionBroken        the connection closed or failed before the response was whole
 ├── ProtocolError           the bytes are not an HTTP/1.1 response we can read (framing, limits, encoding)
 └── InvalidRequestHead      a header or path the caller passed cannot be written in a request; nothing sent
```
"""

from __future__ import annotations

import asyncio
import select
import ssl
import zlib
from collections import deque
from collections.abc import Callable
from typing import cast

import httptools

from gateway.upstream import tls
from gateway.upstream.proxies import Proxy, ProxyError, absolute_target, open_tunnel
from gateway.upstream.url import UpstreamURL

HIGH_WATER = 256 * 1024
"""Unread response bytes held per connection before it stops reading from the socket: past that, a client that
reads slowly makes the upstream's writes block instead of the gateway's memory grow."""
MAX_HEAD = 64 * 1024
"""Bytes of a response's head, and again of its trailers, that are read; more is a protocol error."""
MAX_LINE = 16 * 1024
"""Bytes the parser may take without finishing anything (a header line, a chunk size line): llhttp's headers
grow by concatenation, so an endless line would cost time quadratic in its length."""
INFLATE_STEP = 64 * 1024
"""Most bytes a compressed body inflates to per read: a small gzip bomb stays a trickle."""
FRAMING_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
"""Headers the client writes itself on every request, from the target and the body: any a caller passes are
dropped, so that no header can say other than the request does."""
HOP_BY_HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                                "upgrade"})
"""RFC 9110's hop-by-hop headers (with the old proxy-connection): they speak of one connection, which is the
client's to manage, not of the request."""
_CONTENT_CODINGS = {"gzip": 47, "x-gzip": 47, "deflate": 15}  # zlib wbits: 47 reads gzip or zlib


class HTTPError(Exception):
    """Any failure of an upstream call: connecting, the connection breaking, or an answer that is not HTTP."""


class ConnectError(HTTPError):
    """No connection could be made."""


class ConnectTimeout(ConnectError):
    """No connection could be made within the connect timeout."""


class ConnectionBroken(HTTPError):
    """The connection closed, or failed, before the response was whole."""

    def __init__(self, cause: Exception | None) -> None:
        super().__init__("the upstream closed the connection" if cause is None else f"the connection failed: {cause}")
        self.clean = cause is None


class ProtocolError(HTTPError):
    """The upstream's bytes are not a valid HTTP/1.1 response."""


class InvalidRequestHead(HTTPError, ValueError):
    """The request's head cannot be written as asked: a header with a line break, or a colon in its name, would end
    the head early or add headers nobody set, and a head is Latin-1. Nothing was sent. Still a ValueError, as it was
    before it joined the tree, for callers that catch that."""


class _AfterTheResponse(Exception):
    """The upstream sent bytes after a whole response: stop parsing them."""


class Target:
    """A URL checked and normalised once per route (see `UpstreamURL`), and how to reach it: directly or through
    an HTTP proxy (a CONNECT tunnel for https), with the route's TLS context. Connections are pooled by all of
    these, so routes that differ in any never share one."""

    __slots__ = ("authorization", "connect_timeout", "host", "host_header", "key", "max_connections", "path", "port",
                 "proxy", "ssl", "tls", "url")

    def __init__(self, url: str, connect_timeout: float, max_connections: int | None = None, *,
                 proxy: Proxy | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        parsed = UpstreamURL.parse(url)
        self.url = url
        self.tls = parsed.tls
        self.host = parsed.host
        self.port = parsed.port
        self.host_header = parsed.host_header
        self.authorization = parsed.authorization
        self.proxy = proxy
        self.ssl = (ssl_context or tls.client_context()) if self.tls else None
        # A plain-HTTP upstream behind a proxy is asked for by its absolute URL; a tunnel carries the path alone.
        self.path = absolute_target("http", parsed.host_header, parsed.target) if proxy and not self.tls \
            else parsed.target
        self.key: tuple[object, ...] = (self.tls, self.host, self.port, proxy, self.ssl)
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections

    def under(self, path: str) -> str:
        """The request target for `path` under this target's URL (`/a2a` + `/message:stream`), its query dropped."""
        base = self.path.partition("?")[0].rstrip("/")
        return base + (path if path.startswith("/") else "/" + path)


class Response:
    """One response, read as it arrives: `await read()` gives whatever body bytes came since the last call
    (b"" once the body is whole). `release()` when done: a connection whose response was read to the end goes
    back to the pool, any other is closed.

    A reader that can handle body bytes without awaiting sets `offer`: while it waits in `read()`, the bytes are
    offered to it in the connection's callback as they arrive, which spares its task a wake-up per read. `offer`
    returns True when it took them; None when it did not, and they wait for `read()`; False when it took them but
    its task must go on: `read()` then returns b"" though the body may not have ended, or the bytes that came since
    (the reader knows why; `complete` says whether the body has ended)."""

    __slots__ = ("_chunks", "_coding", "_connection", "_decompress", "_error", "_head", "_head_bytes", "_inflated_any",
                 "_interim", "_paused", "_raw_headers", "_recalled", "_size", "_tail", "_until_close", "_waiter",
                 "complete", "headers", "keep_alive", "offer", "status")

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self._chunks: list[bytes] = []
        self._size = 0
        self._paused = False
        self._until_close = False
        self._interim = False
        self._decompress: zlib._Decompress | None = None
        self._coding = ""
        self._tail = b""  # compressed bytes read but not inflated yet
        self._inflated_any = False
        self._head_bytes = 0
        self._error: HTTPError | None = None
        self._head: asyncio.Future[None] = connection.loop.create_future()
        self._waiter: asyncio.Future[None] | None = None
        self.complete = False
        self.keep_alive = False
        self.status = 0
        self.headers: dict[str, str] = {}
        self.offer: Callable[[bytes], bool | None] | None = None
        self._recalled = False

    async def read(self) -> bytes:
        if self._decompress is not None:
            return await self._read_inflated()
        while not self._chunks:  # the common case, data already here, awaits nothing
            if self._recalled:
                self._recalled = False
                return b""
            if self.complete:
                return b""
            if self._error is not None:
                raise self._error
            waiter = self._waiter = self._connection.loop.create_future()  # `_wait()` inline: once per chunk
            try:
                await waiter
            finally:
                self._waiter = None
        self._recalled = False  # bytes came after the reader declined and before it ran: they are the answer
        return self._take()

    async def _wait(self) -> None:
        if self._error is not None:
            raise self._error
        self._waiter = self._connection.loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _take(self) -> bytes:
        chunks = self._chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._size = 0
        if self._paused:
            self._paused = False
            self._connection.resume_reading()
        return data

    async def _read_inflated(self) -> bytes:
        """At most `INFLATE_STEP` bytes a call: what is left compressed waits in `_tail`, counted as read."""
        decompress = self._decompress
        assert decompress is not None
        while True:
            while not self._tail and not self._chunks and not self.complete:
                await self._wait()
            data = self._tail or (self._take() if self._chunks else b"")
            if not data:
                if decompress.eof or not self._inflated_any:
                    return b""
                raise ProtocolError(f"upstream's {self._coding} body ended before its end")
            try:
                out = decompress.decompress(data, INFLATE_STEP)
            except zlib.error as exc:
                if self._coding == "deflate" and not self._inflated_any:  # raw deflate, as some servers send it
                    decompress = self._decompress = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._inflated_any = True
                    self._tail = data
                    continue
                raise ProtocolError(f"upstream sent an invalid {self._coding} body: {exc}") from None
            self._inflated_any = True
            self._tail = decompress.unconsumed_tail
            if out or decompress.eof:
                return out

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
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > MAX_HEAD:
            what = "trailers" if self.status else "head"
            raise ProtocolError(f"upstream's response {what} is larger than {MAX_HEAD // 1024} KiB")
        if not self.status:  # trailers carry nothing the gateway reads
            self._raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        headers: dict[str, str] = {}
        for raw_name, raw_value in self._raw_headers:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self._raw_headers.clear()
        parser = self._connection.parser
        status = parser.get_status_code()
        if not 100 <= status <= 599:
            raise ProtocolError(f"upstream answered with status {status}, which HTTP does not have")
        if status < 200:  # an interim answer (103 Early Hints): the real one follows
            self._interim = True
            self._head_bytes = 0
            return
        self.headers = headers
        self.status = status
        self._head_bytes = 0  # the trailers, if any, get their own allowance
        self.keep_alive = parser.should_keep_alive()  # known now; once the message is complete, llhttp forgets
        transfer = headers.get("transfer-encoding")
        if transfer is not None and [c.strip().lower() for c in transfer.split(",")] != ["chunked"]:
            raise ProtocolError(f"upstream sent transfer-encoding {transfer!r}; only chunked is supported")
        coding = headers.get("content-encoding", "identity").strip().lower()
        if coding in _CONTENT_CODINGS:  # never asked for, but some servers compress anyway
            self._coding = coding
            self._decompress = zlib.decompressobj(_CONTENT_CODINGS[coding])
        elif coding not in ("identity", ""):
            raise ProtocolError(f"upstream sent content-encoding {coding!r}, which the gateway cannot read")
        self._until_close = (transfer is None and "content-length" not in headers and status not in (204, 304))
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
            offer = self.offer
            if offer is not None and self._chunks and not self.complete and self._error is None \
                    and self._decompress is None:
                data = self._take()
                taken = offer(data)
                if taken:
                    return
                if taken is None:
                    self._chunks.append(data)
                    self._size += len(data)
                else:
                    self._recalled = True
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

    def __init__(self, pool: Pool, key: tuple[object, ...]) -> None:
        self.pool = pool
        self.key = key
        self.loop = asyncio.get_running_loop()
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.response: Response | None = None
        self.closed = False
        self.expiry: asyncio.TimerHandle | None = None
        self.moved = False
        """Whether the parser finished anything (a header, a body piece) during the current read."""
        self.unfinished = 0
        """Bytes read since the parser last finished anything."""

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports don't subclass asyncio's
        self.pool.opened(self)

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None or response.complete:  # bytes nobody asked for: the connection can't be trusted
            self.close()
            return
        self.moved = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            if isinstance(cause, _AfterTheResponse):
                self.close()  # the response is whole; whatever follows it is not ours to read
            else:
                response.fail(cause if isinstance(cause, HTTPError) else ProtocolError(f"invalid HTTP response: {exc}"))
                self.close()
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            response.fail(ProtocolError(f"invalid HTTP response: {exc}"))
            self.close()
        else:
            if self.moved:
                self.unfinished = 0
            else:
                self.unfinished += len(data)
                if self.unfinished > MAX_LINE:
                    response.fail(ProtocolError(f"upstream sent a line longer than {MAX_LINE // 1024} KiB"))
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

    def on_message_begin(self) -> None:
        if self.response is None or self.response.complete:
            raise _AfterTheResponse

    def on_header(self, name: bytes, value: bytes) -> None:
        self.moved = True
        if self.response is not None:
            self.response.on_header(name, value)

    def on_headers_complete(self) -> None:
        self.moved = True
        if self.response is not None:
            self.response.on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self.moved = True
        if self.response is not None:
            self.response.on_body(body)

    def on_message_complete(self) -> None:
        self.moved = True
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
            poller = select.poll()  # not select.select: it fails for descriptors numbered 1024 and up
            poller.register(sock.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def pause_reading(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def close(self, abort: bool = False) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()


class Pool:
    """Connections by origin, made on demand and kept idle for `keepalive` seconds at most. A target's
    `max_connections` caps its origin's connections, and a request past the cap waits its turn (its deadlines run
    meanwhile); without one the routes' `max_streams` limits bound the streams."""

    def __init__(self, keepalive: float = 1.5, user_agent: str = "agent-gateway") -> None:
        self.keepalive = keepalive
        self.user_agent = user_agent
        self._idle: dict[tuple[object, ...], list[Connection]] = {}
        self._open: set[Connection] = set()
        self._counts: dict[tuple[object, ...], int] = {}
        """Connections per origin, those being made included."""
        self._waiting: dict[tuple[object, ...], deque[asyncio.Future[None]]] = {}

    async def post(self, target: Target, body: bytes, headers: dict[str, str], path: str | None = None) -> Response:
        """Send the request and wait for the response's head; the body is then read with `Response.read()`.
        `path` replaces the target's own (a call under the upstream's URL)."""
        return await self.request("POST", target, body, headers, path)

    async def request(self, method: str, target: Target, body: bytes, headers: dict[str, str],
                      path: str | None = None) -> Response:
        """Any method; `post` is the proxy's one."""
        head = self._head(method, target, body, headers, path)
        connection = self._take(target.key) or await self._new_connection(target)
        response = connection.send(head, body)
        try:
            await response._head
        except BaseException:
            connection.close()
            raise
        return response

    async def _new_connection(self, target: Target) -> Connection:
        key, limit = target.key, target.max_connections
        while limit is not None and self._counts.get(key, 0) >= limit:
            waiter = asyncio.get_running_loop().create_future()
            queue = self._waiting.setdefault(key, deque())
            queue.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake(key)  # woken, then cancelled: the turn passes to the next in line
                elif waiter in queue:
                    queue.remove(waiter)
                raise
            connection = self._take(key)
            if connection is not None:
                return connection
        self._counts[key] = self._counts.get(key, 0) + 1
        try:
            return await self._connect(target)
        except BaseException:
            self._release_slot(key)
            raise

    def _release_slot(self, key: tuple[object, ...]) -> None:
        self._counts[key] -= 1
        self._wake(key)

    def _wake(self, key: tuple[object, ...]) -> None:
        queue = self._waiting.get(key)
        while queue:
            waiter = queue.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def reach(self, target: Target) -> None:
        """Connect to `target` (its proxy and TLS handshake included) and close again: whether it can be reached."""
        (await self._new_connection(target)).close()

    async def close(self) -> None:
        """Close every connection, idle or in use (at shutdown, after the server has stopped its requests). Aborted,
        not closed: a TLS close waits for the peer's answer, which a loop about to close would never read."""
        for connection in list(self._open):
            connection.close(abort=True)
        self._idle.clear()

    def opened(self, connection: Connection) -> None:
        self._open.add(connection)

    def keep(self, connection: Connection) -> None:
        self._idle.setdefault(connection.key, []).append(connection)
        connection.expiry = connection.loop.call_later(self.keepalive, connection.close)
        self._wake(connection.key)

    def forget(self, connection: Connection) -> None:
        """The connection is closing: out of the pool."""
        if connection in self._open:
            self._open.discard(connection)
            self._release_slot(connection.key)
        if connection.expiry is not None:
            connection.expiry.cancel()
            connection.expiry = None
            idle = self._idle.get(connection.key)
            if idle and connection in idle:
                idle.remove(connection)

    def _take(self, key: tuple[object, ...]) -> Connection | None:
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
        proxy = target.proxy

        def factory() -> Connection:
            return Connection(self, target.key)

        try:
            async with asyncio.timeout(target.connect_timeout):
                if proxy is None:
                    _, connection = await loop.create_connection(
                        factory, target.host, target.port, ssl=target.ssl,
                        server_hostname=target.host if target.ssl else None)
                elif target.ssl is None:
                    _, connection = await loop.create_connection(factory, proxy.host, proxy.port)
                else:
                    _, connection = await open_tunnel(loop, proxy, target.host, target.port, factory, target.ssl,
                                                      target.host)
        except TimeoutError:
            raise ConnectTimeout(f"no connection within {target.connect_timeout:g}s") from None
        except ProxyError as exc:
            raise ConnectError(f"cannot connect to {target.host_header} through the proxy: {exc}") from exc
        except OSError as exc:  # refused, unresolvable, TLS (ssl.SSLError is an OSError)
            raise ConnectError(f"cannot connect to {target.host_header}: {exc}") from exc
        return connection

    def _head(self, method: str, target: Target, body: bytes, headers: dict[str, str], path: str | None) -> bytes:
        lines = [f"{method} {target.path if path is None else target.under(path)} HTTP/1.1",
                 f"host: {target.host_header}", f"content-length: {len(body)}"]
        if "user-agent" not in headers:
            lines.append(f"user-agent: {self.user_agent}")
        if target.authorization is not None and "authorization" not in headers:
            lines.append(f"authorization: {target.authorization}")
        if target.proxy is not None and target.ssl is None:
            lines += [f"{name}: {value}" for name, value in target.proxy.headers]
        for name, value in headers.items():
            if name in FRAMING_HEADERS:
                continue
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
                raise InvalidRequestHead(f"header {name!r} has a line break or a colon in it")
            lines.append(f"{name}: {value}")
        try:
            return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        except UnicodeEncodeError as exc:
            raise InvalidRequestHead(f"the request's head has a character outside Latin-1: {exc}") from exc
