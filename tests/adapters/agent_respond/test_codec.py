from __future__ import annotations

import orjson
import pytest
from helpers import decode, encode

from adapters import registry
from adapters.agent_respond.request import build_request, parse_request
from gateway.core.errors import InvalidRequest
from gateway.core.events import (
    Interrupt,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)

# Shaped exactly as the platform sends it: every optional field present as null, as Connexity-AI/connexity-evals
# (1c30d97) posts `AgentRequest.model_dump(mode="json")`, checked by logging its requests.
PLATFORM_REQUEST = {
    "messages": [
        {"role": "user", "content": "Refund please", "tool_calls": None, "tool_call_id": None, "name": None},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "lookup", "arguments": "{}"}, "tool_result": None}], "tool_call_id": None, "name": None},
        {"role": "tool", "content": "found", "tool_calls": None, "tool_call_id": "c1", "name": None},
        {"role": "assistant", "content": "Done.", "tool_calls": None, "tool_call_id": None, "name": None},
        {"role": "user", "content": "thanks", "tool_calls": None, "tool_call_id": None, "name": None},
    ],
    "metadata": {"test_case_id": "tc-1", "turn_index": 5},
}


def test_platform_request_with_nulls_reads_as_a_full_history_turn() -> None:
    turn = parse_request(PLATFORM_REQUEST)
    assert turn.history == "full" and turn.metadata == {"test_case_id": "tc-1", "turn_index": 5}
    assert [m.role for m in turn.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert parse_request({"messages": []}).messages == []  # agent-first test cases


def test_unknown_role_is_named() -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_request({"messages": [{"role": "developer", "content": "x"}]})
    assert caught.value.details[0]["field"] == "messages[0].role"


def test_upstream_request_round_trips() -> None:
    body = orjson.loads(build_request(parse_request(PLATFORM_REQUEST)).body)
    assert body["metadata"] == PLATFORM_REQUEST["metadata"]
    assert body["messages"][1] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}


def test_run_becomes_openai_style_messages_ending_with_the_assistant() -> None:
    events = [RunStarted(), TextStart("m"), TextDelta("m", "Let me look."), ToolCallStart("c", "lookup"),
              ToolCallArgs("c", "{}"), ToolCallEnd("c"), ToolResult("c", {"found": True}), TextStart("n"),
              TextDelta("n", "Found it."), TextEnd("n"),
              Usage(input_tokens=10, output_tokens=5, total_tokens=15, model="m1", provider="p1"), RunFinished()]
    body = orjson.loads(encode("agent-respond", events))
    assert body == {
        "messages": [
            {"role": "assistant", "content": "Let me look.", "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
            {"role": "tool", "content": '{"found":true}', "tool_call_id": "c", "name": "lookup"},
            {"role": "assistant", "content": "Found it."}],
        "model": "m1", "provider": "p1", "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def test_interrupt_or_client_tool_ends_with_an_assistant_message_that_says_so() -> None:
    body = orjson.loads(encode("agent-respond", [RunStarted(), Interrupt("i", reason="approval", message="Delete?"),
                                                  RunFinished(outcome="interrupt")]))
    assert body["messages"][-1] == {"role": "assistant",
                                    "content": "[interrupted] The agent paused for human input: Delete?"}
    body = orjson.loads(encode("agent-respond", [RunStarted(), ToolCallStart("c", "pick"), ToolCallEnd("c"),
                                                  RunFinished()]))
    assert body["messages"][-1]["role"] == "assistant" and "pick" in body["messages"][-1]["content"]


def test_failed_run_is_a_502_or_504_with_what_was_said() -> None:
    encoder = registry.get("agent-respond").new_encoder(None)
    body = orjson.loads(encoder.encode([RunStarted(), TextDelta("m", "partial"),
                                        RunError("boom", code="upstream_error")]))
    assert encoder.status_code == 502
    assert body == {"error": {"code": "upstream_error", "message": "boom"},
                    "messages": [{"role": "assistant", "content": "partial"}]}
    encoder = registry.get("agent-respond").new_encoder(None)
    encoder.encode([RunStarted(), RunError("slow", code="upstream_timeout")])
    assert encoder.status_code == 504


def test_response_body_expands_into_events_and_bad_bodies_into_errors() -> None:
    body = b'{"messages":[{"role":"assistant","content":"hi","tool_calls":null}],"model":"x"}'
    events = decode("agent-respond", body, chunk_size=5)
    assert [type(e).__name__ for e in events] == ["RunStarted", "TextStart", "TextDelta", "TextEnd", "Usage",
                                                  "RunFinished"]
    assert isinstance(decode("agent-respond", b"<html>502</html>")[-1], RunError)
    assert decode("agent-respond", b'{"detail":"nope"}')[-1] == RunError("nope", code="upstream_bad_event")
    error_body = (b'{"error":{"code":"agent_error","message":"boom"},'
                  b'"messages":[{"role":"assistant","content":"so far"}]}')
    events = decode("agent-respond", error_body)
    assert TextDelta(events[2].message_id, "so far") in events  # type: ignore[union-attr]
    assert events[-1] == RunError("boom", code="agent_error")
    assert isinstance(decode("agent-respond", b'{"messages":[]}')[-1], RunFinished)


def test_lenient_reading_of_odd_but_valid_upstream_bodies() -> None:
    body = (b'{"messages":[{"role":"assistant","content":[{"type":"text","text":"hi"}],'
            b'"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"a":1}}}]},'
            b'{"role":"assistant","content":"x","tool_calls":5}]}')
    events = decode("agent-respond", body)
    assert TextDelta(events[2].message_id, "hi") in events  # type: ignore[union-attr]
    assert ToolCallArgs("c", '{"a":1}') in events
    assert isinstance(events[-1], RunFinished)


def test_an_agents_state_reaches_an_ag_ui_client_as_its_state() -> None:
    """`metadata.state` of an agent-respond upstream's answer is the run's state: `@ag-ui/client`, in front of it,
    holds it after the run (a `STATE_SNAPSHOT`), as it would from an AG-UI agent."""
    from node_clients import run_agui
    from servers import Served

    from gateway.agent.server import create_agent_app
    from gateway.config import GatewayConfig
    from gateway.conversations.store import MemoryStore
    from gateway.server.app import create_app

    with Served(create_agent_app("agent-respond")) as agent:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "eval", "paths": ["/agui"], "client_dialects": ["ag-ui"],
            "upstream": {"url": f"{agent.url}/agent/respond", "dialect": "agent-respond"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            (step,) = run_agui({"url": f"{gateway.url}/agui", "threadId": "state",
                                "steps": [{"messages": [{"role": "user", "content": "state please"}]}]})["steps"]
    assert step["error"] is None and "STATE_SNAPSHOT" in step["types"]
    assert step["state"] == {"count": 1}
