"""`agent-gateway check URL --dialect mcp` against real MCP endpoints: the SDK's MCPServer (`mcp` 2.3.0,
`tests/peers/mcp_server.py`), the gateway's own `/mcp`, and the built-in agent speaking MCP. The tool a
conversation calls is `agent` unless `--agent` names another, as a LangGraph assistant is named: an MCP server's
tools are its agents, and the gateway's are its routes. Install first: `.venv/bin/python tests/peers_env.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from peers_env import mcp_upstream
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.check import Report, ask_upstream, check
from gateway.cli import main
from gateway.config import GatewayConfig, Route
from gateway.config.upstream import Upstream
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

KEY = "sk-team-0123456789abcdef"
ROUTE_SHOWS = {"text": "pass", "multi-turn": "pass", "server-tool": "pass", "client-tool": "skip",
               "interrupt": "pass", "error": "pass", "cancel": "pass"}
"""What the built-in agent shows through an MCP face: its own tool calls in `structuredContent`, a failure as
`isError`, an interrupt as the 2026-07-28 face asks it (`input_required`), which `check` answers as the gateway
answers an MCP upstream's question (the call retried); a client's tools MCP cannot carry (its client calls the agent
as one tool and runs none of the agent's)."""


@dataclass
class World:
    server: str
    """The SDK's MCPServer: its `/mcp`."""
    gateway: str
    """The gateway's `/mcp`: routes `helper` (anyone) and `team` (a key), the built-in agent behind both."""


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with mcp_upstream() as server, Served(create_agent_app("ag-ui", pace=0.01)) as agent:
        upstream = {"url": f"{agent.url}/agui", "dialect": "ag-ui"}
        routes: list[dict[str, Any]] = [
            {"name": "helper", "paths": ["/helper"], "client_dialects": ["mcp"], "upstream": upstream},
            {"name": "team", "paths": ["/team"], "client_dialects": ["mcp"], "upstream": upstream,
             "auth": {"keys": [KEY]}}]
        config = GatewayConfig.model_validate({"routes": routes})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            yield World(f"{server}/mcp", f"{gateway.url}/mcp")


def run_check(url: str, scenarios: list[str] | None = None, **options: Any) -> Report:
    if scenarios is not None:
        options["scenarios"] = scenarios
    return asyncio.run(check(url, "mcp", timeout=20, **options))


def outcomes(report: Report) -> dict[str, str]:
    return {result.scenario: result.outcome for result in report.results}


def explain(report: Report) -> str:
    return "\n".join(report.lines())


def test_check_names_the_sdk_servers_tool_it_calls_and_holds_its_conversation(world: World) -> None:
    report = run_check(world.server, ["text", "multi-turn", "error"], agent="oneshot")
    found = outcomes(report)
    assert found["text"] == found["multi-turn"] == "pass", explain(report)
    assert "sent the whole history" in report.results[1].detail  # oneshot keeps no conversations
    assert found["error"] == "skip"  # oneshot never fails: nothing to judge


def test_check_judges_a_failing_tool_of_the_sdk_server_by_its_is_error(world: World) -> None:
    report = run_check(world.server, ["error"], agent="fail")
    [error] = report.results
    assert error.outcome == "pass", explain(report)
    assert "failed on purpose" in error.detail


def test_check_holds_the_gateways_mcp_face_to_the_rules_an_mcp_client_does(world: World) -> None:
    report = run_check(world.gateway, list(ROUTE_SHOWS), agent="helper")
    assert outcomes(report) == ROUTE_SHOWS, explain(report)
    assert not report.failed
    assert "get_weather called and answered" in report.results[2].detail


def test_the_client_tool_conversation_is_not_applicable_to_an_mcp_face_and_says_why(world: World) -> None:
    report = run_check(world.gateway, ["client-tool"], agent="helper")
    [client_tool] = report.results
    assert client_tool.outcome == "skip", explain(report)
    assert client_tool.detail == ("mcp cannot carry a client's tools: a run never ends on a tool call for its client "
                                  "to run, nor takes its result")
    assert client_tool.steps == []  # nothing sent: the built-in agent's own get_location would have looked like one


def test_a_keyed_route_is_checked_with_the_key_in_a_header(world: World) -> None:
    refused = run_check(world.gateway, ["text"], agent="team")
    assert refused.failed and "Unknown tool: team" in refused.results[0].detail  # not this caller's tool
    opened = run_check(world.gateway, ["text"], agent="team", headers={"authorization": f"Bearer {KEY}"})
    assert outcomes(opened) == {"text": "pass"}, explain(opened)


def test_a_tool_the_server_does_not_have_fails_the_check_in_the_servers_words(world: World) -> None:
    report = run_check(world.gateway, ["text"])  # `agent`, which no route of this gateway is called
    [text] = report.results
    assert text.outcome == "fail"
    assert "Unknown tool: agent" in text.detail, explain(report)


def test_the_command_line_names_the_tool_with_agent(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", world.gateway, "--dialect", "mcp", "--agent", "helper", "--scenario", "text", "--json"])
    report = orjson.loads(capsys.readouterr().out)
    assert code == 0, report
    assert (report["dialect"], report["pass"], report["fail"]) == ("mcp", 1, 0)


def test_serve_send_request_asks_an_mcp_upstream_for_the_routes_tool(world: World) -> None:
    passed, said = asyncio.run(ask_upstream(Route(name="front", upstream=Upstream(url=world.gateway, dialect="mcp",
                                                                                 agent="helper"))))
    assert passed, said


def test_the_built_in_agent_speaking_mcp_passes_every_conversation_it_can_hold() -> None:
    with Served(create_agent_app("mcp")) as agent:
        report = run_check(f"{agent.url}/mcp", list(ROUTE_SHOWS))
    assert outcomes(report) == ROUTE_SHOWS, explain(report)
