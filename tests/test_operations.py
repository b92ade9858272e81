"""What an operator sees: health, readiness, Prometheus metrics, and one access log line per request."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import httpx
import orjson
import pytest
from e2e import post, request_body, user_message
from prometheus_client.parser import text_string_to_metric_families
from servers import Served

from gateway.agent import create_agent_app
from gateway.app import create_app
from gateway.config import GatewayConfig
from gateway.logs import ACCESS, HumanFormatter, JsonFormatter
from gateway.store import MemoryStore, StoreError


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
    assert samples["agent_gateway_requests_total", (("client_dialect", "unknown"), ("route", "ops"),
                                                     ("status", "422"), ids[2])] == 1
    assert samples["agent_gateway_streams_in_flight", (("route", "ops"),)] == 0


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


def test_serve_check_reaches_every_upstream_and_the_store(capsys: pytest.CaptureFixture[str]) -> None:
    from servers import free_port

    from gateway.cli import main

    with Served(create_agent_app("ag-kit")) as agent:
        assert main(["serve", "--check", "--upstream", agent.url + "/send-message", "--upstream-dialect", "ag-kit",
                     "--store", "memory://"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "configuration: ok (1 route)"
    assert out[1].startswith(f"route0: upstream {agent.url}/send-message (ag-kit): ok (connected in ")
    assert out[2].startswith("store memory://: ok")
    closed = free_port()
    assert main(["serve", "--check", "--upstream", f"http://127.0.0.1:{closed}/x", "--upstream-dialect", "ag-kit",
                 "--store", "memory://"]) == 1
    assert "FAILED (cannot connect to" in capsys.readouterr().out


def test_an_upstream_unreachable_at_startup_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from servers import free_port

    closed = free_port()
    config = GatewayConfig.model_validate({"routes": [{"name": "away", "upstream": {
        "url": f"http://127.0.0.1:{closed}/send-message", "dialect": "ag-kit"}}], "store": {"url": "memory://"}})
    with caplog.at_level(logging.WARNING, logger="agent_gateway.probe"), Served(create_app(config)):
        deadline = time.monotonic() + 5
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.05)
    assert any("away: upstream" in r.getMessage() and "cannot be reached" in r.getMessage() for r in caplog.records)


class BrokenStore:
    """A store whose backend is down: every call fails as the real ones do."""

    async def get(self, key: str) -> bytes | None:
        raise StoreError("the store is down")

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        raise StoreError("the store is down")

    async def delete(self, key: str) -> None:
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
