"""One response, read as it arrives, and what a reader that handles its bytes in the connection's callback answers
when they are offered to it (`Offer`)."""

from __future__ import annotations

import asyncio
import enum
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Protocol

from gateway.upstream.errors import ConnectionBroken, HTTPError, ProtocolError

if TYPE_CHECKING:
    from gateway.upstream.connection import Connection

HIGH_WATER = 256 * 1024
"""Unread response bytes held per connection before it stops reading from the socket: past that, a client that
reads slowly makes the upstream's writes block instead of the gateway's memory grow."""
MAX_HEAD = 64 * 1024
"""Bytes of a response's head, and again of its trailers, that are read; more is a protocol error."""
INFLATE_STEP = 64 * 1024
"""Most bytes a compressed body inflates to per read: a small gzip bomb stays a trickle."""
_CONTENT_CODINGS = {"gzip": 47, "x-gzip": 47, "deflate": 15}  # zlib wbits: 47 reads gzip or zlib


class Offer(enum.Enum):
    """What a reader did with body bytes offered to it (`Response.offer`)."""

    TAKEN = 1
    """It took them: its task waits on in `read()`."""
    DECLINED = 2
    """It left them: they wait for its task's `read()`."""
    TAKEN_AND_WAKE = 3
    """It took them, but its task must go on: `read()` then returns b"" though the body may not have ended, or the
    bytes that came since (the reader knows why; `complete` says whether the body has ended)."""


# The members as globals, for the per-read path (`Response.fed`, and the readers that answer): on Python 3.11 a
# member read through its class goes through `EnumType.__getattr__`, several times the cost of a global.
TAKEN: Final = Offer.TAKEN
DECLINED: Final = Offer.DECLINED
TAKEN_AND_WAKE: Final = Offer.TAKEN_AND_WAKE


class Splice(Protocol):
    """What takes body pieces before a response's reader does, writing what it makes of them elsewhere
    (gateway.server.stream.splice)."""

    def took(self, piece: bytes) -> bool:
        """Whether it took `piece` (then the reader never sees it)."""

    def flush(self) -> None:
        """The connection's read is over: what it made of the pieces it took goes out now."""


class Response:
    """One response, read as it arrives: `await read()` gives whatever body bytes came since the last call
    (b"" once the body is whole). `release()` when done: a connection whose response was read to the end goes
    back to the pool, any other is closed.

    A reader that can handle body bytes without awaiting sets `offer`: while it waits in `read()`, the bytes are
    offered to it in the connection's callback as they arrive, which spares its task a wake-up per read. `offer`
    answers what it did with them (`Offer`)."""

    __slots__ = ("_chunks", "_coding", "_connection", "_decompress", "_error", "_head", "_head_bytes", "_inflated_any",
                 "_interim", "_paused", "_raw_headers", "_size", "_tail", "_until_close", "_waiter", "_woken_by_offer",
                 "complete", "headers", "keep_alive", "offer", "splice", "status")

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
        self.offer: Callable[[bytes], Offer] | None = None
        self.splice: Splice | None = None
        """Offered each body piece as the connection reads it, before anything else: a piece it took is the
        reader's no more."""
        self._woken_by_offer = False
        """The reader's `offer` took bytes and asked its task to go on (`TAKEN_AND_WAKE`): `read()` returns b"" once,
        unless bytes came since."""

    async def read(self) -> bytes:
        if self._decompress is not None:
            return await self._read_inflated()
        while not self._chunks:  # the common case, data already here, awaits nothing
            if self._woken_by_offer:
                self._woken_by_offer = False
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
        self._woken_by_offer = False  # bytes came after the reader's offer woke it and before it ran: the answer
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
        headers = _joined(self._raw_headers)
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
        coding, self._until_close = _body_framing(headers, status)
        if coding:  # never asked for, but some servers compress anyway
            self._coding = coding
            self._decompress = zlib.decompressobj(_CONTENT_CODINGS[coding])
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
        """After a read from the socket that gave the reader body or the body's end: wake it, and stop reading
        while it lags far behind."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            if not self._chunks and not self.complete and self._error is None:
                return  # nothing new to read: a piece the splice took, or a head not whole yet
            offer = self.offer
            if offer is not None and self._chunks and not self.complete and self._error is None \
                    and self._decompress is None:
                data = self._take()
                taken = offer(data)
                if taken is TAKEN:
                    return
                if taken is DECLINED:
                    self._chunks.append(data)
                    self._size += len(data)
                else:
                    self._woken_by_offer = True
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


def _joined(raw_headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """A head's fields by their lowercase names, a repeated one's values joined with commas."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in raw_headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def _body_framing(headers: dict[str, str], status: int) -> tuple[str, bool]:
    """How the body after a head is read: its content coding ("" for none), and whether it ends only where the
    connection does. A transfer or content coding the client cannot read is a `ProtocolError`."""
    transfer = headers.get("transfer-encoding")
    if transfer is not None and [c.strip().lower() for c in transfer.split(",")] != ["chunked"]:
        raise ProtocolError(f"upstream sent transfer-encoding {transfer!r}; only chunked is supported")
    coding = headers.get("content-encoding", "identity").strip().lower()
    if coding not in _CONTENT_CODINGS:
        if coding not in ("identity", ""):
            raise ProtocolError(f"upstream sent content-encoding {coding!r}, which the gateway cannot read")
        coding = ""
    return coding, (transfer is None and "content-length" not in headers and status not in (204, 304))
