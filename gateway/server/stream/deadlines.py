"""A request's deadlines (`DEADLINES`, a row each: total, first event, idle) and the client's keep-alive, kept by one
timer.

The timer is moved only when it fires, so nothing is scheduled per chunk: the relay only notes the time of each
batch of events (`last_upstream_event`), the client writer that of each write (`ClientWriter.last_write`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Any

from starlette.types import Receive

from gateway.config import Timeouts
from gateway.core.errors import ErrorCode, GatewayError, ShuttingDown, UpstreamError, UpstreamTimeout
from gateway.server.operations.record import AccessRecord
from gateway.server.stream.client import ClientWriter

STOPPED = "agent_gateway.stopped"
"""The key of an `http.disconnect` message that a client's word stopped the run rather than its leaving."""
STOP_POLL_S = 0.25
"""Between looks for a stop of a run that goes on after its client left (`ClientWriter.outlived`)."""


class CancelReason(Enum):
    """Why `Deadlines` cancelled the request's task (`Deadlines.ending` says what each means for the request)."""

    TIMEOUT = "timeout"
    """A deadline passed: the reading stops, and the client is told why."""
    SHUTDOWN = "shutdown"
    """The process is stopping (`Drain`): the reading stops, and the client is told why."""
    CANCELLED = "cancelled"
    """A client's word ended the run (a query's cancel, a stop on a resumable route)."""
    CLIENT_GONE = "client_gone"
    """The client disconnected: the exchange ends, and the upstream is told to stop."""
    CLIENT_STALLED = "client_stalled"
    """The client stopped reading and its connection could not be closed: the exchange ends."""


@dataclass(frozen=True, slots=True)
class Ending:
    """What a cancel means for the request whose task it cancelled."""

    error: GatewayError | None
    """What the client is told: before the reply, as its HTTP error; in it, as an event of code `code`. None when
    nobody is there to tell: the exchange just ends."""
    code: str = ""
    stops_upstream: bool = False
    """The upstream is told to stop the run (a client's cancel told it already)."""
    by_client: bool = False
    """The client's own cancel: a run being relayed ends as cancelled, not in error."""


class CountsFrom(Enum):
    """The moment a deadline counts from."""

    ARRIVAL = "arrival"
    """The request arrived."""
    ARRIVAL_UNTIL_AN_EVENT = "arrival_until_an_event"
    """The request arrived; once the upstream has sent an event, the deadline no longer counts."""
    LAST_EVENT = "last_event"
    """The upstream's last event, once it has sent one."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """One deadline of a request: how long from when, and what the client is told when it passes."""

    name: str
    """As the configuration names its seconds (`timeouts.<name>`)."""
    counts_from: CountsFrom
    seconds: Callable[[Timeouts], float]
    message: str
    """What the client is told, of `{seconds}`, once the upstream has answered (before it has: `UNANSWERED`)."""


DEADLINES = (
    Deadline("total", CountsFrom.ARRIVAL, lambda timeouts: timeouts.total, "the run took longer than {seconds:g}s"),
    Deadline("first_event", CountsFrom.ARRIVAL_UNTIL_AN_EVENT, lambda timeouts: timeouts.first_event,
             "upstream sent no event within {seconds:g}s"),
    Deadline("idle", CountsFrom.LAST_EVENT, lambda timeouts: timeouts.idle, "upstream sent nothing for {seconds:g}s"),
)
"""Every deadline of a request. Of two that pass at once, the client is told of the one listed first."""

UNANSWERED = "upstream did not answer within {seconds:g}s"
"""What the client is told of a deadline that passes before the upstream answered, whichever deadline it is."""


class Deadlines:
    """The one timer of a request. At a deadline it cancels the request's task and says why in
    `cancelled_because`; the client leaving, its cancel and the process stopping cancel it the same way."""

    __slots__ = ("_keep_alive_in_flight", "_keepalive", "_record", "_timeouts", "_timer", "_writer",
                 "cancelled_because", "catch_up", "first_event_from", "last_upstream_event", "missed_deadline",
                 "request_task", "started_at", "storing_conversation", "upstream_answered", "wake_at")

    def __init__(self, timeouts: Timeouts, keepalive: float, writer: ClientWriter, record: AccessRecord,
                 started_at: float) -> None:
        self._timeouts = timeouts
        self._keepalive = keepalive
        self._writer = writer
        self._record = record
        self.started_at = started_at
        """When the request arrived (monotonic): the first-event and total deadlines count from it."""
        self.first_event_from = started_at
        """When the first-event deadline counts from: the request's arrival, or when it moved to another upstream
        (`count_first_event_anew`)."""
        self.last_upstream_event = 0.0
        """When the upstream's body last brought an event (monotonic): the idle deadline counts from it. Bytes
        that finish none (a comment, a frame that never ends) do not count: an upstream saying only that it is
        there is as quiet as one saying nothing."""
        self.request_task: asyncio.Task[Any] | None = None
        """The task the request runs in: what a deadline, or the client leaving, cancels."""
        self.cancelled_because: CancelReason | None = None
        """Why the request's task was cancelled from here (None: it was not)."""
        self.upstream_answered = False
        """The upstream has answered the request: a deadline passing before it did says so."""
        self.missed_deadline = ""
        """Which deadline passed, as the client is told it."""
        self.storing_conversation = False
        """The conversation is being stored: nothing cancels the request meanwhile."""
        self.wake_at = 0.0
        """When the timer fires next (monotonic)."""
        self._timer: asyncio.TimerHandle | None = None
        self._keep_alive_in_flight: asyncio.Task[None] | None = None
        self.catch_up: Callable[[], object] | None = None
        """Brings what the timer reads up to date with what the run did outside its own steps (the text splice's
        pieces: when the upstream was last heard from, when the client was last written to)."""

    def arm(self) -> None:
        """(Re)start the timer: once per request, and again only if a deadline moves closer than its wake-up."""
        self.disarm()
        self._tick()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._keep_alive_in_flight is not None:
            self._keep_alive_in_flight.cancel()
            self._keep_alive_in_flight = None

    def guard(self, task: asyncio.Task[Any] | None) -> None:
        """The request runs in `task`: what a deadline, the client leaving, its cancel or the process stopping
        cancels."""
        self.request_task = task

    def note_upstream_answered(self) -> None:
        """The upstream answered the request: a deadline that passes from now on is the run's, not the answer's."""
        self.upstream_answered = True

    def count_first_event_anew(self) -> None:
        """The run moved to another upstream, which did not answer yet: its first-event deadline counts from now,
        the total one still from the request's arrival."""
        self.cancelled_because = None
        self.upstream_answered = False
        self.first_event_from = time.monotonic()

    def carry_on(self) -> None:
        """The request goes on after a cancel from here, to tell its client why: it may be cancelled again."""
        self.cancelled_because = None

    def begin_storing(self) -> None:
        """The conversation is being stored: nothing cancels the request until `end_storing`."""
        self.storing_conversation = True

    def end_storing(self) -> None:
        """The conversation is stored: a client that stops reading now is still cut off at the deadline."""
        self.storing_conversation = False

    def heard_from_upstream(self, now: float) -> None:
        """The upstream's body brought an event at `now` (monotonic), or the upstream answered: the idle deadline
        counts from it."""
        self.last_upstream_event = now

    def first_event_came(self) -> None:
        """From the first event on, other deadlines count (the idle one instead of the first-event one): if the next
        of them comes before the timer would wake, move the timer."""
        if self._next_deadline()[0] < self.wake_at:
            self.arm()

    def ending(self) -> Ending | None:
        """What the cancel of the request's task means for it, the one place that says it for each reason; None
        when the cancel was not ours (the server is shutting down the task)."""
        match self.cancelled_because:
            case CancelReason.TIMEOUT:
                return Ending(UpstreamTimeout(self.missed_deadline), ErrorCode.UPSTREAM_TIMEOUT, stops_upstream=True)
            case CancelReason.SHUTDOWN:
                return Ending(ShuttingDown(), ShuttingDown.code, stops_upstream=True)
            case CancelReason.CANCELLED:  # its stop told the upstream already
                return Ending(UpstreamError("the run was cancelled before the upstream answered"), "cancelled",
                              by_client=True)
            case CancelReason.CLIENT_GONE:
                return Ending(None, stops_upstream=True)
            case CancelReason.CLIENT_STALLED:
                return Ending(None)
            case None:
                return None

    def cancel_request(self, reason: CancelReason) -> None:
        """End the exchange from outside its task (a deadline, the client leaving)."""
        if self.cancelled_because is None and not self.storing_conversation and self.request_task is not None:
            self.cancelled_because = reason
            self.request_task.cancel()

    def carry_on_after_deadline(self) -> None:
        """A deadline cancelled the reading, not the request: carry on to tell the client why, giving the client
        `keepalive` seconds to take it (a client that reads nothing would hold the request forever)."""
        assert self.request_task is not None
        self.request_task.uncancel()
        self.carry_on()
        self._timer = asyncio.get_running_loop().call_later(self._keepalive, self._drop_a_client_still_stuck)

    def _tick(self) -> None:
        """At a deadline, stop the reading (or, when a write to the client is stuck, drop the client); when the
        client has heard nothing for a while, send it a keep-alive; then sleep until the next of these. A run kept
        for its client to come back to (resumable) does not wait for a client stuck for a keep-alive period: the
        client is dropped and the run goes on."""
        self._timer = None
        if self.cancelled_because is not None:
            return
        if self.catch_up is not None:
            self.catch_up()
        keepalive, writer = self._keepalive, self._writer
        now = time.monotonic()
        deadline, missed = self._next_deadline()
        stuck = writer.writing and not writer.gone
        stuck_since = max(self.last_upstream_event, writer.last_write)  # the run's last event, or its last write
        if stuck and writer.outlives_client and (now >= deadline or now - stuck_since >= keepalive) \
                and writer.drop():
            stuck = False
            self.last_upstream_event = now  # the upstream was not read while the client held the run back
            deadline, missed = self._next_deadline()
        if now >= deadline and not self.storing_conversation:
            told = missed.message if self.upstream_answered else UNANSWERED
            self.missed_deadline = told.format(seconds=missed.seconds(self._timeouts))
            if stuck:  # the client stopped reading: no error can reach it. Drop it, and the upstream.
                self._drop_stuck_client()
            else:
                self.cancel_request(CancelReason.TIMEOUT)
            return
        keep = writer.last_write + keepalive
        if now >= keep:
            if writer.streaming and not writer.writing and not self.storing_conversation \
                    and self._keep_alive_in_flight is None:
                writer.keep_alive_from(now)
                assert writer.encoder is not None
                self._keep_alive_in_flight = asyncio.create_task(self._keep_alive(writer.encoder.keep_alive()))
            keep = now + keepalive
        wake = min(deadline, keep)
        if wake <= now:  # a deadline passed while the conversation is stored: nothing is cut off then; look again
            wake = now + 0.1
        self.wake_at = wake
        self._timer = asyncio.get_running_loop().call_later(wake - now, self._tick)

    def _next_deadline(self) -> tuple[float, Deadline]:
        """When the next deadline passes (monotonic), and which it is."""
        soonest: tuple[float, Deadline] | None = None
        for deadline in DEADLINES:
            start = self._start(deadline.counts_from)
            if start is None:
                continue
            passes_at = start + deadline.seconds(self._timeouts)
            if soonest is None or passes_at < soonest[0]:
                soonest = passes_at, deadline
        assert soonest is not None, "the total deadline always counts"
        return soonest

    def _start(self, counts_from: CountsFrom) -> float | None:
        """When a deadline counting from this moment started counting (monotonic); None while it does not count."""
        started = bool(self._record.events)
        match counts_from:
            case CountsFrom.ARRIVAL:
                return self.started_at
            case CountsFrom.ARRIVAL_UNTIL_AN_EVENT:
                return None if started else self.first_event_from
            case CountsFrom.LAST_EVENT:
                return self.last_upstream_event if started else None

    def _drop_stuck_client(self) -> None:
        """End the exchange of a client that stopped reading: its connection is closed, so that the write stuck on
        it returns (else the request is cancelled in it)."""
        self._record.failed(ErrorCode.CLIENT_STALLED)
        if not self._writer.drop():
            self.cancel_request(CancelReason.CLIENT_STALLED)

    async def _keep_alive(self, comment: bytes) -> None:
        try:
            await self._writer.write_keep_alive(comment)
        finally:
            self._keep_alive_in_flight = None

    def _drop_a_client_still_stuck(self) -> None:
        """After a deadline, the client has had `keepalive` seconds to take the error: if a write to it is still
        stuck, drop it (once the conversation is stored)."""
        self._timer = None
        if self.storing_conversation:  # still storing the conversation: look again
            self._timer = asyncio.get_running_loop().call_later(self._keepalive, self._drop_a_client_still_stuck)
        elif self._writer.writing and not self._writer.gone:
            self._drop_stuck_client()


def watch_disconnect(receive: Receive, writer: ClientWriter, deadlines: Deadlines) -> Callable[[], None]:
    """A client that leaves ends its exchange; when its reply is kept (a resumable run), only its part: the run
    goes on. Returns what stops watching, once the exchange is over. The gateway's HTTP server says so by a
    callback (`ClientWriter.when_gone`); any other's `receive` is awaited by a task for its `http.disconnect`."""
    stop = writer.when_gone(partial(_client_gone, writer, deadlines))
    if stop is not None:
        return stop
    watcher = asyncio.create_task(_await_disconnect(receive, writer, deadlines))

    def cancel() -> None:
        watcher.cancel()

    return cancel


def _client_gone(writer: ClientWriter, deadlines: Deadlines, stopped: bool = False) -> None:
    if not writer.complete:  # after the last byte the server says so too
        writer.client_left()
        if stopped or not writer.outlives_client:  # the upstream told to stop, nobody else
            deadlines.cancel_request(CancelReason.CLIENT_GONE)


async def _await_disconnect(receive: Receive, writer: ClientWriter, deadlines: Deadlines) -> None:
    """A disconnect that says the client's word stopped the run (`STOPPED`: MCP's `notifications/cancelled`, by the
    endpoint that serves several routes) ends the run whatever is kept."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            _client_gone(writer, deadlines, bool(message.get(STOPPED)))
            if not writer.complete and writer.outlived and not message.get(STOPPED):
                # the run goes on for its client to come back to; its client's word may stop it
                await asyncio.sleep(STOP_POLL_S)  # a server's receive answers at once once the client has gone
                continue
            return
