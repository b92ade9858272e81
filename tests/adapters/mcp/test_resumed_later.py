"""A call's stream resumed by `Last-Event-ID` after its run has ended: the client gets every event it missed, from
the run's record, then the result, exactly once, on any replica; with the Python SDK (`mcp` 2.3.0) whose
reconnection a proxy holds until the run is over, and raw HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from node_clients import run_mcp
from peers_env import run_mcp_client
from redis_server import RedisServer
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from tests.adapters.mcp.cutting_proxy import cut_once
from tests.adapters.mcp.test_resumption import (
    KEY,
    SLOW_TEXT,
    gateway_config,
    progress_of,
    results_of,
    session,
    sse_events,
)

PACE = 0.05
RUN_S = 3.5
"""Longer than "go slow" lasts at the agent's pace (about 1.7 s at 0.05 s an event), under load too."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with Served(create_agent_app("ag-ui", pace=PACE)) as agent, \
            Served(create_app(gateway_config(agent.url), store=MemoryStore())) as gateway:
        yield f"{gateway.url}/mcp"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def ids_of(events: list[dict[str, Any]]) -> list[int]:
    return [int(e["id"].rpartition("/")[2]) for e in events if "id" in e]


def test_a_call_resumed_after_its_run_ended_gets_every_event_it_missed_then_the_result(url: str) -> None:
    with session(url) as client:
        before = client.call_cut_after(2)
        time.sleep(RUN_S)  # the run has ended meanwhile
        after = list(sse_events(iter(client.resume(before[-1]["id"]).text.splitlines())))
    seen = progress_of(before) + progress_of(after)
    assert seen == list(range(1, len(seen) + 1)) and len(progress_of(after)) >= 2  # none twice, none missed
    assert ids_of(after) == list(range(ids_of(before)[-1] + 1, ids_of(before)[-1] + 1 + len(after)))
    [result] = results_of(after)
    assert result["content"][0]["text"] == SLOW_TEXT and after[-1]["message"]["result"] == result


def test_a_call_cut_on_one_replica_is_replayed_on_the_other_after_its_run_ended(redis: RedisServer) -> None:
    with ExitStack() as stack:
        agent = stack.enter_context(Served(create_agent_app("ag-ui", pace=PACE)))
        config = gateway_config(agent.url, store={"url": redis.url})
        one, two = (stack.enter_context(Served(create_app(config))).url + "/mcp" for _ in range(2))
        client = stack.enter_context(session(one))
        before = client.call_cut_after(2)
        time.sleep(RUN_S)
        after = list(sse_events(iter(client.resume(before[-1]["id"], url=two).text.splitlines())))
    seen = progress_of(before) + progress_of(after)
    assert seen == list(range(1, len(seen) + 1)) and len(progress_of(after)) >= 2
    [result] = results_of(after)
    assert result["content"][0]["text"] == SLOW_TEXT


def test_the_python_sdk_coming_back_after_the_run_ended_gets_every_progress_and_the_result(url: str) -> None:
    with cut_once(url, hold=RUN_S) as proxy:
        run = run_mcp_client(f"{proxy.url}/mcp", [{"call": "helper", "arguments": {"message": "go slow"}}], key=KEY)
    assert proxy.cuts == 1 and run.error is None, run
    [step] = run.steps
    assert step["isError"] is False and step["content"] == [SLOW_TEXT]
    progress = [p[0] for p in step["progress"]]
    assert progress == list(range(1, len(progress) + 1)) and step["progress"][-1][2] == SLOW_TEXT
    assert len(progress) > 2  # more than it had before the cut: the rest came from the record


# A call that goes on past its question, its connection cut once it has been asked.

APPROVE = {"call": "helper", "arguments": {"message": "please approve"},
           "elicit": {"action": "accept", "content": {"approved": True}}}


def test_the_python_sdk_cut_after_a_question_answers_it_and_comes_back_for_the_result(url: str) -> None:
    with cut_once(url, after_progress=None, after=b"elicitation/create") as proxy:
        run = run_mcp_client(f"{proxy.url}/mcp", [APPROVE], key=KEY)
    assert proxy.cuts == 1 and run.error is None, run
    [step] = run.steps
    assert step["elicited"][0]["message"] == "Delete /tmp/demo?"
    assert step["isError"] is False and step["content"][0].endswith('{"approved":true}.'), step


def test_the_typescript_sdk_cut_after_a_question_answers_it_and_comes_back_for_the_result(url: str) -> None:
    with cut_once(url, after_progress=None, after=b"elicitation/create") as proxy:
        run = run_mcp(f"{proxy.url}/mcp", [APPROVE], key=KEY)
    assert proxy.cuts == 1 and run["error"] is None, run
    [step] = run["steps"]
    assert step["elicited"][0]["message"] == "Delete /tmp/demo?"
    assert step["isError"] is False and step["content"][0].endswith('{"approved":true}.'), step


def test_a_call_left_after_its_question_is_answered_and_resumed_on_the_other_replica(redis: RedisServer) -> None:
    with ExitStack() as stack:
        agent = stack.enter_context(Served(create_agent_app("ag-ui", pace=PACE)))
        config = gateway_config(agent.url, store={"url": redis.url})
        one, two = (stack.enter_context(Served(create_app(config))).url + "/mcp" for _ in range(2))
        http = stack.enter_context(httpx.Client(timeout=30))
        headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json",
                   "accept": "application/json, text/event-stream"}
        opened = http.post(one, headers=headers, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}})
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "helper", "arguments": {"message": "please approve"}}}
        with http.stream("POST", one, headers=headers, json=call) as stream:  # left once asked
            before = []
            for event in sse_events(stream.iter_lines()):
                before.append(event)
                if event.get("message") and event["message"].get("method") == "elicitation/create":
                    break
        asked = before[-1]
        answered = http.post(two, headers=headers, json={"jsonrpc": "2.0", "id": asked["message"]["id"], "result": {
            "action": "accept", "content": {"approved": False}}})
        resumed = http.get(two, headers={**{k: v for k, v in headers.items() if k != "content-type"},
                                         "accept": "text/event-stream", "last-event-id": before[0]["id"]})
    rest = list(sse_events(iter(resumed.text.splitlines())))
    assert answered.status_code == 202 and resumed.status_code == 200
    assert before[0]["id"].endswith("/0") and ids_of(rest) == list(range(1, len(rest) + 1))  # all, once, in order
    assert [e for e in rest if e["id"] == asked["id"]] == [asked]  # the question among them, as it was asked
    assert rest[-1]["message"]["id"] == 5
    assert rest[-1]["message"]["result"]["content"][0]["text"].endswith('{"approved":false}.')
