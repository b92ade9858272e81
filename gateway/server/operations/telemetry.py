"""Tracing with OpenTelemetry: a server span per request, a client span for its upstream call (one per upstream
asked, on a route with fallbacks), W3C trace context taken from the client and passed upstream.

Optional twice over. Without the `[otel]` extra, or when the standard `OTEL_*` environment asks for no traces,
`from_environment()` is None and a request pays an `is None` check (and a header lookup, to pass the client's trace
context on); nothing is done per event, with tracing on or off: a span is written from the access log's record once
the request is over. Spans hold what that record holds
(ids, dialects, outcome, timings, event count) and the token counts an upstream reported, never message contents,
tool arguments, error messages or header values.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers

from gateway import __version__
from gateway.core.errors import UPSTREAM_CODES
from gateway.core.events import Usage
from gateway.server.operations.record import RequestOutcome
from gateway.upstream.url import UpstreamURL

if TYPE_CHECKING:
    from gateway.server.operations.record import AccessRecord

try:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # no [otel] extra: from_environment() says so when the environment asks for traces
    INSTALLED = False
else:
    INSTALLED = True

log = logging.getLogger("agent_gateway.telemetry")

SERVICE = "agent-gateway"
"""The service name spans carry unless `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) says
otherwise."""
ATTRIBUTE = "agent_gateway."
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[ -~]*)?")
_MAX_TRACESTATE = 512
"""The length W3C Trace Context asks every participant to pass on whole; a longer tracestate is not passed on."""
_RECORD_ATTRIBUTES = ("route", "client_dialect", "upstream_dialect", "upstream", "failovers", "conversation_id",
                      "run_id", "outcome", "events", "upstream_ms", "history")
"""Access record fields a span carries as they are, under `agent_gateway.`: all ids, names and figures, no free
text (`failovers` is the configured names of the upstreams a run left, and why, in words of the gateway's)."""


def from_environment(environ: Mapping[str, str] = os.environ) -> Tracing | None:
    """Tracing as the standard environment configures it, or None when it asks for none.

    On when `OTEL_TRACES_EXPORTER` names `otlp` or `console`, or when an OTLP endpoint is set
    (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); off with `OTEL_SDK_DISABLED=true` or
    `OTEL_TRACES_EXPORTER=none`. Unlike the specification's default (otlp to localhost:4318), an environment that
    says nothing means no tracing: installing the extra changes nothing by itself. The SDK reads the rest: the
    sampler, the batch processor's limits, the exporter's headers, timeout, compression and certificates, resource
    attributes.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    named = [name.strip().lower() for name in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()]
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not named:
        if not endpoint:
            return None
        named = ["otlp"]
    if "none" in named:
        return None
    if not INSTALLED:
        log.warning("OTEL_* asks for traces, but OpenTelemetry is not installed: pip install 'agent-gateway[otel]'; "
                    "tracing is off")
        return None
    exporters: list[tuple[str, SpanExporter]] = []
    for name in dict.fromkeys(named):
        exporter = _exporter(name, environ)
        if exporter is not None:
            exporters.append((_describe(name, environ), exporter))
    if not exporters:
        return None
    provider = TracerProvider(resource=_resource(), shutdown_on_exit=False)  # shut down with the app, flushing
    for _, exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    service = provider.resource.attributes.get(SERVICE_NAME)
    log.info("tracing on: service %s, spans to %s", service, ", ".join(where for where, _ in exporters))
    return Tracing(provider, owned=True)


def _exporter(name: str, environ: Mapping[str, str]) -> SpanExporter | None:
    if name == "console":
        return ConsoleSpanExporter()
    if name != "otlp":
        log.warning("OTEL_TRACES_EXPORTER=%s: not supported here (otlp or console); left out", name)
        return None
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") \
        or "http/protobuf"
    if protocol != "http/protobuf":
        log.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only http/protobuf is supported; no OTLP export", protocol)
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        log.warning("the OTLP exporter is not installed: pip install 'agent-gateway[otel]'; no OTLP export")
        return None
    return OTLPSpanExporter()


def _describe(name: str, environ: Mapping[str, str]) -> str:
    if name == "console":
        return "the console (stdout)"
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
        (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318").removesuffix("/") + "/v1/traces")
    return f"{endpoint} (OTLP/HTTP)"


def _resource() -> Resource:
    """The environment's resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), named agent-gateway unless it
    names itself, with the gateway's version."""
    resource = Resource.create()
    own: dict[str, str] = {}
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        own[SERVICE_NAME] = SERVICE
    if "service.version" not in resource.attributes:
        own["service.version"] = __version__
    return resource.merge(Resource(own)) if own else resource


class Tracing:
    """The app's tracer. `owned`: the app made the provider, and flushes and shuts it down when it stops."""

    __slots__ = ("_owned", "propagator", "provider", "tracer")

    def __init__(self, provider: trace.TracerProvider, *, owned: bool = False) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("agent_gateway", __version__)
        self._owned = owned
        self.propagator = TraceContextTextMapPropagator()
        """W3C Trace Context only (`OTEL_PROPAGATORS` is not read): a client's baggage is not sent upstream."""

    def start(self, headers: Headers, path: str, request_id: str, started_at: float) -> RequestTrace:
        """The server span of a request that came in at `started_at` (monotonic), a child of the client's
        `traceparent` when it sent a valid one."""
        return RequestTrace(self, headers, path, request_id, started_at)

    def shutdown(self) -> None:
        """Export what is still queued and stop (blocking: run it off the event loop)."""
        if self._owned and isinstance(self.provider, TracerProvider):
            self.provider.shutdown()


class RequestTrace:
    """The spans of one request: the server span from its first byte to its last, and the client span of the
    upstream call, from sending the request to the last byte read of the response. On a route with fallbacks, each
    upstream that failed the run before its reply has a client span of its own, ended as it failed
    (`attempt_failed`)."""

    __slots__ = ("_clock", "_epoch", "_server", "_tracing", "_upstream", "_upstream_sent", "trace_id")

    def __init__(self, tracing: Tracing, headers: Headers, path: str, request_id: str, started_at: float) -> None:
        self._tracing = tracing
        self._epoch = time.time_ns()
        self._clock = time.monotonic()
        parent = tracing.propagator.extract(_trace_context(headers))
        self._server = tracing.tracer.start_span(
            f"POST {path}", parent, trace.SpanKind.SERVER, start_time=self._at(started_at),
            attributes={"http.request.method": "POST", "url.path": path, "http.route": path,
                        ATTRIBUTE + "request_id": request_id})
        context = self._server.get_span_context()
        self.trace_id = format(context.trace_id, "032x") if context.trace_flags.sampled else None
        """For the access log line: the trace its spans are in, when they are recorded (sampled)."""
        self._upstream: trace.Span | None = None
        self._upstream_sent = 0.0

    def _at(self, monotonic: float) -> int:
        """A monotonic time as the wall-clock nanoseconds spans are stamped with."""
        return self._epoch + int((monotonic - self._clock) * 1e9)

    def upstream(self, headers: dict[str, str], attributes: Mapping[str, str | int]) -> None:
        """Start the upstream call's span and give the upstream its trace context (`traceparent`, `tracestate`). A
        call before it in the run (an upstream session's opening, a request sent again) was answered: its span ends."""
        sent = time.monotonic()
        if self._upstream is not None:
            self._upstream.end(self._at(sent))
        self._upstream_sent = sent
        self._upstream = span = self._tracing.tracer.start_span(
            "POST", trace.set_span_in_context(self._server), trace.SpanKind.CLIENT, attributes=attributes,
            start_time=self._at(self._upstream_sent))
        self._tracing.propagator.inject(headers, trace.set_span_in_context(span))

    def upstream_answered(self, status: int) -> None:
        if self._upstream is not None:
            self._upstream.set_attribute("http.response.status_code", status)

    def attempt_failed(self, reason: str, began: float, attributes: Mapping[str, str | int]) -> None:
        """The upstream asked since `began` (monotonic) failed the run before its reply, and the run moves on: its
        span ends now, an error of type `reason` (`Moved.reason`: unreachable, timeout, status, unavailable). One
        that failed before it was called (its discovery document unavailable) gets a span from `began`, with the
        `attributes` of a call to it."""
        span = self._upstream
        if span is None:
            span = self._tracing.tracer.start_span("POST", trace.set_span_in_context(self._server),
                                                   trace.SpanKind.CLIENT, attributes=attributes,
                                                   start_time=self._at(began))
        self._upstream = None
        span.set_attribute("error.type", reason)
        span.set_status(trace.StatusCode.ERROR, reason)
        span.end(self._at(time.monotonic()))

    def end(self, record: AccessRecord, error: str | None, usage: Usage | None, upstream_read: float) -> None:
        """End the spans with what the access record says of the request. `error` is the request's error kind
        (the gateway's own codes); `upstream_read` when the last of the upstream's body was read (monotonic)."""
        now = time.monotonic()
        upstream = self._upstream
        if upstream is not None:
            if error in UPSTREAM_CODES:
                upstream.set_attribute("error.type", error)
                upstream.set_status(trace.StatusCode.ERROR, error)
            upstream.end(self._at(upstream_read if upstream_read > self._upstream_sent else now))
        span = self._server
        if span.is_recording():
            attributes: dict[str, Any] = {ATTRIBUTE + name: value for name in _RECORD_ATTRIBUTES
                                          if (value := getattr(record, name)) is not None}
            if record.ttfe_ms is not None:
                attributes[ATTRIBUTE + "time_to_first_event_ms"] = record.ttfe_ms
            if record.status is not None:
                attributes["http.response.status_code"] = record.status
            if error is not None:
                attributes["error.type"] = error
            if usage is not None:
                attributes.update(_usage_attributes(usage))
            span.set_attributes(attributes)
            if record.outcome is RequestOutcome.ERROR:  # a client's mistake (4xx) is not the server's error
                span.set_status(trace.StatusCode.ERROR, error)
        span.end(self._at(now))


def _usage_attributes(usage: Usage) -> dict[str, Any]:
    """Token usage in the GenAI semantic conventions' names."""
    attributes: dict[str, Any] = {}
    if usage.input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
    if usage.output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    if usage.model:
        attributes["gen_ai.response.model"] = usage.model
    if usage.provider:
        attributes["gen_ai.provider.name"] = usage.provider
    return attributes


def upstream_attributes(url: str, named: tuple[str, str] | None = None) -> dict[str, str | int]:
    """The upstream call's span attributes that hold for every request of a route: where it goes, without the
    URL's user information or query (either may hold a secret); on a route with fallbacks, `named` (which of its
    upstreams the call went to, and its dialect) too."""
    parsed = UpstreamURL.parse(url)
    scheme = "https" if parsed.tls else "http"
    path = parsed.target.partition("?")[0]
    attributes: dict[str, str | int] = {
        "http.request.method": "POST", "server.address": parsed.host, "server.port": parsed.port,
        "url.scheme": scheme, "url.full": f"{scheme}://{parsed.host_header}{path}"}
    if named is not None:
        attributes[ATTRIBUTE + "upstream"], attributes[ATTRIBUTE + "upstream_dialect"] = named
    return attributes


def _trace_context(headers: Headers) -> dict[str, str]:
    """The client's W3C trace context, when its `traceparent` is well formed; an empty one otherwise."""
    traceparent = headers.get("traceparent")
    if traceparent is None or not _TRACEPARENT.fullmatch(traceparent):
        return {}
    context = {"traceparent": traceparent}
    tracestate = headers.get("tracestate")
    if tracestate and len(tracestate) <= _MAX_TRACESTATE:
        context["tracestate"] = tracestate
    return context


def pass_trace_context(inbound: Headers, outbound: dict[str, str]) -> None:
    """With tracing off, the client's trace context goes upstream as it came: the upstream's spans still join the
    client's trace, which the gateway is then simply not part of."""
    outbound.update(_trace_context(inbound))
