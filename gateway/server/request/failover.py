"""A run on a route with fallbacks: its upstreams tried in turn until one answers (`run`).

```
 order: where the conversation last succeeded, then the route's upstream and its fallbacks
   │
   ├─ ejected? ─▶ skipped
   ├─ Call.attempt fails before its first event (unreachable, the connect deadline, a 5xx, 408 or 429 answer,
   │  no event by the first-event deadline, a reply that broke off or ended before one, its document or session
   │  unavailable)
   │    ─▶ Moved: counted against it (`Ejection`), its span ended and its attempt captured (`Moves.failed`); the
   │       next one is asked, the conversation mapped anew for it
   └─ sends its first event ─▶ the run is its: a failure from then on is told in band, as on any route
```

Until that first event the client is sent nothing, not even the response's head (`Relay`'s `committing`). An
answer that says the run itself is wrong (any other 4xx) is the client's, on the first upstream as on the last.

The client is told the last failure when none answered (or that every upstream is ejected)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from gateway.core.codec import Dialect
from gateway.core.errors import GatewayError, UpstreamError, UpstreamTimeout
from gateway.core.turn import Turn
from gateway.server.request.backends import order
from gateway.server.request.ejection import Ejection
from gateway.server.stream.client import Reply
from gateway.server.stream.deadlines import CancelReason

if TYPE_CHECKING:
    from gateway.server.request.call import Call


class Moved(Exception):
    """The upstream failed the run before its reply began: the run moves to the next one."""

    def __init__(self, error: GatewayError, reason: str) -> None:
        super().__init__(error.message)
        self.error = error
        """What the client is told if no upstream is left."""
        self.reason = reason
        """Why, as `agent_gateway_failovers_total` says it: unreachable, timeout, status, unavailable."""


class Moves:
    """What one run's attempts did, on a route with fallbacks."""

    __slots__ = ("_ejection", "more", "now_asked", "tried")

    def __init__(self, ejection: Ejection) -> None:
        self._ejection = ejection
        self.tried: list[str] = []
        """Each upstream that failed the run, and why ("primary: unreachable"): the access log's `failovers`."""
        self.now_asked = ""
        """The upstream being asked."""
        self.more = False
        """Another upstream is left to ask after it."""

    def failed(self, call: Call, moved: Moved, began: float) -> None:
        """The upstream the call asked since `began` (monotonic) failed the run: said in the access log, the span
        and the run's capture, each attempt apart."""
        backend = call.backend
        self.tried.append(f"{backend.name}: {moved.reason}")
        call.record.failovers = ", ".join(self.tried)
        if call.trace is not None:
            call.trace.attempt_failed(moved.reason, began, backend.span)
        if call.capture is not None:
            call.capture.upstream_failed(backend.name, backend.dialect.name, backend.config.url, moved.reason,
                                         moved.error.code, began)

    async def answered(self) -> None:
        """The upstream being asked sent the run's first event: the run is its, and it is in service."""
        await self._ejection.succeeded(self.now_asked)


async def run(call: Call, client: Dialect, turn: Turn) -> None:
    """Ask the route's upstreams the client's turn in turn, until one answers; the conversation is mapped for each
    as it is asked (`ConversationMapper.begin`, told who heard the conversation)."""
    handler, record = call.handler, call.record
    ejection = handler.ejection
    assert ejection is not None
    await ejection.look([backend.name for backend in handler.backends])
    heard_by = await handler.mapper.heard_by(handler.route.name, call.caller.principal, turn)
    moves = call.moves = Moves(ejection)
    left: tuple[str, str] | None = None
    """The upstream the run is moving away from, and why."""
    failure: GatewayError | None = None
    backends = order(handler.backends, heard_by)
    for index, backend in enumerate(backends):
        if not await ejection.admits(backend.name):
            left = left or (backend.name, "ejected")
            continue
        if left is not None:
            handler.metrics.failovers.labels(handler.route.name, left[0], backend.name, left[1]).inc()
        call.backend, moves.now_asked, moves.more = backend, backend.name, index < len(backends) - 1
        call.relay = None
        call.target, call.upstream_headers, call.session_headers = None, {}, {}
        record.upstream, record.upstream_dialect = backend.name, backend.dialect.name
        began = time.monotonic()
        try:
            await call.attempt(client, turn)
            return
        except Moved as moved:
            failed = moved
        except asyncio.CancelledError:
            if (silent := _unanswered(call)) is None:
                raise
            failed = silent
        if call.relay is not None:  # it answered, then sent nothing: it may run on (an A2A task) unless told
            call.cancel_upstream()
            record.upstream_cancelled = False
        call.deadlines.count_first_event_anew()  # each upstream has the first-event deadline; the total one holds
        await ejection.failed(backend.name)
        moves.failed(call, failed, began)
        left, failure = (backend.name, failed.reason), failed.error
    call.moves = None
    if failure is None:
        failure = UpstreamError("every upstream of this route is out of service after failing runs; retry shortly")
    await call.writer.fail_before_start(failure)


def _unanswered(call: Call) -> Moved | None:
    """A cancel of the run's task that is the first-event deadline passing before the upstream's first event, the
    client told nothing yet: the run moves on (the task goes on, the deadline counts anew for the next upstream)."""
    deadlines = call.deadlines
    if deadlines.cancelled_because is not CancelReason.TIMEOUT or call.record.events \
            or call.writer.reply is not Reply.UNSENT \
            or time.monotonic() - deadlines.started_at >= call.route.timeouts.total:  # the run's own time is up
        return None
    task = asyncio.current_task()
    assert task is not None
    task.uncancel()
    return Moved(UpstreamTimeout(deadlines.missed_deadline), "timeout")
