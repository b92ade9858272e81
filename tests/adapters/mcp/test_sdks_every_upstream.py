"""Both official MCP clients (`mcp` 2.3.0's Python `Client`, `@modelcontextprotocol/sdk` 1.32.2's TypeScript
`Client`: `tests/mcp_sdks.py`) at `/mcp` in front of the built-in agent served in every dialect, each a route: text
streamed as progress, a second turn by `conversation_id`, the agent's own tool, an approval asked by elicitation and
answered in the same call, a failure, and a cancel that the agent sees as its client leaving. One session a client
and an upstream runs every scenario, each call held to its scenario's check.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp_sdks import SDKS, run_sdk
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

UPSTREAMS = list(registry.DIALECTS)
PLAN = [("text", "hello", {}), ("multi-turn", "again", {}), ("server tool", "weather in Paris?", {}),
        ("interrupt", "please approve", {"elicit": {"action": "accept", "content": {"approved": True}}}),
        ("failure", "please fail", {}), ("cancel", "please be slow", {"cancel_after": 0.5})]
"""Each scenario's message, in the order one session sends them; the second turn continues the first's
conversation."""
NO_QUESTIONS = {"agent-respond": "the agent-respond contract has no human in the loop",
                "openai-chat": "Chat Completions has no human in the loop"}
"""Upstream dialects whose agent cannot ask: its question comes as the answer's text."""
Step = dict[str, Any]
Steps = dict[str, Step]


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[str, dict[str, str]]]:
    """The gateway's URL, and each dialect's agent's."""
    agents = {dialect: Served(create_agent_app(dialect, pace=0.01)) for dialect in UPSTREAMS}
    for agent in agents.values():
        agent.__enter__()
    try:
        routes = [{"name": f"to-{dialect}", "paths": [f"/to/{dialect}"], "client_dialects": ["mcp"],
                   "upstream": {"url": agent.url + registry.get(dialect).paths[0], "dialect": dialect}}
                  for dialect, agent in agents.items()]
        config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            yield gateway.url, {dialect: agent.url for dialect, agent in agents.items()}
    finally:
        for agent in agents.values():
            agent.__exit__(None, None, None)


def disconnects(agent: str) -> int:
    counted: int = httpx.get(f"{agent}/_disconnects", timeout=10).json()
    return counted


def streams_the_text_so_far_as_progress(upstream: str, step: Step, _: Steps) -> None:
    assert step["isError"] is False and step["content"] == ["You said: hello. (turn 1)"]
    messages = [message for _, _, message in step["progress"]]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(messages))
    assert messages[-1] == step["content"][0]
    assert [at for at, _, _ in step["progress"]] == list(range(1, len(messages) + 1))
    if upstream != "agent-respond":  # its reply is one JSON body: the text comes whole
        assert len(messages) > 1, messages


def continues_the_conversation_its_id_names(upstream: str, step: Step, steps: Steps) -> None:
    assert step["content"] == ["You said: again. (turn 2)"]
    assert step["structured"]["conversation_id"] == steps["text"]["structured"]["conversation_id"]


def shows_the_agents_own_tool_in_the_structured_content(upstream: str, step: Step, _: Steps) -> None:
    assert "It is sunny, 21C in Paris." in step["content"][0]
    if upstream == "openai-chat":  # Chat Completions streams no tool call the agent ran: its answer only
        assert "toolCalls" not in step["structured"]
        return
    [call] = step["structured"]["toolCalls"]
    assert call["name"] == "get_weather" and call["result"] == "sunny, 21C in Paris"


def asks_by_elicitation_and_goes_on_in_the_same_call(upstream: str, step: Step, _: Steps) -> None:
    assert step["isError"] is False
    if upstream in NO_QUESTIONS:
        assert "elicited" not in step and "Delete /tmp/demo?" in step["content"][0], NO_QUESTIONS[upstream]
        return
    [asked] = step["elicited"]
    assert asked["mode"] == "form" and asked["requestedSchema"]["properties"]
    [said] = step["content"]
    assert said.startswith("Resumed ") and ("true" in said or "yes" in said), said  # A2A's agent reads a yes
    assert "interrupts" not in step["structured"]


def fails_as_a_result_with_is_error(upstream: str, step: Step, _: Steps) -> None:
    assert step["isError"] is True and step["content"][-1] == "scripted failure"
    assert step["structured"]["error"]["message"] == "scripted failure"


def stops_when_its_client_aborts(upstream: str, step: Step, _: Steps) -> None:
    assert step["cancelled"] is True
    assert len(step["progress"]) < 20  # the slow run's 20 pieces did not all come


CHECKS = {"text": streams_the_text_so_far_as_progress, "multi-turn": continues_the_conversation_its_id_names,
          "server tool": shows_the_agents_own_tool_in_the_structured_content,
          "interrupt": asks_by_elicitation_and_goes_on_in_the_same_call, "failure": fails_as_a_result_with_is_error,
          "cancel": stops_when_its_client_aborts}


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_an_official_client_runs_every_scenario_through_the_agent_in_each_dialect(
        world: tuple[str, dict[str, str]], sdk: str, upstream: str) -> None:
    """One session runs every scenario (a process costs about a second); the agent must then have seen its client,
    the gateway, leave once: for the cancelled call."""
    gateway, agents = world
    before = disconnects(agents[upstream])
    plan = [{"call": f"to-{upstream}", **step, "arguments": {
                "message": message, "conversation_id": f"{sdk}-{upstream}-{scenario.replace('multi-turn', 'text')}"}}
            for scenario, message, step in PLAN]
    run = run_sdk(sdk, f"{gateway}/mcp", plan)
    assert run.error is None, run.error
    steps = dict(zip([scenario for scenario, _, _ in PLAN], run.steps, strict=True))
    for scenario, check in CHECKS.items():
        assert "error" not in steps[scenario], (scenario, steps[scenario])
        check(upstream, steps[scenario], steps)
    deadline = time.monotonic() + 5
    while disconnects(agents[upstream]) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert disconnects(agents[upstream]) == before + 1
