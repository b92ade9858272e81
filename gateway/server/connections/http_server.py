"""uvicorn's HTTP protocol with a deadline on every request head, and a response's head sent with its first body.

uvicorn times out idle keep-alive connections, but not a client that opens a connection and sends its request head
slowly or never (slow loris): each such connection stays open until the file descriptors run out. Here a request
head must be complete within `HEAD_SECONDS` of the connection opening or the request's first byte, or the
connection is closed. With `limit_concurrency` (the gateway's `max_connections`) the connections a worker keeps are
bounded too, and a request past it is answered 503.

uvicorn writes a response's head to the socket as soon as the app starts the response, and each body piece as it
comes: two system calls where one would do, since the gateway sends its first piece right after the head. Here the
head waits for the first body piece, or for the end of the event loop's turn if none comes in it, and both go out
in one write.

`DirectBody` writes a streamed response's pieces as uvicorn's `send` would, but without a coroutine per piece, when
the client is reading: the relay writes paced events so, from the upstream connection's read callback. It also
drops a client that stopped reading, which `send` cannot. `on_client_gone` calls back when the client of a
response leaves before its end: what a task awaiting `receive` for `http.disconnect` would learn, without the task.

What a connection holds while it streams is kept small: uvicorn makes an `asyncio.Event` for each connection's flow
control and each request's body, and a deque for pipelined requests, each with an empty deque of some 760 bytes;
here they are a `QuietEvent` and a list, whose waiters are made only when something waits.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from starlette.types import Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

HEAD_SECONDS = 10.0
"""Set from the configuration's `header_timeout` before the server starts (in each worker)."""


class HeadDeadlineProtocol(HttpToolsProtocol):
    # Slots, not the instance dict: uvicorn's attributes fill its shared keys, and one more makes the dict of every
    # connection a combined one, some 1.3 KiB larger.
    __slots__ = ("_head_timer", "client_gone")
    _head_timer: asyncio.TimerHandle | None
    client_gone: tuple[RequestResponseCycle, Callable[[], None]] | None
    """What to call if the client leaves before the end of the response of this cycle (`on_client_gone`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._head_timer = None
        self.client_gone = None
        super().__init__(*args, **kwargs)
        if type(self.pipeline) is deque:
            self.pipeline = _Pipeline()  # type: ignore[assignment]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        flow = self.flow
        if type(getattr(flow, "_is_writable_event", None)) is asyncio.Event:
            flow._is_writable_event = QuietEvent(is_set=flow._is_writable_event.is_set())  # type: ignore[assignment]
        self._arm_head_deadline()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_head_deadline()

    def on_headers_complete(self) -> None:
        self._disarm_head_deadline()
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle is not before and self.transport is not None:
            cycle.transport = _HeadHeld(self.transport, cycle, self.loop)  # type: ignore[assignment]
            if type(cycle.message_event) is asyncio.Event and not cycle.message_event.is_set():
                cycle.message_event = QuietEvent()  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)
        watched = self.client_gone
        if watched is not None and watched[0].disconnected:
            self.client_gone = None
            watched[1]()

    def _arm_head_deadline(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_too_slow)

    def _disarm_head_deadline(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class _HeadHeld:
    """The transport one response's cycle writes through until its first write (the head, or a `100 Continue`),
    which is held until the next write or the end of the loop's turn, whichever comes first; then the cycle writes
    to the socket's transport again. Anything else is the transport's."""

    __slots__ = ("_cycle", "_held", "_loop", "_released", "_transport")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle, loop: asyncio.AbstractEventLoop
                 ) -> None:
        self._transport = transport
        self._cycle = cycle
        self._held: bytes | None = None
        self._loop = loop
        self._released = False

    def write(self, data: bytes) -> None:
        if self._held is None:
            self._held = data
            self._loop.call_soon(self.release)
        else:
            self.release(data)

    def release(self, more: bytes = b"") -> None:
        held = self._held
        if held is None or self._released:
            return
        self._released = True
        self._cycle.transport = self._transport
        if not self._transport.is_closing():
            self._transport.write(held + more if more else held)

    def close(self) -> None:
        self.release()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class DirectBody:
    """Writes a streamed (chunked) response's body pieces to the connection at once, the bytes uvicorn's `send`
    writes, when that needs no wait (`ready`): the client is there, reading, and the head has gone. Otherwise the
    piece goes through `send`, which waits for a slow client."""

    __slots__ = ("_cycle",)

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self._cycle: RequestResponseCycle | None = cycle

    def ready(self) -> bool:
        cycle = self._cycle
        if cycle is None:
            return False
        try:
            return not (cycle.flow.write_paused or cycle.disconnected or cycle.response_complete
                        or not cycle.response_started or cycle.chunked_encoding is not True)
        except AttributeError:  # a uvicorn whose cycle is made otherwise: `send` it is, from now on
            self._cycle = None
            return False

    @property
    def cycle(self) -> RequestResponseCycle | None:
        """The response's cycle, for a writer that reads it as `ready` does (the text splice)."""
        return self._cycle

    def write(self, body: bytes) -> None:
        """One piece (never empty), once `ready` said so."""
        assert self._cycle is not None
        self._cycle.transport.write(b"%x\r\n%b\r\n" % (len(body), body))

    def abort(self) -> bool:
        """Close the connection at once, dropping what the client has not read: a `send` waiting for the client
        returns. False if this response's connection cannot be reached."""
        cycle = self._cycle
        if cycle is None:
            return False
        cycle.transport.abort()
        return True


def on_client_gone(send: Send, gone: Callable[[], None]) -> Callable[[], None] | None:
    """Call `gone` when the client of the response `send` belongs to leaves before the response's end, if it is a
    cycle of `HeadDeadlineProtocol`'s; returns what stops the watch, once the response is over. None for any other
    server's `send`: its `receive` says when the client has left."""
    cycle = getattr(send, "__self__", None)
    protocol = getattr(getattr(cycle, "on_response", None), "__self__", None)
    if type(cycle) is not RequestResponseCycle or not isinstance(protocol, HeadDeadlineProtocol):
        return None
    if cycle.disconnected:
        asyncio.get_running_loop().call_soon(gone)
        return _nothing
    protocol.client_gone = (cycle, gone)
    return partial(_unwatch, protocol, cycle)


def _unwatch(protocol: HeadDeadlineProtocol, cycle: RequestResponseCycle) -> None:
    watched = protocol.client_gone
    if watched is not None and watched[0] is cycle:
        protocol.client_gone = None


def _nothing() -> None:
    pass


class QuietEvent:
    """`asyncio.Event` as uvicorn uses it (`set`, `clear`, `is_set`, `wait`), its waiters a list made when one
    waits, not a deque made with the event."""

    __slots__ = ("_set", "_waiters")

    def __init__(self, is_set: bool = False) -> None:
        self._set = is_set
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if not self._set:
            self._set = True
            for waiter in self._waiters or ():
                if not waiter.done():
                    waiter.set_result(True)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> bool:
        if self._set:
            return True
        waiter = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        waiters = self._waiters
        waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            waiters.remove(waiter)
            if not waiters and self._waiters is waiters:
                self._waiters = None


class _Pipeline(list[Any]):
    """The requests a connection read while it answers another (HTTP pipelining), as uvicorn's deque is used: the
    last in at the front, the next out from the back."""

    __slots__ = ()

    def appendleft(self, item: Any) -> None:
        self.insert(0, item)


def direct_body(send: Send) -> DirectBody | None:
    """A direct writer for the response `send` belongs to, if it is uvicorn's httptools cycle (the one `serve`
    runs) answering anything but HEAD; else None, and every piece goes through `send`."""
    cycle = getattr(send, "__self__", None)
    if type(cycle) is not RequestResponseCycle or cycle.scope.get("method") == "HEAD":
        return None
    return DirectBody(cycle)
