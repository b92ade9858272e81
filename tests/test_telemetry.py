"""Tracing and the metrics beside it: spans per request through a real gateway on 127.0.0.1 (the SDK's in-memory
exporter), once over OTLP/HTTP from `agent-gateway serve` to a receiver that decodes what it gets, and the token
and dropped-event counters."""

from __future__ import annotations

import http.server
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import post, request_body, usage_agent, user_message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from servers import Served, closed_port, free_port
from test_failover import Switch
from test_failover import gateway_config as failover_config

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from gateway.server.operations import telemetry

ROOT = Path(__file__).resolve().parent.parent
CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_SPAN = "b7ad6b7169203331"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
SECRET = "my secret plan"


def gateway_config(url: str, dialect: str, name: str = "traced") -> GatewayConfig:
    return GatewayConfig.model_validate({"routes": [{"name": name, "upstream": {"url": url, "dialect": dialect}}]})


class Traced:
    """A gateway in front of `upstream_url`, its spans kept in memory."""

    def __init__(self, upstream_url: str = "", dialect: str = "", config: GatewayConfig | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.served = Served(create_app(config or gateway_config(upstream_url, dialect), store=MemoryStore(),
                                        tracer_provider=self.provider))

    def __enter__(self) -> Traced:
        self.served.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.served.__exit__(None, None, None)
        self.provider.shutdown()

    @property
    def url(self) -> str:
        return self.served.url

    def spans(self, count: int) -> list[ReadableSpan]:
        """The spans of the last `count`, waiting a moment for them: they end as the reply's last byte goes."""
        deadline = time.monotonic() + 5
        while len(spans := self.exporter.get_finished_spans()) < count:
            assert time.monotonic() < deadline, f"{len(spans)} spans, {count} expected"
            time.sleep(0.01)
        assert len(spans) == count, [s.name for s in spans]
        self.exporter.clear()
        return list(spans)


def by_kind(spans: list[ReadableSpan]) -> dict[SpanKind, ReadableSpan]:
    return {span.kind: span for span in spans}


@pytest.fixture(scope="module")
def agent() -> Iterator[Served]:
    with Served(create_agent_app("ag-kit")) as served:
        yield served


def agent_requests(agent: Served) -> list[dict[str, Any]]:
    requests: list[dict[str, Any]] = httpx.get(f"{agent.url}/_requests").json()
    httpx.delete(f"{agent.url}/_requests")
    return requests


def test_a_request_is_a_server_span_under_the_clients_trace_with_the_upstream_call_as_its_child(
        agent: Served) -> None:
    with Traced(agent.url + "/send-message?key=hidden", "ag-kit") as gateway, httpx.Client(timeout=10) as http:
        agent_requests(agent)
        body = request_body("ag-ui", [user_message("ag-ui", f"{SECRET}: weather in Oslo")], "conv-traced")
        reply = post(http, f"{gateway.url}/agui", body,
                     headers={"traceparent": TRACEPARENT, "tracestate": "vendor=abc", "x-request-id": "req-traced"})
        assert reply.status_code == 200 and b"sunny" in reply.content
        spans = by_kind(gateway.spans(2))
        server, upstream = spans[SpanKind.SERVER], spans[SpanKind.CLIENT]

    assert server.name == "POST /agui"
    assert server.context is not None and server.parent is not None
    assert format(server.context.trace_id, "032x") == CLIENT_TRACE
    assert format(server.parent.span_id, "016x") == CLIENT_SPAN and server.parent.is_remote
    attributes = dict(server.attributes or {})
    assert {key: attributes[key] for key in (
        "agent_gateway.route", "agent_gateway.client_dialect", "agent_gateway.upstream_dialect",
        "agent_gateway.conversation_id", "agent_gateway.run_id", "agent_gateway.request_id", "agent_gateway.outcome",
        "http.request.method", "http.route", "http.response.status_code")} == {
        "agent_gateway.route": "traced", "agent_gateway.client_dialect": "ag-ui",
        "agent_gateway.upstream_dialect": "ag-kit", "agent_gateway.conversation_id": "conv-traced",
        "agent_gateway.run_id": body["runId"], "agent_gateway.request_id": "req-traced",
        "agent_gateway.outcome": "success", "http.request.method": "POST", "http.route": "/agui",
        "http.response.status_code": 200}
    assert attributes["agent_gateway.events"] > 10  # type: ignore[operator]
    assert 0 < attributes["agent_gateway.time_to_first_event_ms"] < 5000  # type: ignore[operator]
    assert server.status.status_code == StatusCode.UNSET and "error.type" not in attributes
    assert "gen_ai.usage.input_tokens" not in attributes  # this agent reports none

    assert upstream.parent is not None and upstream.parent.span_id == server.context.span_id
    assert upstream.name == "POST" and upstream.context is not None
    assert dict(upstream.attributes or {}) == {
        "http.request.method": "POST", "server.address": "127.0.0.1", "server.port": agent.port,
        "url.scheme": "http", "url.full": f"{agent.url}/send-message", "http.response.status_code": 200}
    assert server.start_time is not None and upstream.start_time is not None
    assert server.end_time is not None and upstream.end_time is not None
    assert server.start_time < upstream.start_time <= upstream.end_time <= server.end_time

    # The upstream is told it is called from the upstream call's span, in the client's trace.
    sent = agent_requests(agent)[0]["headers"]
    assert sent["traceparent"] == f"00-{CLIENT_TRACE}-{upstream.context.span_id:016x}-01"
    assert sent["tracestate"] == "vendor=abc"


def test_without_a_trace_from_the_client_the_server_span_starts_one(agent: Served) -> None:
    with Traced(agent.url + "/send-message", "ag-kit") as gateway, httpx.Client(timeout=10) as http:
        agent_requests(agent)
        post(http, f"{gateway.url}/api/chat", request_body("vercel", [user_message("vercel", "hi")], "chat-root"),
             headers={"traceparent": "00-not-a-trace"})
        spans = by_kind(gateway.spans(2))
    server, upstream = spans[SpanKind.SERVER], spans[SpanKind.CLIENT]
    assert server.parent is None and server.context is not None and upstream.context is not None
    sent = agent_requests(agent)[0]["headers"]
    _, trace_id, parent_id, flags = sent["traceparent"].split("-")
    assert (trace_id, parent_id) == (f"{server.context.trace_id:032x}", f"{upstream.context.span_id:016x}")
    assert int(flags, 16) & 1  # sampled (the SDK may also set Trace Context 2's "random" flag)


def test_spans_hold_no_message_contents(agent: Served) -> None:
    """Whatever the client said, the tools' arguments and results, and what the agent answered: in no name,
    attribute or event of any span."""
    with Traced(agent.url + "/send-message", "ag-kit") as gateway, httpx.Client(timeout=10) as http:
        for dialect, path in (("ag-ui", "/agui"), ("vercel", "/api/chat"), ("agent-respond", "/agent/respond")):
            reply = post(http, f"{gateway.url}{path}",
                         request_body(dialect, [user_message(dialect, f"{SECRET}: weather in Reykjavik")],
                                      f"conv-{dialect}"))
            assert b"Reykjavik" in reply.content  # the agent said it back, and called a tool with it
        spans = gateway.spans(6)
    for span in spans:
        texts = [span.name, *(str(v) for v in (span.attributes or {}).values()),
                 *(e.name for e in span.events), *(str(v) for e in span.events for v in (e.attributes or {}).values())]
        for text in texts:
            assert "secret" not in text and "Reykjavik" not in text and "sunny" not in text, (span.name, text)


def test_a_failed_run_is_an_error_span_with_the_gateways_error_code(agent: Served) -> None:
    with Traced(agent.url + "/send-message", "ag-kit") as gateway, httpx.Client(timeout=10) as http:
        post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "please fail")]))
        failed = by_kind(gateway.spans(2))
        rejected = http.post(f"{gateway.url}/agui", content=b'{"threadId": "t"}',
                             headers={"content-type": "application/json"})
        assert rejected.status_code == 422
        (invalid,) = gateway.spans(1)  # the upstream was never called

    server = failed[SpanKind.SERVER]
    attributes = dict(server.attributes or {})
    assert attributes["agent_gateway.outcome"] == "error" and attributes["error.type"] == "upstream_error"
    assert server.status.status_code == StatusCode.ERROR and server.status.description == "upstream_error"
    assert failed[SpanKind.CLIENT].status.status_code == StatusCode.ERROR
    assert "scripted failure" not in str(attributes)  # the upstream's message is not recorded

    # A client's mistake is not the gateway's error: the span says what happened, with no error status.
    attributes = dict(invalid.attributes or {})
    assert attributes["agent_gateway.outcome"] == "rejected" and attributes["error.type"] == "invalid_request"
    assert attributes["http.response.status_code"] == 422
    assert invalid.status.status_code == StatusCode.UNSET


def test_an_unreachable_upstream_fails_both_spans() -> None:
    with Traced(f"http://127.0.0.1:{closed_port()}/send-message", "ag-kit") as gateway, \
            httpx.Client(timeout=10) as http:
        reply = post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")]))
        assert reply.status_code == 502
        spans = by_kind(gateway.spans(2))
    for span in spans.values():
        assert span.status.status_code == StatusCode.ERROR and span.status.description == "upstream_error"
    assert dict(spans[SpanKind.SERVER].attributes or {})["http.response.status_code"] == 502
    assert "http.response.status_code" not in dict(spans[SpanKind.CLIENT].attributes or {})


@pytest.fixture
def switched() -> Iterator[tuple[Switch, Switch, GatewayConfig]]:
    """An AG-UI agent the test can make fail, with a Vercel AI SDK agent as its fallback (test_failover's)."""
    primary, fallback = Switch(create_agent_app("ag-ui")), Switch(create_agent_app("vercel"))
    with Served(primary) as agui, Served(fallback) as vercel:
        yield primary, fallback, failover_config(agui.url, vercel.url)


def clients(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """The client spans, in the order their calls were made."""
    return sorted((span for span in spans if span.kind == SpanKind.CLIENT), key=lambda span: span.start_time or 0)


@pytest.mark.parametrize(("failure", "reason"), [("503", "status"), ("silent", "timeout")])
def test_each_upstream_a_run_asked_is_a_client_span_the_one_that_failed_it_an_error_saying_why(
        switched: tuple[Switch, Switch, GatewayConfig], failure: str, reason: str) -> None:
    primary, _, config = switched
    primary.mode = failure
    with Traced(config=config) as gateway, httpx.Client(timeout=20) as http:
        reply = post(http, f"{gateway.url}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "moved"))
        assert reply.status_code == 200
        spans = gateway.spans(3)
    server = by_kind(spans)[SpanKind.SERVER]
    failed, answered = clients(spans)
    assert server.context is not None
    for span in (failed, answered):
        assert span.parent is not None and span.parent.span_id == server.context.span_id
    attributes = dict(failed.attributes or {})
    assert (attributes["agent_gateway.upstream"], attributes["agent_gateway.upstream_dialect"]) == ("primary", "ag-ui")
    assert attributes["error.type"] == reason and str(attributes["url.full"]).endswith("/agui")
    assert attributes.get("http.response.status_code") == (503 if failure == "503" else None)
    assert failed.status.status_code == StatusCode.ERROR and failed.status.description == reason
    attributes = dict(answered.attributes or {})
    assert (attributes["agent_gateway.upstream"], attributes["agent_gateway.upstream_dialect"]) == (
        "vercel-twin", "vercel")
    assert attributes["http.response.status_code"] == 200 and "error.type" not in attributes
    assert answered.status.status_code == StatusCode.UNSET
    assert failed.end_time is not None and answered.start_time is not None
    assert failed.end_time <= answered.start_time
    attributes = dict(server.attributes or {})
    assert attributes["agent_gateway.upstream"] == "vercel-twin"
    assert attributes["agent_gateway.failovers"] == f"primary: {reason}"


def test_a_run_every_upstream_failed_has_a_failed_client_span_for_each(
        switched: tuple[Switch, Switch, GatewayConfig]) -> None:
    primary, fallback, config = switched
    primary.mode = fallback.mode = "503"
    with Traced(config=config) as gateway, httpx.Client(timeout=20) as http:
        body = request_body("ag-kit", [user_message("ag-kit", "hi")], "all-failed")
        assert post(http, f"{gateway.url}/kit", body).status_code == 502
        spans = gateway.spans(3)
    assert [dict(span.attributes or {})["agent_gateway.upstream"] for span in clients(spans)] == [
        "primary", "vercel-twin"]
    for span in clients(spans):
        assert span.status.status_code == StatusCode.ERROR and span.status.description == "status"
    assert by_kind(spans)[SpanKind.SERVER].status.status_code == StatusCode.ERROR


def test_an_upstream_skipped_while_ejected_has_no_span(switched: tuple[Switch, Switch, GatewayConfig]) -> None:
    primary, _, config = switched
    config.routes[0].eject_after = 1
    primary.mode = "503"
    with Traced(config=config) as gateway, httpx.Client(timeout=20) as http:
        body = request_body("ag-kit", [user_message("ag-kit", "hi")], "ejected")
        assert post(http, f"{gateway.url}/kit", body).status_code == 200
        assert len(clients(gateway.spans(3))) == 2  # the primary failed it, and is ejected
        assert post(http, f"{gateway.url}/kit", body).status_code == 200
        (answered,) = clients(gateway.spans(2))
    assert dict(answered.attributes or {})["agent_gateway.upstream"] == "vercel-twin"
    assert primary.runs == 1


def test_token_usage_the_upstream_reports_is_on_the_span() -> None:
    with Served(usage_agent()) as upstream, Traced(upstream.url + "/agui", "ag-ui") as gateway, \
            httpx.Client(timeout=10) as http:
        post(http, f"{gateway.url}/send-message", request_body("ag-kit", [user_message("ag-kit", "count")]))
        server = by_kind(gateway.spans(2))[SpanKind.SERVER]
    attributes = dict(server.attributes or {})
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (15, 7)
    assert attributes["gen_ai.response.model"] == "gpt-test-mini" and attributes["gen_ai.provider.name"] == "openai"


def test_with_tracing_off_the_clients_trace_context_goes_upstream_as_it_came(agent: Served) -> None:
    with Served(create_app(gateway_config(agent.url + "/send-message", "ag-kit"), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=10) as http:
        agent_requests(agent)
        post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")]),
             headers={"traceparent": TRACEPARENT, "tracestate": "vendor=abc"})
        post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")], "conv-2"),
             headers={"traceparent": "00-not-a-trace", "tracestate": "vendor=abc"})
        post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")], "conv-3"))
        first, malformed, none = (r["headers"] for r in agent_requests(agent))
    assert (first["traceparent"], first["tracestate"]) == (TRACEPARENT, "vendor=abc")
    assert "traceparent" not in malformed and "tracestate" not in malformed
    assert "traceparent" not in none


@pytest.mark.parametrize(("environ", "exporters"), [
    ({}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "http://127.0.0.1:4318/v1/traces (OTLP/HTTP)"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector/v1/t"}, "http://collector/v1/t (OTLP/HTTP)"),
    ({"OTEL_TRACES_EXPORTER": "otlp"}, "http://localhost:4318/v1/traces (OTLP/HTTP)"),
    ({"OTEL_TRACES_EXPORTER": "console,otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1/"},
     "the console (stdout), http://h:1/v1/traces (OTLP/HTTP)"),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, None),
    ({"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "console"}, None),
    ({"OTEL_TRACES_EXPORTER": "zipkin"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, None),
])
def test_the_standard_environment_turns_tracing_on_and_off(environ: dict[str, str], exporters: str | None,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="agent_gateway.telemetry"):
        tracing = telemetry.from_environment(environ)
    try:
        if exporters is None:
            assert tracing is None
        else:
            assert tracing is not None
            assert f"spans to {exporters}" in caplog.text
    finally:
        if tracing is not None:
            tracing.shutdown()
    if environ.get("OTEL_TRACES_EXPORTER") == "zipkin" or "OTEL_EXPORTER_OTLP_PROTOCOL" in environ:
        assert "not supported" in caplog.text or "only http/protobuf" in caplog.text


def test_the_service_is_agent_gateway_unless_the_environment_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
    tracing = telemetry.from_environment({"OTEL_TRACES_EXPORTER": "console"})
    assert tracing is not None
    resource = tracing.provider.resource.attributes  # type: ignore[attr-defined]
    assert resource["service.name"] == "agent-gateway" and resource["deployment.environment.name"] == "test"
    tracing.shutdown()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "edge-gateway")
    tracing = telemetry.from_environment({"OTEL_TRACES_EXPORTER": "console"})
    assert tracing is not None and tracing.provider.resource.attributes["service.name"] == "edge-gateway"  # type: ignore[attr-defined]
    tracing.shutdown()


def test_without_the_extra_tracing_is_off_and_the_operator_is_told(monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(telemetry, "INSTALLED", False)
    with caplog.at_level(logging.WARNING, logger="agent_gateway.telemetry"):
        assert telemetry.from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) is None
    assert "pip install 'agent-gateway[otel]'" in caplog.text


# ---------------------------------------------------------------------------------------------------------------
# end to end: `agent-gateway serve` exporting over OTLP/HTTP


class Receiver(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver on 127.0.0.1: POST /v1/traces, protobuf, decoded with opentelemetry-proto."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ReceiverHandler)
        self.exports: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """(resource attributes, span) for every span received."""
        return [({a.key: a.value.string_value for a in rs.resource.attributes}, span)
                for export in list(self.exports) for rs in export.resource_spans
                for ss in rs.scope_spans for span in ss.spans]


class _ReceiverHandler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        assert self.headers["content-type"] == "application/x-protobuf"
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.paths.append(self.path)
        self.server.exports.append(request)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    server.thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def serve(agent: Served, port: int, environ: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env.update(environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--upstream", agent.url + "/send-message",
         "--upstream-dialect", "ag-kit", "--store", "memory://", "--port", str(port)],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the gateway did not start: {process.communicate()[1].decode()}")
        time.sleep(0.05)


def test_agent_gateway_serve_exports_its_spans_over_otlp_http(agent: Served, receiver: Receiver) -> None:
    """The real process, configured by nothing but the standard environment. The batch processor waits a minute
    before it exports: the spans arrive because stopping the gateway flushes them."""
    port = free_port()
    process = serve(agent, port, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "60000",
                                  "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=e2e"})
    try:
        with httpx.Client(timeout=10) as http:
            body = request_body("ag-ui", [user_message("ag-ui", f"{SECRET}: weather in Lima")], "conv-otlp")
            reply = post(http, f"http://127.0.0.1:{port}/agui", body, headers={"traceparent": TRACEPARENT})
            assert reply.status_code == 200
        time.sleep(0.5)
        assert receiver.spans() == []  # still queued
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode in (0, -signal.SIGTERM), stderr.decode()  # uvicorn re-raises the signal it handled
    log_lines = [orjson.loads(line) for line in stderr.splitlines() if line.startswith(b"{")]
    assert any(f"spans to {receiver.url}/v1/traces" in line["msg"] for line in log_lines)
    access = next(line for line in log_lines if line["msg"] == "request")
    assert access["trace_id"] == CLIENT_TRACE  # the access log line names the trace

    assert set(receiver.paths) == {"/v1/traces"}
    spans = receiver.spans()
    assert len(spans) == 2
    resource, server = next((r, s) for r, s in spans if s.kind == s.SPAN_KIND_SERVER)
    _, upstream = next((r, s) for r, s in spans if s.kind == s.SPAN_KIND_CLIENT)
    assert resource["service.name"] == "agent-gateway" and resource["deployment.environment.name"] == "e2e"
    assert server.name == "POST /agui" and server.trace_id.hex() == CLIENT_TRACE
    assert server.parent_span_id.hex() == CLIENT_SPAN and upstream.parent_span_id == server.span_id
    attributes = {a.key: a.value for a in server.attributes}
    assert attributes["agent_gateway.conversation_id"].string_value == "conv-otlp"
    assert attributes["agent_gateway.outcome"].string_value == "success"
    assert attributes["agent_gateway.events"].int_value > 10
    assert attributes["agent_gateway.time_to_first_event_ms"].double_value > 0
    assert attributes["http.response.status_code"].int_value == 200
    assert b"secret" not in b"".join(export.SerializeToString() for export in receiver.exports)


def test_opening_an_upstream_session_is_a_client_span_of_its_own_ended_before_the_run_is_asked() -> None:
    """An MCP upstream serves runs only in a session: its opening is a call of its own, whose span ends as it is
    answered, not lost under the run's call."""
    with Served(create_agent_app("mcp")) as upstream, Traced(upstream.url + "/mcp", "mcp") as gateway, \
            httpx.Client(timeout=10) as http:
        post(http, f"{gateway.url}/send-message", request_body("ag-kit", [user_message("ag-kit", "hi")]))
        spans = gateway.spans(3)
    clients = [span for span in spans if span.kind is SpanKind.CLIENT]
    assert len(clients) == 2
    opened, asked = sorted(clients, key=lambda span: span.start_time or 0)
    assert opened.end_time is not None and asked.start_time is not None and opened.end_time <= asked.start_time
