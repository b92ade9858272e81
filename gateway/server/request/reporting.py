"""A request's report, once it is over: its access log line, its metrics and its span, from its `AccessRecord`."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from gateway.core.dropped import Dropped
from gateway.core.errors import ErrorCode
from gateway.server.operations.logs import AccessLog
from gateway.server.operations.record import RequestOutcome

if TYPE_CHECKING:
    from gateway.core.events import Usage
    from gateway.server.request.call import Call
    from gateway.server.stream.relay import Relay

log = logging.getLogger("agent_gateway.proxy")
access_log = AccessLog()

_ERROR_KINDS = frozenset(ErrorCode)
"""The error kinds counted under their own metrics label: the gateway's codes, never one an upstream chose."""


def report(call: Call) -> None:
    """The access log line, the metrics and the span of `call`, which has ended (or whose last byte is going), and
    what it held let go."""
    # The writer's one way back to the call: cut, so that the request's objects are freed as soon as it ends, not
    # left to the cycle collector.
    call.writer.forget_before_last_byte()
    call.handler.in_flight.dec()
    call.handler.drain.streams.discard(call)
    if call.release is not None:
        call.release()
    route, record, metrics, relay = call.route, call.record, call.handler.metrics, call.relay
    if call.writer.gone and record.outcome is None:
        record.outcome = RequestOutcome.CLIENT_GONE
    duration_ms = record.duration_ms = round((time.monotonic() - call.started_at) * 1000, 3)
    series = metrics.series(route.name, record.client_dialect, record.upstream_dialect)
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
        metrics.errors.labels(route.name, kind).inc()
    usage = relay.recorder.usage if relay is not None else None
    if relay is not None and usage is not None:
        _account(call, relay, usage)
    if relay is not None and relay.encoder.dropped:
        series.dropped(relay.encoder.dropped)
    if relay is not None and (ignored := relay.decoder.ignored):
        series.dropped({Dropped.UPSTREAM_OTHER_RUN: ignored})  # the upstream's words about another run
        record.ignored = ignored
    if relay is not None and relay.recorder.raw and relay.recorder.raw + 2 >= record.events:
        # Nothing but the run's start and end made sense of it: a reader of another dialect's stream, most likely.
        metrics.unread.labels(route.name, record.upstream_dialect).inc()
        log.warning("route %s: the upstream's reply held no event %s knows (%d it did not): is upstream.dialect "
                    "right? `agent-gateway check URL --dialect ...` tells", route.name,
                    record.upstream_dialect, relay.recorder.raw,
                    extra={"route": route.name, "request_id": call.request_id})
    if call.trace is not None:
        call.trace.end(record, kind, usage, call.deadlines.last_upstream_event)
    failed_upstream = (record.status or 0) >= 500 or (kind is not None and kind.startswith("upstream_"))
    access_log.write(logging.WARNING if failed_upstream else logging.INFO, record.log_fields())
    if call.handler.observer is not None:
        call.handler.observer.end(call)


def _account(call: Call, relay: Relay, usage: Usage) -> None:
    """A run's tokens counted under its caller's key (metrics, access log), priced with the route's `pricing` (by
    the model its usage names, else the one it asked its upstream for), and spent from its budget."""
    route, record, metrics, who = call.route, call.record, call.handler.metrics, call.caller.accounted_as
    record.tokens = metrics.usage(route.name, who, usage)
    if route.pricing is not None and \
            (price := route.pricing.price(usage.model, relay.exchange.upstream_turn.model)) is not None:
        cost = ((usage.input_tokens or 0) * price.input + (usage.output_tokens or 0) * price.output) / 1_000_000
        record.cost = round(cost, 9)
        if cost:
            metrics.cost.labels(route.name, metrics.key_label(route.name, who), route.pricing.currency).inc(cost)
    if call.handler.budget is not None:
        call.handler.budget.spend(who, (usage.input_tokens or 0) + (usage.output_tokens or 0))
