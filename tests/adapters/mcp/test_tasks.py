"""MCP tasks (2025-11-25) at the gateway's `/mcp`, with the built-in agent behind the routes: the TypeScript SDK's
own task client (`@modelcontextprotocol/sdk` 1.32.2, `client.experimental.tasks`, in `tests/clients/mcp-tasks.mjs`)
calls a route's tool as a task, polls it, reads its result, lists and cancels tasks; the Python SDK 2.3.0 (no task
client: its typed task requests and result models, `tests/peers/mcp_tasks_client.py`) reads them; raw JSON-RPC pins
what the SDKs do not show: the answer comes before the run ends, a task is its caller's only, a 2025-06-18 session
is offered none, and two gateways over one real Redis answer for each other's tasks and cancels."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import anyio
import httpx
import pytest
from node_clients import CLIENTS_DIR, _require_node
from peers_env import MCP, PEERS_DIR, _clean_env, _require
from redis_server import RedisServer
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

KEY = "sk-team-0123456789abcdef"
OTHER = "sk-else-0123456789abcdef"
RELATED = "io.modelcontextprotocol/related-task"
ACCEPT = "application/json, text/event-stream"


def gateway_config(agent: str, **store: Any) -> GatewayConfig:
    upstream = {"url": f"{agent}/agui", "dialect": "ag-ui"}
    return GatewayConfig.model_validate({**store, "keepalive_seconds": 0.5, "routes": [
        {"name": "helper", "paths": ["/helper"], "client_dialects": ["mcp"], "upstream": upstream,
         "auth": {"keys": [KEY, OTHER]}, "agent": {"description": "A helpful agent"}},
        {"name": "open", "paths": ["/open"], "client_dialects": ["mcp"], "upstream": upstream}]})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with Served(create_agent_app("ag-ui", pace=0.05)) as agent, \
            Served(create_app(gateway_config(agent.url), store=MemoryStore())) as gateway:
        yield f"{gateway.url}/mcp"


def typescript(url: str, plan: list[dict[str, Any]], key: str = KEY) -> list[dict[str, Any]]:
    """Each line `mcp-tasks.mjs` printed: the session first, then one per step."""
    command = [_require_node(), "mcp-tasks.mjs", url, json.dumps(plan), "--key", key, "--timeout-ms", "30000"]
    proc = subprocess.run(command, cwd=CLIENTS_DIR, capture_output=True, text=True, timeout=90, check=False)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def python(url: str, plan: list[dict[str, Any]], key: str = KEY) -> list[dict[str, Any]]:
    """Each line `mcp_tasks_client.py` printed: the session first, then one per step."""
    _require(MCP)
    command = [str(MCP.python), str(PEERS_DIR / "mcp_tasks_client.py"), url, json.dumps(plan), "--key", key]
    proc = subprocess.run(command, capture_output=True, text=True, env=_clean_env(), timeout=90, check=False)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


class Session:
    """A 2025 session opened by raw JSON-RPC, as the spec writes the requests."""

    def __init__(self, url: str, key: str = KEY, version: str = "2025-11-25") -> None:
        self.url = url
        self.http = httpx.Client(timeout=30)
        self.headers = {"authorization": f"Bearer {key}", "accept": ACCEPT, "content-type": "application/json"}
        self.ids = iter(range(1, 1 << 30))
        opened = self.http.post(url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        self.initialized = opened.json()["result"]
        self.headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": version}

    def ask(self, method: str, params: dict[str, Any] | None = None, *, session: Session | None = None
            ) -> dict[str, Any]:
        """The JSON-RPC response to one request (an SSE answer's `message` event)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        if params is not None:
            message["params"] = params
        answered = self.http.post((session or self).url, headers=self.headers, json=message)
        assert answered.status_code == 200, answered.text
        if answered.headers["content-type"].startswith("text/event-stream"):
            data = [line[5:].strip() for line in answered.text.splitlines() if line.startswith("data:")]
            reply: dict[str, Any] = json.loads(data[-1])
            return reply
        return dict(answered.json())

    def start(self, message: str, route: str = "helper") -> dict[str, Any]:
        """A task calling the route with `message`."""
        created = self.ask("tools/call", {"name": route, "arguments": {"message": message},
                                          "task": {"ttl": 60000}})
        task: dict[str, Any] = created["result"]["task"]
        return task

    def close(self) -> None:
        self.http.close()


@contextmanager
def session(url: str, **options: Any) -> Iterator[Session]:
    opened = Session(url, **options)
    try:
        yield opened
    finally:
        opened.close()


def test_the_typescript_sdk_calls_a_tool_as_a_task_and_gets_what_the_call_returns(url: str) -> None:
    opened, listed, streamed = typescript(url, [{"list_tools": True}, {"stream": "helper",
                                                                       "arguments": {"message": "go slow"}}])
    assert opened["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert listed["tools"][0]["execution"] == {"taskSupport": "optional"}
    messages = streamed["messages"]
    kinds = [m["type"] for m in messages]
    assert kinds[0] == "taskCreated" and kinds[-1] == "result" and "taskStatus" in kinds
    created = messages[0]["task"]
    assert created["status"] == "working" and created["ttl"] == 60000 and created["pollInterval"] == 1000
    assert [m["task"]["status"] for m in messages if m["type"] == "taskStatus"][-1] == "completed"
    result = messages[-1]["result"]
    assert result["isError"] is False
    assert result["content"][0]["text"] == "".join(f"tick {n}. " for n in range(1, 21))
    assert result["_meta"][RELATED] == {"taskId": created["taskId"]}


def test_the_python_sdk_reads_tasks_into_its_own_task_models(url: str) -> None:
    with session(url) as client:
        slow, hanging = client.start("go slow")["taskId"], client.start("hang on")["taskId"]
    _, working, listed, result, done, cancelled, ended = python(url, [  # "hang on" works until it is cancelled
        {"get": hanging}, {"list": True}, {"result": slow}, {"get": slow}, {"cancel": hanging}, {"cancel": slow}])
    assert working["status"] == "working" and working["pollInterval"] == 1000 and working["ttl"] == 60000
    assert {slow, hanging} <= {task["taskId"] for task in listed["tasks"]}
    assert result["content"][0]["text"].startswith("tick 1. ") and result["_meta"][RELATED] == {"taskId": slow}
    assert done["status"] == "completed" and cancelled["status"] == "cancelled"
    assert ended["error"] == "MCPError: Cannot cancel task: already in terminal status 'completed'"


def test_a_task_call_is_answered_with_its_task_before_the_run_ends(url: str) -> None:
    with session(url) as client:
        began = time.monotonic()
        task = client.start("go slow")  # 20 pieces 0.05 s apart: a second's run
        answered_after = time.monotonic() - began
        working = client.ask("tasks/get", {"taskId": task["taskId"]})["result"]
        result = client.ask("tasks/result", {"taskId": task["taskId"]})["result"]
        ended_after = time.monotonic() - began
        done = client.ask("tasks/get", {"taskId": task["taskId"]})["result"]
    assert answered_after < 0.5 < ended_after
    assert working["status"] == "working" and working["taskId"] == task["taskId"]
    assert result["content"][0]["text"].startswith("tick 1. ") and result["_meta"][RELATED]["taskId"] == task["taskId"]
    assert done["status"] == "completed" and done["lastUpdatedAt"] >= done["createdAt"]


QUIET_S = 2.0


def quiet_agent() -> Starlette:
    """An AG-UI agent that accepts a run at once (200, its stream open) and says nothing for `QUIET_S`: a model
    thinking before its first token."""

    async def run(request: Request) -> StreamingResponse:
        async def events() -> Any:
            await anyio.sleep(QUIET_S)
            for event in ({"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                          {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                          {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "thought it over"},
                          {"type": "TEXT_MESSAGE_END", "messageId": "m"},
                          {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}):
                yield f"data: {json.dumps(event)}\n\n".encode()

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/agui", run, methods=["POST"])])


def test_a_task_is_answered_once_the_upstream_accepts_the_run_before_its_first_event() -> None:
    with Served(quiet_agent()) as agent, \
            Served(create_app(gateway_config(agent.url), store=MemoryStore())) as gateway, \
            session(f"{gateway.url}/mcp") as client:
        began = time.monotonic()
        task = client.start("hello")
        answered_after = time.monotonic() - began
        result = client.ask("tasks/result", {"taskId": task["taskId"]})["result"]
        ended_after = time.monotonic() - began
    assert answered_after < QUIET_S / 2 < QUIET_S < ended_after
    assert task["status"] == "working" and result["content"][0]["text"] == "thought it over"


def test_the_sdk_cancels_a_working_task_and_an_ended_task_cannot_be_cancelled(url: str) -> None:
    _, created, cancelled, again, got = typescript(url, [
        {"create": "helper", "arguments": {"message": "hang on"}}, {"cancel": True}, {"cancel": True}, {"get": True}])
    assert created["task"]["status"] == "working"
    assert cancelled["status"] == "cancelled" and cancelled["taskId"] == created["task"]["taskId"]
    assert again["code"] == -32602 and "terminal" in again["error"]
    assert got["status"] == "cancelled"


def test_a_failing_run_is_a_failed_task_whose_result_is_the_calls_error(url: str) -> None:
    _, streamed, result = typescript(url, [{"stream": "helper", "arguments": {"message": "fail"}}, {"result": True}])
    messages = streamed["messages"]
    assert messages[-2]["task"]["status"] == "failed" and messages[-2]["task"]["statusMessage"] == "scripted failure"
    assert messages[-1]["type"] == "error"  # the SDK reads a failed task's result no further
    assert result["isError"] is True and result["content"][-1]["text"] == "scripted failure"


def test_a_run_that_asks_its_user_leaves_its_task_input_required_with_the_question(url: str) -> None:
    _, streamed, got = typescript(url, [{"stream": "helper", "arguments": {"message": "please interrupt"}},
                                        {"get": True}])
    result = streamed["messages"][-1]["result"]
    assert got["status"] == "input_required"
    assert result["content"][0]["text"].startswith("Continue?\n\nTo answer, call helper again")
    assert result["structuredContent"]["interrupts"][0]["reason"] == "confirm"


def test_a_task_waiting_for_its_user_is_cancelled_where_it_is_kept(url: str) -> None:
    with session(url) as client:
        task = client.start("please interrupt")
        client.ask("tasks/result", {"taskId": task["taskId"]})
        waiting = client.ask("tasks/get", {"taskId": task["taskId"]})["result"]
        cancelled = client.ask("tasks/cancel", {"taskId": task["taskId"]})["result"]
        got = client.ask("tasks/get", {"taskId": task["taskId"]})["result"]
    assert waiting["status"] == "input_required"
    assert cancelled["status"] == got["status"] == "cancelled"


def test_tasks_list_shows_the_callers_tasks_and_never_another_principals(url: str) -> None:
    with session(url) as mine, session(url, key=OTHER) as theirs:
        task = mine.start("hello")
        mine.ask("tasks/result", {"taskId": task["taskId"]})
        listed = mine.ask("tasks/list")["result"]
        listed_by_other = theirs.ask("tasks/list")["result"]
        got_by_other = theirs.ask("tasks/get", {"taskId": task["taskId"]})
        cancelled_by_other = theirs.ask("tasks/cancel", {"taskId": task["taskId"]})
        result_by_other = theirs.ask("tasks/result", {"taskId": task["taskId"]})
    assert task["taskId"] in [t["taskId"] for t in listed["tasks"]]
    assert [t["status"] for t in listed["tasks"] if t["taskId"] == task["taskId"]] == ["completed"]
    assert task["taskId"] not in [t["taskId"] for t in listed_by_other["tasks"]]
    for refused in (got_by_other, cancelled_by_other, result_by_other):
        assert refused["error"]["code"] == -32602 and "not found" in refused["error"]["message"]


def test_tasks_list_goes_on_from_one_route_to_the_next_and_lists_none_on_a_route_without_callers(url: str
                                                                                                  ) -> None:
    with session(url) as client:
        mine = client.start("hello")
        anyones = client.start("hello", route="open")  # a route without keys: every caller is anonymous there
        client.ask("tasks/result", {"taskId": anyones["taskId"]})
        first = client.ask("tasks/list")["result"]
        second = client.ask("tasks/list", {"cursor": first["nextCursor"]})["result"]
        got = client.ask("tasks/get", {"taskId": anyones["taskId"]})["result"]
    assert mine["taskId"] in [t["taskId"] for t in first["tasks"]]
    assert second == {"tasks": []}  # the open route's: not listed, and the last page
    assert got["status"] == "completed"  # read by its unguessable id all the same


def test_a_task_id_that_names_no_route_of_the_callers_is_not_found(url: str) -> None:
    with session(url) as client:
        unknown = client.ask("tasks/get", {"taskId": "mcpt_0.bm93aGVyZQ"})  # "nowhere"
        garbled = client.ask("tasks/get", {"taskId": 12})
        bad_cursor = client.ask("tasks/list", {"cursor": "not-a-cursor"})
    assert unknown["error"]["code"] == garbled["error"]["code"] == bad_cursor["error"]["code"] == -32602


def test_a_2025_06_18_session_is_offered_no_tasks(url: str) -> None:
    with session(url, version="2025-06-18") as client:
        listed = client.ask("tools/list")["result"]
    assert "tasks" not in client.initialized["capabilities"]
    assert "execution" not in listed["tools"][0]


# Two gateways over one Redis.

@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


class Replicas:
    """Two gateways' `/mcp`, sharing one Redis, in front of one built-in agent."""

    def __init__(self, one: str, two: str, agent: str) -> None:
        self.one, self.two, self.agent = one, two, agent

    def __iter__(self) -> Iterator[str]:
        return iter((self.one, self.two))

    def disconnects(self) -> int:
        counted: int = httpx.get(f"{self.agent}/_disconnects").json()
        return counted


@contextmanager
def replicas(redis: RedisServer) -> Iterator[Replicas]:
    with ExitStack() as stack:
        agent = stack.enter_context(Served(create_agent_app("ag-ui", pace=0.05)))
        config = gateway_config(agent.url, store={"url": redis.url})
        one, two = (stack.enter_context(Served(create_app(config))).url + "/mcp" for _ in range(2))
        yield Replicas(one, two, agent.url)


def test_the_other_replica_answers_get_and_result_for_a_task_running_on_the_first(redis: RedisServer) -> None:
    with replicas(redis) as (one, two), session(one) as first, session(two) as second:
        task = first.start("go slow")
        working = second.ask("tasks/get", {"taskId": task["taskId"]})["result"]
        listed = second.ask("tasks/list")["result"]
        result = second.ask("tasks/result", {"taskId": task["taskId"]})["result"]
        done = second.ask("tasks/get", {"taskId": task["taskId"]})["result"]
    assert working["status"] == "working"
    assert [t["status"] for t in listed["tasks"] if t["taskId"] == task["taskId"]] == ["working"]
    assert result["content"][0]["text"] == "".join(f"tick {n}. " for n in range(1, 21))
    assert result["_meta"][RELATED] == {"taskId": task["taskId"]}
    assert done["status"] == "completed"


def test_a_cancel_asked_of_the_other_replica_stops_the_task_where_it_runs(redis: RedisServer) -> None:
    with replicas(redis) as (one, two), session(one) as first, session(two) as second:
        task = first.start("hang on")
        results: list[dict[str, Any]] = []
        waiting = threading.Thread(target=lambda: results.append(first.ask("tasks/result",
                                                                           {"taskId": task["taskId"]})))
        waiting.start()
        time.sleep(0.3)
        began = time.monotonic()
        cancelled = second.ask("tasks/cancel", {"taskId": task["taskId"]})["result"]
        waiting.join(15)
        stopped_after = time.monotonic() - began
        on_first = first.ask("tasks/get", {"taskId": task["taskId"]})["result"]
    assert cancelled["status"] == on_first["status"] == "cancelled"
    assert stopped_after < 5 and not waiting.is_alive()  # the run would hang for the route's idle timeout
    assert results[0]["result"]["_meta"][RELATED] == {"taskId": task["taskId"]}


def test_notifications_cancelled_sent_to_the_other_replica_stops_the_call_where_it_runs(redis: RedisServer) -> None:
    with replicas(redis) as gateways, session(gateways.one) as first, httpx.Client(timeout=30) as http:
        before = gateways.disconnects()
        call = {"jsonrpc": "2.0", "id": "call-7", "method": "tools/call",
                "params": {"name": "helper", "arguments": {"message": "hang on"}, "_meta": {"progressToken": 1}}}
        with http.stream("POST", gateways.one, json=call, headers=first.headers) as stream:
            pieces = stream.iter_bytes()
            # running on the first replica (after the priming event), quiet from here on
            assert b"notifications/progress" in next(p for p in pieces if b"data: {" in p)
            began = time.monotonic()
            cancel = http.post(gateways.two, headers=first.headers, json={
                "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "call-7"}})
            with contextlib.suppress(httpx.RemoteProtocolError):  # cut as when its client leaves
                for _ in pieces:
                    pass
            ended_after = time.monotonic() - began
        deadline = time.monotonic() + 5
        while gateways.disconnects() == before and time.monotonic() < deadline:
            time.sleep(0.05)
        after = gateways.disconnects()
    assert cancel.status_code == 202
    assert ended_after < 5  # the agent goes quiet for the route's idle timeout (120 s)
    assert after == before + 1  # and the upstream's run was cut where it ran
