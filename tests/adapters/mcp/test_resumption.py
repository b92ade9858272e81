"""A `tools/call`'s SSE stream resumed by `Last-Event-ID` (2025-11-25's streamable HTTP) at the gateway's `/mcp`,
with the built-in agent behind the route: the SDK clients (`@modelcontextprotocol/sdk` 1.32.2, `mcp` 2.3.0) whose
connection a proxy cuts mid-answer come back with a GET and get the rest; raw HTTP pins that the rest comes exactly
once, on the replica that runs the call and on another sharing a real Redis, and that a stream is its session's
and its caller's only."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest
from node_clients import run_mcp
from peers_env import run_mcp_client
from redis_server import RedisServer
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from tests.adapters.mcp.cutting_proxy import cut_once

KEY = "sk-team-0123456789abcdef"
OTHER = "sk-else-0123456789abcdef"
ACCEPT = "application/json, text/event-stream"
SLOW_TEXT = "".join(f"tick {n}. " for n in range(1, 21))
"""What the built-in agent answers "go slow" with, a piece every `pace` seconds."""


def gateway_config(agent: str, **store: Any) -> GatewayConfig:
    upstream = {"url": f"{agent}/agui", "dialect": "ag-ui"}
    return GatewayConfig.model_validate({**store, "keepalive_seconds": 0.5, "routes": [
        {"name": "helper", "paths": ["/helper"], "client_dialects": ["mcp"], "upstream": upstream,
         "auth": {"keys": [KEY, OTHER]}}]})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with Served(create_agent_app("ag-ui", pace=0.1)) as agent, \
            Served(create_app(gateway_config(agent.url), store=MemoryStore())) as gateway:
        yield f"{gateway.url}/mcp"


class Session:
    """A 2025-11-25 session opened by raw JSON-RPC."""

    def __init__(self, url: str, key: str = KEY) -> None:
        self.url = url
        self.http = httpx.Client(timeout=30)
        self.headers = {"authorization": f"Bearer {key}", "accept": ACCEPT, "content-type": "application/json"}
        opened = self.http.post(url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}})
        self.headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}

    def call_cut_after(self, progress: int) -> list[dict[str, Any]]:
        """A call of "go slow" with a progress token, its connection closed once `progress` notifications came:
        the events it got (`id`, `retry`, `message`)."""
        got: list[dict[str, Any]] = []
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "helper", "arguments": {"message": "go slow"}, "_meta": {"progressToken": "p"}}}
        with self.http.stream("POST", self.url, headers=self.headers, json=call) as answer:
            assert answer.status_code == 200
            for event in sse_events(answer.iter_lines()):
                got.append(event)
                if sum(1 for e in got if e.get("message")) >= progress:
                    break
        return got

    def resume(self, last_event_id: str, url: str | None = None) -> httpx.Response:
        headers = {k: v for k, v in self.headers.items() if k != "content-type"} | {
            "accept": "text/event-stream", "last-event-id": last_event_id}
        return self.http.get(url or self.url, headers=headers)

    def close(self) -> None:
        self.http.close()


@contextmanager
def session(url: str, key: str = KEY) -> Iterator[Session]:
    opened = Session(url, key)
    try:
        yield opened
    finally:
        opened.close()


def sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Each SSE event (comments skipped): its id, retry and JSON-RPC message (None for an empty data)."""
    event: dict[str, Any] = {}
    for line in lines:
        if not line:
            if event:
                yield event
            event = {}
        elif line.startswith("id:"):
            event["id"] = line[3:].strip()
        elif line.startswith("retry:"):
            event["retry"] = int(line[6:])
        elif line.startswith("data:"):
            data = line[5:].strip()
            event["message"] = json.loads(data) if data else None
    if event:
        yield event


def progress_of(events: list[dict[str, Any]]) -> list[int]:
    return [e["message"]["params"]["progress"] for e in events
            if e.get("message") and e["message"].get("method") == "notifications/progress"]


def results_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["message"]["result"] for e in events if e.get("message") and "result" in e["message"]]


def test_a_call_stream_primes_with_an_id_and_retry_and_numbers_every_event(url: str) -> None:
    with session(url) as client:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "helper", "arguments": {"message": "hi"}, "_meta": {"progressToken": "p"}}}
        answer = client.http.post(url, headers=client.headers, json=call)
    events = list(sse_events(iter(answer.text.splitlines())))
    priming, rest = events[0], events[1:]
    run = priming["id"].rpartition("/")[0]
    assert priming["id"] == f"{run}/0" and priming["retry"] == 1000 and priming["message"] is None
    assert [e["id"] for e in rest] == [f"{run}/{n}" for n in range(1, len(rest) + 1)]
    assert results_of(rest)[0]["isError"] is False


def test_a_call_cut_mid_answer_is_resumed_by_get_with_the_rest_exactly_once(url: str) -> None:
    with session(url) as client:
        before = client.call_cut_after(3)
        resumed = client.resume(before[-1]["id"])
    assert resumed.status_code == 200 and resumed.headers["content-type"].startswith("text/event-stream")
    after = list(sse_events(iter(resumed.text.splitlines())))
    seen = progress_of(before) + progress_of(after)
    assert seen == list(range(1, len(seen) + 1)) and len(progress_of(after)) >= 1  # none twice, none missed
    [result] = results_of(after)
    assert result["content"][0]["text"] == SLOW_TEXT
    assert int(after[0]["id"].rpartition("/")[2]) == int(before[-1]["id"].rpartition("/")[2]) + 1


def test_a_call_resumed_after_its_run_ended_gets_its_result(url: str) -> None:
    with session(url) as client:
        before = client.call_cut_after(1)
        client.http.post(url, headers=client.headers, json={"jsonrpc": "2.0", "id": 9, "method": "ping"})
        time.sleep(2.5)  # "go slow" lasts 2 s at this pace: the run has ended
        after = list(sse_events(iter(client.resume(before[-1]["id"]).text.splitlines())))
    [result] = results_of(after)
    assert result["content"][0]["text"] == SLOW_TEXT


def test_a_stream_is_its_sessions_and_its_callers_only(url: str) -> None:
    with session(url) as first, session(url) as second, session(url, OTHER) as other:
        last = first.call_cut_after(1)[-1]["id"]
        by_another_session = second.resume(last)
        by_another_caller = other.resume(last)
        by_its_own = first.resume(last)
        malformed = first.resume("not-an-event-id")
    assert by_another_session.status_code == 404 and by_another_caller.status_code == 404
    assert by_another_session.json()["error"]["message"] == "Stream not found"
    assert by_its_own.status_code == 200 and results_of(list(sse_events(iter(by_its_own.text.splitlines()))))
    assert malformed.status_code == 400


def test_a_get_without_last_event_id_is_405(url: str) -> None:
    with session(url) as client:
        headers = {k: v for k, v in client.headers.items() if k != "content-type"} | {"accept": "text/event-stream"}
        answered = client.http.get(url, headers=headers)
    assert answered.status_code == 405


# The SDK clients, their connection cut by a proxy once the call's stream has shown progress.

def test_the_typescript_sdk_comes_back_with_last_event_id_after_its_connection_is_cut(url: str) -> None:
    with cut_once(url) as proxy:
        run = run_mcp(f"{proxy.url}/mcp", [{"call": "helper", "arguments": {"message": "go slow"}}], key=KEY)
    assert proxy.cuts == 1 and run["error"] is None, run
    [step] = run["steps"]
    assert step["isError"] is False and step["content"] == [SLOW_TEXT]
    progress = [p[0] for p in step["progress"]]
    assert progress == list(range(1, len(progress) + 1)) and step["progress"][-1][2] == SLOW_TEXT


def test_the_python_sdk_comes_back_with_last_event_id_after_its_connection_is_cut(url: str) -> None:
    with cut_once(url) as proxy:
        run = run_mcp_client(f"{proxy.url}/mcp", [{"call": "helper", "arguments": {"message": "go slow"}}], key=KEY)
    assert proxy.cuts == 1 and run.error is None, run
    [step] = run.steps
    assert step["isError"] is False and step["content"] == [SLOW_TEXT]
    progress = [p[0] for p in step["progress"]]
    assert progress == list(range(1, len(progress) + 1)) and step["progress"][-1][2] == SLOW_TEXT


# Two gateways over one Redis.

@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def test_a_call_cut_on_one_replica_is_resumed_on_the_other(redis: RedisServer) -> None:
    with ExitStack() as stack:
        agent = stack.enter_context(Served(create_agent_app("ag-ui", pace=0.1)))
        config = gateway_config(agent.url, store={"url": redis.url})
        one, two = (stack.enter_context(Served(create_app(config))).url + "/mcp" for _ in range(2))
        client = stack.enter_context(session(one))
        before = client.call_cut_after(3)
        resumed = client.resume(before[-1]["id"], url=two)
    assert resumed.status_code == 200
    after = list(sse_events(iter(resumed.text.splitlines())))
    seen = progress_of(before) + progress_of(after)
    assert seen == list(range(1, len(seen) + 1)) and len(progress_of(after)) >= 1
    [result] = results_of(after)
    assert result["content"][0]["text"] == SLOW_TEXT


def test_a_calls_recorded_run_is_no_task(url: str) -> None:
    with session(url) as client:
        run = client.call_cut_after(1)[-1]["id"].rpartition("/")[0]
        asked = {"jsonrpc": "2.0", "method": "tasks/list", "params": {}}
        listed = client.http.post(url, headers=client.headers, json={**asked, "id": 2}).json()
        got = client.http.post(url, headers=client.headers, json={
            "jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": run}}).json()
    assert listed["result"]["tasks"] == []
    assert got["error"]["message"] == "Failed to retrieve task: Task not found"
