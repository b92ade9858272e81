"""The MCP project's conformance suite (`@modelcontextprotocol/conformance` 0.1.16, every server scenario, the
pending ones too) against the gateway's `/mcp` in front of the built-in agent, and against
`agent-gateway agent --dialect mcp`.

Each scenario is in one of two tables. `APPLIES`: what a server exposing agents as tools must do, and does; each of
its checks must pass. `DOES_NOT_APPLY`: scenarios that call the suite's reference tools (`test_simple_text`, ... with
no arguments: the gateway's tools are its routes, which take a message) or methods the gateway does not serve
(resources, prompts, completions); each must still fail for the reason written next to it. So a scenario that
starts to pass, fails another way, or is new in the suite fails this test, and the tables are read again.
Install first: `npm ci --prefix tests/clients` (the suite runs on Node 20 through `tests/clients/mcp-conformance.mjs`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from node_clients import run_mcp_conformance
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from tests.adapters.mcp.agent_command import agent_command

APPLIES: dict[str, str] = {
    "server-initialize": "the handshake: protocolVersion, capabilities and serverInfo",
    "ping": "ping answered with {}",
    "logging-set-level": "the gateway advertises logging: a session's level picks the log lines of its calls",
    "tools-list": "each route the caller may use is a tool with a name, a description and an input schema",
    "server-sse-multiple-streams": "concurrent POSTs in one session, each answered",
    "dns-rebinding-protection": "a localhost server refuses a foreign Host and Origin, and takes its own",
}
"""Every check of these scenarios passes."""

REFERENCE_TOOL = ("it calls the suite's reference tool {tool} with no arguments; the gateway's tools are its routes, "
                  "each an agent that takes a message")
SERVES_TOOLS_ONLY = "the gateway's routes are tools only: it serves no resources, prompts or completions"

DOES_NOT_APPLY: dict[str, tuple[str, str]] = {
    **{scenario: (REFERENCE_TOOL.format(tool=tool), f"Unknown tool: {tool}") for scenario, tool in {
        "tools-call-simple-text": "test_simple_text",
        "tools-call-image": "test_image_content",
        "tools-call-audio": "test_audio_content",
        "tools-call-embedded-resource": "test_embedded_resource",
        "tools-call-mixed-content": "test_multiple_content_types",
        "tools-call-with-logging": "test_tool_with_logging",  # the agent's log lines: test_clients.py
        "tools-call-error": "test_error_handling",  # a failing agent's isError: test_clients.py
        "tools-call-with-progress": "test_tool_with_progress",  # progress with the text so far: test_clients.py
        "tools-call-sampling": "test_sampling",  # an agent brings its own model: the gateway never samples
        "tools-call-elicitation": "test_elicitation",
        "elicitation-sep1034-defaults": "test_elicitation_sep1034_defaults",
        "elicitation-sep1330-enums": "test_elicitation_sep1330_enums",
    }.items()},
    "json-schema-2020-12": (REFERENCE_TOOL.format(tool="json_schema_2020_12_tool") + ", whose input schema is "
                            "the suite's", "Tool 'json_schema_2020_12_tool' not found"),
    "server-sse-polling": (REFERENCE_TOOL.format(tool="test_reconnection") + "; the unknown tool is answered in "
                           "JSON, so the suite finds no stream to resume (a call of a route is: test_resumption.py)",
                           "priming event tests not applicable"),
    **{scenario: (SERVES_TOOLS_ONLY, "Method not found") for scenario in (
        "completion-complete", "resources-list", "resources-read-text", "resources-read-binary",
        "resources-templates-read", "resources-subscribe", "resources-unsubscribe", "prompts-list",
        "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image")},
}
"""Each scenario that does not apply: why, and words its checks say that show it still fails for that reason."""

PASSING = {"SUCCESS", "INFO"}
"""What a check of an applying scenario may say: INFO is the suite's note (SSE streams are optional)."""


@contextmanager
def gateway() -> Iterator[str]:
    """The gateway's `/mcp`, a route in front of the built-in agent."""
    with Served(create_agent_app("ag-ui")) as agent:
        route = {"name": "agent-gateway", "paths": ["/agent"], "client_dialects": ["mcp"],
                 "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"},
                 "agent": {"description": "The gateway's built-in scripted agent"}}
        config = GatewayConfig.model_validate({"routes": [route]})
        with Served(create_app(config, store=MemoryStore())) as served:
            yield f"{served.url}/mcp"


SERVERS: dict[str, Callable[[], AbstractContextManager[str]]] = {"gateway": gateway, "agent command": agent_command}


@pytest.fixture(scope="module", params=list(SERVERS))
def results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, list[dict[str, Any]]]]:
    with SERVERS[request.param]() as url:
        yield run_mcp_conformance(url, Path(tmp_path_factory.mktemp("conformance")))


def said(checks: list[dict[str, Any]]) -> str:
    return "\n".join(f"{c.get('id')} {c.get('status')}: {c.get('errorMessage') or ''} "
                     f"{orjson.dumps(c.get('details')).decode()[:300]}" for c in checks)


def test_every_scenario_of_the_suite_is_judged_here(results: dict[str, list[dict[str, Any]]]) -> None:
    assert not set(APPLIES) & set(DOES_NOT_APPLY)
    assert sorted(results) == sorted({*APPLIES, *DOES_NOT_APPLY}), "a scenario the tables do not name, or one gone"


@pytest.mark.parametrize("scenario", sorted(APPLIES))
def test_a_scenario_that_applies_to_a_gateway_of_agents_passes(results: dict[str, list[dict[str, Any]]],
                                                                scenario: str) -> None:
    checks = results[scenario]
    assert checks, f"{scenario} wrote no checks"
    assert all(c["status"] in PASSING for c in checks), said(checks)
    assert any(c["status"] == "SUCCESS" for c in checks), said(checks)


@pytest.mark.parametrize("scenario", sorted(DOES_NOT_APPLY))
def test_a_scenario_that_does_not_apply_still_fails_for_its_reason(results: dict[str, list[dict[str, Any]]],
                                                                   scenario: str) -> None:
    why, shown_by = DOES_NOT_APPLY[scenario]
    checks = results[scenario]
    assert not any(c["status"] == "SUCCESS" for c in checks), f"{scenario} now passes a check: does it apply?\n" \
                                                              f"{said(checks)}"
    assert shown_by in said(checks), f"{scenario} no longer fails because {why}:\n{said(checks)}"
