"""`Deadlines` on its own: which deadline passes when, what it cancels and says, the keep-alive an idle client is
sent, and what each reason for a cancel means for the request (`Deadlines.ending`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from adapters import registry
from gateway.config import Timeouts
from gateway.core.errors import ShuttingDown, UpstreamError, UpstreamTimeout
from gateway.core.turn import Turn
from gateway.server.operations.record import AccessRecord
from gateway.server.stream.client import ClientWriter
from gateway.server.stream.deadlines import CancelReason, Deadlines, watch_disconnect


class Sent:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)


def deadlines(timeouts: Timeouts, keepalive: float = 30.0) -> tuple[Deadlines, ClientWriter, AccessRecord, Sent]:
    sent = Sent()
    record = AccessRecord(request_id="req-1", route="r", upstream_dialect="ag-ui")
    writer = ClientWriter(sent.send, "req-1", record, lambda: None)  # type: ignore[arg-type]
    return Deadlines(timeouts, keepalive, writer, record, time.monotonic()), writer, record, sent


async def cancelled_by(kept: Deadlines, *, answered: bool = True, events: int = 0, wait: float = 5.0) -> float:
    """Run a request task that waits for the upstream, and return how long until the deadlines cancel it."""
    kept.upstream_answered = answered
    kept._record.events = events
    kept.last_upstream_event = time.monotonic()
    task = kept.request_task = asyncio.create_task(asyncio.sleep(wait))
    started = time.monotonic()
    kept.arm()
    with pytest.raises(asyncio.CancelledError):
        await task
    kept.disarm()
    return time.monotonic() - started


def test_an_upstream_that_does_not_answer_in_time_is_named_as_such() -> None:
    kept, *_ = deadlines(Timeouts(first_event=0.1))
    took = asyncio.run(cancelled_by(kept, answered=False))
    assert kept.cancelled_because is CancelReason.TIMEOUT and took < 1
    assert kept.missed_deadline == "upstream did not answer within 0.1s"


def test_an_answer_without_a_first_event_misses_the_first_event_deadline() -> None:
    kept, *_ = deadlines(Timeouts(first_event=0.1))
    asyncio.run(cancelled_by(kept))
    assert kept.missed_deadline == "upstream sent no event within 0.1s"


def test_once_events_come_the_idle_deadline_counts() -> None:
    kept, *_ = deadlines(Timeouts(first_event=0.1, idle=0.3))
    took = asyncio.run(cancelled_by(kept, events=1))
    assert kept.missed_deadline == "upstream sent nothing for 0.3s" and took >= 0.25


def test_the_total_deadline_passes_whatever_the_upstream_sends() -> None:
    kept, *_ = deadlines(Timeouts(first_event=5, idle=5, total=0.1))
    asyncio.run(cancelled_by(kept, events=3))
    assert kept.missed_deadline == "the run took longer than 0.1s"


def test_nothing_cancels_the_request_while_its_conversation_is_stored() -> None:
    kept, *_ = deadlines(Timeouts())

    async def storing() -> bool:
        task = kept.request_task = asyncio.create_task(asyncio.sleep(0.05))
        kept.storing_conversation = True
        kept.cancel_request(CancelReason.CLIENT_GONE)
        await task
        return task.cancelled()

    assert asyncio.run(storing()) is False and kept.cancelled_because is None


def test_only_the_first_reason_to_cancel_counts() -> None:
    kept, *_ = deadlines(Timeouts())

    async def twice() -> None:
        kept.request_task = asyncio.create_task(asyncio.sleep(5))
        kept.cancel_request(CancelReason.SHUTDOWN)
        kept.cancel_request(CancelReason.CLIENT_GONE)
        with pytest.raises(asyncio.CancelledError):
            await kept.request_task

    asyncio.run(twice())
    assert kept.cancelled_because is CancelReason.SHUTDOWN


def test_each_reason_says_what_the_client_is_told_and_whether_the_upstream_is() -> None:
    kept, *_ = deadlines(Timeouts())
    kept.missed_deadline = "upstream sent nothing for 1s"
    told = {}
    for reason in CancelReason:
        kept.cancelled_because = reason
        told[reason] = kept.ending()
    timeout, shutdown = told[CancelReason.TIMEOUT], told[CancelReason.SHUTDOWN]
    cancelled, gone, stalled = told[CancelReason.CANCELLED], told[CancelReason.CLIENT_GONE], \
        told[CancelReason.CLIENT_STALLED]
    assert timeout is not None and isinstance(timeout.error, UpstreamTimeout)
    assert timeout.error.message == "upstream sent nothing for 1s" and timeout.code == "upstream_timeout"
    assert timeout.stops_upstream and not timeout.by_client
    assert shutdown is not None and isinstance(shutdown.error, ShuttingDown) and shutdown.code == "shutting_down"
    assert shutdown.stops_upstream
    assert cancelled is not None and isinstance(cancelled.error, UpstreamError) and cancelled.code == "cancelled"
    assert cancelled.by_client and not cancelled.stops_upstream  # its stop told the upstream already
    assert gone is not None and gone.error is None and gone.stops_upstream
    assert stalled is not None and stalled.error is None and not stalled.stops_upstream
    kept.cancelled_because = None
    assert kept.ending() is None  # not ours: let through


def test_an_idle_streaming_client_is_sent_keep_alives() -> None:
    kept, writer, _, sent = deadlines(Timeouts(), keepalive=0.05)
    encoder = writer.encoder = registry.get("ag-ui").new_encoder(Turn())
    writer.streaming = True

    async def idle() -> None:
        kept.arm()
        await asyncio.sleep(0.3)
        kept.disarm()

    asyncio.run(idle())
    bodies = [m["body"] for m in sent.messages]
    assert len(bodies) >= 2 and set(bodies) == {encoder.keep_alive()}


def test_a_client_that_leaves_cancels_its_request() -> None:
    kept, writer, *_ = deadlines(Timeouts())

    async def leaving() -> bool:
        task = kept.request_task = asyncio.create_task(asyncio.sleep(5))

        async def receive() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        watch_disconnect(receive, writer, kept)  # type: ignore[arg-type]  # a task, for a send not uvicorn's
        await asyncio.wait([task], timeout=1)
        return task.cancelled()

    assert asyncio.run(leaving()) and writer.gone and kept.cancelled_because is CancelReason.CLIENT_GONE


def test_a_client_that_leaves_a_kept_reply_leaves_the_run_going() -> None:
    kept, writer, *_ = deadlines(Timeouts())
    writer.tape = object()  # type: ignore[assignment]

    async def leaving() -> bool:
        task = kept.request_task = asyncio.create_task(asyncio.sleep(0.05))

        async def receive() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        watch_disconnect(receive, writer, kept)  # type: ignore[arg-type]  # a task, for a send not uvicorn's
        await task
        return task.cancelled()

    assert asyncio.run(leaving()) is False and writer.gone and kept.cancelled_because is None
