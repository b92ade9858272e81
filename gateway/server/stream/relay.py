"""One run's relay: the upstream's body to the client, translated on the fly, and the conversation stored.

```
upstream body ─▶ read ▸ decode ▸ repair ▸ record ▸ encode ▸ write ─▶ client
   │                                        │
   │                     terminal event ─▶ store the conversation ─▶ last byte   (RunEnd, run_end.py)
   └─ a steady text delta, re-framed as it is read ─▶ client; recorded at the next batch (RunSplice, splice.py)
```

The read loop does nothing per chunk but decode, encode and write: the deadlines and the keep-alive are kept by
`Deadlines`' one timer beside it, which the loop only tells when it read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial

from gateway.conversations.mapper import ConversationMapper, Exchange
from gateway.conversations.recorder import RunRecorder
from gateway.core.codec import Decoder, Dialect, Encoder, UpstreamRequest
from gateway.core.decoding import JsonSSEDecoder
from gateway.core.encoding import SSEEncoder
from gateway.core.errors import ErrorCode, UpstreamRefused
from gateway.core.events import Event, RunError, RunFinished, RunStarted
from gateway.core.ids import new_id
from gateway.core.turn import Turn
from gateway.runs.watched import WatchedRun
from gateway.server.operations.record import AccessRecord
from gateway.server.stream.client import ClientWriter
from gateway.server.stream.deadlines import Deadlines
from gateway.server.stream.run_end import RunEnd
from gateway.server.stream.splice import RunSplice, says_steady_frames
from gateway.server.stream.upstream_errors import failure_line
from gateway.upstream.http1 import DECLINED, TAKEN, TAKEN_AND_WAKE, HTTPError, Offer, Response

UNBUFFERED_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
"""Asks caches and buffering proxies (nginx) in front of the gateway to pass a stream on as it is written."""


_TERMINAL = frozenset({RunFinished, RunError})


class NoFirstEvent(Exception):
    """The upstream's stream broke or ended before its first event, on a run that may still move to another
    upstream (`Relay`'s `committing`): the client has been sent nothing."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class HeldTooMuch(Exception):
    """The run brought more of one piece its client needs whole (a tool call's arguments, a one-body reply) than the
    route lets the gateway hold: it ends with an error rather than grow the process."""


FIRST_FRAME_ALONE_PAST = 1024
"""Bytes after the first frame of the first read past which the first frame is sent alone: translating less costs
the first event less time than a write of its own costs the request."""


class Relay:
    """One run, from the upstream's 2xx body to the client's last byte. It holds what the run is translated and
    recorded with: the upstream's decoder, the client's encoder, the recorder and the exchange."""

    __slots__ = ("_committing", "_deadlines", "_end", "_first_frame_alone", "_handed_back", "_max_held",
                 "_offer_pending", "_reattach_to", "_record", "_send", "_sent_by", "_splice", "_started_at", "_streams",
                 "_upstream_status", "_watched", "_writer", "decoder", "encoder", "exchange", "recorder")

    def __init__(self, *, exchange: Exchange, client_dialect: Dialect, decoder: Decoder, encoder: Encoder,
                 recorder: RunRecorder, upstream_status: int, mapper: ConversationMapper, record: AccessRecord,
                 writer: ClientWriter, deadlines: Deadlines, watched: WatchedRun | None = None,
                 reattach: Callable[[UpstreamRequest], Awaitable[Response | None]] | None = None,
                 max_held: int = 1 << 62, abandon: Callable[[], None] | None = None,
                 committing: Callable[[], Awaitable[None]] | None = None) -> None:
        self.exchange = exchange
        self._committing = committing
        """On a run that may still move to another upstream (a route with fallbacks): called as its first event
        goes out, when the run becomes this upstream's. Until then the client is sent nothing, not even the
        response's head, and a run that ends or is cut short before that event is left to the caller
        (`NoFirstEvent`, or the cancel), which may move it."""
        self._max_held = max_held
        """Characters of one piece the client needs whole that the run may bring (`limits.max_held_text`)."""
        self._reattach_to = reattach
        """Sends the upstream a request for the rest of a run (see `Decoder.reattach_request`)."""
        self._watched = watched
        """The run's feed, when its clients may ask about it: each batch's updates go on it."""
        self.decoder = decoder
        self.encoder = encoder
        self.recorder = recorder
        self._upstream_status = upstream_status
        self._record = record
        self._writer = writer
        self._deadlines = deadlines
        self._started_at = deadlines.started_at
        self._streams = encoder.streams
        """The client gets the events as they come, not one body at the end."""
        self._sent_by: Callable[[bytes], Awaitable[None]] = \
            writer.write if encoder.streams else partial(writer.answer_early, encoder)
        """Sends the client the bytes of a batch that does not end the run: a piece of its stream, or (a client
        that asked for its whole reply before the run's end) that reply."""
        self._send: Callable[[bytes], Awaitable[None]] = \
            self._sent_by if committing is None else self._commit_then_send
        self._first_frame_alone = False
        """The first frame of the upstream's stream is still to be translated and sent on its own."""
        self._offer_pending = False
        """The upstream's bytes are still to be offered to `_offered` once the first event is out."""
        self._handed_back: list[Event] | Exception | None = None
        """The batch that ended the run, or what a step in `_offered` raised: for the run's task to finish."""
        self._end = RunEnd(exchange=exchange, client_dialect=client_dialect, encoder=encoder, recorder=recorder,
                           mapper=mapper, record=record, writer=writer, deadlines=deadlines, watched=watched,
                           abandon=abandon)
        self._splice: RunSplice | None = None
        """Writes the run's steady text deltas to the client as the upstream's connection reads them, where both
        dialects can say what one is and nothing but the client is shown the run."""
        if watched is None and isinstance(decoder, JsonSSEDecoder) and isinstance(encoder, SSEEncoder) \
                and says_steady_frames(decoder, encoder):
            splice = writer.text_splice()
            if splice is not None:
                self._splice = RunSplice(splice, decoder, encoder)
                deadlines.catch_up = self._catch_up

    async def run(self, response: Response, upstream_streams: bool) -> None:
        """Move the upstream's body to the client, translated, and store what the run added to the conversation."""
        decoder, encoder = self.decoder, self.encoder
        if self._committing is None:
            await self._begin_reply(opening=True)
        self._deadlines.heard_from_upstream(time.monotonic())
        self._first_frame_alone = encoder.streams and upstream_streams
        first_break: HTTPError | None = None
        """How the upstream's stream broke, for the error when what was asked for next brought nothing more."""
        try:
            while True:
                broke: HTTPError | None = None
                try:
                    if await self._stream(response):
                        return
                except HTTPError as exc:
                    broke = exc
                again = await self._reattach(response, broke is not None)  # broke off mid-run: ask for the rest
                if again is None:
                    events = _ended(decoder, broke, first_break)
                    if self._committing is not None and not self._record.events and _broke_off(events, broke):
                        raise NoFirstEvent(_what_broke(events))
                    break
                first_break = first_break or broke
                response.offer = None
                response = again
        except HeldTooMuch as exc:
            events = _held_too_much(decoder, exc)
        except asyncio.CancelledError:
            if self._committing is not None and not self._record.events:  # the run may still move: the caller's
                raise
            cut_short = self._cut_short()
            if cut_short is None:  # not ours, or nobody is left to tell: the exchange ends
                raise
            events = cut_short
        finally:
            response.offer = response.splice = None
            if self._splice is not None:  # a run its client left ends here: what was spliced still counts
                self._splice.disarm()
                self._catch_up()
        if events:  # empty only if the run already ended when the deadline struck
            try:
                await self._deliver(events)
            except HeldTooMuch as exc:  # the run's last batch went past the bound (a one-body upstream's whole reply)
                await self._deliver(_held_too_much(decoder, exc))

    def close(self) -> None:
        """The run is over here: the request's methods it was handed (and its own, `_commit_then_send`) go, so that
        the request's objects are freed as it ends, by their counts, not left to the cycle collector with every
        event they hold."""
        self._reattach_to = self._committing = None
        self._send = self._sent_by
        self._deadlines.catch_up = None
        self._end.close()

    async def _begin_reply(self, *, opening: bool) -> None:
        """The client's reply begins: a stream's head goes out, and a client that asked for no more than the run's
        start (`opening`) is given it. From here the client's pieces may be written in the upstream's callback."""
        writer, encoder = self._writer, self.encoder
        await writer.begin_reply(encoder, UNBUFFERED_HEADERS)
        if opening and not self._streams and (early := encoder.opening()):
            await writer.answer_early(encoder, early)
        self._offer_pending = self._streams and writer.direct_writes

    async def _commit(self, opening: bool = True) -> None:
        """The run's first event goes out: the run is this upstream's, and its reply begins."""
        committing, self._committing, self._send = self._committing, None, self._sent_by
        assert committing is not None
        await committing()
        await self._begin_reply(opening=opening)

    async def _commit_then_send(self, out: bytes) -> None:
        if self._committing is not None:
            await self._commit()
        await self._sent_by(out)

    async def _stream(self, response: Response) -> bool:
        """Read `response`'s body, each read through `_step` and its bytes sent: True once the run's end is out (or
        nobody is left to send it to), False when the body ended before the run did."""
        step, send, writer = self._step, self._send, self._writer
        while True:
            if self._offer_pending:  # from the reply's start on (the first event too), or its commit
                self._offer_pending = False
                response.offer = self._offered
                if self._splice is not None:
                    response.splice = self._splice.splice
            chunk = await response.read()
            if self._handed_back is None:  # else `_offered` took the run's end, or failed: b"" wakes the task
                if not chunk:
                    return False
                if writer.gone and not writer.outlives_client:
                    # Sends to a departed client return at once and buffered upstream data comes without waiting:
                    # the cancel may find no await to land on. Stop here (unless the run is kept for the client to
                    # come back to).
                    return True
                if self._first_frame_alone:
                    first, chunk = self._first_frame(chunk)
                    if first:
                        await send(first)
                if chunk:
                    out = step(chunk, time.monotonic())  # most reads: no coroutine made for the batch
                    if out:
                        await send(out)
            if self._handed_back is not None:
                handed, self._handed_back = self._handed_back, None
                if isinstance(handed, Exception):
                    raise handed
                await self._deliver(handed)
                return True
            chunk = first = out = b""  # nothing of this read is held while the next is awaited: all a paced run's life

    def _first_frame(self, chunk: bytes) -> tuple[bytes, bytes]:
        """The first frame of the first read goes out alone, when much comes after it: the client's first event
        should not wait for the translation of everything else the read brought. The client's bytes for that frame
        (b"" when it is not cut off), and what is left of `chunk`."""
        self._first_frame_alone = False
        cut = chunk.find(b"\n\n") + 2
        if cut <= 1 or len(chunk) - cut <= FIRST_FRAME_ALONE_PAST:
            return b"", chunk
        out = self._step(chunk[:cut], time.monotonic())
        return out, (chunk[cut:] if self._handed_back is None else b"")

    def _step(self, chunk: bytes, now: float) -> bytes:
        """The per-event step, for the loop and `_offered` alike: `chunk` decoded, the time of its events (`now`)
        noted for the idle deadline, and the client's bytes for them returned. A batch that ends the run is left in
        `_handed_back` instead, for the run's task: its end awaits the conversation's store."""
        events = self.decoder.feed(chunk)
        if not events:  # bytes that finish no event (a frame's first half, a comment) are not news
            return b""
        self._deadlines.heard_from_upstream(now)
        if type(events[-1]) in _TERMINAL:
            self._handed_back = events
            return b""
        return self._translate(events)

    def _cut_short(self) -> list[Event] | None:
        """The run's last events after the request's task was cancelled from `Deadlines` (a deadline, the client's
        cancel, the process stopping), which the client is told of; None when the cancel was not ours, or nobody
        is left to tell."""
        deadlines = self._deadlines
        ending = deadlines.ending()
        if ending is None or ending.error is None:
            return None
        deadlines.carry_on_after_deadline()
        handed, self._handed_back = self._handed_back, None
        if isinstance(handed, list):  # the run ended as the deadline struck: it ended
            return handed
        if ending.by_client:
            return self.decoder.cancel()
        return self.decoder.fail(ending.error.message, ending.code)

    async def _reattach(self, response: Response, broke: bool) -> Response | None:
        """The rest of a run whose stream ended or broke before the run did, where its dialect can ask for it (A2A's
        `SubscribeToTask`, then `GetTask`; LangGraph's join): the upstream's answer, read on as the stream."""
        if self._reattach_to is None:
            return None
        request = self.decoder.reattach_request(broke)
        if request is None:
            return None
        response.offer = response.splice = None
        while request is not None:
            answered = await self._reattach_to(request)
            if answered is not None:
                return answered
            # refused by its status (A2A's HTTP+JSON refuses a subscribe to an ended task so): the dialect's next way
            request = self.decoder.reattach_request(broke)
        return None

    def _offered(self, chunk: bytes) -> Offer:
        """The upstream's bytes, in its connection's callback while the run waits for them (`Response.offer`):
        translated and written at once when the client takes them without a wait and they do not end the run, which
        spares the run's task a wake-up per read. A client that is slow or gone leaves them to the task's `read()`;
        the run's end, or an error, is handed to the task decoded."""
        writer = self._writer
        if not writer.can_write_now():
            return DECLINED
        try:
            now = time.monotonic()
            if self._first_frame_alone:
                first, chunk = self._first_frame(chunk)
                if first:
                    writer.write_now(first, now)
                if not chunk:
                    return TAKEN_AND_WAKE if self._handed_back is not None else TAKEN
            out = self._step(chunk, now)
            if self._handed_back is not None:
                return TAKEN_AND_WAKE
            if out:
                writer.write_now(out, now)
                if self._splice is not None:
                    self._splice.arm()
        except Exception as exc:  # raised in the task, as it would have been there
            self._handed_back = exc
            return TAKEN_AND_WAKE
        return TAKEN

    def _translate(self, events: list[Event]) -> bytes:
        """Count, record and encode one batch of events: the client's bytes for it."""
        record, recorder = self._record, self.recorder
        if self._splice is not None:
            self._splice.disarm()
            self._catch_up()
        recorder.record(events)  # before the start is rewritten: the recorder keeps the upstream's thread id
        if recorder.largest_call > self._max_held or (recorder.held > self._max_held and not self._streams):
            too_much, self._max_held = _too_much(recorder, self._max_held), 1 << 62  # said once: the error goes through
            raise HeldTooMuch(too_much)
        if not record.events:
            _rewrite_start(events, self.exchange.client_turn)
            record.ttfe_ms = round((time.monotonic() - self._started_at) * 1000, 3)
            record.events = len(events)
            self._deadlines.first_event_came()
        else:
            record.events += len(events)
        if self._watched is not None:
            self._watched.feed(events)
        return self.encoder.encode(events)

    def _catch_up(self) -> None:
        """Record, count and time the text deltas the splice wrote since the last batch, as if they had been one."""
        assert self._splice is not None
        count, spliced, at = self._splice.taken()
        if spliced is not None:
            self.recorder.record([spliced])
            self._record.events += count
            self._deadlines.heard_from_upstream(at)
            self._writer.keep_alive_from(at)

    async def _deliver(self, events: list[Event]) -> None:
        """Translate and send one batch of events, the run's end once its terminal event is among them."""
        if self._upstream_status >= 300 and isinstance(events[-1], RunFinished):
            # A one-body upstream answered non-2xx with a body that says nothing went wrong.
            refused = UpstreamRefused(self._upstream_status)
            events[-1] = RunError(refused.message, code=refused.code)
        out = self._translate(events)
        terminal = events[-1]
        if not isinstance(terminal, RunFinished | RunError):
            if out:
                await self._send(out)
            return
        if self._committing is not None:  # the run's first batch is its last: no start to give early
            await self._commit(opening=False)
        await self._end.finish(out, terminal)


def _held_too_much(decoder: Decoder, exc: HeldTooMuch) -> list[Event]:
    """The end of a run that brought more than its client can be given whole. The batch that went past the bound
    may have ended the run in the decoder, which then adds nothing; the client has been told nothing of it yet."""
    return decoder.fail(str(exc), ErrorCode.HELD_TOO_MUCH) or [RunError(str(exc), code=ErrorCode.HELD_TOO_MUCH)]


def _ended(decoder: Decoder, broke: HTTPError | None, first_break: HTTPError | None) -> list[Event]:
    """The run's last events once the upstream has nothing more: its stream broke, or it ended (a stream read after
    an earlier one broke off that brought nothing more says the first break)."""
    if broke is not None:
        return decoder.fail(f"upstream connection broke: {failure_line(broke)}", ErrorCode.UPSTREAM_ERROR)
    events = decoder.close()
    if first_break is not None and events and isinstance(events[-1], RunError) and \
            events[-1].code == ErrorCode.UPSTREAM_TRUNCATED:
        events[-1] = RunError(f"upstream connection broke: {failure_line(first_break)}", code=ErrorCode.UPSTREAM_ERROR)
    return events


_EMPTY = "upstream ended its reply without a run"


def _what_broke(events: list[Event]) -> str:
    last = events[-1] if events else None
    return last.message if isinstance(last, RunError) else _EMPTY


def _broke_off(events: list[Event], broke: HTTPError | None) -> bool:
    """Whether a run's last events say only that the upstream's reply broke or ended before the run did (not an
    error of the upstream's own, which is its answer)."""
    if not events:
        return True
    last = events[-1]
    return isinstance(last, RunError) and (broke is not None or last.code == ErrorCode.UPSTREAM_TRUNCATED) \
        and all(isinstance(event, RunStarted) for event in events[:-1])


def _rewrite_start(events: list[Event], turn: Turn) -> None:
    """The client sees its own thread and run ids, whatever the upstream called them."""
    first = events[0]
    if isinstance(first, RunStarted):
        events[0] = RunStarted(thread_id=turn.conversation_id, run_id=turn.run_id or new_id("run"),
                               parent_run_id=turn.parent_run_id, message_id=first.message_id)


def _too_much(recorder: RunRecorder, max_held: int) -> str:
    if recorder.largest_call > max_held:
        return (f"a tool call's arguments grew past {max_held} characters, more than the gateway holds for "
                "a client (limits.max_held_text)")
    return (f"the reply grew past {max_held} characters, more than the gateway holds for a reply sent in one "
            "body (limits.max_held_text)")
