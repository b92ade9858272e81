"""One route's request handler: a request identified, read and checked, then answered as a run (`Call`), a query
about runs; on a resumable route, a run's reply is kept (`ResumableRuns`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from adapters import registry
from gateway.config import Route
from gateway.conversations.mapper import ConversationMapper
from gateway.core.codec import Dialect
from gateway.core.errors import (
    ErrorCode,
    GatewayError,
    ShuttingDown,
)
from gateway.core.queries import RunQuery
from gateway.core.turn import Turn
from gateway.runs.board import RunBoard
from gateway.server.connections.bodies import BodyBudget, ClientGone
from gateway.server.connections.drain import Drain
from gateway.server.endpoints import queries
from gateway.server.endpoints.push import Pusher
from gateway.server.operations.metrics import Metrics
from gateway.server.operations.observed import Observer
from gateway.server.operations.record import RequestOutcome
from gateway.server.operations.telemetry import Tracing
from gateway.server.request.access import Access
from gateway.server.request.backends import Backend
from gateway.server.request.budget import Budget
from gateway.server.request.call import Call
from gateway.server.request.discovery import SideCalls
from gateway.server.request.ejection import Ejection
from gateway.server.request.entry import entered, identify
from gateway.server.request.reading import Called, RequestReader
from gateway.server.request.request_ids import request_id_of
from gateway.server.request.shared_ejection import SharedEjection
from gateway.server.request.upstream_sessions import SessionShelf
from gateway.server.resumable import ResumableRuns
from gateway.server.stream.deadlines import watch_disconnect
from gateway.server.stream.resume import run_key
from gateway.upstream.http1 import Pool

log = logging.getLogger("agent_gateway.proxy")


class RouteHandler:
    """The ASGI app behind one route's paths."""

    def __init__(self, route: Route, *, pool: Pool, mapper: ConversationMapper, bodies: BodyBudget,
                 keepalive: float, metrics: Metrics, board: RunBoard, drain: Drain, shelf: SessionShelf,
                 log_bodies: bool = False, debug_errors: bool = False, tracing: Tracing | None = None,
                 pusher: Pusher | None = None, observer: Observer | None = None,
                 settings_of: Callable[[str], Any] = lambda dialect: None) -> None:
        self.route = route
        self.settings_of = settings_of
        """A dialect's own section of the configuration (`GatewayConfig.settings_of`), for what serves it."""
        self.observer = observer
        """The inspector and the route's recordings, when either is on: None costs the route's runs nothing."""
        self.drain = drain
        self.pusher = pusher or Pusher()
        """Delivers push notifications (A2A's), on a route that sends them."""
        self.board = board
        """Where the route's resumable runs are (when `route.resumable`)."""
        self.pool = pool
        self.mapper = mapper
        budget = route.limits.tokens_per_key
        self.budget = Budget(route.name, budget, mapper.store) if budget is not None else None
        """The route's token budget per key, when it sets one."""
        self.keepalive = keepalive
        self.metrics = metrics
        self.log_bodies = log_bodies
        self.reader = RequestReader(route, bodies)
        self.resumable = ResumableRuns(self)
        self.debug_errors = debug_errors
        self.side_calls = SideCalls(pool)
        self.backends = [Backend(route, index, pool, self.side_calls, debug_errors=debug_errors,
                                 traced=tracing is not None, settings_of=settings_of, shelf=shelf)
                         for index in range(len(route.upstreams))]
        """The route's upstream, then its fallbacks: a run tries them in turn (see `Call.run`)."""
        self.upstream = self.backends[0].dialect
        """The dialect of the route's own upstream (the first of `backends`)."""
        shared = mapper.store.shared_redis()
        self.ejection = Ejection(
            route.eject_after, route.eject_for, partial(_shown_ejected, metrics, route.name),
            shared=SharedEjection(shared, route.name, route.eject_after, route.eject_for) if shared else None,
        ) if route.fallbacks else None
        """Which of the route's upstreams are skipped, on a route with fallbacks."""
        self.in_flight = metrics.in_flight.labels(route.name)
        self.access = Access(route)
        self.tracing = tracing
        self.runs = queries.route_runs(self)
        """The runs whose clients ask about them (A2A's tasks), when a dialect of the route has such clients."""

    async def serve(self, scope: Scope, receive: Receive, send: Send,
                    continued: Callable[[Turn], Turn] | None = None) -> None:
        """A request; `continued` makes its turn what the client's connection remembers (a WebSocket's runs,
        `gateway.server.endpoints.sockets`) before it goes upstream."""
        if scope["method"] == "OPTIONS":  # not a CORS preflight (the middleware answers those): never a run
            request_id = request_id_of(Headers(scope=scope))
            await send({"type": "http.response.start", "status": 204,
                        "headers": [(b"allow", b"POST, OPTIONS"), (b"x-request-id", request_id.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        called: Called | None = scope.get("resource")
        path = called.base if called is not None else scope["path"]
        dialect = called.dialect if called is not None else self.reader.dialect_of_path(path)
        async with entered(self, scope, send, dialect, observed=True, traced=True) as call:
            call.continued = continued
            call.mount = path.rstrip("/")
            run = await self._handle(call, call.headers, receive, path, called)
            if run is not None:
                await run

    __call__ = serve
    """The route as an ASGI app (not a coroutine that awaits `serve`: a suspended frame less, for every run's life)."""

    async def _handle(self, call: Call, headers: Headers, receive: Receive, path: str,
                      called: Called | None = None) -> Coroutine[Any, Any, None] | None:
        """Identify the caller (no slot taken), read and check its body within deadlines, then take a slot: a
        caller that stalls its body holds neither a slot nor more than the process's body budget. Returns the run
        to await (None when the request is answered already): not awaited here, a suspended frame less for every
        run's life."""
        if called is not None:  # what an error before its body is read quotes: the call read without one
            call.request_json = called.resource.read(called.params, {}, headers)
        try:
            caller = identify(call)
            body = await self.reader.body(receive)
            if call.capture is not None:
                call.capture.client_said("POST", path, headers.items(), body)
            if self.log_bodies:
                call.record.request_body = body[:4096].decode("utf-8", "replace")
            client, turn = self.reader.parse(call, headers, body, path, called)
            if isinstance(turn, RunQuery):
                await queries.answer(self, call, receive, client, turn)
                return None
            if self.drain.draining:
                raise ShuttingDown
            if call.continued is not None:
                turn = call.continued(turn)
                self.reader.check_size(turn)
            turn = await queries.continuing(self, call, client, turn)
            if self.budget is not None:
                await self.budget.check(caller.accounted_as)
            self.access.admit(caller)
        except ClientGone:
            call.record.outcome = RequestOutcome.CLIENT_GONE
            return None
        except GatewayError as error:
            candidates = [called.dialect] if called is not None else self.route.dialects
            call.writer.error_reply = registry.error_reply(call.request_json, candidates, path)
            await call.writer.fail_before_start(error)
            return None
        call.writer.error_reply = client.errors_for(call.request_json)
        call.request_json = None  # what an error reply quotes of the body, it holds: the rest is not kept for the run
        call.release = partial(self.access.release, caller)  # freed as the last byte goes, like the report
        record = call.record
        record.client_dialect, record.conversation_id, record.run_id = client.name, turn.conversation_id, turn.run_id
        key = run_key(self.route.name, call.caller.principal, client, turn, headers, body) if self.route.resumable \
            else None
        del body  # the run needs its turn: the client's bytes are not held for as long as it runs
        if key is not None:
            return self.resumable.run(call, receive, client, turn, headers, key)
        return self.admitted(call, receive, client, turn)

    async def admitted(self, call: Call, receive: Receive, client: Dialect, turn: Turn) -> None:
        writer, deadlines = call.writer, call.deadlines
        try:  # its clients may ask about the run, or cancel it, from any replica
            watched = call.watched = await queries.watched(self, call, client, turn)
        except GatewayError as error:
            await writer.fail_before_start(error)
            return
        task = asyncio.current_task()
        assert task is not None
        deadlines.guard(task)
        stop_watching = watch_disconnect(receive, writer, deadlines)
        try:
            await call.run(client, turn)
        except asyncio.CancelledError:
            ending = deadlines.ending()
            if ending is None:  # not ours (the server is shutting down): let it through
                raise
            task.uncancel()
            if ending.stops_upstream:
                call.cancel_upstream()
            if ending.error is not None:  # before the upstream answered, after the run, or outside the relay
                deadlines.carry_on()
                await writer.abort(ending.error, ending.code)
        except GatewayError as error:  # the turn cannot be put to this upstream (see HistoryConflict)
            await writer.abort(error, error.code)
        except Exception:
            log.exception("the gateway failed", extra={"route": self.route.name, "request_id": call.request_id})
            call.record.failed(ErrorCode.GATEWAY_ERROR)
            failed = GatewayError("the gateway failed to handle this request; see its log")
            await writer.abort(failed, failed.code)
        finally:
            deadlines.disarm()
            stop_watching()
            if watched is not None:
                await watched.close()


def _shown_ejected(metrics: Metrics, route: str, upstream: str, ejected: bool) -> None:
    metrics.upstream_ejected.labels(route, upstream).set(1 if ejected else 0)
