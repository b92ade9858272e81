"""Writing to the client: the response's head, the pieces of a stream, its last byte, or an error instead.

Before the head goes out an error is a real HTTP status with a JSON body, or the error as the client's dialect
tells one (`OwnErrors`); after it, an event in the client's dialect followed by the end of the stream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import Enum

import orjson
from starlette.types import Message, Send

from gateway.core.codec import Encoder
from gateway.core.errors import ErrorCode, GatewayError
from gateway.core.events import RunError
from gateway.recordings.capture import RunCapture
from gateway.runs.tape import Head, Tape
from gateway.server.connections.http_server import DirectBody, direct_body, on_client_gone
from gateway.server.operations.record import AccessRecord, RequestOutcome
from gateway.server.stream.splice import TextSplice

log = logging.getLogger("agent_gateway.proxy")


class Reply(Enum):
    """How far the client's reply has gone: each state follows the one before it, and only that one."""

    UNSENT = "unsent"
    """Nothing has gone out: an error is still a real HTTP status (or the dialect's error reply)."""
    STARTED = "started"
    """The response's head has gone out: an error can now only be told in band."""
    COMPLETE = "complete"
    """The last byte has gone out, or is going."""
    DETACHED = "detached"
    """The client had its whole reply before the run's end (it asked for that): the run goes on, sending it
    nothing more."""


class ClientWriter:
    """The client's side of one request: what it has been sent, and whether it is still there to be sent more."""

    __slots__ = ("_direct", "_record", "_request_id", "_send", "before_last_byte", "encoder", "error_reply", "gone",
                 "last_write", "outlived", "reply", "streaming", "tape", "writing")

    def __init__(self, send: Send, request_id: str, record: AccessRecord,
                 before_last_byte: Callable[[], None]) -> None:
        self._send = send
        self._direct = direct_body(send)
        self._request_id = request_id
        self._record = record
        self.before_last_byte: Callable[[], None] | None = before_last_byte
        """Called as the last byte goes (the request's report), unless the request has cut it off already."""
        self.error_reply: Callable[[GatewayError], tuple[int, bytes]] | None = None
        """The client's dialect's own way of telling an error before the reply starts (A2A's JSON-RPC error), once
        the request shows which dialect it is; else the gateway's error body."""
        self.encoder: Encoder | None = None
        """The client's dialect's encoder, once the run's reply is written in it: an error after the head went out
        is an event it encodes."""
        self.reply = Reply.UNSENT
        """How far the reply has gone."""
        self.streaming = False
        """The client gets an SSE stream: idle, it is sent keep-alive comments."""
        self.writing = False
        """A send to the client has not returned: how the deadlines tell a stuck client from a slow upstream."""
        self.gone = False
        """The client disconnected before it had its last byte (or was dropped as its last byte stuck): the client's
        side, apart from how far the reply has gone, as h11 keeps each side's state."""
        self.last_write = 0.0
        """When the client was last sent a piece of its stream (monotonic): keep-alives count from it."""
        self.tape: Tape | None = None
        """On a resumable route, where everything the client is sent is kept for it to come back to: the run goes
        on when the client has gone."""
        self.outlived = False
        """The run's feed keeps what the client is sent, for it to come back to (`RunQueries.resumes`): the run goes
        on when the client has gone, as on a resumable route."""

    @property
    def outlives_client(self) -> bool:
        """The run goes on when its client has gone: what it is sent is kept for it to come back to."""
        return self.tape is not None or self.outlived

    @property
    def started(self) -> bool:
        """The response's head has gone out."""
        return self.reply is not Reply.UNSENT

    @property
    def complete(self) -> bool:
        """The last byte has gone out, or is going."""
        return self.reply is Reply.COMPLETE or self.reply is Reply.DETACHED

    def record_on(self, tape: Tape) -> None:
        """Keep everything the client is sent on `tape`, for it to come back to: the run goes on when it has gone
        (a resumable route). Before anything is sent."""
        self.tape = tape

    def client_left(self) -> None:
        """The client disconnected before it had its last byte."""
        self.gone = True

    def when_gone(self, gone: Callable[[], None]) -> Callable[[], None] | None:
        """Call `gone` if the client disconnects before the response's end, when the server can say so (the
        gateway's own: `on_client_gone`); returns what stops the watch. None from another server."""
        return on_client_gone(self._send, gone)

    def keep_alive_from(self, now: float) -> None:
        """The client counts as written to at `now` (monotonic): the next keep-alive is due a period after it."""
        self.last_write = now

    def forget_before_last_byte(self) -> None:
        """Nothing is called as the last byte goes: the request has been reported (and what it held is freed now,
        not left to the cycle collector)."""
        self.before_last_byte = None

    def tap(self, capture: RunCapture) -> None:
        """Show `capture` everything the client is sent, as it goes: once, before anything is."""
        send = self._send

        async def sending(message: Message) -> None:
            try:
                await send(message)
            finally:
                if message["type"] == "http.response.start":
                    capture.client_started(message["status"], message.get("headers", ()))
                else:
                    if body := message.get("body"):
                        capture.wrote(body)
                    if not message.get("more_body", False):
                        capture.done()

        self._send = sending
        if self._direct is not None:
            self._direct = capture.direct(self._direct)  # type: ignore[assignment]

    async def begin_reply(self, encoder: Encoder, headers: dict[str, str]) -> None:
        """The run's reply is written by `encoder` from now on: a streaming one's head goes out at once, with its
        encoder's headers and `headers`, and an error after it is an event the encoder writes."""
        self.encoder = encoder
        if encoder.streams:
            await self.start(encoder.status_code, {**encoder.headers, **headers})
        self.streaming = encoder.streams
        self.last_write = time.monotonic()

    async def start(self, status: int, headers: dict[str, str]) -> None:
        if self.tape is not None:
            self.tape.open(Head(status, headers, self.encoder.keep_alive() if self.encoder is not None else b""))
        raw = [(k.encode(), v.encode()) for k, v in headers.items()]
        raw.append((b"x-request-id", self._request_id.encode()))
        self.reply = Reply.STARTED
        self._record.status = status
        await self._send({"type": "http.response.start", "status": status, "headers": raw})

    async def write(self, body: bytes) -> None:
        """Send a piece of the stream (never empty) and note when. Per event batch, so it sends directly rather
        than through `_write`."""
        if self.tape is not None:
            body = self.tape.record(body)
        if self.gone and self.outlives_client:
            return
        self.writing = True
        await self._send({"type": "http.response.body", "body": body, "more_body": True})
        self.writing = False
        self.last_write = time.monotonic()

    @property
    def direct_writes(self) -> bool:
        """Whether this server lets pieces be written without an await (`write_now`), when the client reads."""
        return self._direct is not None

    def can_write_now(self) -> bool:
        """Whether `write_now` may be called: the server writes pieces directly and the client is reading."""
        direct = self._direct
        return direct is not None and not self.gone and direct.ready()

    def text_splice(self) -> TextSplice | None:
        """A splice that writes to this client's connection (see `gateway.server.stream.splice`), where pieces are
        written to it directly and nothing else keeps what it is sent (a tape, a capture); else None."""
        direct = self._direct
        if type(direct) is not DirectBody or self.outlives_client:
            return None
        direct.ready()  # a uvicorn whose cycle is made otherwise is let go of here, and `cycle` is None
        return None if direct.cycle is None else TextSplice(direct.cycle)

    def write_now(self, body: bytes, now: float) -> None:
        """`write` without an await, once `can_write_now` said so (and nothing was awaited since); `now` is the
        caller's monotonic clock reading of this moment, one per event."""
        if self.tape is not None:
            body = self.tape.record(body)
        assert self._direct is not None
        self._direct.write(body)
        self.last_write = now

    def drop(self) -> bool:
        """Close the connection of a client that stopped reading, at once: a write stuck on it returns, and what
        waited for it is freed. False where the server gives no hold on the connection."""
        if self._direct is None or not self._direct.abort():
            return False
        self.gone = True
        record = self._record
        record.error = ErrorCode.CLIENT_STALLED
        log.info("the client took nothing for too long and was dropped%s",
                 "; the run goes on" if self.outlives_client else "",
                 extra={"route": record.route, "request_id": record.request_id})
        return True

    async def write_keep_alive(self, comment: bytes) -> None:
        """Send bytes that mean nothing to keep an idle stream open (nothing if the dialect has none). The timer
        starts it as a task, which may run after the last byte went: then there is nothing to keep open."""
        if self.reply is Reply.UNSENT or self.reply is Reply.STARTED:
            await self._write(comment)

    async def end(self, body: bytes) -> None:
        """Send the last byte, reporting the request as it goes."""
        self.reply = Reply.COMPLETE
        if self.tape is not None:
            body = self.tape.record(body, last=True)
        if self.before_last_byte is not None:
            self.before_last_byte()
        await self._write(body, more=False)

    async def respond(self, status: int, headers: dict[str, str], body: bytes) -> None:
        """The whole response at once (a one-body reply, or an error before the head)."""
        if self.reply is Reply.DETACHED:  # answered already: the run's end is only reported
            if self.before_last_byte is not None:
                self.before_last_byte()
            return
        if self.gone and not self.outlives_client:
            return
        await self.start(status, headers)
        await self.end(body)

    async def answer_early(self, encoder: Encoder, body: bytes) -> None:
        """A one-body reply its client asked for before the run's end (A2A's `returnImmediately`): sent, and the run
        goes on without the client, to its end, which is stored and reported as any run's."""
        if self.reply is Reply.DETACHED:
            return
        report, self.before_last_byte = self.before_last_byte, None
        await self.respond(encoder.status_code, encoder.headers, body)
        self.before_last_byte = report
        self.reply = Reply.DETACHED

    async def fail_before_start(self, error: GatewayError) -> None:
        record = self._record
        record.outcome = RequestOutcome.REJECTED if error.status < 500 else RequestOutcome.ERROR
        record.error = error.code
        record.error_message = error.message
        headers = {"content-type": "application/json"}
        if self.error_reply is not None:
            status, body = self.error_reply(error)
        else:
            status, body = error.status, orjson.dumps(error.to_json())
        headers.update(error.headers)
        await self.respond(status, headers, body)

    async def abort(self, error: GatewayError, code: str) -> None:
        """End the exchange with `error`: as the HTTP error if the response has not started, else in band."""
        if self.reply is Reply.UNSENT:
            await self.fail_before_start(error)
        elif self.reply is Reply.STARTED:
            body = b""
            if self.encoder is not None:
                try:
                    body = self.encoder.encode([RunError(error.message, code=code)])
                except Exception:  # the encoder may be what broke
                    body = b""
            self._record.failed(code)
            await self.end(body)

    async def _write(self, body: bytes, more: bool = True) -> None:
        if body or not more:
            self.writing = True
            await self._send({"type": "http.response.body", "body": body, "more_body": more})
            self.writing = False
