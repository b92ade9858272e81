"""One client request in flight: call the upstream, translate its stream on the fly (`RouteHandler` in route.py
reads and checks the request first).

A request runs in its own task, with one helper task and one timer; whichever ends the exchange cancels the
request's task, and says why (`Deadlines.cancelled_because`, a `CancelReason`: a deadline, the process stopping, a
client's cancel, the client gone or stalled; `Deadlines.ending` says what each means for the request):

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
The response starts when the upstream has answered 2xx (on a route with fallbacks, when it sent its first event:
until then the run may move, failover.py); after that, an error is an in-band event in the client's
dialect, followed by its terminator. What each request did is its `AccessRecord` (record.py): one log line, its
metrics and its span. A run that ends on a question its upstream waits for on the call itself (`HeldCalls`) leaves
the upstream's response held open (held_calls.py); the turn that answers it reads that response on instead of
calling the upstream anew.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from starlette.datastructures import Headers
from starlette.types import Send

from gateway.conversations.answers import AnswerNotExpected
from gateway.conversations.mapper import Exchange
from gateway.conversations.recorder import RunRecorder
from gateway.core.capabilities import ProtocolHeaders, Variants, WholeHistory, WireFormats
from gateway.core.codec import Decoder, Dialect, UpstreamRequest
from gateway.core.errors import ErrorCode, GatewayError, UpstreamError
from gateway.core.events import Interrupt, RunFinished, RunStarted
from gateway.core.ids import new_id
from gateway.core.turn import Turn
from gateway.inspector.ring import InspectedRun
from gateway.recordings.capture import RunCapture
from gateway.runs.watched import WatchedRun
from gateway.server.operations.record import AccessRecord
from gateway.server.operations.telemetry import RequestTrace, pass_trace_context
from gateway.server.request import failover
from gateway.server.request.access import ANONYMOUS, Caller
from gateway.server.request.failover import Moved, Moves
from gateway.server.request.held_calls import Held
from gateway.server.request.reporting import report
from gateway.server.request.upstream_sessions import KeptSession
from gateway.server.stream.client import ClientWriter
from gateway.server.stream.deadlines import CancelReason, Deadlines
from gateway.server.stream.relay import UNBUFFERED_HEADERS, NoFirstEvent, Relay
from gateway.server.stream.upstream_errors import failure_line, refusal_to_read, refused, send_failure
from gateway.upstream.http1 import HTTPError, Response, Target

if TYPE_CHECKING:
    from gateway.server.route import RouteHandler

log = logging.getLogger("agent_gateway.proxy")

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
        self.backend = handler.backends[0]
        """The upstream this run calls: the route's own, or a fallback once the run moved (`failover.run`)."""
        self.moves: Moves | None = None
        """On a route with fallbacks, while another upstream is left to move the run to: what the run's attempts
        did. A failure before the reply then moves the run instead of telling the client."""
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
        self.session: KeptSession | None = None
        """The conversation's session with the upstream, while the run is in it (`UpstreamSessions`)."""
        self.session_headers: dict[str, str] = {}
        """What the upstream's session adds to each request of the run."""
        self.continued: Callable[[Turn], Turn] | None = None
        """What the client's connection makes of the turn, for a request on a WebSocket (`RouteHandler.serve`)."""
        self.request_json: dict[str, Any] | None = None
        """The client's body, once read as JSON: an error reply in its dialect may quote it (a JSON-RPC id)."""
        self.mount = ""
        """The path the client's dialect was called under (a route's path, without its trailing slash): what a reply
        names by an absolute path (LangGraph's `Content-Location`) is under it."""
        self.reported = False
        self.release: Callable[[], None] | None = None
        self.caller = Caller(None, ANONYMOUS)
        self.started_at = time.monotonic()
        self.record = AccessRecord(request_id=request_id, route=handler.route.name,
                                   upstream_dialect=self.backend.dialect.name)
        self.writer = ClientWriter(send, request_id, self.record, self.report)
        self.deadlines = Deadlines(self.route.timeouts, handler.keepalive, self.writer, self.record, self.started_at)

    def report(self) -> None:
        """The access log line and the request's metrics: once, as the last byte goes (or the client did)."""
        if not self.reported:
            self.reported = True
            report(self)

    def run(self, client: Dialect, turn: Turn) -> Coroutine[Any, Any, None]:
        """Ask the upstream the client's turn and relay its answer; on a route with fallbacks, the next upstream
        when one fails before its reply (`failover.run`). The coroutine to await, not one that awaits it: a
        suspended frame less, for every run's life."""
        return self.attempt(client, turn) if self.handler.ejection is None else failover.run(self, client, turn)

    async def attempt(self, client: Dialect, turn: Turn) -> None:
        """Ask `backend` the client's turn and relay its answer, one concern a layer: where the upstream is, the
        turn mapped for it, the request built and sent, the answer's status checked and its variant learnt, its
        reply relayed, and the rest of its body drained."""
        try:
            target, discovered = await self.backend.discovery.endpoint()
        except GatewayError as error:
            if self.moves is None:
                raise
            raise Moved(error, "unavailable") from None
        try:
            exchange = await self._map_history(client, turn, discovered)
        except AnswerNotExpected as refused:
            if refused.interrupt_id is None:
                raise
            await self._ask_again(client, turn, refused)
            return
        if not await self._in_session(exchange, client, target):
            return
        try:
            await self._ask(exchange, client, turn, target)
        finally:
            if self.session is not None:  # not held open with a call waiting in it
                self.session.leave()
                self.session = None

    async def _ask(self, exchange: Exchange, client: Dialect, turn: Turn, target: Target) -> None:
        """The turn sent (or the answer to a call held open), and the upstream's answer relayed."""
        answered = await self._answer_held(exchange)
        if answered is False:
            return
        response: Response | None
        if answered is not None:  # the upstream's call held open for this answer: its reply is this run's
            outbound, response = answered.request, answered.response
        else:
            outbound = self._build_request(exchange, client, target)
            response = await self._send(outbound, target)
            if response is not None and self._session_lost(response, exchange):
                response.release()
                if not await self._in_session(exchange, client, target):
                    return
                outbound = self._build_request(exchange, client, target)
                response = await self._send(outbound, target)
        if response is None:
            return
        kept = False
        try:
            if not await self._check_status(response, outbound):
                return
            self._learn_variant(response, exchange)
            await self._relay(response, outbound, client, turn, exchange)
            kept = self._hold(response, outbound)
            if not kept and self.writer.complete and not self.writer.gone:
                await response.drain(_DRAIN_SECONDS)  # the client has its last byte; this keeps the connection
        finally:
            if not kept:
                response.release()  # back to the pool if read to its end, else closed
            for again in self.reattached:
                again.release()

    async def _map_history(self, client: Dialect, turn: Turn, discovered: str | None) -> Exchange:
        """The turn as the upstream is asked it: the conversation's history mapped for its dialect and variant."""
        route, handler = self.route, self.handler
        exchange = await handler.mapper.begin(route.name, turn, client, self.backend.dialect,
                                              self.backend.config.variant or discovered or self.backend.learned_variant,
                                              self.caller.principal,
                                              transparent_ids=self.backend.config.ids == "transparent",
                                              heard_by=self.backend.heard_as)
        if self.backend.config.agent is not None:
            exchange.upstream_turn.agent = self.backend.config.agent
        elif turn.agent == route.name:  # the route itself, as a listing of agents names it: the upstream's default
            exchange.upstream_turn.agent = None
        exchange.upstream_turn.model = self.backend.config.model or turn.model or route.name
        return exchange

    async def _ask_again(self, client: Dialect, turn: Turn, refused: AnswerNotExpected) -> None:
        """An answer that does not fit what its interrupt asks, answered by the gateway as a run that asks again
        (the refusal saying what is asked, the same interrupt and schema): the conversation and the upstream are
        untouched, so the interrupt stays open for an answer that fits."""
        assert refused.interrupt_id is not None
        encoder = client.new_encoder(turn)
        _under_mount(encoder.headers, self.mount)
        body = encoder.encode([RunStarted(thread_id=turn.conversation_id, run_id=turn.run_id or new_id("run")),
                               Interrupt(refused.interrupt_id, reason="input", message=refused.message,
                                         response_schema=refused.schema),
                               RunFinished(outcome="interrupt")])
        if encoder.streams:
            await self.writer.begin_reply(encoder, UNBUFFERED_HEADERS)
            await self.writer.end(body)
        else:
            await self.writer.respond(encoder.status_code, encoder.headers, body)

    async def _in_session(self, exchange: Exchange, client: Dialect, target: Target) -> bool:
        """The conversation's session with an upstream that serves runs only in one (`UpstreamSessions`), opened if
        need be: its headers go on the run's requests, its variant to the request's builder. False when it could
        not be opened: the client has been told why."""
        sessions = self.backend.sessions
        if sessions is None:
            return True
        self.session_headers = {}
        try:
            self.session = await sessions.opened(exchange.conversation.upstream_id, exchange.upstream_turn, target,
                                                 self._upstream_headers({}, client))
        except GatewayError as error:
            await self.failed_before_reply(error, "unavailable")
            return False
        opened = self.session.opened
        self.session_headers = dict(opened.headers)
        if opened.variant is not None:
            exchange.upstream_variant = opened.variant
        return True

    def _session_lost(self, response: Response, exchange: Exchange) -> bool:
        """Whether the upstream answered that it no longer knows the conversation's session: forgotten, to be
        opened again once."""
        sessions, session = self.backend.sessions, self.session
        if sessions is None or session is None or not self.session_headers or not sessions.lost(response.status):
            return False
        self.session = None
        sessions.forget(exchange.conversation.upstream_id, session)
        return True

    async def _answer_held(self, exchange: Exchange) -> Held | Literal[False] | None:
        """The call held open by this process (`HeldCalls`) that this turn answers, once the upstream has been sent
        the answers; None when the turn answers no held call; False when it could not be answered: the client has
        been told why."""
        held_calls = self.backend.held
        if held_calls is None:
            return None
        held = await held_calls.answer(exchange.upstream_turn.resume)
        if isinstance(held, GatewayError):
            await self.writer.fail_before_start(held)
            return False
        if held is not None:
            self.target, self.upstream_headers = held.target, held.headers
            self._capture_request(held.target, held.request, exchange)
            self.writer.keep_alive_from(time.monotonic())
            self.deadlines.arm()
            self.deadlines.note_upstream_answered()
        return held

    def _hold(self, response: Response, outbound: UpstreamRequest) -> bool:
        """Whether the run ended on questions its upstream waits for on this very call: it is then held open."""
        held_calls, relay = self.backend.held, self.relay
        if held_calls is None or relay is None or self.target is None or self.writer.gone:
            return False
        held = held_calls.hold_for(relay.recorder.interrupts, response, outbound, self.target, self.upstream_headers,
                                   self.session)
        if held:
            self.session = None  # the held call is in it until it is answered or given up
        return held

    def _build_request(self, exchange: Exchange, client: Dialect, target: Target) -> UpstreamRequest:
        outbound = self.backend.dialect.build_request(exchange.upstream_turn, exchange.upstream_variant)
        self.upstream_headers = self._upstream_headers(outbound.headers, client)
        self.target = target
        self._capture_request(target, outbound, exchange)
        return outbound

    def _capture_request(self, target: Target, outbound: UpstreamRequest, exchange: Exchange) -> None:
        """What the upstream is asked, for the run's capture (the inspector, a recording), when there is one."""
        capture = self.capture
        if capture is not None:
            capture.upstream_asked(target.url, outbound, self.upstream_headers, exchange.upstream_variant,
                                   self.backend.discovery.document)
            capture.mapping, capture.conversation = exchange.decision, exchange.conversation.upstream_id

    async def _send(self, outbound: UpstreamRequest, target: Target) -> Response | None:
        """The upstream's answer, or None when it gave none: the client has been told why. A deadline that passes
        meanwhile cancels the task, as anywhere before the reply (`Deadlines.ending`)."""
        sent_at = time.monotonic()
        self.writer.keep_alive_from(sent_at)
        self.deadlines.arm()
        try:
            response = await self.handler.pool.request(outbound.method, target, outbound.body, self.upstream_headers,
                                                       outbound.path)
        except HTTPError as exc:
            error, detail = send_failure(exc, self.route.timeouts.connect, self.handler.debug_errors)
            if detail is not None:
                self.record.error_detail = detail  # for the operator's log, not the client
            await self.failed_before_reply(error, "timeout" if error.code == ErrorCode.UPSTREAM_TIMEOUT
                                           else "unreachable")
            return None
        self.deadlines.note_upstream_answered()
        self.record.upstream_ms = round((time.monotonic() - sent_at) * 1000, 3)
        if self.capture is not None:
            self.capture.upstream_answered(response.status, response.headers.items())
        if self.trace is not None:
            self.trace.upstream_answered(response.status)
        return response

    async def _check_status(self, response: Response, outbound: UpstreamRequest) -> bool:
        """Whether the answer is a reply to relay; if not, the client has been told so, with a 502. On a route with
        fallbacks, an answer that says the upstream cannot serve now (a 5xx, 408, 429, or a body that is not its
        dialect's) moves the run, even one whose error its dialect could relay while another upstream is left."""
        content_type = response.headers.get("content-type", "")
        refuse, wrong = refusal_to_read(outbound, response.status, content_type, self.backend.dialect.name)
        moves = self.moves
        moving = moves is not None and (wrong is not None or _unserved(response.status)) and (refuse or moves.more)
        if refuse or moving:
            error, self.record.error_detail = await refused(response, wrong, self.handler.debug_errors)
            if moving:
                raise Moved(error, "status")
            await self.writer.fail_before_start(error)
        return not refuse

    async def failed_before_reply(self, error: GatewayError, reason: str) -> None:
        """The upstream failed the run before its reply began: on a route with fallbacks, while another upstream is
        left, the run moves there (`Moved`); else the client is told."""
        if self.moves is not None:
            raise Moved(error, reason)
        await self.writer.fail_before_start(error)

    def _learn_variant(self, response: Response, exchange: Exchange) -> None:
        """What the answer shows the upstream to be, when the route does not say: it goes for the conversation, and
        for the route's next new ones (an upstream that answers as the AI SDK again is plain useChat again)."""
        upstream = self.backend.dialect
        variants = upstream.capability(Variants)
        if self.backend.config.variant is None and variants is not None \
                and (variant := variants.shown_by(response.headers)) is not None:
            self.backend.learned_variant = exchange.upstream_variant = variant or None

    async def _relay(self, response: Response, outbound: UpstreamRequest, client: Dialect, turn: Turn,
                     exchange: Exchange) -> None:
        """The upstream's reply to the client, translated by a `Relay` on the fly."""
        handler = self.handler
        seen = replace(turn, messages=exchange.known_history) if client.capability(WholeHistory) else turn
        encoder = client.new_encoder(seen)
        _under_mount(encoder.headers, self.mount)
        if client is self.backend.dialect:  # what only a server of the dialect answers goes back to its client
            encoder.headers.update({h: v for h in _passed(client) if (v := response.headers.get(h))})
        if self.watched is not None:
            await self.watched.answered()
        decoder = _reply_decoder(self.backend.dialect, outbound, response.headers.get("content-type", ""),
                                 self.route.limits.max_event_bytes)
        if self.backend.held is None:  # the decoder has read it, and no call waits for an answer on it
            outbound.body = b""  # a long history is not kept for the whole run
        if self.capture is not None:
            decoder, encoder = self.capture.tap(decoder, encoder)
        relay = self.relay = Relay(
            exchange=exchange, client_dialect=client, encoder=encoder, watched=self.watched,
            recorder=RunRecorder(exchange.conversation.state, handler.mapper.max_bytes), decoder=decoder,
            upstream_status=response.status, mapper=handler.mapper, record=self.record, writer=self.writer,
            deadlines=self.deadlines, reattach=self.reattach, max_held=self.route.limits.max_held_text,
            abandon=self.cancel_upstream, committing=self.moves.answered if self.moves is not None else None)
        try:
            await relay.run(response, outbound.streams)
        except NoFirstEvent as ended:
            raise Moved(UpstreamError(ended.message), "broke") from None
        finally:
            relay.close()

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
                        self.route.name, failure_line(exc), extra={"route": self.route.name,
                                                               "request_id": self.request_id})
            return None
        self.reattached.append(response)
        return response if response.status < 300 else None

    def stop(self) -> None:
        """End the run on a client's word (a query's cancel, a stop on a resumable route), wherever it is."""
        self.cancel_upstream()
        self.deadlines.cancel_request(CancelReason.CANCELLED)

    def shut_down(self) -> None:
        """End the exchange in band because the process is stopping (`Drain`)."""
        self.deadlines.cancel_request(CancelReason.SHUTDOWN)

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
        if client is self.backend.dialect:  # what only a server of the dialect reads (A2A-Extensions)
            headers.update({name: value for name in _passed(client) if (value := self.headers.get(name))})
        headers.update(self.backend.config.headers)
        headers.update(dialect_headers)
        headers.update(self.session_headers)
        headers["x-request-id"] = self.request_id
        if self.trace is not None:
            self.trace.upstream(headers, self.backend.span)
        else:
            pass_trace_context(self.headers, headers)
        return headers


def _under_mount(headers: dict[str, str], mount: str) -> None:
    """A reply's `Content-Location`, written from its dialect's root (`/threads/{id}/runs/{run_id}`), as the client
    reaches it: under the path the dialect is served at."""
    location = headers.get("content-location")
    if location is not None and location.startswith("/") and mount:
        headers["content-location"] = mount + location


def _passed(dialect: Dialect) -> tuple[str, ...]:
    """The headers only a server of the dialect reads (`ProtocolHeaders`), passed between its client and upstream."""
    headers = dialect.capability(ProtocolHeaders)
    return headers.passed if headers is not None else ()


def _unserved(status: int) -> bool:
    """Whether an answer's status says the upstream cannot serve the run now, rather than that the run is wrong."""
    return status >= 500 or status in (408, 429)


def _reply_decoder(upstream: Dialect, outbound: UpstreamRequest, content_type: str, max_event_bytes: int
                   ) -> Decoder:
    """The decoder for the upstream's reply: its dialect's, in the wire format the reply says it is in, told the
    request it reads the answer to."""
    formats = upstream.capability(WireFormats)
    other = formats.decoder_for(content_type, max_event_bytes) if formats is not None else None
    decoder = other if other is not None else upstream.new_decoder(max_event_bytes=max_event_bytes)
    decoder.sent(outbound)
    return decoder
