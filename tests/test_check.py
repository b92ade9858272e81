"""`agent-gateway check` against real endpoints: the built-in agent in every dialect, the third-party agents of the
test matrix (each passes what it supports), a gateway route, and a deliberately broken server whose every
violation must be found, with its frame."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from inkeep_upstream import create_inkeep_app
from peers_env import a2a_upstream, agkit_agui_upstream, agkit_upstream, langgraph_upstream, pydantic_upstream
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.check import SCENARIOS, Report, check
from gateway.cli import main
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

DIALECTS = ["ag-ui", "ag-kit", "vercel", "agent-respond", "langgraph"]
ALL_PASS = dict.fromkeys(SCENARIOS, "pass")


def outcomes(report: Report) -> dict[str, str]:
    return {result.scenario: result.outcome for result in report.results}


def explain(report: Report) -> str:
    return "\n".join(report.lines())


def run_check(url: str, dialect: str, **options: Any) -> Report:
    return asyncio.run(check(url, dialect, timeout=20, **options))


# -- the built-in agent, in every dialect

BUILT_IN = {
    "ag-ui": ALL_PASS,
    "ag-kit": ALL_PASS,
    "vercel": ALL_PASS,
    "agent-respond": {**ALL_PASS, "client-tool": "skip", "interrupt": "skip", "cancel": "skip"},
    "langgraph": ALL_PASS,
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_built_in_agent_passes_every_conversation_its_dialect_can_hold(dialect: str) -> None:
    with Served(create_agent_app(dialect)) as agent:
        report = run_check(agent.url + registry.get(dialect).paths[0], dialect)
    assert outcomes(report) == BUILT_IN[dialect], explain(report)
    assert not report.failed


# -- the third-party agents of the test matrix

# What each real peer is asked (the words its scripted model acts on) and what it shows; a skip says why.
PEERS: dict[str, dict[str, Any]] = {
    "pydantic-ai AGUIAdapter": {
        "dialect": "ag-ui", "path": "/ag-ui",
        "prompts": {"server-tool": "what is the weather", "client-tool": "use the frontend tool",
                    "interrupt": "please approve"},
        "outcomes": ALL_PASS},
    "pydantic-ai VercelAIAdapter, sdk 6": {
        "dialect": "vercel", "path": "/vercel",
        "prompts": {"server-tool": "what is the weather", "client-tool": "use the frontend tool",
                    "interrupt": "please approve"},
        # A Vercel request carries no tool list: the agent has no client tool to call.
        "outcomes": {**ALL_PASS, "client-tool": "skip"}},
    "pydantic-ai VercelAIAdapter, sdk 5": {
        "dialect": "vercel", "path": "/vercel5",
        "prompts": {"server-tool": "what is the weather", "client-tool": "use the frontend tool",
                    "interrupt": "please approve"},
        # SDK 5 has no approvals: the call awaiting one is left for the client to run instead.
        "outcomes": {**ALL_PASS, "client-tool": "skip", "interrupt": "skip"}},
    "cloudbase-agent-server 0.1.1": {
        "dialect": "ag-kit", "path": "/send-message",
        "prompts": {"server-tool": "what is the weather", "client-tool": "use the tool",
                    "interrupt": "please interrupt"},
        # A real finding: when the agent raises, 0.1.1 drops the connection mid-stream (no error event, no [DONE]).
        "outcomes": {**ALL_PASS, "error": "fail"},
        "violations": {"error": ["no-done"]}},
    "cloudbase-agent-server 0.1.22": {
        "dialect": "ag-ui", "path": "/send-message",
        "prompts": {"server-tool": "what is the weather", "client-tool": "use the tool",
                    "interrupt": "please interrupt"},
        # A real finding: a failing run sends RUN_ERROR twice, with snake_case ids @ag-ui/client strips.
        "outcomes": {**ALL_PASS, "error": "fail"},
        "violations": {"error": ["unknown-field", "unknown-field", "event-after-run-error"]}},
}
FAST_CANCEL = "skip"
"""A scripted model answers in one write: the checker may not be able to leave mid-run."""


@pytest.fixture(scope="module")
def peer_urls() -> Iterator[dict[str, str]]:
    with pydantic_upstream() as pydantic, agkit_upstream() as agkit, agkit_agui_upstream() as agkit_agui:
        yield {"pydantic-ai AGUIAdapter": pydantic, "pydantic-ai VercelAIAdapter, sdk 6": pydantic,
               "pydantic-ai VercelAIAdapter, sdk 5": pydantic, "cloudbase-agent-server 0.1.1": agkit,
               "cloudbase-agent-server 0.1.22": agkit_agui}


@pytest.mark.parametrize("peer", list(PEERS))
def test_each_real_agent_passes_what_it_supports(peer: str, peer_urls: dict[str, str]) -> None:
    spec = PEERS[peer]
    report = run_check(peer_urls[peer] + spec["path"], spec["dialect"], prompts=spec["prompts"])
    found = outcomes(report)
    assert found.pop("cancel") in ("pass", FAST_CANCEL), explain(report)
    expected = {k: v for k, v in spec["outcomes"].items() if k != "cancel"}
    assert found == expected, explain(report)
    for result in report.results:
        rules = [v.rule for step in result.steps for v in step.violations]
        assert rules == spec.get("violations", {}).get(result.scenario, []), explain(report)


def test_a_langgraph_server_passes_every_conversation_from_its_base_url() -> None:
    """`langgraph dev` serving the scripted graph: the checker makes a thread per conversation and runs on it, as
    the gateway does, with the default prompts (its graph acts on the built-in agent's words)."""
    with langgraph_upstream() as url:
        report = run_check(url, "langgraph")
    found = outcomes(report)
    assert found.pop("cancel") in ("pass", FAST_CANCEL), explain(report)
    assert found == {k: v for k, v in ALL_PASS.items() if k != "cancel"}, explain(report)
    assert not [v for result in report.results for step in result.steps for v in step.violations], explain(report)


def test_the_inkeep_run_api_passes_what_it_supports() -> None:
    # Paced as Inkeep paces (more quickly): unpaced, the whole answer may come in the checker's first read, and
    # then it cannot leave mid-run.
    with Served(create_inkeep_app(delta_delay=0.005)) as inkeep:
        report = run_check(inkeep.url + "/run/api/chat", "vercel", variant="inkeep",
                           prompts={"server-tool": "what is the weather"})
    # Inkeep takes no tool list and has no approvals a single request can answer.
    assert outcomes(report) == {**ALL_PASS, "client-tool": "skip", "interrupt": "skip"}, explain(report)


# -- a gateway route is an endpoint like any other


@pytest.mark.parametrize("client", DIALECTS)
def test_a_gateway_route_in_front_of_an_ag_kit_agent_passes_in_the_clients_dialect(client: str) -> None:
    with Served(create_agent_app("ag-kit")) as agent:
        config = GatewayConfig.model_validate({"routes": [{
            "client_dialects": [client], "paths": ["/route"],
            "upstream": {"url": agent.url + "/send-message", "dialect": "ag-kit"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            report = run_check(gateway.url + "/route", client)
    assert outcomes(report) == BUILT_IN[client], explain(report)


# -- a broken server: every violation found, with its frame

BROKEN: dict[str, tuple[str, bytes, list[tuple[str, int | None]]]] = {
    # dialect: (content type, body, [(rule, frame index)])
    "ag-ui": ("text/event-stream", b"".join([
        b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n',
        b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hi"}\n\n',
        b'data: {"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"search","parentMessageId":null}\n\n',
        b'data: {"type":"STEP_FINISHED","stepName":"plan"}\n\n',
        b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n',
        b'data: {"type":"TEXT_MESSAGE_START","messageId":"m2","role":"assistant"}\n\n',
    ]), [("text-content-without-start", 1), ("legacy-null", 2), ("step-finished-without-start", 3),
         ("run-finished-with-open-text-messages", 4), ("run-finished-with-open-tool-calls", 4),
         ("event-after-run-finished", 5), ("no-terminal-event", None)]),
    "ag-kit": ("text/event-stream", b"".join([
        b'data: {"type":"text","content":"hi"}\n\n',
        b'data: {"type":"tool-call-args","toolCallId":"c1","delta":"{"}\n\n',
        b'data: {"type":"text"}\n\n',
        b'data: {"type":"thinking","content":"hmm"}\n\n',
        b'data: {"type":"text","content":7}\n\n',
        b"data: not json\n\n",
    ]), [("tool-call-not-started", 1), ("missing-field", 2), ("unknown-event", 3), ("field-type", 4), ("json", 5),
         ("no-done", 5)]),
    "vercel": ("text/event-stream", b"".join([
        b'data: {"type":"start"}\n\n',
        b'data: {"type":"text-delta","id":"t1","delta":"hi"}\n\n',
        b'data: {"type":"text-start","id":"t2","extra":1}\n\n',
        b'data: {"type":"finish","finishReason":"bad"}\n\n',
        b'data: {"type":"tool-output-available","toolCallId":"nope","output":1}\n\n',
    ]), [("text-delta-without-start", 1), ("unknown-key", 2), ("wrong-type", 3), ("tool-output-without-call", 4)]),
    "agent-respond": ("text/plain", b'{"messages":[{"role":"assistant","content":"hi"},{"role":"user"}]}',
                      [("agent-response", 0)]),
}


def broken_app(content_type: str, body: bytes) -> Starlette:
    async def answer(request: Request) -> Response:
        return Response(body, media_type=content_type)

    return Starlette(routes=[Route("/agent", answer, methods=["POST"])])


@pytest.mark.parametrize("dialect", list(BROKEN))
def test_a_broken_server_fails_with_every_violation_and_its_frame(dialect: str, capsys: pytest.CaptureFixture[str]
                                                                  ) -> None:
    content_type, body, expected = BROKEN[dialect]
    with Served(broken_app(content_type, body)) as server:
        code = main(["check", server.url + "/agent", "--dialect", dialect, "--scenario", "text", "--json"])
    report = orjson.loads(capsys.readouterr().out)
    assert code == 1 and report["fail"] == 1
    (result,) = report["results"]
    (step,) = result["steps"]
    assert [(v["rule"], v["index"]) for v in step["violations"]] == expected
    assert all(note["rule"].startswith("convention-") for note in step["notes"])
    frames = body.split(b"\n\n") if content_type == "text/event-stream" else [body]
    for violation in step["violations"]:
        if violation["index"] is not None and violation["frame"] is not None:
            assert violation["frame"] in frames[violation["index"]].decode().removeprefix("data: ")


def test_the_human_report_shows_each_violation_with_its_frame(capsys: pytest.CaptureFixture[str]) -> None:
    content_type, body, _ = BROKEN["ag-kit"]
    with Served(broken_app(content_type, body)) as server:
        code = main(["check", server.url + "/agent", "--dialect", "ag-kit", "--scenario", "text"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  text" in out and "6 violations of the ag-kit rules" in out
    assert "request 1, frame 1: tool-call-not-started: tool-call-args for tool call 'c1'" in out
    assert '{"type":"tool-call-args","toolCallId":"c1","delta":"{"}' in out
    assert out.rstrip().endswith("0 passed, 1 failed, 0 skipped")


# -- the command line


def test_headers_reach_every_request_and_scenarios_can_be_picked(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[str | None] = []

    async def answer(request: Request) -> Response:
        seen.append(request.headers.get("authorization"))
        return Response(b'data: {"type":"text","content":"hi"}\n\ndata: [DONE]\n\n', media_type="text/event-stream")

    with Served(Starlette(routes=[Route("/agent", answer, methods=["POST"])])) as server:
        code = main(["check", server.url + "/agent", "--dialect", "ag-kit", "--scenario", "multi-turn",
                     "--scenario", "text", "--header", "Authorization: Bearer s3cret", "--json"])
    report = orjson.loads(capsys.readouterr().out)
    assert code == 0
    assert [r["scenario"] for r in report["results"]] == ["multi-turn", "text"]
    assert seen == ["Bearer s3cret"] * 3


def test_an_agent_that_shows_nothing_of_a_conversation_is_skipped_not_failed() -> None:
    async def answer(request: Request) -> Response:
        return Response(b'data: {"type":"text","content":"no"}\n\ndata: [DONE]\n\n', media_type="text/event-stream")

    with Served(Starlette(routes=[Route("/agent", answer, methods=["POST"])])) as server:
        report = run_check(server.url + "/agent", "ag-kit", scenarios=["server-tool", "client-tool", "interrupt",
                                                                          "error"])
    assert outcomes(report) == dict.fromkeys(["server-tool", "client-tool", "interrupt", "error"], "skip")
    assert not report.failed


def test_an_unreachable_endpoint_is_one_failure_not_seven(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "http://127.0.0.1:9/agent", "--dialect", "ag-kit"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.count("FAIL") == 1 and "ConnectError" in out


def test_an_openai_base_url_is_a_404_said_with_the_endpoints_to_try(capsys: pytest.CaptureFixture[str]) -> None:
    """OpenAI's answer to a POST at `/v1` is a 404 holding a well-formed error object: said as the 404 it is, once,
    with the endpoints under that base URL, not as an answer without text."""

    async def not_found(request: Request) -> Response:
        return Response(orjson.dumps({"error": {"message": "Invalid URL (POST /v1)", "type": "invalid_request_error",
                                                "param": None, "code": None}}), 404, media_type="application/json")

    with Served(Starlette(routes=[Route("/v1", not_found, methods=["POST"])])) as server:
        base = f"{server.url}/v1"
        assert main(["check", base, "--dialect", "openai-chat"]) == 1
        assert main(["check", base, "--dialect", "openai-responses", "--json"]) == 1
    human, machine = capsys.readouterr().out.split("\n0 passed, 1 failed, 0 skipped\n")
    assert human.count("FAIL") == 1
    assert f"FAIL  text         request 1: HTTP 404: nothing answers at {base}; try {base}/chat/completions " \
           f"(openai-chat) or {base}/responses (openai-responses)" in human
    [result] = orjson.loads(machine)["results"]
    assert result["detail"] == f"request 1: HTTP 404: nothing answers at {base}; try {base}/responses " \
                               f"(openai-responses) or {base}/chat/completions (openai-chat)"


@pytest.mark.parametrize(("argv", "message"), [
    (["--header", "no-colon"], "write it as 'Name: value'"),
    (["--prompt", "nope=hi"], "write it as SCENARIO=TEXT"),
    (["--variant", "inkeep"], "use it with --dialect vercel"),
    (["--timeout", "0"], "more than 0"),
])
def test_usage_mistakes_are_one_line_and_exit_2(argv: list[str], message: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", "http://127.0.0.1:9/agent", "--dialect", "ag-kit", *argv])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_an_a2a_agent_is_checked_from_its_base_url_as_the_gateway_finds_it(capsys: pytest.CaptureFixture[str]
                                                                           ) -> None:
    """The card at `<url>/.well-known/agent-card.json` names the endpoint, as it does for a gateway route."""
    with Served(create_agent_app("a2a")) as agent:
        assert main(["check", agent.url, "--dialect", "a2a", "--scenario", "text"]) == 0
    assert "PASS  text" in capsys.readouterr().out


def test_an_a2a_agent_on_http_json_only_is_checked_there_and_its_bare_responses_pass() -> None:
    """a2a-sdk's server with no JSON-RPC (its card lists HTTP+JSON alone): every conversation goes on HTTP+JSON,
    the cancel and the interrupt's answer too, and its bare responses are judged by that binding's rules."""
    with a2a_upstream() as url:
        report = asyncio.run(check(url + "/rest-only", "a2a"))
    assert outcomes(report) == {**ALL_PASS, "client-tool": "skip"}, explain(report)
