"""uvicorn's HTTP protocol with a deadline on every request head.

uvicorn times out idle keep-alive connections, but not a client that opens a connection and sends its request head
slowly or never (slow loris): each such connection stays open until the file descriptors run out. Here a request
head must be complete within `HEAD_SECONDS` of the connection opening or the request's first byte, or the
connection is closed. With `limit_concurrency` (the gateway's `max_connections`) the connections a worker keeps are
bounded too, and a request past it is answered 503.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_SECONDS = 10.0
"""Set from the configuration's `header_timeout` before the server starts (in each worker)."""


class HeadDeadlineProtocol(HttpToolsProtocol):
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_head_deadline()

    def on_headers_complete(self) -> None:
        self._disarm_head_deadline()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

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
