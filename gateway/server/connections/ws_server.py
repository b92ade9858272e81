"""uvicorn's WebSocket protocol (websockets' sans-I/O one) reading no message its app has not asked for, and
bounding each connection's messages as the app says.

uvicorn reads a connection's next message as soon as its app takes the last one, so an app that keeps one message
while another runs holds two, and the bytes of a message on its way in are nobody's to count. Here:

- the connection is read only while the app waits for a message: once one is whole, nothing more is read until
  the app asks again, and the client's sends wait (backpressure: TCP holds the rest, not the process);
- the app may bound the connection (`BOUND`, a scope extension, before it accepts): a message over its size is
  refused as its frame's header arrives (close 1009, "message too big"); the bytes of a message on its way in
  count against the process's body budget (past it, close 1013, "try again later"); and the app is told when the
  connection is lost, which it cannot hear while it asks for no message;
- a message's frames are let go of once the app has it: websockets' parser keeps the last frame it read until
  it reads another, which on an idle connection is never;
- a keepalive ping whose pong waits unread behind a message the app has not asked for does not fail the
  connection: another ping goes at once instead, and a peer that is gone fails that write.
"""

from __future__ import annotations

from collections.abc import Callable

from uvicorn._types import ASGIReceiveEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame
from websockets.http11 import Request
from websockets.protocol import State

from gateway.core.errors import Overloaded
from gateway.server.connections.bodies import BodyBudget

BOUND = "agent_gateway.bound_messages"
"""The scope extension through which the app bounds a connection, before it accepts:
`scope["extensions"][BOUND]["bound"](max_bytes, budget, lost)` (see `BoundedWebSocketProtocol.bound`)."""
_TRY_AGAIN_LATER = 1013


class BoundedWebSocketProtocol(WebSocketsSansIOProtocol):
    _budget: BodyBudget | None = None
    _counted = 0
    """Bytes of a message on its way in, taken from `_budget`."""
    _lost: Callable[[], None] | None = None

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        if self.response.status_code == 101:
            self.scope["extensions"][BOUND] = {"bound": self.bound}

    def bound(self, max_bytes: int, budget: BodyBudget, lost: Callable[[], None]) -> None:
        """Refuse a message over `max_bytes` at its frame's header, count what arrives against `budget`, and call
        `lost` once the connection is gone."""
        self.conn.max_message_size = max_bytes
        self._budget = budget
        self._lost = lost

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        try:
            self._count()
        except Overloaded as exc:
            self._fail(_TRY_AGAIN_LATER, exc.message)

    def handle_text(self, event: Frame) -> None:
        super().handle_text(event)
        event.data = b""  # the message is in `frames`, or the app's

    def handle_bytes(self, event: Frame) -> None:
        super().handle_bytes(event)
        event.data = b""

    def handle_cont(self, event: Frame) -> None:
        super().handle_cont(event)
        event.data = b""

    async def receive(self) -> ASGIReceiveEvent:
        """The next event; the connection is read again only when none is waiting."""
        if self.read_paused and self.queue.empty():
            self.read_paused = False
            self.transport.resume_reading()
        return await self.queue.get()

    def keepalive_timeout(self) -> None:
        if self.read_paused and not self.close_sent and not self.transport.is_closing():
            self.pong_timer = None  # the pong may wait unread behind a message: ask again, which a gone peer fails
            self.send_keepalive_ping()
            return
        super().keepalive_timeout()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._count()
        if self._lost is not None:
            self._lost()

    def _count(self) -> None:
        """Take from the budget, or give back, what the message on its way in holds now (its frame's bytes read,
        and its earlier fragments)."""
        if self._budget is None:
            return
        held = 0 if self.disconnected or self.close_sent else (
            len(self.conn.reader.buffer) + sum(len(frame) for frame in self.frames))
        if held > self._counted:
            self._budget.take(held - self._counted)
        elif held < self._counted:
            self._budget.give_back(self._counted - held)
        self._counted = held

    def _fail(self, code: int, reason: str) -> None:
        """Close the connection as uvicorn closes one whose frames cannot be read: the app hears it went."""
        if self._budget is not None:
            self._budget.give_back(self._counted)
            self._budget, self._counted = None, 0
        if self.conn.state is State.OPEN:
            self.conn.fail(code, reason)
            self.handle_parser_exception()
        else:
            self.transport.close()
