"""A route's WebSocket, for a client dialect with a WebSocket mode (`gateway.core.sockets.SocketMode`), at each of
the route's paths where such a dialect reads requests (`mount`): each message is a request that the route's handler
runs exactly as a POST, one at a time, its reply sent back as messages.

```
            ┌──────────────────────────────┐
 client ──▶ │ reader (task): the next      │── websocket.disconnect ──▶ the running request's client is gone:
            │ message, held while one runs │   its run is cancelled as an HTTP client's is
            ├──────────────────────────────┤
            │ the connection: the next     │── RouteHandler.serve(POST scope, the message as its body,
            │ message, within the route's  │   session.continued) ──▶ auth, limits, deadlines, conversation
            │ idle time and the connection │   mapping, the upstream call and its translation
            │ limit                        │
            ├──────────────────────────────┤
 client ◀── │ _TurnSend: the HTTP reply's  │◀── http.response.start / body: its events, one message each
            │ pieces as messages           │    (session.frames), or an error envelope (session.refused)
            └──────────────────────────────┘
```

A message is bounded as a POST's body is. The server refuses one larger than the route takes as its header
arrives (close 1009), and counts its bytes against the process's body budget while they arrive (past it, close
1013: `gateway.server.connections.ws_server`). The one message held while another runs counts there too (past it,
the dialect's error in its turn), and nothing more is read while it is held: the client's sends wait (backpressure).
A message that is not JSON, or that the dialect refuses, gets the dialect's error message and the connection goes on.
Sockets are counted per route and per key (`limits.max_sockets`, `max_sockets_per_key`); past either, the handshake
is answered with the dialect's error and closed 1013 (try again later). A browser's handshake from an origin the
route's CORS does not allow is refused (a WebSocket is not bound by CORS, and a page on any origin could otherwise
run requests in its visitor's name, which the JSON content type stops for a POST).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import orjson
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from adapters import registry
from gateway.core.codec import Dialect
from gateway.core.errors import GatewayError, Overloaded, RequestTooLarge, TooManyStreams
from gateway.core.sockets import SocketMode, SocketSession
from gateway.core.validation import load_json_object
from gateway.server.connections.ws_server import BOUND

if TYPE_CHECKING:
    from gateway.server.endpoints.capabilities import Mounted
    from gateway.server.route import RouteHandler

CONNECTION_SECONDS = 3600.0
"""How long one connection may serve requests (Open Responses: 60 minutes); then it ends with an error that says
so, and the client opens another."""
_DROPPED_HEADERS = frozenset({b"content-type", b"content-length", b"accept", b"x-request-id", b"upgrade",
                              b"connection", b"sec-websocket-key", b"sec-websocket-version",
                              b"sec-websocket-extensions", b"sec-websocket-protocol"})
"""The handshake's headers that say nothing of the requests it carries (each gets an id of its own)."""
_POLICY = 1008
_NORMAL = 1000
_TRY_AGAIN_LATER = 1013


def mount(handler: RouteHandler, mounted: Mounted) -> None:
    """A WebSocket at each of the route's paths where a dialect with one reads requests (the first such, on a path
    several take)."""
    route = handler.route
    for path in route.served_paths:
        owners = [registry.get(name) for name in registry.path_owners(route.dialects, path)]
        with_socket = [dialect for dialect in owners if dialect.capability(SocketMode) is not None]
        if with_socket:
            mounted.sockets.setdefault(path, SocketEndpoint(handler, with_socket[0]))


class SocketEndpoint:
    """The ASGI app of a route's WebSocket at one path."""

    def __init__(self, handler: RouteHandler, dialect: Dialect) -> None:
        mode = dialect.capability(SocketMode)
        assert mode is not None
        self.handler = handler
        self.dialect = dialect
        self.mode: SocketMode = mode

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        headers = Headers(scope=scope)
        if not self._origin_allowed(headers.get("origin")):
            await send({"type": "websocket.close", "code": _POLICY})  # before the accept: a 403
            return
        connection = _Connection(self, scope, receive, send)
        bound = scope.get("extensions", {}).get(BOUND)
        if bound is not None:  # the server refuses larger messages unread, counts what arrives, says it is lost
            bound["bound"](self.handler.route.limits.max_body_bytes, connection.bodies, connection.gone.set)
        await send({"type": "websocket.accept"})
        access = self.handler.access
        try:
            caller = access.identify(headers)
            access.open_socket(caller)
        except GatewayError as error:  # after the accept, so that the client reads why in its dialect
            await send({"type": "websocket.send", "text": self.mode.refusal(error.status, error.code,
                                                                            error.message).decode()})
            await send({"type": "websocket.close",
                        "code": _TRY_AGAIN_LATER if isinstance(error, TooManyStreams) else _POLICY})
            return
        try:
            await connection.serve()
        finally:
            access.close_socket(caller)

    def _origin_allowed(self, origin: str | None) -> bool:
        """A handshake from a browser page (it sends `Origin`) only from an origin the route's CORS allows."""
        if origin is None:
            return True
        cors = self.handler.route.cors
        return cors is not None and ("*" in cors.allow_origins or origin in cors.allow_origins)


class _Connection:
    """One client's connection: its messages, run in turn."""

    def __init__(self, endpoint: SocketEndpoint, scope: Scope, receive: Receive, send: Send) -> None:
        self.endpoint = endpoint
        self.scope = scope
        self._receive = receive
        self._send = send
        self.session: SocketSession = endpoint.mode.new_session()
        self.waiting: asyncio.Queue[bytes | GatewayError | None] = asyncio.Queue()
        """The message read while another runs, or why it is refused (said in its turn, not amid the running
        one's events); at most one, as the reader reads on once it is taken. None once the client is gone."""
        self.held = 0
        """The waiting message's bytes, taken from the process's body budget until it runs."""
        self.bodies = endpoint.handler.reader.bodies
        self.gone = asyncio.Event()
        self.opened = time.monotonic()

    async def serve(self) -> None:
        reader = asyncio.create_task(self._read())
        try:
            while not self.gone.is_set() and await self._run_next():
                pass
        finally:
            reader.cancel()
            self._let_go()

    async def _run_next(self) -> bool:
        """The next message, run once it comes within the route's idle time and the connection's limit; False
        when the connection is over."""
        idle = self.endpoint.handler.route.timeouts.idle
        left = self.opened + CONNECTION_SECONDS - time.monotonic()
        try:
            async with asyncio.timeout(max(0.0, min(idle, left))):
                message = await self.waiting.get()
        except TimeoutError:
            if left <= idle:
                await self.send(self.endpoint.mode.refusal(
                    400, "websocket_connection_limit_reached",
                    f"this connection has served requests for {CONNECTION_SECONDS:g}s: open another"))
            await self._close(_NORMAL)
            return False
        if message is None:
            return False
        self._let_go()
        self.waiting.task_done()  # the reader may read the next
        if isinstance(message, GatewayError):
            await self.send(self._refused(message))
        else:
            await self._request(message)
        return True

    async def _request(self, raw: bytes) -> None:
        """One message, run as a POST; a message refused before that gets the dialect's error."""
        handler, limits = self.endpoint.handler, self.endpoint.handler.route.limits
        try:
            body = self.session.request(load_json_object(raw, limits.max_json_depth))
        except GatewayError as error:
            await self.send(self._refused(error))
            return
        await handler.serve(self._post_scope(), _Body(orjson.dumps(body), self.gone), _TurnSend(self),
                            continued=self.session.continued)

    def _refused(self, error: GatewayError) -> bytes:
        reply = self.endpoint.dialect.errors_for(None)
        if reply is not None:
            return self.session.refused(*reply(error))
        return self.session.refused(error.status, orjson.dumps(error.to_json()))

    def _post_scope(self) -> Scope:
        """The scope of a POST of the message at the socket's path, with the handshake's headers (its key)."""
        scope = self.scope
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _DROPPED_HEADERS]
        headers += [(b"content-type", b"application/json"), (b"accept", b"text/event-stream")]
        return {**scope, "type": "http", "method": "POST", "http_version": "1.1", "headers": headers,
                "scheme": "https" if scope.get("scheme") == "wss" else "http"}

    async def _read(self) -> None:
        """The client's messages, one at a time, until it goes. The next is asked for only once the last has been
        taken to run: meanwhile nothing is read and the client's sends wait. A client that leaves while nothing
        waits is heard at once; while a message waits, once the server finds the connection lost (`BOUND`) at
        its next write, an event or a keepalive ping."""
        try:
            while await self._read_one():
                await self.waiting.join()  # until it is taken to run
        finally:
            self.gone.set()
            self.waiting.put_nowait(None)

    async def _read_one(self) -> bool:
        """The client's next message, left waiting for its turn; False once the client is gone."""
        raw = await self._next()
        if raw is None:
            return False
        self.waiting.put_nowait(self._held(raw))
        return True

    async def _next(self) -> bytes | None:
        """The client's next message, as bytes (its text let go of), or None once the client is gone."""
        while True:
            message = await self._receive()
            if message["type"] == "websocket.disconnect":
                return None
            if message["type"] == "websocket.receive":
                text = message.get("text")
                return text.encode() if text is not None else message.get("bytes") or b""

    def _held(self, raw: bytes) -> bytes | GatewayError:
        """The message, its bytes counted against the process's body budget while it waits its turn; or, past the
        budget, why it is refused."""
        limit = self.endpoint.handler.route.limits.max_body_bytes
        if len(raw) > limit:  # read whole by a server that did not bound the connection (`BOUND`)
            return RequestTooLarge(f"the message is larger than {limit} bytes")
        try:
            self.bodies.take(len(raw))
        except Overloaded as error:
            return error
        self.held = len(raw)
        return raw

    def _let_go(self) -> None:
        self.bodies.give_back(self.held)
        self.held = 0

    async def send(self, text: bytes) -> None:
        if self.gone.is_set():
            return
        try:
            await self._send({"type": "websocket.send", "text": text.decode()})
        except (OSError, RuntimeError):  # closed under the send
            self.gone.set()

    async def _close(self, code: int) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            await self._send({"type": "websocket.close", "code": code})
        self.gone.set()


class _Body:
    """A request's `receive`: its body, then nothing until the client's connection is gone."""

    __slots__ = ("body", "gone")

    def __init__(self, body: bytes, gone: asyncio.Event) -> None:
        self.body: bytes | None = body
        self.gone = gone

    async def __call__(self) -> Message:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}


class _TurnSend:
    """A request's `send`: its streamed reply's events as messages, or an error before it started as one."""

    __slots__ = ("connection", "error", "status")

    def __init__(self, connection: _Connection) -> None:
        self.connection = connection
        self.status = 200
        self.error = bytearray()

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            return
        body = message.get("body", b"")
        connection = self.connection
        if self.status >= 300:
            self.error += body
            if not message.get("more_body", False):
                await connection.send(connection.session.refused(self.status, bytes(self.error)))
            return
        for frame in connection.session.frames(body):
            await connection.send(frame)
