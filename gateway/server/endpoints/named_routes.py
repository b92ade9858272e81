"""The endpoint where a dialect's clients reach every route, each request naming its route (`NamedRoutes`: MCP's
`/mcp`, a tool per route), mounted across the routes like a catalog.

```
request ─▶ Origin (when the dialect asks) ─▶ body (the routes' limits) ─▶ the caller's routes (keys, as a catalog)
        ─▶ the dialect's answer ─┬─ its own (initialize, tools/list, a notification): written as it says
                                 └─ a run of route R: R's handler serves the same request, as a POST to its path
                                    (its keys, limits, conversations and principal); stoppable by the run's key
                                    ─▶ with the dialect's continuation (`Answered.then`): each run's last piece
                                       held for it, and the runs it asks for written on in the same answer
```

A run is stopped (the dialect's `stop`: MCP's `notifications/cancelled`) as its client leaving stops it: its
handler is told the client left, on whichever replica runs it (the run board's `stoppable`, over Redis when the
replicas share one). Sessions the dialect keeps are in the gateway's store, under the caller's principal, so any
replica serves a session's next request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from adapters import registry
from gateway.conversations.store import StoreError
from gateway.conversations.store.base import scoped_key
from gateway.core.capabilities import AgentDescription, Answered, Continuation, NamedRoutes
from gateway.core.codec import Dialect
from gateway.core.errors import GatewayError, RequestError
from gateway.core.validation import load_json_object
from gateway.server.connections.bodies import ClientGone
from gateway.server.endpoints.documents import usable
from gateway.server.request.access import ANONYMOUS
from gateway.server.request.request_ids import request_id_of
from gateway.server.stream.deadlines import STOPPED

if TYPE_CHECKING:
    from gateway.server.endpoints.capabilities import Mounted
    from gateway.server.route import RouteHandler

log = logging.getLogger("agent_gateway.proxy")


def mount(handlers: list[RouteHandler], mounted: Mounted) -> None:
    """Each dialect's endpoint, for the routes that read its requests; it takes its path from a route that has it
    too (the route is one of those it serves)."""
    for dialect in registry.DIALECTS.values():
        named = dialect.capability(NamedRoutes)
        serving = [handler for handler in handlers if dialect.name in handler.route.dialects]
        if named is None or not serving:
            continue
        mounted.paths[named.path] = (NamedEndpoint(dialect, named, serving), frozenset(named.methods))


class NamedEndpoint:
    """One dialect's endpoint across the routes that read it."""

    def __init__(self, dialect: Dialect, named: NamedRoutes, handlers: list[RouteHandler]) -> None:
        self.dialect = dialect
        self.named = named
        self.handlers = handlers
        self.reader = max(handlers, key=lambda handler: handler.route.limits.max_body_bytes).reader
        """The reader of the route that takes the largest body: each route checks its own again."""
        self.origins = {origin for handler in handlers if handler.route.cors is not None
                        for origin in handler.route.cors.allow_origins}
        self.board = handlers[0].board
        """Where a run a later request may stop is named (by principal and run key), for any replica to stop it."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        request: Any = None
        try:
            if self.named.check_origin and not self._origin_allowed(headers):
                raise Forbidden(f"Origin {headers.get('origin')} is not allowed")
            body = await self.reader.body(receive) if scope["method"] == "POST" else b""
            request = load_json_object(body) if body else None
            opened, refused = usable(self.handlers, headers)
            if not opened:
                raise refused or Forbidden("no route is open to this caller")
            principal = _principal(opened, headers)
            asked = _Asked(self.dialect.name, scope["method"], headers, request, opened, principal)
            answered = await self.named.answer(asked)
        except ClientGone:
            return
        except GatewayError as error:
            await self._refuse(send, error, request, headers)
            return
        if answered.stop is not None:
            await self._stop(principal, answered.stop)
        if answered.run is None:
            await _write(send, answered, request_id_of(headers))
            return
        handler = next(h for h in opened if h.route.name == answered.run)
        await self._run(handler, scope, receive, send, answered.body or body, self._name(principal, answered.run_key),
                        answered)

    def _name(self, principal: str, run_key: str | None) -> str:
        return scoped_key("named", self.dialect.name, principal, run_key or "")

    async def _stop(self, principal: str, run_key: str) -> None:
        """Stop the caller's run of that key wherever it runs; a board that cannot ask the other replicas costs
        only this stop."""
        try:
            await self.board.stop_named(self._name(principal, run_key))
        except StoreError as exc:
            log.warning("a stop for the %s endpoint did not reach the other replicas: %s", self.dialect.name, exc)

    async def _run(self, handler: RouteHandler, scope: Scope, receive: Receive, send: Send, body: bytes,
                   name: str, answered: Answered) -> None:
        """The route's handler serves the request, its body read again from here; told the client left when a
        later request stops the run, on any replica, and the answer then ended as the dialect says. With a
        continuation, each run's last piece is held back for it, and the runs it asks for write on in the same
        answer (at most `MAX_RUNS`), after the client has left too when the runs outlive it."""
        stopped = asyncio.Event()
        forget = self.board.stoppable(name, stopped.set)
        answer = _Answer(send)
        try:
            await self._runs(handler, scope, receive, answer.send, body, stopped, answered.then, answered.outlives)
            if stopped.is_set() and answered.stopped and not answer.ended:
                await answer.end_with(answered.stopped)
        finally:
            forget()

    async def _runs(self, handler: RouteHandler, scope: Scope, receive: Receive, send: Send, body: bytes,
                    stopped: asyncio.Event, then: Continuation | None, outlives: bool) -> None:
        # Served as a POST of the JSON the dialect made of it, whatever the method (MCP's GET that resumes a stream
        # becomes a query of the route's).
        headers = [(name, value) for name, value in scope["headers"] if name != b"content-type"]
        headers.append((b"content-type", b"application/json"))
        scope = {**scope, "path": self.named.path, "method": "POST", "headers": headers}
        if then is None:
            await handler(scope, _receiving(body, receive, stopped), send)
            return
        held = _Held(send)
        for runs in range(1, MAX_RUNS + 1):
            await handler(scope, _receiving(body, receive, stopped), held.send)
            if held.last is None:  # the client left, or the run was stopped: nothing more to write
                return
            if runs == MAX_RUNS:  # no more runs: this one's answer ends the chain as it is
                await held.write(held.take())
                break
            going_on = asyncio.ensure_future(then(held.take(), held.write))
            leaving = asyncio.ensure_future(stopped.wait() if outlives else _left(receive, stopped))
            try:
                await asyncio.wait((going_on, leaving), return_when=asyncio.FIRST_COMPLETED)
            finally:
                leaving.cancel()
                if not going_on.done():
                    going_on.cancel()
                    await asyncio.gather(going_on, return_exceptions=True)
            if going_on.cancelled():
                break
            if (failed := going_on.exception()) is not None:
                log.error("the continuation of a run of %s failed", handler.route.name, exc_info=failed)
                break
            if (following := going_on.result()) is None:
                break
            body = following
        await held.end()

    def _origin_allowed(self, headers: Headers) -> bool:
        """No `Origin` (not a browser), the gateway's own (the Host the request came to: the Host check has passed),
        or one a route's CORS allows."""
        origin = headers.get("origin")
        if origin is None or "*" in self.origins or origin in self.origins:
            return True
        return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()

    async def _refuse(self, send: Send, error: GatewayError, request: Any, headers: Headers) -> None:
        reply = self.dialect.errors_for(request)
        if reply is not None:
            status, body = reply(error)
        else:
            status, body = error.status, orjson.dumps(error.to_json())
        await _write(send, Answered(status, body, {"content-type": "application/json"}), request_id_of(headers))


MAX_RUNS = 8
"""Runs one answer may chain (a continuation that asks for more is cut short: the last run's answer ends it)."""


def _receiving(body: bytes, receive: Receive, stopped: asyncio.Event) -> Receive:
    """The request's body once, then the client leaving (or the run stopped, as if it had); once the client has
    left, only the run stopped (a run that goes on for its client to come back to may still be stopped)."""
    given = left = False

    async def receiving() -> Message:
        nonlocal given, left
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        if left:
            await stopped.wait()
            return {"type": "http.disconnect", STOPPED: True}
        message = await _left(receive, stopped)
        left = message["type"] == "http.disconnect" and not message.get(STOPPED)
        return message

    return receiving


async def _left(receive: Receive, stopped: asyncio.Event) -> Message:
    """The client's next message (its leaving), or a disconnect when the run is stopped first."""
    waiting = asyncio.ensure_future(receive())
    stopping = asyncio.ensure_future(stopped.wait())
    try:
        done, _ = await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
        stopping.cancel()
    return waiting.result() if waiting in done else {"type": "http.disconnect", STOPPED: True}


class _Answer:
    """The answer as it is sent: whether it has begun and ended, so that a stopped run's can be ended."""

    __slots__ = ("_send", "ended", "started")

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = self.ended = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        elif not message.get("more_body", False):
            self.ended = True
        await self._send(message)

    async def end_with(self, data: bytes) -> None:
        """`data` as the answer's last SSE event; an answer that had not begun is that stream."""
        if not self.started:
            await self.send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
        await self.send({"type": "http.response.body", "body": b"data: " + data + b"\n\n", "more_body": False})


class _Held:
    """One answer across the runs a continuation chains: the first run's head, every piece as it comes, but each
    run's last piece held for the continuation."""

    __slots__ = ("_send", "last", "started")

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.last: bytes | None = None

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            if not self.started:
                self.started = True
                await self._send(message)
        elif message.get("more_body", False):
            await self._send(message)
        else:
            self.last = message.get("body", b"")

    def take(self) -> bytes:
        last, self.last = self.last or b"", None
        return last

    async def write(self, body: bytes) -> None:
        if body:
            await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def end(self) -> None:
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


def _principal(opened: list[RouteHandler], headers: Headers) -> str:
    """Whose sessions and runs these are: the principal a key or tenant makes the caller on the routes it opens,
    else anonymous."""
    principals = [handler.access.identify(headers).principal for handler in opened]
    return next((principal for principal in principals if principal != ANONYMOUS), ANONYMOUS)


class Forbidden(RequestError):
    status = 403


class _Asked:
    """A request to the endpoint, as the dialect reads it (`AtEndpoint`)."""

    def __init__(self, dialect: str, method: str, headers: Headers, body: Any, opened: list[RouteHandler],
                 principal: str) -> None:
        self._dialect = dialect
        self.method = method
        self.headers: Mapping[str, str] = {name: value for name, value in headers.items()}
        self.body = body
        self.routes: Sequence[AgentDescription] = [
            AgentDescription(h.route.name, h.route.agent.description, h.route.agent.url or "") for h in opened]
        self._store = opened[0].mapper.store
        self._principal = principal

    def _key(self, session_id: str) -> str:
        return scoped_key("session", self._dialect, self._principal, session_id)

    async def session(self, session_id: str) -> dict[str, Any] | None:
        kept = await self._store.get(self._key(session_id))
        return orjson.loads(kept) if kept is not None else None

    async def keep(self, session_id: str, kept: dict[str, Any]) -> None:
        await self._store.put(self._key(session_id), orjson.dumps(kept))

    async def forget(self, session_id: str) -> None:
        await self._store.delete(self._key(session_id))


async def _write(send: Send, answered: Answered, request_id: str) -> None:
    """The dialect's own answer, with the request's id as every answer of the gateway's carries one."""
    headers = [(name.encode(), value.encode()) for name, value in answered.headers.items()]
    headers.append((b"x-request-id", request_id.encode()))
    await send({"type": "http.response.start", "status": answered.status, "headers": headers})
    await send({"type": "http.response.body", "body": answered.body})
