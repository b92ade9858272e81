"""The endpoint where a dialect's clients reach every route, each request naming its route (`NamedRoutes`: MCP's
`/mcp`, a tool per route), mounted across the routes like a catalog.

```
request ─▶ Origin (when the dialect asks) ─▶ body (the routes' limits) ─▶ the caller's routes (keys, as a catalog)
        ─▶ the dialect's answer ─┬─ its own (initialize, tools/list, a notification): written as it says
                                 └─ a run of route R: R's handler serves the same request, as a POST to its path
                                    (its keys, limits, conversations and principal); stoppable by the run's key
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
from gateway.core.capabilities import AgentDescription, Answered, NamedRoutes
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
        await self._run(handler, scope, receive, send, answered.body or body, self._name(principal, answered.run_key))

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
                   name: str) -> None:
        """The route's handler serves the request, its body read again from here; told the client left when a
        later request stops the run, on any replica."""
        stopped = asyncio.Event()
        forget = self.board.stoppable(name, stopped.set)
        given = left = False

        async def receiving() -> Message:
            nonlocal given, left
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            if left:  # the client has gone and the run goes on (its stream resumable): only a stop is news
                await stopped.wait()
                return {"type": "http.disconnect", STOPPED: True}
            waiting = asyncio.ensure_future(receive())
            stopping = asyncio.ensure_future(stopped.wait())
            try:
                done, _ = await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiting.cancel()
                stopping.cancel()
            if waiting not in done:
                return {"type": "http.disconnect", STOPPED: True}
            message = waiting.result()
            left = message["type"] == "http.disconnect"
            return message

        # Served as a POST of the JSON the dialect made of it, whatever the method (MCP's GET that resumes a stream
        # becomes a query of the route's).
        headers = [(name, value) for name, value in scope["headers"] if name != b"content-type"]
        headers.append((b"content-type", b"application/json"))
        try:
            await handler({**scope, "path": self.named.path, "method": "POST", "headers": headers}, receiving, send)
        finally:
            forget()

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
