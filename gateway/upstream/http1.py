"""A small HTTP/1.1 client for upstream calls: an asyncio protocol over httptools, with a keep-alive pool.

The gateway asks little of a client: POST a body, read the answer as it streams, keep connections alive, speak TLS.
What a general client adds on top costs it on every chunk, and streaming frameworks write one HTTP chunk per event,
so that cost is paid per event (docs/performance.md has the measurements).

Connections are per origin and kept idle for `keepalive` seconds at most, less than common servers keep theirs
(gunicorn 2 s; uvicorn and Node 5 s): a POST sent on a connection the server is closing may or may not have reached
it, and cannot be sent again. For the same reason, an idle connection that has anything to read (the server's
close, or stray bytes) is dropped rather than used.

What a hostile or broken upstream can do is bounded, as httpx and aiohttp bound it: a response head (and trailers)
of at most 64 KiB, no line of it longer than 16 KiB, a compressed body inflated only as it is read and never more
than 64 KiB at a time, a response that ends where llhttp says it ends (a connection with anything after it is
closed, never pooled), `Transfer-Encoding` other than `chunked` and statuses outside 100-599 refused.

Every failure is an `HTTPError` (`errors.py` draws the tree), and nothing else escapes a call.

```
http1.py        the pool: connections by origin, made on demand, kept alive, capped per target
request.py      a route's Target, and the request head written for it
connection.py   one socket and httptools' parser over it
response.py     one response read as it arrives (and Offer, what a reader does with bytes offered to it)
foreign.py      a call over a transport this client does not speak, made by who speaks it, read as a response
errors.py       the error tree
```
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import cast

from gateway.upstream import foreign
from gateway.upstream.connection import MAX_LINE, Connection
from gateway.upstream.errors import (
    ConnectError,
    ConnectionBroken,
    ConnectTimeout,
    HTTPError,
    InvalidRequestHead,
    ProtocolError,
)
from gateway.upstream.proxies import ProxyError, open_tunnel
from gateway.upstream.request import FRAMING_HEADERS, HOP_BY_HOP_HEADERS, Target, request_head
from gateway.upstream.response import (
    DECLINED,
    HIGH_WATER,
    INFLATE_STEP,
    MAX_HEAD,
    TAKEN,
    TAKEN_AND_WAKE,
    Offer,
    Response,
)

__all__ = ["DECLINED", "FRAMING_HEADERS", "HIGH_WATER", "HOP_BY_HOP_HEADERS", "INFLATE_STEP", "MAX_HEAD", "MAX_LINE",
           "TAKEN", "TAKEN_AND_WAKE", "ConnectError", "ConnectTimeout", "Connection", "ConnectionBroken", "HTTPError",
           "InvalidRequestHead", "Offer", "Pool", "ProtocolError", "Response", "Target"]


class Pool:
    """Connections by origin, made on demand and kept idle for `keepalive` seconds at most. A target's
    `max_connections` caps its origin's connections, and a request past the cap waits its turn (its deadlines run
    meanwhile); without one the routes' `max_streams` limits bound the streams."""

    def __init__(self, keepalive: float = 1.5, user_agent: str = "agent-gateway") -> None:
        self.keepalive = keepalive
        self.transports: dict[str, foreign.Transport] = {}
        """The other transports this app's upstreams are called over, by name: closed with the pool."""
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
        """Any method; `post` is the proxy's one. A target reached over another transport is called through it."""
        if target.transport is not None:
            return await foreign.call(target.transport, target.url, target.connect_timeout, method, path, body,
                                      headers)
        head = request_head(method, target, body, headers, path, self.user_agent)
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

    def transport(self, name: str, open_transport: Callable[[], foreign.Transport]) -> foreign.Transport:
        """The transport called `name` of this pool, opened the first time it is asked for."""
        found = self.transports.get(name)
        if found is None:
            found = self.transports[name] = open_transport()
        return found

    async def reach(self, target: Target) -> None:
        """Connect to `target` (its proxy and TLS handshake included) and close again: whether it can be reached."""
        (await self._new_connection(target)).close()

    async def close(self) -> None:
        """Close every connection, idle or in use (at shutdown, after the server has stopped its requests). Aborted,
        not closed: a TLS close waits for the peer's answer, which a loop about to close would never read."""
        for connection in list(self._open):
            connection.close(abort=True)
        self._idle.clear()
        transports, self.transports = self.transports, {}
        for transport in transports.values():
            await transport.close()

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

        def factory() -> asyncio.Protocol:
            return cast(asyncio.Protocol, Connection(self, target.key))  # a protocol by its methods

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
        return cast(Connection, connection)
