"""The official MCP clients against the gateway's `/mcp`: `mcp` 2.3.0's Python `Client` (in the mcp peer's venv,
`tests/peers/mcp_client.py`) and `@modelcontextprotocol/sdk` 1.32.2's TypeScript `Client`
(`tests/clients/mcp-run.mjs`), with the built-in agent behind every route: a session opened by initialize, a tool
per route the caller may use, a second turn by the `conversation_id` the first result named, an unknown tool, and
the keys and origins the spec asks a server to check. Each scenario of a turn (progress, a server tool, elicitation,
`isError`, a cancel), with the agent in every dialect: `test_sdks_every_upstream.py`. Install first:
`.venv/bin/python tests/peers_env.py` and `npm ci --prefix tests/clients`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import httpx
import orjson
import pytest
from mcp_sdks import SDKS, run_sdk
from peers_env import McpClientRun
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from tests.adapters.mcp.gateway_face import HELPER, Face, served, team
from tests.adapters.mcp.gateway_face import one as one_step

KEY = "sk-team-0123456789abcdef"


Send = Callable[..., McpClientRun]


@pytest.fixture(params=sorted(SDKS))
def send(request: pytest.FixtureRequest) -> Send:
    return partial(run_sdk, request.param)


World = Face


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    web = {"name": "web", "paths": ["/web"], "client_dialects": ["ag-ui"]}
    with served([HELPER, team(KEY), web], World) as opened:
        yield opened


def one(run: McpClientRun) -> dict[str, Any]:
    return one_step(run.steps, run.error)


def test_an_sdk_opens_a_session_and_lists_a_tool_per_route_it_may_use(world: World, send: Send) -> None:
    run = send(world.url, [{"list": True}])
    assert run.opened["protocolVersion"] == "2025-11-25"
    assert run.opened["serverInfo"]["name"] == "agent-gateway"
    tools = one(run)["tools"]
    assert [tool["name"] for tool in tools] == ["helper"]  # the keyed route is not this caller's; web reads no MCP
    assert tools[0]["description"] == "A helpful agent"
    assert tools[0]["inputSchema"]["required"] == ["message"]


def test_a_key_opens_its_route_as_a_tool(world: World, send: Send) -> None:
    run = send(world.url, [{"list": True}, {"call": "team", "arguments": {"message": "hello"}}], key=KEY)
    assert run.error is None, run.error
    listed, called = run.steps
    assert [tool["name"] for tool in listed["tools"]] == ["helper", "team"]
    assert called["isError"] is False and "You said: hello" in called["content"][0]


def test_a_second_call_with_the_conversation_id_continues_the_conversation(world: World, send: Send) -> None:
    first = one(send(world.url, [{"call": "helper", "arguments": {"message": "hello"}}]))
    conversation = first["structured"]["conversation_id"]
    second = one(send(world.url, [{"call": "helper", "arguments": {
        "message": "again", "conversation_id": conversation}}]))
    assert second["content"] == ["You said: again. (turn 2)"]
    assert second["structured"]["conversation_id"] == conversation


def test_an_unknown_tool_is_a_protocol_error(world: World, send: Send) -> None:
    step = send(world.url, [{"call": "web", "arguments": {"message": "hi"}}]).steps[0]
    assert "Unknown tool: web" in step.get("error", "") or "Unknown tool: web" in str(step.get("content"))


@pytest.mark.parametrize("arguments", [{}, {"message": 42}, {"text": "hi"}])
def test_a_call_without_a_text_message_is_a_tool_error_saying_what_to_give(world: World, send: Send,
                                                                          arguments: dict[str, Any]) -> None:
    called = one(send(world.url, [{"call": "helper", "arguments": arguments}]))
    assert called["isError"] is True
    [said] = called["content"]
    assert "message" in said and "what the user says to the agent, as a text" in said


def post(world: World, message: dict[str, Any], **headers: str) -> httpx.Response:
    return world.http.post(world.url, content=orjson.dumps(message), headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream", **headers})


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_initialize_agrees_on_a_version_the_client_speaks_or_offers_the_latest(world: World) -> None:
    assert post(world, INITIALIZE).json()["result"]["protocolVersion"] == "2025-06-18"
    later = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2099-01-01"}}
    assert post(world, later).json()["result"]["protocolVersion"] == "2025-11-25"


def test_a_deleted_session_is_not_found_and_ping_answers_in_a_live_one(world: World) -> None:
    session = post(world, INITIALIZE).headers["mcp-session-id"]
    ping = post(world, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, **{"mcp-session-id": session})
    assert ping.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert world.http.delete(world.url, headers={"mcp-session-id": session}).status_code == 200
    gone = post(world, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, **{"mcp-session-id": session})
    assert gone.status_code == 404 and gone.json()["error"]["code"] == -32600


def test_another_origin_is_refused_and_the_gateways_own_is_served(world: World) -> None:
    evil = post(world, INITIALIZE, origin="http://evil.example.com")
    assert evil.status_code == 403 and "error" in evil.json()
    host = world.url.split("/")[2]
    assert post(world, INITIALIZE, origin=f"http://{host}").status_code == 200


def test_a_notification_is_accepted_with_no_body(world: World) -> None:
    said = post(world, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **{"x-request-id": "req-note-1"})
    assert said.status_code == 202 and said.content == b""
    assert said.headers["x-request-id"] == "req-note-1"  # as every answer of the gateway's


CANCELLED = {"jsonrpc": "2.0", "id": "call-7", "error": {"code": -32800, "message": "Request cancelled"}}
"""How an SDK server ends a call its client cancelled: its stream's last event."""


def test_notifications_cancelled_stops_the_call_it_names_and_ends_its_stream_as_cancelled(world: World) -> None:
    session = post(world, INITIALIZE).headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": "call-7", "method": "tools/call",
            "params": {"name": "helper", "arguments": {"message": "please be slow"}, "_meta": {"progressToken": 1}}}
    before = world.disconnects()
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-session-id": session}
    with world.http.stream("POST", world.url, content=orjson.dumps(call), headers=headers) as stream:
        pieces = stream.iter_bytes()
        assert b"notifications/progress" in next(p for p in pieces if b"data: {" in p)  # after the priming event
        cancel = post(world, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": "call-7", "reason": "user stop"}}, **{"mcp-session-id": session})
        assert cancel.status_code == 202
        rest = b"".join(pieces)
    assert rest.count(b"notifications/progress") < 15  # the stream ends, not after the slow run's 20 pieces
    assert orjson.loads(rest.rstrip().rpartition(b"data: ")[2]) == CANCELLED
    deadline = time.monotonic() + 5
    while world.disconnects() == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert world.disconnects() == before + 1


def test_a_call_cancelled_before_its_agent_said_anything_is_answered_as_cancelled() -> None:
    """An agent that answers in one body has sent nothing when the call is cancelled: the answer is still the
    cancelled call's, never a server error."""
    with Served(create_agent_app("agent-respond")) as agent, Served(create_app(GatewayConfig.model_validate(
            {"routes": [{"name": "whole", "client_dialects": ["mcp"], "upstream": {
                "url": f"{agent.url}/agent/respond", "dialect": "agent-respond"}}]}), store=MemoryStore())) as gateway:
        face = Face(gateway.url, agent.url)
        session = post(face, INITIALIZE).headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": "call-7", "method": "tools/call",
                "params": {"name": "whole", "arguments": {"message": "please be slow"}}}
        answered: list[httpx.Response] = []
        calling = threading.Thread(target=lambda: answered.append(post(face, call, **{"mcp-session-id": session})))
        calling.start()
        time.sleep(0.5)
        post(face, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "call-7"}},
             **{"mcp-session-id": session})
        calling.join(10)
        face.http.close()
    [response] = answered
    assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
    assert response.content == b"data: " + orjson.dumps(CANCELLED) + b"\n\n"


def _call(world: World, session: str, text: str) -> list[dict[str, Any]]:
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "helper", "arguments": {"message": text}, "_meta": {"progressToken": 1}}}
    body = post(world, call, **{"mcp-session-id": session}).content
    return [orjson.loads(line[6:]) for line in body.splitlines() if line.startswith(b"data: {")]


def test_a_session_that_set_a_log_level_gets_the_agents_tool_calls_and_reasoning_as_log_lines(world: World) -> None:
    opened = post(world, INITIALIZE)
    assert opened.json()["result"]["capabilities"]["logging"] == {}
    session = opened.headers["mcp-session-id"]
    quiet = _call(world, session, "weather in Paris?")
    assert not [m for m in quiet if m.get("method") == "notifications/message"]
    level = post(world, {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}},
                 **{"mcp-session-id": session})
    assert level.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    logged = [m["params"] for m in _call(world, session, "weather in Paris?")
              if m.get("method") == "notifications/message"]
    assert [line["level"] for line in logged] == ["info", "info"]
    assert logged[0]["data"]["toolCall"]["name"] == "get_weather"
    assert logged[1]["data"]["toolResult"]["result"] == "sunny, 21C in Paris"
    thought = [m["params"]["data"] for m in _call(world, session, "think about it")
               if m.get("method") == "notifications/message"]
    assert thought and thought[0]["reasoning"]
