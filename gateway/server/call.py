"""One client request in flight: call the upstream, translate its stream on the fly (`RouteHandler` in route.py
reads and checks the request first).

A request runs in its own task, with one helper task and one timer; whichever ends the exchange cancels the
request's task, and says why (`Deadlines.cancelled_because`):

```
            ┌──────────────────────────────┐
 client ──▶ │ watch (task): receive() until│── http.disconnect ──▶ cancel: the upstream connection closes
            │ the client goes away         │
            ├──────────────────────────────┤
 upstream ─▶│ the request's task: Call     │── upstream failed ──▶ 502 / 504
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
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.types import Send

from gateway.conversations.recorder import RunRecorder
from gateway.core.codec import Decoder, Dialect, UpstreamRequest
from gateway.core.errors import ErrorCode, UpstreamError, UpstreamRefused, UpstreamTimeout
from gateway.core.turn import Turn
from gateway.inspector.ring import InspectedRun
from gateway.recordings.capture import RunCapture
from gateway.runs.watched import WatchedRun
from gateway.server.access import ANONYMOUS, Caller
from gateway.server.client import ClientWriter
from gateway.server.deadlines import Deadlines
from gateway.server.logs import ACCESS
from gateway.server.record import AccessRecord
from gateway.server.relay import Relay, describe
from gateway.server.telemetry import RequestTrace, pass_trace_context
from gateway.upstream.http1 import ConnectError, ConnectTimeout, HTTPError, Response, Target

if TYPE_CHECKING:
    from gateway.server.route import RouteHandler

log = logging.getLogger("agent_gateway.proxy")
log_access = logging.getLogger(ACCESS)

_ERROR_BODY_LIMIT = 64 * 1024
_DRAIN_SECONDS = 0.5
"""How long, after the run's last event, to wait for the end of the upstream's body so its connection can be used
again; past that the connection is closed."""


class Call:
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

