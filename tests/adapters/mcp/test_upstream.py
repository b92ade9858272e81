"""A real MCP server (`mcp` 2.3.0's MCPServer, `tests/peers/mcp_server.py`, in its own venv) behind the gateway,
its tools called as agents by clients of every other dialect: a session opened per conversation (and again when
the server lost it), the user's message and the conversation's id for a tool that keeps conversations, the whole
history as text for one that does not, progress streamed as text, a tool error, a cancel when the client leaves.
The server speaks 2026-07-28 and the gateway speaks it to it; under `/legacy` it is a server of the 2025 protocol
only, which the gateway opens sessions with.
Install first: `.venv/bin/python tests/peers_env.py`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from e2e import Reply, post, request_body, user_message
from peers_env import mcp_upstream, run_mcp_client
from servers import Served

from gateway.check import check
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.events import Data, StepStarted, TextDelta
from gateway.server.app import create_app

CLIENTS = ["ag-ui", "vercel", "ag-kit", "a2a", "agent-respond", "openai-chat", "openai-responses", "langgraph", "mcp"]
TOOLS = ["oneshot", "status", "fail", "sleepy", "ask:prompt", "nope"]


class World:
    def __init__(self, server: str, gateway: str) -> None:
        self.server = server
        self.gateway = gateway
        self.http = httpx.Client(timeout=30)

    def ask(self, client: str, route: str, messages: list[dict[str, Any]], conversation: str) -> Reply:
        body = request_body(client, messages, conversation)
        return Reply(client, post(self.http, f"{self.gateway}/{route}/in", body))

    def say(self, client: str, route: str, text: str, conversation: str) -> Reply:
        return self.ask(client, route, [user_message(client, text)], conversation)

    def counts(self) -> dict[str, int]:
        counted: dict[str, int] = self.http.get(f"{self.server}/counts").json()
        return counted


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with mcp_upstream() as server:
        upstream = {"url": f"{server}/mcp", "dialect": "mcp"}
        routes = [{"name": client, "paths": [f"/{client}/in"], "client_dialects": [client],
                   "upstream": {**upstream, "agent": "agent"}} for client in CLIENTS]
        for tool in TOOLS:  # the route named after its tool; `TOOL:ARGUMENT` names the argument the message goes in
            name = tool.partition(":")[0]
            routes.append({"name": name, "paths": [f"/{name}/in"], "client_dialects": ["ag-ui"],
                           "upstream": {**upstream, "agent": tool}, "timeouts": {"first_event": 10, "total": 30}})
        for tool in ("agent", "sleepy"):  # the same tools on a server of the 2025 protocol only
            routes.append({"name": f"legacy-{tool}", "paths": [f"/legacy-{tool}/in"], "client_dialects": ["ag-ui"],
                           "upstream": {"url": f"{server}/legacy/mcp", "dialect": "mcp", "agent": tool}})
        config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            world = World(server, gateway.url)
            yield world
            world.http.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_an_mcp_tool_answers_every_client_in_its_own_dialect_as_it_streams(world: World, client: str) -> None:
    reply = world.say(client, client, "hello there", f"text-{client}")
    assert reply.response.status_code == 200, reply.response.text
    assert reply.text == "turn 1: you said hello there"
    assert reply.finished is not None
    if client != "agent-respond":  # one body: no pieces to count
        assert len([e for e in reply.events if isinstance(e, TextDelta)]) > 3


@pytest.mark.parametrize("client", ["ag-ui", "vercel"])
def test_a_second_turn_names_the_same_conversation_to_a_tool_that_keeps_them(world: World, client: str) -> None:
    first = world.say(client, client, "hello", f"multi-{client}")
    assert first.text == "turn 1: you said hello"
    if client == "ag-ui":
        history = [user_message(client, "hello"), {"id": "a1", "role": "assistant", "content": first.text},
                   user_message(client, "again")]
    else:
        history = [user_message(client, "hello"),
                   {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": first.text}]},
                   user_message(client, "again")]
    second = world.ask(client, client, history, f"multi-{client}")
    assert second.text == "turn 2: you said again (before: hello)"


def test_a_tool_without_a_conversation_id_is_given_the_whole_history_as_text(world: World) -> None:
    first = world.say("ag-ui", "oneshot", "hello", "oneshot-1")
    assert first.text == "heard: hello"
    history = [user_message("ag-ui", "hello"), {"id": "a1", "role": "assistant", "content": first.text},
               user_message("ag-ui", "and again")]
    second = world.ask("ag-ui", "oneshot", history, "oneshot-1")
    assert second.text == "heard: user: hello\n\nassistant: heard: hello\n\nuser: and again"


def test_progress_that_is_not_the_text_so_far_is_a_step_and_the_result_the_text(world: World) -> None:
    reply = world.say("ag-ui", "status", "go", "status-1")
    assert [e.name for e in reply.events if isinstance(e, StepStarted)] == ["step 1/2", "step 2/2"]
    assert reply.text == "done: go"
    assert not any(isinstance(e, Data) for e in reply.events)  # the SDK's {"result": text} is the text again


def test_a_tool_error_is_the_runs_error(world: World) -> None:
    reply = world.say("ag-ui", "fail", "boom", "fail-1")
    assert reply.error is not None
    assert "failed on purpose: boom" in reply.error.message


def test_a_session_the_server_lost_is_opened_again(world: World) -> None:
    assert world.say("ag-ui", "legacy-agent", "one", "lost-1").text == "turn 1: you said one"
    world.http.post(f"{world.server}/forget")
    assert world.counts()["sessions"] == 0
    again = world.say("ag-ui", "legacy-agent", "two", "lost-1")
    assert again.text == "turn 2: you said two (before: one)"
    assert world.counts()["sessions"] == 1


def test_sessions_past_the_stores_conversations_are_ended_at_the_server_and_the_rest_as_the_gateway_stops(
        world: World) -> None:
    """The gateway keeps a session for as many conversations as its store keeps (two here), over its two routes:
    the oldest is ended with a `DELETE` as the third opens, whichever route's, and those kept as the gateway stops,
    so that the server does not keep them."""
    before = world.counts()["sessions"]
    routes = [{"name": name, "paths": [f"/{name}/in"], "client_dialects": ["ag-ui"],
               "upstream": {"url": f"{world.server}/legacy/mcp", "dialect": "mcp", "agent": "agent"}}
              for name in ("one", "two")]
    config = GatewayConfig.model_validate({"routes": routes})
    with Served(create_app(config, store=MemoryStore(max_entries=2))) as gateway:
        for number in range(4):
            body = request_body("ag-ui", [user_message("ag-ui", "hi")], f"ended-{number}")
            route = routes[number % 2]["name"]
            assert Reply("ag-ui", post(world.http, f"{gateway.url}/{route}/in", body)).text == "turn 1: you said hi"
        deadline = time.monotonic() + 5
        while world.counts()["sessions"] != before + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert world.counts()["sessions"] == before + 2
    assert world.counts()["sessions"] == before


def test_a_server_of_both_protocols_is_spoken_to_in_2026_without_a_session(world: World) -> None:
    before = world.counts()["sessions"]
    assert world.say("ag-ui", "ag-ui", "hello", "modern-1").text == "turn 1: you said hello"
    assert world.counts()["sessions"] == before


@pytest.mark.parametrize("route", ["sleepy", "legacy-sleepy"])  # 2026: the stream closed; 2025: notifications/cancelled
def test_a_client_that_leaves_cancels_the_tool_call(world: World, route: str) -> None:
    before = world.counts()["cancelled"]
    body = request_body("ag-ui", [user_message("ag-ui", "sleep")], f"{route}-1")
    with world.http.stream("POST", f"{world.gateway}/{route}/in", json=body) as response:
        for chunk in response.iter_bytes():
            if b"RUN_STARTED" in chunk:  # the server is running the tool: its answer has begun
                break
    deadline = time.monotonic() + 5
    while world.counts()["cancelled"] == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert world.counts()["cancelled"] == before + 1


def test_agent_gateway_check_opens_a_session_and_passes_the_servers_agent_tool(world: World) -> None:
    report = asyncio.run(check(f"{world.server}/mcp", "mcp", timeout=20))
    found = {result.scenario: result.outcome for result in report.results}
    assert found["text"] == found["multi-turn"] == found["cancel"] == "pass", "\n".join(report.lines())
    assert not report.failed, "\n".join(report.lines())


def test_a_route_names_the_argument_its_tool_takes_the_message_in(world: World) -> None:
    assert world.say("ag-ui", "ask", "why?", "ask-1").text == "asked: why?"


def test_a_tool_the_server_does_not_have_is_the_runs_error_in_the_servers_words(world: World) -> None:
    reply = world.say("ag-ui", "nope", "hello", "nope-1")
    assert reply.error is not None and "Unknown tool: nope" in reply.error.message


def test_the_python_sdks_client_calls_the_sdks_server_through_the_gateways_mcp_endpoint(world: World) -> None:
    """MCP on both sides, each the official SDK: the gateway's route `mcp` is a tool at `/mcp`, whose upstream is
    the server's `agent` tool."""
    run = run_mcp_client(f"{world.gateway}/mcp", [{"list": True}, {"call": "mcp", "arguments": {"message": "hi"}}])
    assert run.error is None, run.error
    listed, called = run.steps
    assert [tool["name"] for tool in listed["tools"]] == ["mcp"]
    assert called["isError"] is False and called["content"] == ["turn 1: you said hi"]
    assert [message for _, _, message in called["progress"]][-1] == "turn 1: you said hi"
