"""Who watches a route's runs: the inspector (a line per run, and a capture of those that start while its page is
open), the route's recordings (a capture of every run, written when it ends) and its judge (a capture of the runs it
samples, judged when they end). A route with none of them has no `Observer`, and its runs pay nothing.

```
RouteHandler ─ begin(call) ─▶ a RunCapture, when watched, recorded or judged: the writer tapped now, the decoder and
                              the encoder when the upstream answers (call.Call.run)
             ─ end(call) ──▶ the inspector's line ends; once the last byte has gone, the exchange goes to the
                              route's files and the run to its judge
```
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from gateway.config import Route
from gateway.core.encoding import Encoder
from gateway.inspector.ring import InspectedRun, RunRing
from gateway.recordings.capture import RunCapture
from gateway.recordings.exchange import dumps
from gateway.recordings.files import RecordingFiles
from gateway.server.operations.judging import Judging
from gateway.server.operations.record import AccessRecord, RequestOutcome

log = logging.getLogger("agent_gateway.recordings")


class Tapped(Protocol):
    """The client's side of a watched run: what it sends is captured too, and whether its last byte is going."""

    @property
    def complete(self) -> bool: ...

    def tap(self, capture: RunCapture) -> None: ...


class Relayed(Protocol):
    """A watched run's relay, once the upstream has answered: its encoder counts what the client's dialect dropped."""

    @property
    def encoder(self) -> Encoder: ...


class Watched(Protocol):
    """What the observer reads of a run (the request's `Call`), and the capture and inspector line it keeps on it."""

    capture: RunCapture | None
    inspected: InspectedRun | None

    @property
    def request_id(self) -> str: ...

    @property
    def started_at(self) -> float: ...

    @property
    def record(self) -> AccessRecord: ...

    @property
    def writer(self) -> Tapped: ...

    @property
    def relay(self) -> Relayed | None: ...


class Observer:
    def __init__(self, route: Route, ring: RunRing | None, files: RecordingFiles | None,
                 judging: Judging | None = None) -> None:
        self.route = route
        self.ring = ring
        self.files = files
        self.judging = judging
        self.bodies = route.inspector_bodies
        self.configured = [name for upstream in route.upstreams for name in upstream.headers]
        """The headers the route adds for its upstreams (fallbacks too): never kept."""

    def begin(self, call: Watched) -> None:
        ring, files, judging = self.ring, self.files, self.judging
        watched = ring is not None and ring.watched
        judged = judging is not None and judging.sampled()
        capture = None
        if files is not None or watched or judged:
            limits = [files.options.max_file_bytes] if files is not None else []
            if watched and ring is not None:
                limits.append(ring.budget.limit)
            if judged and judging is not None:
                limits.append(judging.options.max_bytes)
            # A recorded or judged capture needs the whole run: only its own limit may cut it.
            capture = RunCapture(call.request_id, self.route.name, limit=max(limits),
                                 budget=ring.budget if watched and ring is not None else None,
                                 recorded=files is not None or judged,
                                 configured_headers=self.configured, origin=call.started_at)
            capture.judged = judged
            call.writer.tap(capture)
            call.capture = capture
        if ring is not None:
            call.inspected = ring.begin(call.record, capture, self.bodies,
                                        lambda: call.relay.encoder.dropped if call.relay is not None else {})

    def end(self, call: Watched) -> None:
        inspected = call.inspected
        if inspected is not None:
            inspected.end()
            call.inspected = None
        capture = call.capture
        if capture is None:
            return
        steps = [step for step in (self._recorded(call, capture), self._judged(call, capture, inspected))
                 if step is not None]
        if not steps:
            return

        def done() -> None:
            for step in steps:
                step()

        if call.writer.complete and not capture.client_done:
            capture.when_done = done  # the report comes as the last byte goes: recorded and judged once it has
        else:
            done()

    def _recorded(self, call: Watched, capture: RunCapture) -> Callable[[], None] | None:
        """What writes the run to the route's files, if it records this run."""
        files, record, request_id = self.files, call.record, call.request_id
        if files is None or capture.last_asked("")[0] is None:  # the upstream was not asked
            return None
        if capture.truncated:
            log.warning("route %s: the exchange %s was larger than record.max_file_bytes: not recorded",
                        self.route.name, request_id)
            return None

        def write() -> None:
            exchange = capture.exchange(record, record.client_dialect, record.upstream_dialect)
            files.add(dumps(exchange), capture.conversation or request_id)

        return write

    def _judged(self, call: Watched, capture: RunCapture, inspected: InspectedRun | None) -> Callable[[], None] | None:
        """What hands the run to the route's judge, if it sampled this run and the client stayed to its end; what
        the judge finds is shown on the run's inspector line."""
        judging, record, request_id = self.judging, call.record, call.request_id
        if judging is None or not capture.judged or record.outcome == RequestOutcome.CLIENT_GONE:
            return None
        then = inspected.judged if inspected is not None else None
        return lambda: judging.judge(capture, request_id, record.client_dialect, record.upstream_dialect, then)


def recording_of(run: InspectedRun) -> dict[str, Any] | None:
    """An ended run the inspector kept, as a recording's line."""
    if not run.ended or run.capture is None:
        return None
    record = run.record
    return run.capture.exchange(record, record.client_dialect, record.upstream_dialect)
