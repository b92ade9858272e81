"""One socket to an origin, and httptools' parser over it, feeding the response in flight."""

from __future__ import annotations

import asyncio
import select
from typing import TYPE_CHECKING, cast

import httptools

from gateway.upstream.errors import ConnectionBroken, HTTPError, ProtocolError
from gateway.upstream.response import Response

if TYPE_CHECKING:
    from gateway.upstream.http1 import Pool

MAX_LINE = 16 * 1024
"""Bytes the parser may take without finishing anything (a header line, a chunk size line): llhttp's headers
grow by concatenation, so an endless line would cost time quadratic in its length."""


class _AfterTheResponse(Exception):
    """The upstream sent bytes after a whole response: stop parsing them."""


_NO_PARSER = httptools.HttpResponseParser(object())
"""A closed connection's parser: it reads nothing more, and calls nothing back."""


class Connection:
    """One socket to an origin, and httptools' parser over it, which routes the parse to the current response.

    An `asyncio.Protocol` by its methods, not by inheritance (the loops call them by name): mypyc compiles a
    subclass of it into a class whose deallocator leaves its weak references behind, and crashes as one goes."""

    __slots__ = ("closed", "expiry", "key", "loop", "moved", "news_for_reader", "parser", "poller",
                 "pool", "response", "transport", "unfinished")

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
        self.news_for_reader = False
        """Whether the current read gave the response's reader anything: body the splice did not take, or the end."""
        self.unfinished = 0
        """Bytes read since the parser last finished anything."""
        self.poller: select.poll | None = None
        """What `readable` asks the socket with."""

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports don't subclass asyncio's
        self.pool.opened(self)

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None or response.complete:  # bytes nobody asked for: the connection can't be trusted
            self.close()
            return
        self.moved = self.news_for_reader = False
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
        if response.splice is not None:
            response.splice.flush()  # what it took of this read goes out before anything the reader writes of it
        if self.news_for_reader:  # else a read the splice took whole, or a head not whole yet: nothing to wake for
            response.fed()

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        # The parser holds this connection's callbacks: swapped for one that holds nothing, the connection is freed
        # by its count as it goes, not left in a cycle for the collector (an upstream that closes after each reply).
        self.parser = _NO_PARSER
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
        response = self.response
        if response is not None:
            splice = response.splice
            if splice is None or not splice.took(body):
                response.on_body(body)
                self.news_for_reader = True

    def on_message_complete(self) -> None:
        self.moved = self.news_for_reader = True
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
        try:
            poller = self.poller
            if poller is None:  # made once: the socket is the connection's for its life
                sock = self.transport.get_extra_info("socket")
                if sock is None:
                    return True
                poller = select.poll()  # not select.select: it fails for descriptors numbered 1024 and up
                poller.register(sock.fileno(), select.POLLIN)
                self.poller = poller
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
