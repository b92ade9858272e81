"""One route's request handler: read the client's request, call the upstream, translate its stream on the fly.

A request runs in its own task, with one helper task and one timer; whichever ends the exchange cancels the
request's task, and says why (`Deadlines.cancelled_because`):

```
            ┌──────────────────────────────┐
 client ──▶ │ watch (task): receive() until│── http.disconnect ──▶ cancel: the upstream connection closes
            │ the client goes away         │
            ├──────────────────────────────┤
 upstream ─▶│ the request's task: _Call    │── upstream failed ──▶ 502 / 504
            │ calls the upstream; on a 2xx,│
            │ Relay (relay.py):            │── terminal event or error ──▶ done
 client ◀── │ read ▸ decode ▸ repair ▸     │   (the conversation is stored before its last byte goes out;
            │ record ▸ encode ▸ write      │    a slow client blocks the write, and so the upstream's reads)
            │ through ClientWriter         │
            │ (client.py)                  │
            ├──────────────────────────────┤
            │ timer: Deadlines             │── first-event / idle / total deadline ──▶ cancel the reading, which
            │ (deadlines.py) fires at the  │   then tells the client why (or, when a write to the client is
            │ next deadline; keep-alive    │   stuck, drop the client)
            │ when the client has heard    │
            │ nothing                      │
            └──────────────────────────────┘
```

Errors before the response starts are a real HTTP status with a JSON body (400/413/415/422 for the request,
502 when the upstream failed, 504 when it timed out), or the client dialect's own error (A2A's JSON-RPC errors).
The response starts when the upstream has answered 2xx; after that, an error is an in-band event in the client's
dialect, followed by its terminator. What each request did is its `AccessRecord` (record.py): one log line, its
metrics and its span.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import orjson
from starlette.datastructures import Headers, QueryParams
from starlette.types import Message, Receive, Scope, Send

from adapters import registry
from gateway.config import Route
from gateway.conversations.mapper import ConversationMapper
from gateway.conversations.recorder import RunRecorder
from gateway.conversations.store import StoreError
from gateway.core.codec import Decoder, Dialect, UpstreamRequest
from gateway.core.errors import (
    ErrorCode,
    GatewayError,
    InvalidRequest,
    NoRunningRun,
    Overloaded,
    RequestTimeout,
    RequestTooLarge,
    ResumeUnavailable,
    ShuttingDown,
    UnsupportedMediaType,
    UpstreamError,
    UpstreamRefused,
    UpstreamTimeout,
)
from gateway.core.events import RunError
from gateway.core.ids import new_id
from gateway.core.queries import RunPath, RunQuery
from gateway.core.turn import Turn
from gateway.core.validation import MAX_ID, bad_id, check_ids, load_json_object
from gateway.inspector.ring import InspectedRun
from gateway.recordings.capture import RunCapture
from gateway.runs.board import RunBoard
from gateway.runs.tape import RunReply, Tape, TapeLost
from gateway.runs.watched import WatchedRun
from gateway.server import queries, resume
from gateway.server.access import ANONYMOUS, Access, Caller
from gateway.server.client import ClientWriter
from gateway.server.deadlines import Deadlines
from gateway.server.discovery import Discovery, SideCalls
from gateway.server.drain import Drain
from gateway.server.logs import ACCESS
from gateway.server.metrics import Metrics
from gateway.server.observed import Observer
from gateway.server.push import Pusher
from gateway.server.record import AccessRecord
from gateway.server.relay import Relay, describe
from gateway.server.resources import Called
from gateway.server.resume import conversation_key
from gateway.server.telemetry import RequestTrace, Tracing, pass_trace_context, upstream_attributes
from gateway.upstream.http1 import ConnectError, ConnectTimeout, HTTPError, Pool, Response, Target

log = logging.getLogger("agent_gateway.proxy")
log_access = logging.getLogger(ACCESS)

_ERROR_BODY_LIMIT = 64 * 1024
REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")
"""A client's `X-Request-Id` that is kept: echoed, logged and sent upstream, so only a short, plain one."""


def request_id_of(headers: Headers) -> str:
    """The client's `X-Request-Id` when short and plain, else a new one."""
    request_id = headers.get("x-request-id", "")
    return request_id if REQUEST_ID.fullmatch(request_id) else new_id("req")

_DRAIN_SECONDS = 0.5
"""How long, after the run's last event, to wait for the end of the upstream's body so its connection can be used
again; past that the connection is closed."""


class ClientGone(Exception):
    """The client disconnected before its request was read."""


class BodyBudget:
    """Request body bytes held by the process while bodies are read: past `limit`, new bytes are refused with a
    503 rather than buffered, whatever each route allows one body."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> None:
        if self.held + size > self.limit:
            raise Overloaded("the gateway is holding as many request bodies as it may: retry shortly")
        self.held += size

    def give_back(self, size: int) -> None:
        self.held -= size


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
        self.bodies = bodies
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
        call = _Call(self, send, headers, request_id)
        call.continued = continued
        called: Called | None = scope.get("resource")
        path = called.base if called is not None else scope["path"]
        call.record.note_request(scope, called.dialect if called is not None else self._dialect_of_path(path))
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

    def _dialect_of_path(self, path: str) -> str:
        """The client dialect a request on `path` must be, when only one may be there: named in its access line
        even when its body cannot be read."""
        owners = registry.path_owners(self.route.dialects, path)
        return owners[0] if len(owners) == 1 else "unknown"

    async def _handle(self, call: _Call, headers: Headers, receive: Receive, path: str,
                      called: Called | None = None) -> None:
        """Identify the caller (no slot taken), read and check its body within deadlines, then take a slot: a
        caller that stalls its body holds neither a slot nor more than the process's body budget."""
        try:
            caller = call.caller = self.access.identify(headers)
            call.record.key_id = caller.key_id
            body = await self._read_body(receive)
            if call.capture is not None:
                call.capture.client_said("POST", path, headers.items(), body)
            if self.log_bodies:
                call.record.request_body = body[:4096].decode("utf-8", "replace")
            client, turn = self._parse(call, headers, body, path, called)
            if isinstance(turn, RunQuery):
                await queries.answer(self, call, receive, client, turn)
                return
            if self.drain.draining:
                raise ShuttingDown
            if call.continued is not None:
                turn = call.continued(turn)
                self._check_size(turn)
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
            await self._resumable(call, receive, client, turn, headers, body)
        else:
            await self._admitted(call, receive, client, turn)

    async def _read_body(self, receive: Receive) -> bytes:
        """The body, refused past the route's size, past `timeouts.request_body` seconds without a piece, or when it
        comes slower than `limits.min_body_rate` bytes a second once that long has passed."""
        limits, patience = self.route.limits, self.route.timeouts.request_body
        body = bytearray()
        started = time.monotonic()
        try:
            while True:
                deadline = started + patience + len(body) / limits.min_body_rate
                try:
                    async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                        message: Message = await receive()
                except TimeoutError:
                    raise RequestTimeout(f"the request body did not arrive in time: {len(body)} bytes in "
                                         f"{time.monotonic() - started:.0f}s") from None
                if message["type"] == "http.disconnect":
                    raise ClientGone
                piece = message.get("body", b"")
                self.bodies.take(len(piece))
                body += piece
                if len(body) > limits.max_body_bytes:
                    raise RequestTooLarge(f"request body is larger than {limits.max_body_bytes} bytes")
                if not message.get("more_body", False):
                    return bytes(body)
        finally:
            self.bodies.give_back(len(body))

    async def _resumable(self, call: _Call, receive: Receive, client: Dialect, turn: Turn, headers: Headers,
                         body: bytes) -> None:
        """A run on a resumable route: a request for a run that is running (a retry, or a client reconnecting
        with `Last-Event-ID`) is sent that run's reply; any other is a new run whose reply is kept."""
        route, principal = self.route, call.caller.principal
        key = resume.run_key(route.name, principal, client, turn, headers, body)
        after: int | None = None
        try:
            after = resume.last_event_id(headers)
            if after is not None:  # the client had part of the reply: only the rest will do, never a second run
                reply = await self.board.find(key)
                if reply is None:
                    raise ResumeUnavailable(resume.NOT_KEPT)
                await self.follow(call, receive, reply, after, client)
                return
            conversation = turn.conversation_id
            tape = Tape(key, event_ids=client.event_ids, max_entries=route.limits.max_resume_events,
                        max_bytes=route.limits.max_resume_bytes, keep=route.timeouts.resume_keep,
                        conversation=conversation_key(route.name, principal, conversation) if conversation else None,
                        owner=principal)
            running = await self.board.claim(tape, route.timeouts.total)
        except GatewayError as error:
            await call.writer.fail_before_start(error)
            return
        except StoreError as exc:
            if after is not None:  # the client had part of a reply: a second run is never the answer
                call.record.error_detail = str(exc)
                await call.writer.fail_before_start(Overloaded("the gateway's store is unreachable: retry shortly"))
                return
            log.warning("route %s: the run is not resumable, the store failed: %s", route.name, exc,
                        extra={"route": route.name, "request_id": call.request_id})
            await self._admitted(call, receive, client, turn)
            return
        except Exception:
            log.exception("route %s: the run is not resumable, the gateway failed to claim it", route.name,
                          extra={"route": route.name, "request_id": call.request_id})
            await self._admitted(call, receive, client, turn)
            return
        if running is not None:
            await self.follow(call, receive, running, 0, client)
            return
        call.writer.tape = tape
        tape.stop = call.stop
        try:
            await self._admitted(call, receive, client, turn)
        finally:
            self.board.finish(tape)

    async def follow(self, call: _Call, receive: Receive, reply: RunReply, after: int,
                     client: Dialect | None = None) -> None:
        """Send a client a run's reply from the board instead of running it again; `client`, its dialect when
        known, ends a reply lost midway (its replica died) with the dialect's own error."""
        call.record.outcome = "resumed"
        deadlines = call.deadlines
        deadlines.request_task = asyncio.current_task()
        watcher = asyncio.create_task(_watch_disconnect(receive, call.writer, deadlines))
        try:
            timeouts = self.route.timeouts
            patience = max(timeouts.first_event, timeouts.idle) + self.keepalive
            await resume.follow(reply, call.writer, after, self.keepalive, patience,
                                _lost_run_error(client) if client is not None else None)
        except TapeLost:
            await call.writer.fail_before_start(ResumeUnavailable(resume.NOT_KEPT))
        except asyncio.CancelledError:
            if deadlines.cancelled_because not in ("client_gone", "shutdown"):
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            if deadlines.cancelled_because == "shutdown" and call.writer.started:
                await call.writer.end(b"")  # no end of the run: the client may come back to another replica
            elif deadlines.cancelled_because == "shutdown":
                await call.writer.fail_before_start(ShuttingDown())
        finally:
            watcher.cancel()

    async def _admitted(self, call: _Call, receive: Receive, client: Dialect, turn: Turn) -> None:
        writer, deadlines = call.writer, call.deadlines
        try:  # its clients may ask about the run, or cancel it, from any replica
            watched = call.watched = await queries.watched(self, call, client, turn)
        except GatewayError as error:
            await writer.fail_before_start(error)
            return
        task = deadlines.request_task = asyncio.current_task()
        assert task is not None
        watcher = asyncio.create_task(_watch_disconnect(receive, writer, deadlines))
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
        call = _Call(self, send, headers, request_id_of(headers))
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
                _check_content_type(headers)  # as for a run: a page on another origin cannot POST one unasked
            call.request_json = {}
            parameters = dict(QueryParams(scope.get("query_string", b"")))
            await queries.answer(self, call, receive, client, RunQuery(run_path.name, run_id, parameters))
        except GatewayError as error:
            await call.writer.fail_before_start(error)
        finally:
            call.report()

    def _parse(self, call: _Call, headers: Headers, body: bytes, path: str, called: Called | None = None
               ) -> tuple[Dialect, Turn | RunQuery]:
        limits = self.route.limits
        candidates = self.route.dialects
        if called is None:
            _check_content_type(headers)
            value = call.request_json = load_json_object(body, limits.max_json_depth)
        else:  # a call under the path (`Dialect.resources`): read as its dialect says
            if body:  # a POST without a body (the SDKs' cancel) names only an unguessable run: no JSON to check
                _check_content_type(headers)
            if any(bad_id(value) for value in called.params.values()):
                raise InvalidRequest(f"an id in the path must be at most {MAX_ID} characters, without control "
                                     "characters")
            given = load_json_object(body, limits.max_json_depth) if body else dict(called.query)
            value = call.request_json = called.resource.read(called.params, given, headers)
            candidates = [called.dialect]
        query = registry.read_query(value, candidates, path)
        if query is not None:
            if query[0].check_request is not None:
                query[0].check_request(value, headers)
            return query
        client, turn = registry.read_request(value, candidates, path)
        if client.check_request is not None:
            client.check_request(value, headers)
        self._check_size(turn)
        check_ids(turn, client.name)
        route = self.route
        if route.client_version is not None:
            turn.client_version = route.client_version  # the operator knows what the requests cannot show
        if not route.resumable:  # a resumable run's reply is kept, and followed, as SSE
            turn.accept = headers.get("accept")
        return client, turn


    def _check_size(self, turn: Turn) -> None:
        if len(turn.messages) > self.route.limits.max_messages:
            raise RequestTooLarge(f"the request has {len(turn.messages)} messages; this route takes "
                                  f"{self.route.limits.max_messages}")

    async def compact_at(self, scope: Scope, receive: Receive, send: Send, client: Dialect) -> None:
        """A request to compact a conversation (`Dialect.compaction`): the caller identified and its body read as
        for a run, the history it names found in the store; answered here, the upstream never asked."""
        assert client.compaction is not None
        headers = Headers(scope=scope)
        call = _Call(self, send, headers, request_id_of(headers))
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
            _check_content_type(headers)
            body = await self._read_body(receive)
            turn = client.parse_request(load_json_object(body, self.route.limits.max_json_depth))
            self._check_size(turn)
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


class ConversationEndpoints:
    """A resumable route's conversation endpoints, under each of its paths: `GET {path}/{conversation}/stream`
    sends the conversation's running run's reply from its start (the AI SDK's `resumeStream`), or from after
    `Last-Event-ID`, or 204 when no run is running; `DELETE` there, or `POST {path}/{conversation}/stop`, stops
    the run, whichever replica runs it."""

    def __init__(self, handler: RouteHandler) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.handler
        headers = Headers(scope=scope)
        call = _Call(handler, send, headers, request_id_of(headers))
        path, conversation = scope["path"], scope["path_params"]["conversation"]
        base = path.rpartition("/")[0].removesuffix(f"/{conversation}")  # the route's path, without .../{id}/stream
        call.record.note_request(scope, handler._dialect_of_path(base))
        if handler.observer is not None:
            handler.observer.begin(call)
        handler.in_flight.inc()
        handler.drain.streams.add(call)
        record = call.record
        try:
            caller = call.caller = handler.access.identify(headers)
            record.key_id = caller.key_id
            if bad_id(conversation):
                raise InvalidRequest(f"a conversation id in the path must be at most {MAX_ID} characters, without "
                                     "control characters")
            record.conversation_id = conversation
            if scope["method"] == "POST":
                _check_content_type(headers)  # as for a run: a page on another origin cannot POST one unasked
            key = conversation_key(handler.route.name, caller.principal, conversation)
            if scope["method"] == "GET":
                handler.access.admit(caller)
                call.release = partial(handler.access.release, caller)
                reply = await handler.board.running_in(key)
                if reply is None:
                    record.outcome = "no_run"
                    await call.writer.respond(204, {}, b"")
                    return
                dialect = call.record.client_dialect  # the path's, when only one is served there
                await handler.follow(call, receive, reply, resume.last_event_id(headers) or 0,
                                     registry.get(dialect) if dialect != "unknown" else None)
                return
            if not await handler.board.stop_conversation(key):
                raise NoRunningRun(f"no run of conversation {conversation!r} is running")
            record.outcome = "stopped"
            await call.writer.respond(202, {"content-type": "application/json"}, b'{"stopped":true}')
        except GatewayError as error:
            await call.writer.fail_before_start(error)
        except StoreError as exc:
            record.error_detail = str(exc)
            await call.writer.fail_before_start(Overloaded("the gateway's store is unreachable: retry shortly"))
        finally:
            call.report()


class _Call:
    """One client request in flight, from its parsed turn to the last byte of the reply: it calls the upstream,
    answers the upstream's failures with a 502 or 504, hands a 2xx body to a `Relay`, and reports the request once.
    The client's side is its `ClientWriter`, the deadlines its `Deadlines`."""

    def __init__(self, handler: RouteHandler, send: Send, headers: Headers, request_id: str) -> None:
        self.handler = handler
        self.route = handler.route
        self.headers = headers
        self.request_id = request_id
        self.trace: RequestTrace | None = None
        self.watched: WatchedRun | None = None
        """The run's feed, when its clients may ask about it (A2A's tasks)."""
        self.relay: Relay | None = None
        """The run's relay, once the upstream has answered 2xx."""
        self.capture: RunCapture | None = None
        """What the run is captured in, when the inspector watches or the route records."""
        self.inspected: InspectedRun | None = None
        """The run's line in the inspector, while it runs."""
        self.target: Target | None = None
        """Where the upstream was called, once it was."""
        self.reattached: list[Response] = []
        """What the upstream answered when asked for the rest of a run whose stream broke off."""
        self.upstream_headers: dict[str, str] = {}
        self.continued: Callable[[Turn], Turn] | None = None
        """What the client's connection makes of the turn, for a request on a WebSocket (`RouteHandler.serve`)."""
        self.request_json: dict[str, Any] | None = None
        """The client's body, once read as JSON: an error reply in its dialect may quote it (a JSON-RPC id)."""
        self.reported = False
        self.release: Callable[[], None] | None = None
        self.caller = Caller(None, ANONYMOUS)
        self.started_at = time.monotonic()
        self.record = AccessRecord(request_id=request_id, route=handler.route.name,
                                   upstream_dialect=handler.upstream.name)
        self.writer = ClientWriter(send, request_id, self.record, self.report)
        self.deadlines = Deadlines(self.route.timeouts, handler.keepalive, self.writer, self.record, self.started_at)

    def report(self) -> None:
        """The access log line and the request's metrics: once, as the last byte goes (or the client did)."""
        if self.reported:
            return
        self.reported = True
        # The writer's one way back to this call: cut, so that the request's objects are freed as soon as it ends,
        # not left to the cycle collector.
        self.writer.before_last_byte = None
        self.handler.in_flight.dec()
        self.handler.drain.streams.discard(self)
        if self.release is not None:
            self.release()
        record, metrics, relay = self.record, self.handler.metrics, self.relay
        if self.writer.gone and record.outcome is None:
            record.outcome = "client_gone"
        duration_ms = record.duration_ms = round((time.monotonic() - self.started_at) * 1000, 3)
        series = metrics.series(self.route.name, record.client_dialect, record.upstream_dialect)
        series.requests(str(record.status or 499)).inc()
        series.duration.observe(duration_ms / 1000)
        if record.events:
            series.events.inc(record.events)
        if record.ttfe_ms is not None:
            series.first_event.observe(record.ttfe_ms / 1000)
        if record.upstream_ms is not None:
            series.upstream_latency.observe(record.upstream_ms / 1000)
        kind = None
        if record.error:
            # Codes an upstream chose are counted as upstream errors: a label per code would let it grow the metrics.
            kind = record.error if record.error in _ERROR_KINDS else ErrorCode.UPSTREAM_ERROR
            metrics.errors.labels(self.route.name, kind).inc()
        usage = relay.recorder.usage if relay is not None else None
        if usage is not None:
            series.tokens(usage)
        if relay is not None and relay.encoder.dropped:
            series.dropped(relay.encoder.dropped)
        if relay is not None and (ignored := getattr(relay.decoder, "ignored", 0)):
            series.dropped({"upstream_other_run": ignored})  # the upstream's words about another run
            record.ignored = ignored
        if relay is not None and relay.recorder.raw and relay.recorder.raw + 2 >= record.events:
            # Nothing but the run's start and end made sense of it: a reader of another dialect's stream, most likely.
            metrics.unread.labels(self.route.name, record.upstream_dialect).inc()
            log.warning("route %s: the upstream's reply held no event %s knows (%d it did not): is upstream.dialect "
                        "right? `agent-gateway check URL --dialect ...` tells", self.route.name,
                        record.upstream_dialect, relay.recorder.raw,
                        extra={"route": self.route.name, "request_id": self.request_id})
        if self.trace is not None:
            self.trace.end(record, kind, usage, self.deadlines.last_upstream_event)
        failed_upstream = (record.status or 0) >= 500 or (kind is not None and kind.startswith("upstream_"))
        log_access.log(logging.WARNING if failed_upstream else logging.INFO, "request", extra=record.log_fields())
        if self.handler.observer is not None:
            self.handler.observer.end(self)

    async def run(self, client: Dialect, turn: Turn) -> None:
        route, upstream = self.route, self.handler.upstream
        handler, writer, deadlines = self.handler, self.writer, self.deadlines
        target, discovered = await handler.discovery.endpoint()
        exchange = await handler.mapper.begin(route.name, turn, client, upstream,
                                              route.upstream.variant or discovered or handler.learned_variant,
                                              self.caller.principal,
                                              transparent_ids=route.upstream.ids == "transparent")
        if route.upstream.agent is not None:
            exchange.upstream_turn.agent = route.upstream.agent
        exchange.upstream_turn.model = route.upstream.model or turn.model or route.name
        outbound = upstream.build_request(exchange.upstream_turn, exchange.upstream_variant)
        headers = self.upstream_headers = self._upstream_headers(outbound.headers, client)
        self.target = target
        capture = self.capture
        if capture is not None:
            capture.upstream_asked(target.url, outbound, headers, exchange.upstream_variant, handler.discovery.document)
            capture.mapping, capture.conversation = exchange.decision, exchange.conversation.upstream_id
        sent_at = writer.last_write = time.monotonic()
        deadlines.arm()
        try:
            response = await self.handler.pool.request(outbound.method, target, outbound.body, headers, outbound.path)
            self.record.upstream_ms = round((time.monotonic() - sent_at) * 1000, 3)
            if capture is not None:
                capture.upstream_answered(response.status, response.headers.items())
            if self.trace is not None:
                self.trace.upstream_answered(response.status)
        except asyncio.CancelledError:
            if deadlines.cancelled_because != "timeout":
                raise
            deadlines.carry_on_after_deadline()
            waited = min(route.timeouts.first_event, route.timeouts.total)
            await writer.fail_before_start(UpstreamTimeout(f"upstream did not answer within {waited:g}s"))
            return
        except ConnectTimeout:
            await writer.fail_before_start(UpstreamTimeout(f"upstream did not accept a connection within "
                                                           f"{route.timeouts.connect:g}s"))
            return
        except HTTPError as exc:
            # Where it failed to connect names an internal address: only with `debug_errors`.
            hidden = isinstance(exc, ConnectError) and not handler.debug_errors
            shown = "upstream unreachable" if hidden else f"upstream unreachable: {describe(exc)}"
            self.record.error_detail = describe(exc)  # for the operator's log, not the client
            await writer.fail_before_start(UpstreamError(shown))
            return
        try:
            failed = response.status >= 300
            content_type = response.headers.get("content-type", "")
            if failed and ((outbound.streams and not outbound.json_reply) or "json" not in content_type):
                await self._upstream_refused(response)
                return
            if not failed and (wrong := _wrong_content_type(upstream.name, outbound, content_type)):
                await self._upstream_refused(response, wrong)
                return
            if route.upstream.variant is None and (variant := upstream.variant_of(response.headers)) is not None:
                # What this reply shows goes for the conversation, and for the route's next new ones: an upstream that
                # answers as the AI SDK again is plain useChat again.
                handler.learned_variant = exchange.upstream_variant = variant or None
            seen = replace(turn, messages=exchange.known_history) if client.encoder_history else turn
            encoder = client.new_encoder(seen)
            if client is upstream:  # what only a server of the dialect answers goes back to its client
                encoder.headers.update({h: v for h in client.passed_headers if (v := response.headers.get(h))})
            if self.watched is not None:
                await self.watched.answered()
            decoder = self._decoder(outbound, content_type)
            if capture is not None:
                decoder, encoder = capture.tap(decoder, encoder)
            relay = self.relay = Relay(
                exchange=exchange, client=client, encoder=encoder, watched=self.watched,
                recorder=RunRecorder(exchange.conversation.state, self.handler.mapper.max_bytes),
                decoder=decoder,
                upstream_status=response.status, mapper=handler.mapper, record=self.record, writer=writer,
                deadlines=deadlines, reattach=self.reattach, max_held=route.limits.max_held_text,
                abandon=self.cancel_upstream)
            await relay.run(response, outbound.streams)
            if writer.complete and not writer.gone:
                await response.drain(_DRAIN_SECONDS)  # the client has its last byte; this keeps the connection
        finally:
            response.release()  # back to the pool if read to its end, else closed
            for again in self.reattached:
                again.release()

    def _decoder(self, outbound: UpstreamRequest, content_type: str) -> Decoder:
        decoder = _reply_decoder(self.handler.upstream, content_type, self.route.limits.max_event_bytes)
        sent = getattr(decoder, "sent", None)  # a decoder written before there was a way
        if sent is not None:
            sent(outbound)
        return decoder

    async def reattach(self, request: UpstreamRequest) -> Response | None:
        """Ask the upstream for the rest of a run whose stream broke off (see `Decoder.reattach_request`): its
        answer, if it is a 2xx."""
        assert self.target is not None
        self.record.upstream_reattached = True
        try:
            response = await self.handler.pool.request(request.method, self.target, request.body,
                                                       {**self.upstream_headers, **request.headers}, request.path)
        except HTTPError as exc:
            log.warning("route %s: the upstream's stream broke off, and asking for the rest failed: %s",
                        self.route.name, describe(exc), extra={"route": self.route.name,
                                                               "request_id": self.request_id})
            return None
        self.reattached.append(response)
        return response if response.status < 300 else None

    def stop(self) -> None:
        """End the run on a client's word (a query's cancel, a stop on a resumable route), wherever it is."""
        self.cancel_upstream()
        self.deadlines.cancel_request("cancelled")

    def shut_down(self) -> None:
        """End the exchange in band because the process is stopping (`Drain`)."""
        self.deadlines.cancel_request("shutdown")

    def cancel_upstream(self) -> None:
        """The run is abandoned (the client left; a deadline, a limit or a broken stream ended it here): tell an
        upstream that keeps running otherwise (an A2A task), once, if its dialect has a way to say it."""
        relay = self.relay
        if relay is None or self.target is None or self.record.upstream_cancelled:
            return
        request = relay.decoder.cancel_request()
        if request is not None:
            self.record.upstream_cancelled = True
            self.handler.side_calls.send(self.target, request, self.upstream_headers,
                                         f"route {self.route.name}: cancelling the upstream's run")

    def _upstream_headers(self, dialect_headers: dict[str, str], client: Dialect) -> dict[str, str]:
        headers = {name: value for name in self.route.forward_headers if (value := self.headers.get(name))}
        if client is self.handler.upstream:  # what only a server of the dialect reads (A2A-Extensions)
            headers.update({name: value for name in client.passed_headers if (value := self.headers.get(name))})
        headers.update(self.route.upstream.headers)
        headers.update(dialect_headers)
        headers["x-request-id"] = self.request_id
        if self.trace is not None:
            self.trace.upstream(headers, self.handler.upstream_span)
        else:
            pass_trace_context(self.headers, headers)
        return headers

    async def _upstream_refused(self, response: Response, wrong: str | None = None) -> None:
        """A 502 that names the upstream's status. Its body, which may hold secrets, goes to the operator's log,
        and to the client only with `debug_errors`."""
        body = b""
        try:
            while len(body) < _ERROR_BODY_LIMIT and (chunk := await response.read()):
                body += chunk
        except HTTPError:
            pass  # what came before the break is what there is to show
        shown = body[:2000].decode("utf-8", "replace").strip()
        self.record.error_detail = f"HTTP {response.status}: {shown}" if shown else f"HTTP {response.status}"
        details = [{"status": response.status, "body": shown}] if self.handler.debug_errors else []
        await self.writer.fail_before_start(UpstreamRefused(response.status, wrong, details))


_ERROR_KINDS = frozenset(ErrorCode)
"""The error kinds counted under their own metrics label: the gateway's codes, never one an upstream chose."""


def _lost_run_error(client: Dialect) -> Callable[[dict[str, str]], bytes]:
    """The client dialect's error for a run lost midway, written as the run's reply is: in the wire format its head
    says (AG-UI's protobuf or SSE), whatever the follower asked for."""

    def lost(headers: dict[str, str]) -> bytes:
        wire = Turn(accept=headers.get("content-type"))
        return client.new_encoder(wire).encode([RunError(resume.LOST, "resume_unavailable")])

    return lost


def _reply_decoder(upstream: Dialect, content_type: str, max_event_bytes: int) -> Decoder:
    """The decoder for the upstream's reply: its dialect's, in the wire format the reply says it is in."""
    other = upstream.decoder_for(content_type, max_event_bytes) if upstream.decoder_for is not None else None
    return other if other is not None else upstream.new_decoder(max_event_bytes=max_event_bytes)


def _wrong_content_type(upstream: str, outbound: UpstreamRequest, content_type: str) -> str | None:
    """Why a 2xx body cannot be what the upstream's dialect sends, or None. Only what is surely not a run is
    refused: an HTML page (a misrouted proxy or login wall), or JSON where an event stream belongs (an error body
    sent as 200) unless the dialect reads one there. No content type, or text/plain (older Vercel data streams),
    is read as the dialect."""
    media = content_type.partition(";")[0].strip().lower()
    json_refused = outbound.streams and not outbound.json_reply
    if media in ("text/html", "application/xhtml+xml") or (json_refused and media == "application/json"):
        expected = "text/event-stream" if outbound.streams else "application/json"
        return f"content-type {media}, not the {expected} of {upstream}"
    return None


def _check_content_type(headers: Headers) -> None:
    """A POST must say it is JSON: a browser sends one without a content type (or text/plain, or a form)
    cross-origin with no preflight, so a page on another origin could start or stop runs in its visitor's name."""
    content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise UnsupportedMediaType(f"expected Content-Type: application/json, got {content_type or 'none'}")


async def _watch_disconnect(receive: Receive, writer: ClientWriter, deadlines: Deadlines) -> None:
    """A client that leaves ends its exchange; when its reply is kept (a resumable run), only its part: the run
    goes on."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not writer.complete:  # after the last byte the server says so too
                writer.gone = True
                if writer.tape is None:
                    deadlines.cancel_request("client_gone")
            return

