"""What an operator sees: health, readiness, Prometheus metrics, and one access log line per request."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import post, request_body, usage_agent, user_message
from prometheus_client.parser import text_string_to_metric_families
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import ConversationStore, Listed, MemoryStore, StoreError
from gateway.core.events import (
    Data,
    Event,
    Interrupt,
    MessagesSnapshot,
    Raw,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.turn import Turn
from gateway.server.app import create_app
from gateway.server.operations.logs import ACCESS, HumanFormatter, JsonFormatter


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with Served(create_agent_app("ag-kit")) as agent:
        config = GatewayConfig.model_validate({"routes": [{"name": "ops", "upstream": {
            "url": agent.url + "/send-message", "dialect": "ag-kit"}}]})
        with Served(create_app(config, store=MemoryStore())) as served:
            yield served.url


def test_health_and_readiness(gateway: str) -> None:
    assert httpx.get(f"{gateway}/healthz").text == "ok"
    assert httpx.get(f"{gateway}/readyz").json() == {"status": "ready"}


def test_metrics_count_requests_events_errors_and_latencies(gateway: str) -> None:
    with httpx.Client(timeout=10) as http:
        post(http, f"{gateway}/agui", request_body("ag-ui", [user_message("ag-ui", "weather in Oslo")]))
        post(http, f"{gateway}/api/chat", request_body("vercel", [user_message("vercel", "please fail")]))
        http.post(f"{gateway}/agui", content=b'{"threadId": "t"}', headers={"content-type": "application/json"})
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for family in text_string_to_metric_families(http.get(f"{gateway}/metrics").text)
                   for s in family.samples}
    ids = (("client_dialect", "ag-ui"), ("route", "ops"), ("upstream_dialect", "ag-kit"))
    assert samples["agent_gateway_requests_total", (*ids[:2], ("status", "200"), ids[2])] == 1
    assert samples["agent_gateway_events_translated_total", ids] > 10
    assert samples["agent_gateway_time_to_first_event_seconds_count", ids] == 1
    assert samples["agent_gateway_upstream_latency_seconds_count", ids] == 1
    assert samples["agent_gateway_errors_total", (("kind", "upstream_error"), ("route", "ops"))] == 1
    assert samples["agent_gateway_errors_total", (("kind", "invalid_request"), ("route", "ops"))] == 1
    assert samples["agent_gateway_requests_total", (("client_dialect", "ag-ui"), ("route", "ops"),
                                                     ("status", "422"), ids[2])] == 1  # /agui's: its body unread
    assert samples["agent_gateway_streams_in_flight", (("route", "ops"),)] == 0


def route_to(url: str, dialect: str) -> GatewayConfig:
    return GatewayConfig.model_validate({"routes": [{"name": "ops", "upstream": {"url": url, "dialect": dialect}}]})


def metric_samples(http: httpx.Client, url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(http.get(f"{url}/metrics").text) for s in family.samples}


def test_tokens_the_upstream_reports_are_counted_per_route() -> None:
    with Served(usage_agent()) as upstream, \
            Served(create_app(route_to(upstream.url + "/agui", "ag-ui"), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=10) as http:
        for dialect, path in (("ag-ui", "/agui"), ("ag-kit", "/send-message")):
            post(http, f"{gateway.url}{path}", request_body(dialect, [user_message(dialect, "count")]))
        samples = metric_samples(http, gateway.url)
    assert samples["agent_gateway_tokens_total", (("key_id", "anonymous"), ("kind", "input"), ("route", "ops"))] == 30
    assert samples["agent_gateway_tokens_total", (("key_id", "anonymous"), ("kind", "output"), ("route", "ops"))] == 14
    # The AG-Kit client could not be told: that is counted too (two reports), the AG-UI one could.
    assert samples["agent_gateway_events_dropped_total", (
        ("client_dialect", "ag-kit"), ("kind", "usage"), ("upstream_dialect", "ag-ui"))] == 2
    assert not any(labels[0] == ("client_dialect", "ag-ui") for (name, labels) in samples
                   if name == "agent_gateway_events_dropped_total")


def test_events_a_pair_drops_or_approximates_are_counted_by_kind() -> None:
    with Served(create_agent_app("ag-ui")) as agent, \
            Served(create_app(route_to(agent.url + "/agui", "ag-ui"), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=10) as http:
        # AG-Kit has no reasoning and no state; Vercel asks a human through a tool call; the eval platform gets a note.
        post(http, f"{gateway.url}/send-message", request_body("ag-kit", [user_message("ag-kit", "think hard")], "c1"))
        post(http, f"{gateway.url}/send-message", request_body("ag-kit", [user_message("ag-kit", "state")], "c2"))
        post(http, f"{gateway.url}/api/chat", request_body("vercel", [user_message("vercel", "interrupt me")], "c3"))
        post(http, f"{gateway.url}/agent/respond",
             request_body("agent-respond", [user_message("agent-respond", "interrupt me")], "c4"))
        post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "think hard")], "c5"))
        samples = metric_samples(http, gateway.url)
    dropped = {(labels[0][1], labels[1][1], labels[2][1]): value for (name, labels), value in samples.items()
               if name == "agent_gateway_events_dropped_total"}
    assert dropped == {
        ("ag-kit", "reasoning", "ag-ui"): 5,  # start, three deltas, end
        ("ag-kit", "state", "ag-ui"): 2,  # a snapshot and a delta
        ("vercel", "interrupt_as_tool_call", "ag-ui"): 1,
        ("agent-respond", "interrupt_as_note", "ag-ui"): 1,
        ("ag-kit", "usage", "ag-ui"): 2,  # the built-in agent's usage reports
    }  # and nothing for the AG-UI client, which carries it all


EVERYTHING: list[Event] = [
    RunStarted(thread_id="t", run_id="r"), ReasoningStart("r1"), ReasoningDelta("r1", "hm"), ReasoningEnd("r1"),
    StepStarted(name="plan"), TextStart("m1"), TextDelta("m1", "hi"), TextEnd("m1"), StepFinished(name="plan"),
    StepStarted(), StepFinished(),
    StateSnapshot({"a": 1}), StateDelta([{"op": "replace", "path": "/a", "value": 2}]), MessagesSnapshot([]),
    Data("progress", 1), Usage(input_tokens=1, output_tokens=2), Raw("elsewhere", event={"type": "x"}),
    ToolCallStart("c1", "search"), ToolCallArgs("c1", "{}"), ToolCallEnd("c1"), ToolResult("c1", "boom", is_error=True),
    Interrupt("i1", reason="confirm"), RunFinished(outcome="interrupt"),
]
"""A run with one of every canonical event."""
CANCELLED: list[Event] = [RunStarted(), ToolCallStart("c2", "client_tool"), ToolCallEnd("c2"),
                          RunFinished(outcome="cancelled")]


@pytest.mark.parametrize(("dialect", "everything", "cancelled"), [
    ("ag-ui", {"step": 2, "tool_error_as_result": 1}, {}),
    ("ag-kit", {"reasoning": 3, "step": 4, "state": 2, "messages_snapshot": 1, "data": 1, "usage": 1, "raw": 1,
                "tool_error_as_result": 1}, {"cancelled_as_finish": 1}),
    ("vercel", {"step": 2, "messages_snapshot": 1, "raw": 1, "interrupt_as_tool_call": 1}, {}),
    ("agent-respond", {"reasoning": 3, "step": 4, "messages_snapshot": 1, "data": 1, "raw": 1,
                       "tool_error_as_result": 1, "interrupt_as_note": 1},
     {"cancelled_as_finish": 1, "pending_tool_as_note": 1}),
])
def test_each_encoder_counts_what_its_dialect_cannot_carry(dialect: str, everything: dict[str, int],
                                                           cancelled: dict[str, int]) -> None:
    """The kinds docs/mapping.md lists per dialect: AG-UI loses unnamed steps (the Vercel ones) and tool errors' flag,
    Vercel named steps and interrupts not about a tool call, AG-Kit and the eval platform the most."""
    for events, expected in ((EVERYTHING, everything), (CANCELLED, cancelled)):
        encoder = registry.get(dialect).new_encoder(Turn())
        encoder.encode(events)
        assert encoder.dropped == expected


def test_one_access_record_per_request_without_message_contents(gateway: str,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=ACCESS), httpx.Client(timeout=10) as http:
        post(http, f"{gateway}/agui", request_body("ag-ui", [user_message("ag-ui", "my secret plan")], "conv-log"),
             headers={"x-request-id": "req-log-1"})
        deadline = time.monotonic() + 5  # the line is written once the reply is out: wait for it
        while not (records := [r for r in caplog.records if getattr(r, "request_id", "") == "req-log-1"]):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert len(records) == 1 and records[0].name == ACCESS
    record = vars(records[0])
    assert (record["route"], record["client_dialect"], record["upstream_dialect"]) == ("ops", "ag-ui", "ag-kit")
    assert (record["conversation_id"], record["status"], record["outcome"]) == ("conv-log", 200, "success")
    assert record["events"] > 3 and record["duration_ms"] > 0 and "ttfe_ms" in record
    line = JsonFormatter().format(records[0])
    assert "secret" not in line and orjson.loads(line)["request_id"] == "req-log-1"
    assert "route=ops" in HumanFormatter().format(records[0])


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/healthz", 200), ("GET", "/readyz", 200), ("GET", "/metrics", 200), ("GET", "/nowhere", 404),
    ("GET", "/agui", 405),
])
def test_every_response_carries_a_request_id(gateway: str, method: str, path: str, status: int) -> None:
    response = httpx.request(method, f"{gateway}{path}", headers={"x-request-id": "ops-check-1"})
    assert response.status_code == status and response.headers["x-request-id"] == "ops-check-1"
    fresh = httpx.request(method, f"{gateway}{path}")
    assert fresh.headers["x-request-id"].startswith("req")


def test_a_404_and_a_405_have_the_json_error_body_and_a_404_lists_the_served_paths(gateway: str) -> None:
    missing = httpx.get(f"{gateway}/agiu").json()["error"]
    assert missing["code"] == "not_found" and "/agui" in missing["message"] and "/agent/respond" in missing["message"]
    wrong = httpx.get(f"{gateway}/agui").json()["error"]
    assert wrong["code"] == "method_not_allowed" and "GET" in wrong["message"]


def test_metrics_with_a_key_are_read_with_it_only_and_named_by_a_404_to_its_holder() -> None:
    with Served(create_agent_app("ag-kit")) as agent:
        config = GatewayConfig.model_validate({"metrics": {"key": "scrape-secret-1"}, "routes": [
            {"name": "ops", "upstream": {"url": agent.url + "/send-message", "dialect": "ag-kit"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
            post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")]))
            for headers in ({}, {"authorization": "Bearer scrape-secret-2"}, {"x-api-key": "scrape-secret-"}):
                refused = http.get(f"{gateway.url}/metrics", headers=headers)
                assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
                assert "metrics.key" in refused.json()["error"]["message"]
                assert "agent_gateway" not in refused.text
                assert "/metrics" not in http.get(f"{gateway.url}/nowhere", headers=headers).json()["error"]["message"]
            key = {"authorization": "Bearer scrape-secret-1"}
            samples = {s.name for family in text_string_to_metric_families(http.get(f"{gateway.url}/metrics",
                                                                                     headers=key).text)
                       for s in family.samples}
            assert "agent_gateway_requests_total" in samples
            assert "/metrics" in http.get(f"{gateway.url}/nowhere", headers=key).json()["error"]["message"]
            assert http.get(f"{gateway.url}/metrics", headers={"x-api-key": "scrape-secret-1"}).status_code == 200


@pytest.mark.parametrize(("config", "said"), [
    ("metrics: {key: ''}", "metrics.key: is empty"), ("metrics: {key: '${METRICS_KEY:-}'}", "metrics.key: is empty"),
    ("metrics: {listen: ':9464'}", "is not host:port"), ("metrics: {listen: '127.0.0.1:'}", "is not host:port"),
    ("metrics: {listen: 'localhost:70000'}", "is not host:port")])
def test_a_metrics_key_left_empty_or_an_address_without_a_port_is_a_config_error(config: str, said: str) -> None:
    from gateway.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=said):
        parse_config("routes:\n  - upstream: {url: 'http://a/', dialect: ag-ui}\n" + config + "\n", environ={})


def test_serve_check_reaches_every_upstream_and_the_store(capsys: pytest.CaptureFixture[str]) -> None:
    from servers import closed_port

    from gateway.cli import main

    with Served(create_agent_app("ag-kit")) as agent:
        assert main(["serve", "--check", "--upstream", agent.url + "/send-message", "--upstream-dialect", "ag-kit",
                     "--store", "memory://"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "configuration: ok (1 route)"
    assert out[1].startswith(f"route0: upstream {agent.url}/send-message (ag-kit): ok (connected in ")
    assert out[2].startswith("store memory://: ok")
    closed = closed_port()
    assert main(["serve", "--check", "--upstream", f"http://127.0.0.1:{closed}/x", "--upstream-dialect", "ag-kit",
                 "--store", "memory://"]) == 1
    assert "FAILED (cannot connect to" in capsys.readouterr().out


def test_an_upstream_unreachable_at_startup_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from servers import closed_port

    closed = closed_port()
    config = GatewayConfig.model_validate({"routes": [{"name": "away", "upstream": {
        "url": f"http://127.0.0.1:{closed}/send-message", "dialect": "ag-kit"}}], "store": {"url": "memory://"}})
    with caplog.at_level(logging.WARNING, logger="agent_gateway.probe"), Served(create_app(config)):
        deadline = time.monotonic() + 5
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.05)
    assert any("away: upstream" in r.getMessage() and "cannot be reached" in r.getMessage() for r in caplog.records)


class BrokenStore(ConversationStore):
    """A store whose backend is down: every call fails as the real ones do."""

    async def get(self, key: str) -> bytes | None:
        raise StoreError("the store is down")

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        raise StoreError("the store is down")

    async def delete(self, key: str) -> None:
        raise StoreError("the store is down")

    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        raise StoreError("the store is down")

    async def ping(self) -> bool:
        return False

    async def close(self) -> None:
        pass


def test_a_turn_without_its_history_says_so_in_the_access_log_and_readyz(caplog: pytest.LogCaptureFixture) -> None:
    with Served(create_agent_app("ag-kit")) as agent:
        config = GatewayConfig.model_validate({"routes": [{"upstream": {"url": agent.url + "/send-message",
                                                                        "dialect": "ag-kit"}}]})
        with caplog.at_level(logging.INFO, logger=ACCESS), Served(create_app(config, store=BrokenStore())) as gw, \
                httpx.Client(timeout=10) as http:
            post(http, f"{gw.url}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")], "t-lost"),
                 headers={"x-request-id": "req-lost-1"})
            deadline = time.monotonic() + 5
            while not (records := [r for r in caplog.records if getattr(r, "request_id", "") == "req-lost-1"]) \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            ready = http.get(f"{gw.url}/readyz")
    assert getattr(records[0], "history", None) == "unavailable"
    assert ready.status_code == 503


def access_lines(caplog: pytest.LogCaptureFixture, request_id: str) -> list[logging.LogRecord]:
    deadline = time.monotonic() + 5  # a line is written once its reply is out: wait for it
    while not (records := [r for r in caplog.records
                            if r.name == ACCESS and getattr(r, "request_id", "") == request_id]):
        assert time.monotonic() < deadline, f"no access line for {request_id}"
        time.sleep(0.01)
    return records


def test_access_lines_say_who_asked_what_and_refusals_are_logged_too(gateway: str,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=ACCESS), httpx.Client(timeout=10) as http:
        post(http, f"{gateway}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")]), {"x-request-id": "ops-a"})
        http.get(f"{gateway}/agiu", headers={"x-request-id": "ops-404"})
        wrong = http.get(f"{gateway}/agui", headers={"x-request-id": "ops-405"})
        http.post(f"{gateway}/agui", content=b'{"threadId": "t"}', headers={"content-type": "application/json",
                                                                          "x-request-id": "ops-422"})
        [ran] = access_lines(caplog, "ops-a")
        [missing] = access_lines(caplog, "ops-404")
        [refused] = access_lines(caplog, "ops-405")
        [invalid] = access_lines(caplog, "ops-422")
    assert (ran.method, ran.path, ran.client.startswith("127.0.0.1:")) == ("POST", "/agui", True)  # type: ignore[attr-defined]
    assert (missing.status, missing.path, missing.error) == (404, "/agiu", "not_found")  # type: ignore[attr-defined]
    assert (refused.status, refused.method) == (405, "GET")  # type: ignore[attr-defined]
    assert "POST" in wrong.headers["allow"]
    assert (invalid.status, invalid.client_dialect) == (422, "ag-ui")  # type: ignore[attr-defined]


def test_options_without_cors_is_204_with_allow_and_a_401_names_its_scheme() -> None:
    with Served(create_agent_app("ag-ui")) as agent:
        config = GatewayConfig.model_validate({"routes": [{"paths": ["/in"], "auth": {"keys": ["k"]}, "upstream": {
            "url": agent.url + "/agui", "dialect": "ag-ui"}}], "store": {"url": "memory://"}})
        with Served(create_app(config)) as gateway:
            options = httpx.options(f"{gateway.url}/in")
            refused = httpx.post(f"{gateway.url}/in", json={})
    assert options.status_code == 204 and "POST" in options.headers["allow"]
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")


def test_upstream_failures_are_warnings_with_what_the_upstream_said(caplog: pytest.LogCaptureFixture) -> None:
    """The client is told "upstream answered HTTP 500" (its body only with debug_errors); the operator sees the
    body, bounded and escaped, and at warning."""
    async def failing(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"database is down\n\x1b[2J" + b"x" * 5000})

    with Served(failing) as upstream, \
            Served(create_app(route_to(upstream.url, "ag-ui"), store=MemoryStore())) as gateway, \
            caplog.at_level(logging.INFO, logger=ACCESS), httpx.Client(timeout=10) as http:
        answer = post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")]),
                      {"x-request-id": "ops-502"})
        [line] = access_lines(caplog, "ops-502")
    assert answer.status_code == 502 and "database" not in answer.text
    assert line.levelno == logging.WARNING and line.error_detail.startswith("HTTP 500: database is down")  # type: ignore[attr-defined]
    assert len(line.error_detail) < 2100 and "\x1b" not in HumanFormatter().format(line)  # type: ignore[attr-defined]


def test_a_reply_the_upstream_dialect_reads_nothing_of_is_warned_and_counted(caplog: pytest.LogCaptureFixture
                                                                           ) -> None:
    """An AG-Kit reader in front of a Vercel agent (a wrong --upstream-dialect) turns every frame into RAW."""
    with Served(create_agent_app("vercel")) as agent, \
            Served(create_app(route_to(agent.url + "/api/chat", "ag-kit"), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=10) as http, caplog.at_level(logging.WARNING, logger="agent_gateway.proxy"):
        post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", "hello")]))
        deadline = time.monotonic() + 5
        while not any("is upstream.dialect right?" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "no warning"
            time.sleep(0.01)
        samples = metric_samples(http, gateway.url)
    assert samples["agent_gateway_upstream_replies_unread_total", (("route", "ops"),
                                                                   ("upstream_dialect", "ag-kit"))] == 1


def test_debug_logs_say_what_the_mapping_decided(gateway: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="agent_gateway.conversation"), httpx.Client(timeout=10) as http:
        post(http, f"{gateway}/agui", request_body("ag-ui", [user_message("ag-ui", "hi")], "conv-debug"))
    decided = [r.getMessage() for r in caplog.records if r.name == "agent_gateway.conversation"]
    assert any("(new)" in m and "what is new, 1 of the 1 messages" in m for m in decided), decided


def test_serve_check_writes_nothing_and_says_where_the_store_would_be(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import main

    with Served(create_agent_app("ag-kit")) as agent:
        flags = ["serve", "--check", "--upstream", agent.url + "/send-message", "--upstream-dialect", "ag-kit"]
        missing = tmp_path / "not" / "yet" / "gateway.db"
        assert main([*flags, "--store", f"sqlite:///{missing}"]) == 0
        assert f"{missing} would be created" in capsys.readouterr().out
        assert not (tmp_path / "not").exists()
        blocker = tmp_path / "file"
        blocker.write_text("")
        assert main([*flags, "--store", f"sqlite:///{blocker}/x.db"]) == 1
        assert "cannot be created" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == [blocker]


def test_serve_check_send_request_judges_a_real_reply_and_catches_a_wrong_dialect(
        capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import main

    with Served(create_agent_app("vercel")) as agent:
        right = ["serve", "--check", "--send-request", "--store", "memory://", "--upstream", agent.url + "/api/chat"]
        assert main([*right, "--upstream-dialect", "vercel"]) == 0
        assert "answers as vercel: ok" in capsys.readouterr().out
        assert main([*right, "--upstream-dialect", "ag-kit"]) == 1
        assert "answers as ag-kit: FAILED" in capsys.readouterr().out


def test_a_sqlite_url_that_names_no_file_is_a_config_error() -> None:
    from gateway.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match="sqlite:///<relative path>"):
        parse_config("routes:\n  - upstream: {url: 'http://a/', dialect: ag-ui}\nstore: {url: 'sqlite://relative.db'}\n",
                     environ={})


def test_readiness_follows_the_upstreams_of_routes_that_ask_for_it() -> None:
    """Liveness (/healthz) never depends on an upstream; readiness does for a route that says so."""
    from servers import free_port

    closed = free_port()  # served on later in the test, so not held closed
    config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
        {"name": "sidecar", "paths": ["/a"], "ready_needs_upstream": True,
         "upstream": {"url": f"http://127.0.0.1:{closed}/agui", "dialect": "ag-ui"}},
        {"name": "shared", "paths": ["/b"], "upstream": {"url": f"http://127.0.0.1:{closed}/agui", "dialect": "ag-ui"}},
    ]})
    with Served(create_app(config)) as gateway:
        ready = httpx.get(f"{gateway.url}/readyz")
        alive = httpx.get(f"{gateway.url}/healthz")
    assert ready.status_code == 503 and ready.json() == {"status": "upstream unreachable", "routes": ["sidecar"]}
    assert alive.status_code == 200
    with Served(create_agent_app("ag-ui"), port=closed), Served(create_app(config)) as gateway:
        assert httpx.get(f"{gateway.url}/readyz").json() == {"status": "ready"}
