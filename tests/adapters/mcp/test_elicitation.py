"""Human in the loop on the gateway's `/mcp` (2025-06-18, 2025-11-25), with the official clients (`mcp` 2.3.0's
Python `Client`, `@modelcontextprotocol/sdk` 1.32.2's TypeScript `Client`) and the built-in agent behind the route,
which asks to approve a tool call on the word "approve": a client without elicitation reads the question in the
result and answers by a later call with the same `conversation_id`; a client that declared elicitation is asked
in band (`elicitation/create` on the call's stream), and its accept, decline or cancel answers the interrupt while
the same call goes on. Install first: `.venv/bin/python tests/peers_env.py` and `npm ci --prefix tests/clients`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from node_clients import run_mcp
from peers_env import run_mcp_client
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.turn import Resume, approves
from gateway.server.app import create_app

Plan = list[dict[str, Any]]


def python_client(url: str, plan: Plan) -> list[dict[str, Any]]:
    run = run_mcp_client(url, plan)
    assert run.error is None, run.error
    return run.steps


def typescript_client(url: str, plan: Plan) -> list[dict[str, Any]]:
    run = run_mcp(url, plan)
    assert run["error"] is None, run["error"]
    return run["steps"]


CLIENTS = {"python": python_client, "typescript": typescript_client}
Send = Callable[[str, Plan], list[dict[str, Any]]]


@pytest.fixture(params=sorted(CLIENTS))
def send(request: pytest.FixtureRequest) -> Send:
    return CLIENTS[request.param]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with Served(create_agent_app("ag-ui", pace=0.01)) as agent:
        routes = [{"name": "helper", "paths": ["/helper"], "client_dialects": ["mcp"],
                   "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"}}]
        config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            yield f"{gateway.url}/mcp"


def call(message: str, conversation: str | None = None, **step: Any) -> dict[str, Any]:
    arguments = {"message": message} | ({"conversation_id": conversation} if conversation else {})
    return {"call": "helper", "arguments": arguments, **step}


def result(step: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in step, step
    assert step["isError"] is False, step
    return step


def test_a_client_without_elicitation_answers_by_a_later_call_with_the_conversation_id(url: str, send: Send) -> None:
    [asked] = send(url, [call("please approve the deletion")])
    asked = result(asked)
    conversation = asked["structured"]["conversation_id"]
    [interrupt] = asked["structured"]["interrupts"]
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"]
    assert "Delete /tmp/demo?" in asked["content"][0]
    assert f'call helper again with conversation_id "{conversation}"' in asked["content"][0]
    assert "elicited" not in asked

    [answered] = send(url, [call("yes", conversation)])
    assert result(answered)["content"] == [f'Resumed {interrupt["id"]}: "yes".']
    assert "interrupts" not in answered["structured"]

    [then] = send(url, [call("and now?", conversation)])  # nothing waits: a message again
    assert result(then)["content"] == ["You said: and now?. (turn 2)"]


def test_a_later_call_to_a_conversation_waiting_for_nothing_is_the_users_message(url: str, send: Send) -> None:
    [first] = send(url, [call("hello")])
    conversation = result(first)["structured"]["conversation_id"]
    [second] = send(url, [call("yes", conversation)])
    assert result(second)["content"] == ["You said: yes. (turn 2)"]


def test_a_yes_or_no_in_words_answers_an_approval_as_said() -> None:
    assert approves(Resume("int-1", payload="yes")) is True
    assert approves(Resume("int-1", payload="No.")) is False
    assert approves(Resume("int-1", payload="deny")) is False
    assert approves(Resume("int-1", payload="delete it, please")) is True  # not a no
