"""A dialect's WebSocket mode: its clients hold one connection at the dialect's path and send a request per
message, each answered with the events its HTTP stream would carry, one message each (Open Responses' WebSocket
transport). The gateway runs each message as it runs a POST (`gateway.server.endpoints.sockets`); the dialect says
what a message is, what the connection remembers between its runs, and how the reply's bytes become messages.

```
 message ──▶ session.request ──▶ the route's handler, as a POST ──▶ session.frames ──▶ messages
                                 │ session.continued(turn): what the                 │ (terminal events, noted:
                                 │ connection remembers                              │ the next turn may follow)
                                 └─▶ refused before the reply started ──▶ session.refused ──▶ an error message
```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.core.capabilities import Capability
from gateway.core.turn import Turn


class SocketSession(Protocol):
    """One client connection's side of the dialect: its runs come one at a time, so it holds the current one."""

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """The body a POST of the same request would have, from a message's JSON (raises `GatewayError`)."""
        ...

    def continued(self, turn: Turn) -> Turn:
        """The turn as the connection's earlier runs make it (raises `GatewayError`): called once the request has
        been read, before it goes upstream."""
        ...

    def frames(self, body: bytes) -> list[bytes]:
        """The messages a piece of the streamed reply holds (a frame may end in a later piece)."""
        ...

    def refused(self, status: int, body: bytes) -> bytes:
        """The message for a request refused before its reply started (`body` the dialect's error body)."""
        ...


@dataclass(frozen=True, slots=True)
class SocketMode(Capability):
    """The dialect serves a WebSocket at its paths (see the module)."""

    new_session: Callable[[], SocketSession]
    refusal: Callable[[int, str, str], bytes]
    """The message for a connection refused or ended by the gateway (status, code, message): an idle or old one."""
