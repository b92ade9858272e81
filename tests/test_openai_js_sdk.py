"""The official `openai` npm SDK (7.57.0, `tests/clients/openai-run.mjs`) through the gateway, in front of the
built-in agent speaking every other dialect: the JS twin of `test_openai_sdk.py`'s Python SDK calls. Chat
Completions streamed (through the SDK's `ChatCompletionStream` accumulator) and in one body, a client tool answered
by hand and by `runTools`; Responses streamed (through `ResponseStream`), continued by `previous_response_id`, a
function call round trip, a stored response retrieved and deleted; errors as the SDK's `APIError`s.

One node process per upstream runs every step (`run_openai_js`); each test asserts on one step's report."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
from node_clients import run_openai_js
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig, Route, Store, Upstream
from gateway.server.app import create_app

UPSTREAMS = ["ag-ui", "ag-kit", "vercel", "agent-respond", "a2a", "langgraph", "openai-chat", "openai-responses"]
STEPS = ["chat-stream", "chat-body", "responses-stream", "responses-turns", "retrieve", "errors"]
TOOL_STEPS = ["chat-tool", "responses-tool"]
HELLO = "You said: hello. (turn 1)"
DEMO_ARGUMENTS = '{"question":"demo"}'  # what the agent asks ask_user (its schema's one required string)


def _carries_tools(upstream: str) -> bool:
    """Client tools reach only upstreams whose requests carry tool definitions; the others' agents declare their
    own (the translation matrix's "lossy: client tool")."""
    return "tool_definitions" in registry.get(upstream).carries


@pytest.fixture(scope="module", params=UPSTREAMS)
def seen(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """What the JS SDK made of every step, through the gateway in front of the agent speaking `request.param`."""
    dialect = request.param
    steps = STEPS + (TOOL_STEPS if _carries_tools(dialect) else [])
    with Served(create_agent_app(dialect)) as agent:
        route = Route(name="agent", client_dialects=["openai-chat", "openai-responses"],
                      upstream=Upstream(url=agent.url + registry.get(dialect).paths[0], dialect=dialect))
        with Served(create_app(GatewayConfig(routes=[route], store=Store(url="memory://")))) as gw:
            yield run_openai_js(gw.url + "/v1", steps)


def _step(seen: dict[str, Any], name: str) -> dict[str, Any]:
    if name not in seen:
        pytest.skip("this upstream's requests carry no client tools")
    report: dict[str, Any] = seen[name]
    assert "thrown" not in report, f"the SDK threw in {name}: {report['thrown']}"
    return report


def _collapsed(types: list[str]) -> list[str]:
    """Event types with each run of deltas as one: how many deltas an upstream sends is its own affair."""
    return [t for i, t in enumerate(types) if not (t.endswith(".delta") and i and types[i - 1] == t)]


def _numbered_in_order(report: dict[str, Any]) -> None:
    sequence = report["sequence"]
    assert all(isinstance(n, int) for n in sequence)
    assert all(a < b for a, b in pairwise(sequence)), sequence


def _api_error(error: dict[str, Any] | None, name: str, status: int | None, **fields: str) -> None:
    assert error is not None, "the SDK threw nothing"
    assert error["isAPIError"] and (error["name"], error["status"]) == (name, status), error
    assert {key: error[key] for key in fields} == fields, error


def test_chat_completions_stream_the_agents_text_with_usage_and_a_finish_reason(seen: dict[str, Any]) -> None:
    report = _step(seen, "chat-stream")
    assert report["text"] == HELLO and report["finishReasons"] == ["stop"]
    assert report["objects"] == ["chat.completion.chunk"] and len(report["ids"]) == 1
    assert report["lastChoices"] == 0  # include_usage: a last chunk with no choices, carrying the usage
    assert {"completion_tokens", "prompt_tokens", "total_tokens"} <= set(report["usage"])  # details where reported
    assert report["final"] == {"role": "assistant", "content": HELLO, "finish_reason": "stop"}


def test_a_chat_completion_in_one_body(seen: dict[str, Any], request: pytest.FixtureRequest) -> None:
    report = _step(seen, "chat-body")
    assert report["object"] == "chat.completion" and report["choices"] == 1
    assert (report["role"], report["content"], report["finish_reason"]) == ("assistant", HELLO, "stop")
    # The built-in agent counts a token a word ("hello" in, five words out), where its dialect carries usage
    carried = request.node.callspec.params["seen"] in ("ag-ui", "agent-respond", "langgraph", "openai-chat",
                                                       "openai-responses")
    usage = report["usage"]
    counts = {name: usage[name] for name in ("prompt_tokens", "completion_tokens", "total_tokens")} if usage else None
    assert counts == ({"prompt_tokens": 1, "completion_tokens": 5, "total_tokens": 6} if carried else None)


def test_chat_completions_round_trip_a_client_tool_by_hand_and_with_run_tools(seen: dict[str, Any]) -> None:
    report = _step(seen, "chat-tool")
    first = report["first"]
    assert first["finish_reason"] == "tool_calls" and not first["content"]
    [call] = first["toolCalls"]
    assert (call["type"], call["name"], call["arguments"]) == ("function", "ask_user", DEMO_ARGUMENTS) and call["id"]
    assert report["second"] == {"content": "The tool said: blue.", "finish_reason": "stop"}
    assert report["runner"] == {"content": "The tool said: green.", "calls": [DEMO_ARGUMENTS],
                                "roles": ["user", "assistant", "tool", "assistant"]}


def test_responses_stream_semantic_events_in_order(seen: dict[str, Any]) -> None:
    report = _step(seen, "responses-stream")
    assert _collapsed(report["types"]) == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"]
    _numbered_in_order(report)
    assert report["deltas"] == HELLO
    assert report["final"] == {"id": report["createdId"], "status": "completed", "output_text": HELLO,
                               "outputTypes": ["message"]}


def test_responses_continue_from_previous_response_id(seen: dict[str, Any]) -> None:
    report = _step(seen, "responses-turns")
    assert report["first"]["output_text"] == HELLO
    assert report["second"] == {"output_text": "You said: again. (turn 2)",
                                "previous_response_id": report["first"]["id"]}


def test_responses_round_trip_a_function_call(seen: dict[str, Any]) -> None:
    report = _step(seen, "responses-tool")
    types = _collapsed(report["types"])
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-5:] == ["response.output_item.added", "response.function_call_arguments.delta",
                          "response.function_call_arguments.done", "response.output_item.done", "response.completed"]
    _numbered_in_order(report)
    final = report["final"]
    [call] = final["calls"]
    assert final["status"] == "completed" and (call["name"], call["arguments"]) == ("ask_user", DEMO_ARGUMENTS)
    assert report["after"] == {"output_text": "The tool said: blue."}


def test_a_stored_response_is_retrieved_then_deleted(seen: dict[str, Any]) -> None:
    report = _step(seen, "retrieve")
    created = report["created"]
    assert created["output_text"] == HELLO
    assert report["retrieved"] == {"id": created["id"], "status": "completed", "output_text": HELLO}
    assert report["deleted"] == {"id": created["id"], "object": "response", "deleted": True}
    _api_error(report["afterDelete"], "NotFoundError", 404, code="response_not_found")


def test_refusals_are_the_sdks_error_classes_naming_the_field(seen: dict[str, Any]) -> None:
    report = _step(seen, "errors")
    _api_error(report["unknownModel"], "NotFoundError", 404, code="model_not_found", param="model")
    _api_error(report["emptyMessages"], "UnprocessableEntityError", 422, param="messages")
    _api_error(report["badRole"], "UnprocessableEntityError", 422, param="input[0].role")
    _api_error(report["unknownPrevious"], "NotFoundError", 404, code="previous_response_not_found",
               param="previous_response_id")


def test_a_failing_run_is_an_api_error_in_both_apis_after_the_text_before_it(seen: dict[str, Any]) -> None:
    report = _step(seen, "errors")
    for api in ("chatFail", "responsesFail"):
        failed = report[api]
        _api_error(failed["error"], "APIError", None, message="scripted failure", type="server_error")
        assert failed["text"] == "Working on it...", api
