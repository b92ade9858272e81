"""One route's request handler: read the client's request, call the upstream, translate its stream on the fly.

A request runs in its own task, with one helper task and one timer; whichever ends the exchange cancels the
request's task, and says why (`_Call.dropped`):

```
            ┌──────────────────────────────┐
 client ──▶ │ watch (task): receive() until│── http.disconnect ──▶ cancel: the upstream connection closes
            │ the client goes away         │
            ├──────────────────────────────┤
 upstream ─▶│ relay (the request's task):  │── terminal event or error ──▶ done
 client ◀── │ read ▸ decode ▸ repair ▸     │   (the conversation is stored before its last byte goes out;
            │ record ▸ encode ▸ send       │    a slow client blocks the send, and so the upstream's reads)
            ├──────────────────────────────┤
            │ timer: fires at the next     │── first-event / idle / total deadline ──▶ cancel the reading, which
            │ deadline; keep-alive when    │   then tells the client why (or, when a write to the client is
            │ the client has heard nothing │   stuck, drop the client)
            └──────────────────────────────┘
```

Errors before the response starts are a real HTTP status with a JSON body (400/413/415/422 for the request,
502 when the upstream failed, 504 when it timed out). The response starts when the upstream has answered 2xx;
after that, an error is an in-band event in the client's dialect, followed by its terminator.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import orjson
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from adapters import registry
from gateway.config import Route
from gateway.conversations.mapper import ConversationMapper, Exchange
from gateway.conversations.recorder import RunRecorder
from gateway.core.codec import Dialect, Encoder
from gateway.core.errors import (
    CODES,
    GatewayError,
    Overloaded,
    RequestTimeout,
    RequestTooLarge,
    UnsupportedMediaType,
    UpstreamError,
    UpstreamTimeout,
)
from gateway.core.events import Event, RunError, RunFinished, RunStarted
from gateway.core.ids import new_id
from gateway.core.turn import Message as TurnMessage
from gateway.core.turn import Turn
from gateway.core.validation import check_ids, load_json_object
from gateway.server.access import ANONYMOUS, Access, Caller
from gateway.server.logs import ACCESS
from gateway.server.metrics import Metrics
from gateway.server.record import AccessRecord
from gateway.server.telemetry import RequestTrace, Tracing, pass_trace_context, upstream_attributes
from gateway.upstream.http1 import ConnectError, ConnectTimeout, HTTPError, Pool, Response

log = logging.getLogger("agent_gateway.proxy")
log_access = logging.getLogger(ACCESS)

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
_ERROR_BODY_LIMIT = 64 * 1024
REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")
"""A client's `X-Request-Id` that is kept: echoed, logged and sent upstream, so only a short, plain one."""
_DRAIN_SECONDS = 0.1
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
                 keepalive: float, metrics: Metrics, log_bodies: bool = False, debug_errors: bool = False,
                 tracing: Tracing | None = None) -> None:
        self.route = route
        self.pool = pool
        self.mapper = mapper
        self.keepalive = keepalive
        self.metrics = metrics
        self.log_bodies = log_bodies
        self.bodies = bodies
        self.debug_errors = debug_errors
        self.upstream = registry.get(route.upstream.dialect)
        self.target = route.upstream.target(route.timeouts.connect)
        self.in_flight = metrics.in_flight.labels(route.name)
        self.access = Access(route)
        self.learned_variant: str | None = None
        """What the upstream's response headers showed it to be, when the route does not say."""
        self.tracing = tracing
        self.upstream_span = upstream_attributes(route.upstream.url) if tracing is not None else {}
        """The attributes every upstream call's span of this route has."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        request_id = headers.get("x-request-id", "")
        if not REQUEST_ID.fullmatch(request_id):
            request_id = new_id("req")
        if scope["method"] == "OPTIONS":  # not a CORS preflight (the middleware answers those): never a run
            await send({"type": "http.response.start", "status": 204,
                        "headers": [(b"allow", b"POST, OPTIONS"), (b"x-request-id", request_id.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        call = _Call(self, send, headers, request_id)
        if self.tracing is not None:
            call.trace = self.tracing.start(headers, scope["path"], request_id, call.started_at)
            call.record.trace_id = call.trace.trace_id  # left out of the log line when None
        self.in_flight.inc()
        try:
            await self._handle(call, headers, receive, scope["path"])
        finally:
            call.report()  # once: usually already done as the last byte went out

    async def _handle(self, call: _Call, headers: Headers, receive: Receive, path: str) -> None:
        """Identify the caller (no slot taken), read and check its body within deadlines, then take a slot: a
        caller that stalls its body holds neither a slot nor more than the process's body budget."""
        try:
            caller = call.caller = self.access.identify(headers)
            call.record.key_id = caller.key_id
            body = await self._read_body(receive)
            if self.log_bodies:
                call.record.request_body = body[:4096].decode("utf-8", "replace")
            client, turn = self._parse(headers, body, path)
            self.access.admit(caller)
        except ClientGone:
            call.record.outcome = "client_gone"
            return
        except GatewayError as error:
            await call.fail_before_start(error)
            return
        call.release = partial(self.access.release, caller)  # freed as the last byte goes, like the report
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

    async def _admitted(self, call: _Call, receive: Receive, client: Dialect, turn: Turn) -> None:
        record = call.record
        record.client_dialect, record.conversation_id, record.run_id = client.name, turn.conversation_id, turn.run_id
        task = call.task = asyncio.current_task()
        assert task is not None
        watcher = asyncio.create_task(_watch_disconnect(receive, call))
        try:
            await call.run(client, turn)
        except asyncio.CancelledError:
            if call.dropped is None:  # not ours (the server is shutting down): let it through
                raise
            task.uncancel()
            if call.dropped == "timeout":  # a deadline outside the relay, e.g. while reading an error body
                call.dropped = None
                await call.abort(UpstreamTimeout(call.timed_out), "upstream_timeout")
        except GatewayError as error:  # the turn cannot be put to this upstream (see HistoryConflict)
            await call.abort(error, error.code)
        except Exception:
            log.exception("the gateway failed", extra={"route": self.route.name, "request_id": call.request_id})
            call.record.failed("gateway_error")
            await call.abort(GatewayError("the gateway failed to handle this request; see its log"), "gateway_error")
        finally:
            call.disarm()
            watcher.cancel()

    def _parse(self, headers: Headers, body: bytes, path: str) -> tuple[Dialect, Turn]:
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type != "application/json" and not content_type.endswith("+json"):
            # Required: a browser sends a POST without one (or text/plain) cross-origin with no preflight.
            raise UnsupportedMediaType(f"expected Content-Type: application/json, got {content_type or 'none'}")
        limits = self.route.limits
        value = load_json_object(body, limits.max_json_depth)
        client, turn = registry.read_request(value, self.route.dialects, path)
        if len(turn.messages) > limits.max_messages:
            raise RequestTooLarge(f"the request has {len(turn.messages)} messages; this route takes "
                                  f"{limits.max_messages}")
        check_ids(turn, client.name)
        return client, turn


class _Call:
    """One client request in flight, from its parsed turn to the last byte of the reply."""

    def __init__(self, handler: RouteHandler, send: Send, headers: Headers, request_id: str) -> None:
        self.handler = handler
        self.route = handler.route
        self.send = send
        self.headers = headers
        self.request_id = request_id
        self.encoder: Encoder | None = None
        self.recorder: RunRecorder | None = None
        self.trace: RequestTrace | None = None
        self.upstream_status = 0
        self.last_activity = self.last_write = 0.0
        self.timed_out = ""
        self.writing = False
        self.task: asyncio.Task[Any] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.keeping_alive: asyncio.Task[None] | None = None
        self.dropped: str | None = None
        """Why this call cancelled its own task: "timeout" (reading stops, the client hears why), "client_gone"
        or "client_stalled" (the exchange ends)."""
        self.ending = False
        """The conversation is being stored: nothing cancels the call meanwhile."""
        self.streaming = False
        """The client gets an SSE stream: idle, it is sent keep-alive comments."""
        self.wake_at = 0.0
        self.started = False
        self.complete = False
        self.client_gone = False
        self.reported = False
        self.release: Callable[[], None] | None = None
        self.caller = Caller(None, ANONYMOUS)
        self.started_at = time.monotonic()
        self.record = AccessRecord(request_id=request_id, route=handler.route.name,
                                   upstream_dialect=handler.upstream.name)

    def report(self) -> None:
        """The access log line and the request's metrics: once, as the last byte goes (or the client did)."""
        if self.reported:
            return
        self.reported = True
        self.handler.in_flight.dec()
        if self.release is not None:
            self.release()
        record, metrics = self.record, self.handler.metrics
        if self.client_gone and record.outcome is None:
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
            kind = record.error if record.error in _ERROR_KINDS else "upstream_error"
            metrics.errors.labels(self.route.name, kind).inc()
        usage = self.recorder.usage if self.recorder is not None else None
        if usage is not None:
            series.tokens(usage)
        if self.encoder is not None and self.encoder.dropped:
            series.dropped(self.encoder.dropped)
        if self.trace is not None:
            self.trace.end(record, kind, usage, self.last_activity)
        log_access.info("request", extra=record.log_fields())

    async def run(self, client: Dialect, turn: Turn) -> None:
        route, upstream = self.route, self.handler.upstream
        handler = self.handler
        exchange = await handler.mapper.begin(route.name, turn, client, upstream,
                                              route.upstream.variant or handler.learned_variant, self.caller.principal)
        outbound = upstream.build_request(exchange.upstream_turn, exchange.upstream_variant)
        headers = self._upstream_headers(outbound.headers)
        sent_at = self.last_write = time.monotonic()
        self.arm()
        try:
            response = await self.handler.pool.post(self.handler.target, outbound.body, headers)
            self.record.upstream_ms = round((time.monotonic() - sent_at) * 1000, 3)
            if self.trace is not None:
                self.trace.upstream_answered(response.status)
        except asyncio.CancelledError:
            if self.dropped != "timeout":
                raise
            self._resume()
            await self.fail_before_start(UpstreamTimeout(f"upstream did not answer within "
                                                         f"{min(route.timeouts.first_event, route.timeouts.total):g}s"))
            return
        except ConnectTimeout:
            await self.fail_before_start(UpstreamTimeout(f"upstream did not accept a connection within "
                                                         f"{route.timeouts.connect:g}s"))
            return
        except HTTPError as exc:
            # Where it failed to connect names an internal address: only with `debug_errors`.
            hidden = isinstance(exc, ConnectError) and not handler.debug_errors
            shown = "upstream unreachable" if hidden else f"upstream unreachable: {_describe(exc)}"
            self.record.error_detail = _describe(exc)  # for the operator's log, not the client
            await self.fail_before_start(UpstreamError(shown))
            return
        try:
            failed = response.status >= 300
            content_type = response.headers.get("content-type", "")
            if failed and (outbound.streams or "json" not in content_type):
                await self._upstream_refused(response, f"upstream answered HTTP {response.status}")
                return
            if not failed and (wrong := _wrong_content_type(upstream.name, outbound.streams, content_type)):
                await self._upstream_refused(response, f"upstream answered HTTP {response.status} with {wrong}")
                return
            if route.upstream.variant is None and (variant := upstream.variant_of(response.headers)) is not None:
                handler.learned_variant = exchange.upstream_variant = variant
            self.upstream_status = response.status
            encoder = self.encoder = client.new_encoder(turn)
            recorder = self.recorder = RunRecorder(exchange.conversation.state, self.handler.mapper.max_bytes)
            await self._relay(response, exchange, client, encoder, recorder, outbound.streams)
            if self.complete and not self.client_gone:
                await response.drain(_DRAIN_SECONDS)  # the client has its last byte; this keeps the connection
        finally:
            response.release()  # back to the pool if read to its end, else closed

    async def _relay(self, response: Response, exchange: Exchange, client: Dialect,
                     encoder: Encoder, recorder: RunRecorder, upstream_streams: bool) -> None:
        """Move the upstream's body to the client, translated, and store what the run added to the conversation.

        The read loop does nothing per chunk but decode, encode and write; one timer beside it keeps the deadlines
        (first event, idle, total) and the keep-alive, so nothing is scheduled per chunk.
        """
        decoder = self.handler.upstream.new_decoder(max_event_bytes=self.route.limits.max_event_bytes)
        if encoder.streams:
            await self._start(encoder.status_code, {**encoder.headers, **SSE_HEADERS})
        self.streaming = encoder.streams
        self.last_activity = self.last_write = time.monotonic()
        first = encoder.streams and upstream_streams
        try:
            try:
                while chunk := await response.read():
                    if self.client_gone:
                        # Sends to a departed client return at once and buffered upstream data comes without
                        # waiting: the cancel may find no await to land on. Stop here.
                        return
                    self.last_activity = time.monotonic()
                    if first:
                        # The first frame goes out alone: the client's first event should not wait for the
                        # translation of everything else the first read brought.
                        first = False
                        cut = chunk.find(b"\n\n") + 2
                        if 1 < cut < len(chunk):
                            events = decoder.feed(chunk[:cut])
                            if events and await self._deliver(events, exchange, client, encoder, recorder):
                                return
                            chunk = chunk[cut:]
                    events = decoder.feed(chunk)
                    if events and await self._deliver(events, exchange, client, encoder, recorder):
                        return
                events = decoder.close()
            except HTTPError as exc:
                events = decoder.fail(f"upstream connection broke: {_describe(exc)}", "upstream_error")
        except asyncio.CancelledError:
            if self.dropped != "timeout":
                raise
            self._resume()
            events = decoder.fail(self.timed_out, "upstream_timeout")
        if events:  # empty only if the run already ended when the deadline struck
            await self._deliver(events, exchange, client, encoder, recorder)

    async def _deliver(self, events: list[Event], exchange: Exchange, client: Dialect, encoder: Encoder,
                       recorder: RunRecorder) -> bool:
        """Translate and send one batch of events; True once the run's terminal event is out."""
        if self.upstream_status >= 300 and isinstance(events[-1], RunFinished):
            # A one-body upstream answered non-2xx with a body that says nothing went wrong.
            events[-1] = RunError(f"upstream answered HTTP {self.upstream_status}", "upstream_error")
        record = self.record
        if not record.events:
            self._rewrite_start(events, exchange.client_turn)
            record.ttfe_ms = round((time.monotonic() - self.started_at) * 1000, 3)
            record.events = len(events)
            if self.last_activity + self.route.timeouts.idle < self.wake_at:
                self.arm()  # the idle deadline comes before the timer would have woken
        else:
            record.events += len(events)
        recorder.record(events)
        out = encoder.encode(events)
        terminal = events[-1]
        if not isinstance(terminal, RunFinished | RunError):
            if self.streaming and out:
                await self._write(out)
                self.last_write = time.monotonic()
            return False
        if isinstance(terminal, RunError):
            record.failed(terminal.code or "upstream_error")
        else:
            record.outcome = terminal.outcome
        # Stored before the last byte goes out: a client may send its next turn the moment it has it. From here
        # on nothing cancels the call: a client that left meanwhile does not cost the conversation its turn.
        self.ending = True
        await self._finish(exchange, client, out, recorder)
        self.ending = False  # a client that stops reading now is still cut off at the deadline
        if self.streaming:
            await self._end(out)
        else:
            await self._respond(encoder.status_code, encoder.headers, out)
        return True

    # the deadlines and the keep-alive: one timer, moved only when it fires

    def arm(self) -> None:
        """(Re)start the timer: once per request, and again only if a deadline moves closer than its wake-up."""
        self.disarm()
        self._tick()

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.keeping_alive is not None:
            self.keeping_alive.cancel()
            self.keeping_alive = None

    def _tick(self) -> None:
        """At a deadline, stop the reading (or, when a write to the client is stuck, drop the client); when the
        client has heard nothing for a while, send it a keep-alive; then sleep until the next of these."""
        self.timer = None
        if self.dropped is not None:
            return
        timeouts, keepalive = self.route.timeouts, self.handler.keepalive
        now = time.monotonic()
        started = bool(self.record.events)
        deadline = self.last_activity + timeouts.idle if started else self.started_at + timeouts.first_event
        total = self.started_at + timeouts.total <= deadline
        if total:
            deadline = self.started_at + timeouts.total
        if now >= deadline and not self.ending:
            self.timed_out = (f"the run took longer than {timeouts.total:g}s" if total
                              else f"upstream sent nothing for {timeouts.idle:g}s" if started
                              else f"upstream sent no event within {timeouts.first_event:g}s")
            if self.writing:  # the client stopped reading: no error can reach it. Drop it, and the upstream.
                self.record.failed("client_stalled")
                self.drop("client_stalled")
            else:
                self.drop("timeout")
            return
        keep = self.last_write + keepalive
        if now >= keep:
            if self.streaming and not self.writing and not self.ending and self.keeping_alive is None:
                self.last_write = now
                assert self.encoder is not None
                self.keeping_alive = asyncio.create_task(self._keep_alive(self.encoder.keep_alive()))
            keep = now + keepalive
        wake = min(deadline, keep)
        if wake <= now:  # a deadline passed while the conversation is stored: nothing is cut off then; look again
            wake = now + 0.1
        self.wake_at = wake
        self.timer = asyncio.get_running_loop().call_later(wake - now, self._tick)

    async def _keep_alive(self, comment: bytes) -> None:
        try:
            await self._write(comment)
        finally:
            self.keeping_alive = None

    def drop(self, reason: str) -> None:
        """End the exchange from outside its task (a deadline, the client leaving)."""
        if self.dropped is None and not self.ending and self.task is not None:
            self.dropped = reason
            self.task.cancel()

    def _resume(self) -> None:
        """A deadline cancelled the reading, not the call: carry on to tell the client why, giving the client
        `keepalive` seconds to take it (a client that reads nothing would hold the call forever)."""
        assert self.task is not None
        self.task.uncancel()
        self.dropped = None
        self.timer = asyncio.get_running_loop().call_later(self.handler.keepalive, self._last_words)

    def _last_words(self) -> None:
        self.timer = None
        if self.ending:  # still storing the conversation: look again
            self.timer = asyncio.get_running_loop().call_later(self.handler.keepalive, self._last_words)
        elif self.writing:
            self.record.failed("client_stalled")
            self.drop("client_stalled")

    def _rewrite_start(self, events: list[Event], turn: Turn) -> None:
        """The client sees its own thread and run ids, whatever the upstream called them."""
        first = events[0]
        if isinstance(first, RunStarted):
            events[0] = RunStarted(turn.conversation_id, turn.run_id or new_id("run"), turn.parent_run_id,
                                   first.message_id)

    async def _finish(self, exchange: Exchange, client: Dialect, body: bytes, recorder: RunRecorder) -> None:
        transcript: list[TurnMessage] | None = None
        if exchange.client_turn.conversation_id is None:
            transcript = exchange.client_turn.messages + _reply_as_client_sees_it(client, self.encoder, body, recorder)
        await self.handler.mapper.finish(exchange, recorder, transcript)
        if exchange.history_lost:  # the turn went on without the store: the operator should see it per request
            self.record.history = "unavailable"

    def _upstream_headers(self, dialect_headers: dict[str, str]) -> dict[str, str]:
        headers = {name: value for name in self.route.forward_headers if (value := self.headers.get(name))}
        headers.update(self.route.upstream.headers)
        headers.update(dialect_headers)
        headers["x-request-id"] = self.request_id
        if self.trace is not None:
            self.trace.upstream(headers, self.handler.upstream_span)
        else:
            pass_trace_context(self.headers, headers)
        return headers

    async def _upstream_refused(self, response: Response, message: str) -> None:
        """A 502 that names the upstream's status; its body (which may hold secrets) only with `debug_errors`."""
        details: list[dict[str, Any]] = []
        if self.handler.debug_errors:
            body = b""
            try:
                while len(body) < _ERROR_BODY_LIMIT and (chunk := await response.read()):
                    body += chunk
            except HTTPError:
                pass  # what came before the break is what there is to show
            details.append({"status": response.status, "body": body[:2000].decode("utf-8", "replace").strip()})
        await self.fail_before_start(UpstreamError(message, details))

    # writing to the client

    async def abort(self, error: GatewayError, code: str) -> None:
        """End the exchange with `error`: as the HTTP error if the response has not started, else in band."""
        if not self.started:
            await self.fail_before_start(error)
        elif not self.complete:
            body = b""
            if self.encoder is not None:
                try:
                    body = self.encoder.encode([RunError(error.message, code)])
                except Exception:  # the encoder may be what broke
                    body = b""
            self.record.failed(code)
            await self._end(body)

    async def fail_before_start(self, error: GatewayError) -> None:
        record = self.record
        record.outcome, record.error = ("rejected" if error.status < 500 else "error"), error.code
        record.error_message = error.message
        await self._respond(error.status, {"content-type": "application/json"}, orjson.dumps(error.to_json()))

    async def _respond(self, status: int, headers: dict[str, str], body: bytes) -> None:
        if self.client_gone:
            return
        await self._start(status, headers)
        await self._end(body)

    async def _start(self, status: int, headers: dict[str, str]) -> None:
        raw = [(k.encode(), v.encode()) for k, v in headers.items()]
        raw.append((b"x-request-id", self.request_id.encode()))
        self.started = True
        self.record.status = status
        await self.send({"type": "http.response.start", "status": status, "headers": raw})

    async def _write(self, body: bytes, more: bool = True) -> None:
        """`writing` is how the timer tells a stuck client (a send that does not return) from a slow upstream."""
        if body or not more:
            self.writing = True
            await self.send({"type": "http.response.body", "body": body, "more_body": more})
            self.writing = False

    async def _end(self, body: bytes) -> None:
        self.complete = True
        self.report()
        await self._write(body, more=False)


_ERROR_KINDS = frozenset({
    *CODES, "upstream_timeout", "upstream_bad_event", "upstream_event_too_large",
    "client_stalled", "gateway_error",
})


def _wrong_content_type(upstream: str, streams: bool, content_type: str) -> str | None:
    """Why a 2xx body cannot be what the upstream's dialect sends, or None. Only what is surely not a run is
    refused: an HTML page (a misrouted proxy or login wall), or JSON where an event stream belongs (an error body
    sent as 200). No content type, or text/plain (older Vercel data streams), is read as the dialect."""
    media = content_type.partition(";")[0].strip().lower()
    if media in ("text/html", "application/xhtml+xml") or (streams and media == "application/json"):
        expected = "text/event-stream" if streams else "application/json"
        return f"content-type {media}, not the {expected} of {upstream}"
    return None


def _reply_as_client_sees_it(client: Dialect, encoder: Encoder | None, body: bytes,
                             recorder: RunRecorder) -> list[TurnMessage]:
    """The run's messages as a client without conversation ids will send them back next turn: for a JSON reply
    (agent-respond), exactly the messages it got, read as its own request would read them."""
    if encoder is not None and not encoder.streams:
        try:
            return client.parse_request({"messages": orjson.loads(body)["messages"]}).messages
        except (GatewayError, ValueError, KeyError, TypeError):
            pass
    return recorder.close()


async def _watch_disconnect(receive: Receive, call: _Call) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not call.complete:  # after the last byte the server says so too
                call.client_gone = True
                call.drop("client_gone")
            return


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 300 else text[:300] + "..."

