"""`agent-gateway agent --dialect mcp`, the built-in agent as an MCP server, run as the command runs it and used by
the official clients (`mcp` 2.3.0's Python `Client`, `tests/peers/mcp_client.py`; `@modelcontextprotocol/sdk`
1.32.2's TypeScript `Client`, `tests/clients/mcp-run.mjs`): a session, its one tool `agent`, a call whose text
streams as progress, a second turn by `conversation_id`, its own tool call in `structuredContent`, a failure as
`isError`. Install first: `.venv/bin/python tests/peers_env.py` and `npm ci --prefix tests/clients`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from node_clients import run_mcp
from peers_env import run_mcp_client
from servers import Served

from gateway.agent.server import create_agent_app
from tests.adapters.mcp.agent_command import agent_command

Plan = list[dict[str, Any]]


def python_client(url: str, plan: Plan) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    run = run_mcp_client(url, plan)
    assert run.error is None, run.error
    return run.opened, run.steps


def typescript_client(url: str, plan: Plan) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    run = run_mcp(url, plan)
    assert run["error"] is None, run["error"]
    assert run["terminated"] in (True, None), run  # its DELETE was answered
    return run["opened"], run["steps"]


CLIENTS = {"python": python_client, "typescript": typescript_client}
SAID = {"slow": "slow please", "hello": "hello", "weather": "weather in Paris", "fail": "please fail"}
"""What one session asks, a call each: a client process per session keeps the module quick."""


@dataclass
class Session:
    """One session of a client: what opened it, and each step's outcome (`list`, then a call per `SAID`)."""

    opened: dict[str, Any]
    steps: dict[str, dict[str, Any]]
    client: Callable[[str, Plan], tuple[dict[str, Any], list[dict[str, Any]]]]


@pytest.fixture(scope="module", params=sorted(CLIENTS))
def session(request: pytest.FixtureRequest, agent: str) -> Session:
    client = CLIENTS[request.param]
    plan: Plan = [{"list": True}, *({"call": "agent", "arguments": {"message": text}} for text in SAID.values())]
    opened, steps = client(agent, plan)
    return Session(opened, dict(zip(["list", *SAID], steps, strict=True)), client)


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    with agent_command(pace=0.01) as url:
        yield url


def test_a_client_opens_a_session_and_finds_the_agent_as_one_tool(session: Session) -> None:
    opened, listed = session.opened, session.steps["list"]
    assert opened["protocolVersion"] == "2025-11-25"
    assert opened["serverInfo"]["name"] == "agent-gateway"
    [tool] = listed["tools"]
    assert tool["name"] == "agent"
    assert "keywords" in tool["description"]
    assert tool["inputSchema"]["required"] == ["message"]


def test_a_call_streams_its_text_as_progress_and_ends_in_the_result(session: Session) -> None:
    called = session.steps["slow"]
    assert called["isError"] is False
    [text] = called["content"]
    assert text.startswith("tick 1. tick 2.") and text.rstrip().endswith("tick 20.")
    messages = [message for _, _, message in called["progress"]]
    assert len(messages) > 3, called["progress"]  # the text as it grew, not all at the end
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(messages))
    assert messages[-1] == text
    counts = [at for at, _, _ in called["progress"]]
    assert counts == sorted(set(counts))


def test_a_second_call_continues_the_conversation_its_result_named(agent: str, session: Session) -> None:
    first = session.steps["hello"]
    conversation = first["structured"]["conversation_id"]
    again = {"message": "again", "conversation_id": conversation}
    _, [second] = session.client(agent, [{"call": "agent", "arguments": again, "progress": False}])
    assert first["content"] == ["You said: hello. (turn 1)"]
    assert second["content"] == ["You said: again. (turn 2)"]
    assert second["structured"]["conversation_id"] == conversation


def test_the_agents_own_tool_call_comes_in_the_structured_content(session: Session) -> None:
    called = session.steps["weather"]
    [call] = called["structured"]["toolCalls"]
    assert (call["name"], call["arguments"], call["result"]) == ("get_weather", {"city": "Paris"},
                                                                  "sunny, 21C in Paris")
    assert called["content"][-1].endswith("It is sunny, 21C in Paris.")


def test_a_failing_run_is_a_result_with_is_error(session: Session) -> None:
    called = session.steps["fail"]
    assert called["isError"] is True
    assert called["content"][-1] == "scripted failure"
    assert called["structured"]["error"] == {"code": "agent_error", "message": "scripted failure"}


def refusal(url: str) -> dict[str, Any]:
    """What `url` answers a call without the message its tool requires."""
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "agent", "arguments": {}}}
    answer = httpx.post(url, json=call, headers={"accept": "application/json, text/event-stream"}, timeout=10)
    assert answer.status_code == 200
    refused: dict[str, Any] = answer.json()
    return refused


@pytest.mark.parametrize("served", ["the command", "the agent's app, as an upstream"])
def test_a_call_without_its_message_is_a_tool_error_with_the_calls_id(agent: str, served: str) -> None:
    if served == "the command":
        refused = refusal(agent)
    else:
        with Served(create_agent_app("mcp", test_hooks=False)) as app:
            refused = refusal(f"{app.url}/mcp")
    assert (refused["jsonrpc"], refused["id"], refused["result"]["isError"]) == ("2.0", 7, True)
    [said] = refused["result"]["content"]
    assert said["text"] == ("The tool agent was called without `message`: give what the user says to the agent, "
                            "as a text.")
