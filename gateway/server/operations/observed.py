"""Who watches a route's runs: the inspector (a line per run, and a capture of those that start while its page is
open) and the route's recordings (a capture of every run, written when it ends). A route with neither has no
`Observer`, and its runs pay nothing.

```
RouteHandler ─ begin(call) ─▶ a RunCapture, when watched or recorded: the writer tapped now, the decoder and the
                              encoder when the upstream answers (call.Call.run)
             ─ end(call) ──▶ the inspector's line ends; the exchange goes to the route's files
```
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from gateway.config import Route
from gateway.core.encoding import Encoder
from gateway.inspector.ring import InspectedRun, RunRing
from gateway.recordings.capture import RunCapture
from gateway.recordings.exchange import dumps
from gateway.recordings.files import RecordingFiles
from gateway.server.operations.record import AccessRecord

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
    def __init__(self, route: Route, ring: RunRing | None, files: RecordingFiles | None) -> None:
        self.route = route
        self.ring = ring
        self.files = files
        self.bodies = route.inspector_bodies
        self.configured = [name for upstream in route.upstreams for name in upstream.headers]
        """The headers the route adds for its upstreams (fallbacks too): never kept."""

    def begin(self, call: Watched) -> None:
        ring, files = self.ring, self.files
        watched = ring is not None and ring.watched
        capture = None
        if files is not None or watched:
            limits = [files.options.max_file_bytes] if files is not None else []
            if watched and ring is not None:
                limits.append(ring.budget.limit)
            capture = RunCapture(call.request_id, self.route.name, limit=max(limits),
                                 budget=ring.budget if watched and ring is not None else None,
                                 recorded=files is not None,
                                 configured_headers=self.configured, origin=call.started_at)
            call.writer.tap(capture)
            call.capture = capture
        if ring is not None:
            call.inspected = ring.begin(call.record, capture, self.bodies,
                                        lambda: call.relay.encoder.dropped if call.relay is not None else {})

    def end(self, call: Watched) -> None:
        if call.inspected is not None:
            call.inspected.end()
            call.inspected = None
        capture = call.capture
        if self.files is None or capture is None or capture.last_asked("")[0] is None:  # the upstream was not asked
            return
        if capture.truncated:
            log.warning("route %s: the exchange %s was larger than record.max_file_bytes: not recorded",
                        self.route.name, call.request_id)
            return
        files, record = self.files, call.record

        def write() -> None:
            exchange = capture.exchange(record, record.client_dialect, record.upstream_dialect)
            files.add(dumps(exchange), capture.conversation or call.request_id)

        if call.writer.complete and not capture.client_done:
            capture.when_done = write  # the report comes as the last byte goes: recorded once it has
        else:
            write()


def recording_of(run: InspectedRun) -> dict[str, Any] | None:
    """An ended run the inspector kept, as a recording's line."""
    if not run.ended or run.capture is None:
        return None
    record = run.record
    return run.capture.exchange(record, record.client_dialect, record.upstream_dialect)
