"""One route's request handler: a request identified, read and checked, then answered as a run (`Call`), a query
about runs, or a compaction; on a resumable route, a run's reply is kept (`ResumableRuns`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

import orjson
from starlette.datastructures import Headers, QueryParams
from starlette.types import Receive, Scope, Send

from adapters import registry
from gateway.config import Route
from gateway.conversations.mapper import ConversationMapper
from gateway.conversations.store import StoreError
from gateway.core.codec import Dialect
from gateway.core.errors import (
    ErrorCode,
    GatewayError,
    InvalidRequest,
    Overloaded,
    ShuttingDown,
    UpstreamError,
    UpstreamTimeout,
)
from gateway.core.queries import RunPath, RunQuery
from gateway.core.turn import Turn
from gateway.core.validation import MAX_ID, bad_id, load_json_object
from gateway.runs.board import RunBoard
from gateway.server import queries
from gateway.server.access import Access
from gateway.server.bodies import BodyBudget, ClientGone
from gateway.server.call import Call
from gateway.server.deadlines import watch_disconnect
from gateway.server.discovery import Discovery, SideCalls
from gateway.server.drain import Drain
from gateway.server.metrics import Metrics
from gateway.server.observed import Observer
from gateway.server.push import Pusher
from gateway.server.reading import RequestReader, check_content_type
from gateway.server.request_ids import request_id_of
from gateway.server.resources import Called
from gateway.server.resumable import ResumableRuns
from gateway.server.telemetry import Tracing, upstream_attributes
from gateway.upstream.http1 import Pool

log = logging.getLogger("agent_gateway.proxy")


class RouteHandler:
    """The ASGI app behind one route's paths."""

    def __init__(self, route: Route, *, pool: Pool, mapper: ConversationMapper, bodies: BodyBudget,
                 keepalive: float, metrics: Metrics, board: RunBoard, drain: Drain, log_bodies: bool = False,
                 debug_errors: bool = False, tracing: Tracing | None = None, pusher: Pusher | None = None,
                 observer: Observer | None = None) -> None:
        self.route = route
        self.observer = observer
        """The inspector and the route's recordings, when either is on: None costs the route's runs nothing."""
        self.drain = drain
        self.pusher = pusher or Pusher()
        """Delivers push notifications (A2A's), on a route that sends them."""
        self.board = board
        """Where the route's resumable runs are (when `route.resumable`)."""
        self.pool = pool
        self.mapper = mapper
        self.keepalive = keepalive
        self.metrics = metrics
        self.log_bodies = log_bodies
        self.reader = RequestReader(route, bodies)
        self.resumable = ResumableRuns(self)
        self.debug_errors = debug_errors
        self.upstream = registry.get(route.upstream.dialect)
        self.discovery = Discovery(route, self.upstream, pool)
        self.side_calls = SideCalls(pool)
        self.in_flight = metrics.in_flight.labels(route.name)
        self.access = Access(route)
        self.learned_variant: str | None = None
        """What the upstream's response headers showed it to be, when the route does not say."""
        self.tracing = tracing
        self.upstream_span = upstream_attributes(route.upstream.url) if tracing is not None else {}
        """The attributes every upstream call's span of this route has."""
        self.runs = queries.route_runs(self)
        """The runs whose clients ask about them (A2A's tasks), when a dialect of the route has such clients."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.serve(scope, receive, send)

    async def serve(self, scope: Scope, receive: Receive, send: Send,
                    continued: Callable[[Turn], Turn] | None = None) -> None:
        """A request; `continued` makes its turn what the client's connection remembers (a WebSocket's runs,
        `gateway.server.sockets`) before it goes upstream."""
        headers = Headers(scope=scope)
        request_id = request_id_of(headers)
        if scope["method"] == "OPTIONS":  # not a CORS preflight (the middleware answers those): never a run
            await send({"type": "http.response.start", "status": 204,
                        "headers": [(b"allow", b"POST, OPTIONS"), (b"x-request-id", request_id.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        call = Call(self, send, headers, request_id)
        call.continued = continued
        called: Called | None = scope.get("resource")
        path = called.base if called is not None else scope["path"]
        call.record.note_request(scope, called.dialect if called is not None else self.reader.dialect_of_path(path))
        if self.observer is not None:
            self.observer.begin(call)
        if self.tracing is not None:
            call.trace = self.tracing.start(headers, scope["path"], request_id, call.started_at)
            call.record.trace_id = call.trace.trace_id  # left out of the log line when None
        self.in_flight.inc()
        self.drain.streams.add(call)
        try:
            await self._handle(call, headers, receive, path, called)
        finally:
            call.report()  # once: usually already done as the last byte went out



    async def _handle(self, call: Call, headers: Headers, receive: Receive, path: str,
                      called: Called | None = None) -> None:
        """Identify the caller (no slot taken), read and check its body within deadlines, then take a slot: a
        caller that stalls its body holds neither a slot nor more than the process's body budget."""
        try:
            caller = call.caller = self.access.identify(headers)
            call.record.key_id = caller.key_id
            body = await self.reader.body(receive)
            if call.capture is not None:
                call.capture.client_said("POST", path, headers.items(), body)
            if self.log_bodies:
                call.record.request_body = body[:4096].decode("utf-8", "replace")
            client, turn = self.reader.parse(call, headers, body, path, called)
            if isinstance(turn, RunQuery):
                await queries.answer(self, call, receive, client, turn)
                return
            if self.drain.draining:
                raise ShuttingDown
            if call.continued is not None:
                turn = call.continued(turn)
                self.reader.check_size(turn)
            turn = await queries.continuing(self, call, client, turn)
            self.access.admit(caller)
        except ClientGone:
            call.record.outcome = "client_gone"
            return
        except GatewayError as error:
            candidates = [called.dialect] if called is not None else self.route.dialects
            call.writer.error_reply = registry.error_reply(call.request_json, candidates, path)
            await call.writer.fail_before_start(error)
            return
        if client.error_reply is not None:
            reply, request_json = client.error_reply, call.request_json
            call.writer.error_reply = lambda error: reply(error, request_json)
        call.release = partial(self.access.release, caller)  # freed as the last byte goes, like the report
        record = call.record
        record.client_dialect, record.conversation_id, record.run_id = client.name, turn.conversation_id, turn.run_id
        if self.route.resumable:
            await self.resumable.run(call, receive, client, turn, headers, body)
        else:
            await self.admitted(call, receive, client, turn)



    async def admitted(self, call: Call, receive: Receive, client: Dialect, turn: Turn) -> None:
        writer, deadlines = call.writer, call.deadlines
        try:  # its clients may ask about the run, or cancel it, from any replica
            watched = call.watched = await queries.watched(self, call, client, turn)
        except GatewayError as error:
            await writer.fail_before_start(error)
            return
        task = deadlines.request_task = asyncio.current_task()
        assert task is not None
        watcher = asyncio.create_task(watch_disconnect(receive, writer, deadlines))
        try:
            await call.run(client, turn)
        except asyncio.CancelledError:
            if deadlines.cancelled_because is None:  # not ours (the server is shutting down): let it through
                raise
            task.uncancel()
            if deadlines.cancelled_because in ("client_gone", "timeout", "shutdown"):
                call.cancel_upstream()
            if deadlines.cancelled_because == "shutdown":  # before the upstream answered, or after the run
                deadlines.cancelled_because = None
                await writer.abort(ShuttingDown(), ShuttingDown.code)
            if deadlines.cancelled_because == "cancelled":  # by a query, before the upstream answered
                deadlines.cancelled_because = None
                await writer.abort(UpstreamError("the run was cancelled before the upstream answered"), "cancelled")
            if deadlines.cancelled_because == "timeout":  # a deadline outside the relay, e.g. reading an error body
                deadlines.cancelled_because = None
                await writer.abort(UpstreamTimeout(deadlines.missed_deadline), ErrorCode.UPSTREAM_TIMEOUT)
        except GatewayError as error:  # the turn cannot be put to this upstream (see HistoryConflict)
            await writer.abort(error, error.code)
        except Exception:
            log.exception("the gateway failed", extra={"route": self.route.name, "request_id": call.request_id})
            call.record.failed(ErrorCode.GATEWAY_ERROR)
            failed = GatewayError("the gateway failed to handle this request; see its log")
            await writer.abort(failed, failed.code)
        finally:
            deadlines.disarm()
            watcher.cancel()
            if watched is not None:
                await watched.close()

    async def query_at(self, scope: Scope, receive: Receive, send: Send, client: Dialect, run_path: RunPath
                       ) -> None:
        """A query at a path under the route's, the run's id in the path (`RunQueries.paths`): the caller
        identified, then answered as a query that came in a body is; refused in the client's dialect."""
        headers = Headers(scope=scope)
        call = Call(self, send, headers, request_id_of(headers))
        call.record.note_request(scope, client.name)
        if self.tracing is not None:
            call.trace = self.tracing.start(headers, scope["path"], call.request_id, call.started_at)
            call.record.trace_id = call.trace.trace_id
        if client.error_reply is not None:
            reply = client.error_reply
            call.writer.error_reply = lambda error: reply(error, None)
        self.in_flight.inc()
        self.drain.streams.add(call)
        try:
            call.caller = self.access.identify(headers)
            call.record.key_id = call.caller.key_id
            run_id = scope["path_params"]["run_id"]
            if bad_id(run_id):
                raise InvalidRequest(f"a run id in the path must be at most {MAX_ID} characters, without control "
                                     "characters")
            if scope["method"] == "POST":
                check_content_type(headers)  # as for a run: a page on another origin cannot POST one unasked
            call.request_json = {}
            parameters = dict(QueryParams(scope.get("query_string", b"")))
            await queries.answer(self, call, receive, client, RunQuery(run_path.name, run_id, parameters))
        except GatewayError as error:
            await call.writer.fail_before_start(error)
        finally:
            call.report()



    async def compact_at(self, scope: Scope, receive: Receive, send: Send, client: Dialect) -> None:
        """A request to compact a conversation (`Dialect.compaction`): the caller identified and its body read as
        for a run, the history it names found in the store; answered here, the upstream never asked."""
        assert client.compaction is not None
        headers = Headers(scope=scope)
        call = Call(self, send, headers, request_id_of(headers))
        call.record.note_request(scope, client.name)
        call.record.client_dialect, call.record.outcome = client.name, "compaction"
        if client.error_reply is not None:
            reply = client.error_reply
            call.writer.error_reply = lambda error: reply(error, None)
        self.in_flight.inc()
        self.drain.streams.add(call)
        try:
            caller = call.caller = self.access.identify(headers)
            call.record.key_id = caller.key_id
            check_content_type(headers)
            body = await self.reader.body(receive)
            turn = client.parse_request(load_json_object(body, self.route.limits.max_json_depth))
            self.reader.check_size(turn)
            history = turn.messages
            if turn.follows is not None:
                history = await self.mapper.history_after(self.route.name, caller.principal, turn.follows)
                history = history + turn.messages
            answer = client.compaction.answer(turn, history)
            await call.writer.respond(200, {"content-type": "application/json"}, orjson.dumps(answer))
        except ClientGone:
            call.record.outcome = "client_gone"
        except GatewayError as error:
            await call.writer.fail_before_start(error)
        except StoreError as exc:
            call.record.error_detail = str(exc)
            await call.writer.fail_before_start(Overloaded("the gateway's store is unreachable: retry shortly"))
        finally:
            call.report()
