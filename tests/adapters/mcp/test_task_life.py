"""A 2025-11-25 task's life at the gateway's `/mcp`, with the built-in agent behind the routes: the ttl it is granted
(the client's, within the gateway's bounds) and its end, after which every replica sharing the Redis answers for it
as for no task; and `notifications/tasks/status` on a `tasks/result` stream as the task it waits on changes status.
Read with the TypeScript SDK's task client (`tests/clients/mcp-tasks.mjs`) and the Python SDK's task requests
(`tests/peers/mcp_tasks_client.py`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from redis_server import RedisServer
from servers import Served

from adapters.mcp.task_life import MAX_TTL_MS, MIN_TTL_MS
from gateway.agent.server import create_agent_app
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from tests.adapters.mcp.test_tasks import (
    RELATED,
    Replicas,
    Session,
    gateway_config,
    python,
    replicas,
    session,
    typescript,
)

NOT_FOUND = "Failed to retrieve task: Task not found"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with Served(create_agent_app("ag-ui", pace=0.05)) as agent, \
            Served(create_app(gateway_config(agent.url), store=MemoryStore())) as gateway:
        yield f"{gateway.url}/mcp"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def until_expired(task: dict[str, Any]) -> None:
    """Sleep until the task's ttl has passed since its creation."""
    ends = datetime.fromisoformat(task["createdAt"]).timestamp() + task["ttl"] / 1000
    time.sleep(max(0.0, ends - time.time()) + 0.1)


def test_a_task_is_granted_the_ttl_its_client_asks_within_the_gateways_bounds(redis: RedisServer) -> None:
    with replicas(redis) as gateways:
        _, asked, unasked, too_long, too_short, got = typescript(gateways.one, [
            {"create": "helper", "arguments": {"message": "hello"}, "ttl": 5000},
            {"create": "helper", "arguments": {"message": "hello"}, "ttl": None},
            {"create": "helper", "arguments": {"message": "hello"}, "ttl": MAX_TTL_MS * 10},
            {"create": "helper", "arguments": {"message": "hello"}, "ttl": 0},
            {"get": True}])
    assert asked["task"]["ttl"] == 5000
    assert unasked["task"]["ttl"] == too_long["task"]["ttl"] == MAX_TTL_MS
    assert too_short["task"]["ttl"] == got["ttl"] == MIN_TTL_MS


def test_a_task_is_forgotten_on_every_replica_once_its_ttl_has_passed(redis: RedisServer) -> None:
    with replicas(redis) as gateways, session(gateways.two) as other:
        _, created, result = typescript(gateways.one, [
            {"create": "helper", "arguments": {"message": "hello"}, "ttl": 3000}, {"result": True}])
        task_id = created["task"]["taskId"]
        before = other.ask("tasks/get", {"taskId": task_id})["result"]
        until_expired(created["task"])
        _, got, after_result, cancelled, listed = python(gateways.two, [
            {"get": task_id}, {"result": task_id}, {"cancel": task_id}, {"list": True}])
        _, got_on_first = typescript(gateways.one, [{"get": True, "task_id": task_id}])
        listed_raw = other.ask("tasks/list")["result"]
    assert result["_meta"][RELATED] == {"taskId": task_id} and before["status"] == "completed"
    for gone in (got, after_result, cancelled):
        assert gone == {"error": f"MCPError: {NOT_FOUND}"}
    assert got_on_first == {"error": f"MCP error -32602: {NOT_FOUND}", "code": -32602}
    assert task_id not in [t["taskId"] for t in listed["tasks"] + listed_raw["tasks"]]


def test_a_task_still_working_when_its_ttl_passes_is_stopped_and_forgotten(redis: RedisServer) -> None:
    with replicas(redis) as gateways, session(gateways.one) as first, session(gateways.two) as second:
        before = gateways.disconnects()
        task = first.ask("tools/call", {"name": "helper", "arguments": {"message": "hang on"},
                                        "task": {"ttl": MIN_TTL_MS}})["result"]["task"]
        working = second.ask("tasks/get", {"taskId": task["taskId"]})["result"]
        until_expired(task)
        gone = second.ask("tasks/get", {"taskId": task["taskId"]})
        gone_on_first = first.ask("tasks/get", {"taskId": task["taskId"]})
        after = _disconnects_after(gateways, before)
    assert working["status"] == "working"
    assert gone["error"] == gone_on_first["error"] == {"code": -32602, "message": NOT_FOUND}
    assert after == before + 1  # its run was cut where it ran (it would hang for the route's idle timeout)


def test_tasks_result_tells_its_client_each_status_change_of_the_task_it_waits_on(redis: RedisServer) -> None:
    with replicas(redis) as gateways, session(gateways.one) as first:
        slow = first.start("go slow")  # running on the first replica; its result asked of the second
        _, result, heard = typescript(gateways.two, [{"result": True, "task_id": slow["taskId"]},
                                                     {"statuses": True}])
        done = first.start("hello")
        first.ask("tasks/result", {"taskId": done["taskId"]})
        _, late, heard_late = typescript(gateways.two, [{"result": True, "task_id": done["taskId"]},
                                                        {"statuses": True}])
        with_python = first.start("go slow")
        _, read_by_python = python(gateways.two, [{"result": with_python["taskId"]}])
    completed = heard["statuses"]
    assert [s["status"] for s in completed] == ["completed"] and completed[0]["taskId"] == slow["taskId"]
    assert completed[0]["ttl"] == slow["ttl"] and completed[0]["createdAt"] == slow["createdAt"]
    assert "result" not in completed[0] and "_meta" not in completed[0]
    assert result["content"][0]["text"].startswith("tick 1. ")
    assert heard_late["statuses"] == [] and late["_meta"][RELATED] == {"taskId": done["taskId"]}  # no change seen
    assert read_by_python["content"][0]["text"].startswith("tick 1. ")  # the SDK passes over the notification


def _disconnects_after(gateways: Replicas, before: int) -> int:
    deadline = time.monotonic() + 5
    while gateways.disconnects() == before and time.monotonic() < deadline:
        time.sleep(0.05)
    return gateways.disconnects()


# A task that asks its user, continued through tasks/result.

def waiting_for_input(client: Session, task_id: str) -> dict[str, Any]:
    """The task once it has stopped working (it asked its user)."""
    deadline = time.monotonic() + 10
    while True:
        got: dict[str, Any] = client.ask("tasks/get", {"taskId": task_id})["result"]
        if got["status"] != "working" or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_the_typescript_sdk_answers_a_tasks_question_in_tasks_result_and_the_task_goes_on(url: str) -> None:
    _, streamed, got, heard = typescript(url, [
        {"stream": "helper", "arguments": {"message": "please interrupt"},
         "elicit": {"action": "accept", "content": {"answer": "yes"}}}, {"get": True}, {"statuses": True}])
    messages = streamed["messages"]
    task_id = messages[0]["task"]["taskId"]
    assert [m["task"]["status"] for m in messages if m["type"] == "taskStatus"][-1] == "input_required"
    asked = streamed["elicited"]
    assert len(asked) == 1 and asked[0]["message"] == "Continue?" and asked[0]["mode"] == "form"
    assert asked[0]["_meta"][RELATED] == {"taskId": task_id}
    result = messages[-1]["result"]
    assert messages[-1]["type"] == "result" and result["isError"] is False
    assert result["content"][0]["text"].startswith("Resumed ") and result["content"][0]["text"].endswith(': "yes".')
    assert result["_meta"][RELATED] == {"taskId": task_id} and "interrupts" not in result["structuredContent"]
    assert got["status"] == "completed"
    assert [s["status"] for s in heard["statuses"]] == ["working", "completed"]


def test_a_tasks_question_is_answered_on_the_other_replica_and_the_task_goes_on_there(redis: RedisServer) -> None:
    with replicas(redis) as gateways, session(gateways.one) as first:
        approval = first.start("please approve")
        question = first.start("please interrupt")
        assert waiting_for_input(first, approval["taskId"])["status"] == "input_required"
        assert waiting_for_input(first, question["taskId"])["status"] == "input_required"
        _, declined, got = typescript(gateways.two, [
            {"result": True, "task_id": approval["taskId"], "elicit": {"action": "decline"}},
            {"get": True, "task_id": approval["taskId"]}])
        _, answered = python(gateways.two, [
            {"result": question["taskId"], "elicit": {"action": "accept", "content": {"answer": "go on"}}}])
        on_first = first.ask("tasks/get", {"taskId": question["taskId"]})["result"]
        again = first.ask("tasks/result", {"taskId": question["taskId"]})["result"]
        listed = first.ask("tasks/list")["result"]
    assert declined["elicited"][0]["requestedSchema"]["properties"] == {
        "approved": {"type": "boolean", "title": "Approve"}}
    assert declined["content"][-1]["text"].endswith('{"approved":false}.') and got["status"] == "completed"
    assert answered["elicited"][0]["_meta"][RELATED] == {"taskId": question["taskId"]}
    assert answered["content"][0]["text"].endswith(': "go on".')
    assert answered["_meta"][RELATED] == {"taskId": question["taskId"]}
    assert on_first["status"] == "completed" and again["content"] == answered["content"]
    assert {t["taskId"]: t["status"] for t in listed["tasks"]}[question["taskId"]] == "completed"
