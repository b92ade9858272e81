from __future__ import annotations

import orjson
import pytest
from helpers import decode, encode, kinds

from adapters.ag_kit.request import build_request, parse_request
from gateway.core.errors import InvalidRequest
from gateway.core.events import Interrupt, RunError, RunFinished, RunStarted, TextDelta, ToolCallStart
from gateway.core.turn import Message, Resume, Tool, ToolCall, Turn


def test_send_message_reads_as_a_delta_turn_with_parsed_tool_schemas() -> None:
    turn = parse_request({
        "conversationId": "c1",
        "messages": [{"role": "tool", "content": "ok", "tool_call_id": "call_A"}],
        "tools": [{"name": "t", "description": "d", "parameters": "{\"type\":\"object\"}"},
                  {"name": "u", "description": "d", "parameters": {"type": "object"}}],
    })
    assert turn.history == "delta" and turn.conversation_id == "c1"
    assert turn.messages == [Message("tool", "ok", tool_call_id="call_A")]
    assert [t.parameters for t in turn.tools] == [{"type": "object"}, {"type": "object"}]


def test_resume_payload_string_is_read_as_json() -> None:
    turn = parse_request({"conversationId": "c", "resume": {"interruptId": "i", "payload": "{\"approved\":true}"}})
    assert turn.resume == [Resume("i", "resolved", {"approved": True})] and turn.messages == []


def test_missing_conversation_id_and_bad_schema_are_named() -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_request({"messages": [], "tools": [{"name": "t", "parameters": "{not json"}]})
    fields = {d["field"] for d in caught.value.details}
    assert fields == {"conversationId", "tools[0].parameters"}


def test_upstream_request_sends_new_user_and_tool_messages_and_schemas_as_strings() -> None:
    turn = Turn([Message("tool", "42", tool_call_id="c")], history="delta", conversation_id="conv",
                tools=[Tool("f", "F", {"type": "object"})])
    body = orjson.loads(build_request(turn).body)
    assert body == {"conversationId": "conv", "messages": [{"role": "tool", "content": "42", "toolCallId": "c"}],
                    "tools": [{"name": "f", "description": "F", "parameters": "{\"type\":\"object\"}"}]}


def test_a_new_conversation_is_given_the_whole_history_with_what_the_agent_said_as_text() -> None:
    turn = Turn([Message("user", "hi"), Message("assistant", "", "a0", tool_calls=[ToolCall("c", "f")]),
                 Message("tool", "42", tool_call_id="c"), Message("assistant", "It is 42.", "a1"),
                 Message("user", "why?")], history="full", conversation_id="conv")
    assert orjson.loads(build_request(turn).body)["messages"] == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "id": "a1", "content": "It is 42."},
        {"role": "user", "content": "why?"}]


def test_resume_goes_upstream_as_a_json_string_without_messages() -> None:
    body = orjson.loads(build_request(Turn([], "delta", "conv", resume=[Resume("i", payload={"a": 1})])).body)
    assert "messages" not in body and body["resume"] == {"interruptId": "i", "payload": "{\"a\":1}"}


def test_loose_text_becomes_messages_split_at_tool_calls_with_the_text_as_parent() -> None:
    stream = (b'data: {"type":"text","content":"Let me "}\n\ndata: {"type":"text","content":"check"}\n\n'
              b'data: {"type":"tool-call-start","toolCallId":"c","toolCallName":"f"}\n\n'
              b'data: {"type":"tool-call-end","toolCallId":"c"}\n\n'
              b'data: {"type":"tool-result","toolCallId":"c","result":"2"}\n\n'
              b'data: {"type":"text","content":"done"}\n\ndata: [DONE]\n\n')
    events = decode("ag-kit", stream)
    assert kinds(events) == ["RunStarted", "TextStart", "TextDelta", "TextDelta", "TextEnd", "ToolCallStart",
                             "ToolCallEnd", "ToolResult", "TextStart", "TextDelta", "TextEnd", "RunFinished"]
    start = next(e for e in events if isinstance(e, ToolCallStart))
    assert start.parent_message_id == events[1].message_id  # type: ignore[union-attr]


def test_stream_without_done_is_an_error_and_old_server_error_frame_is_read() -> None:
    assert isinstance(decode("ag-kit", b'data: {"type":"text","content":"x"}\n\n')[-1], RunError)
    events = decode("ag-kit", b'data: {"error": "Server error", "details": "boom"}\n\n')
    assert events[-1] == RunError("Server error: boom", code="upstream_error")


def test_encoder_writes_text_interrupts_errors_and_one_done() -> None:
    out = encode("ag-kit", [RunStarted(), TextDelta("m", "hi"), Interrupt("i", reason="why", payload={"a": 1}),
                            RunFinished(outcome="interrupt")])
    assert out == (b'data: {"type":"text","content":"hi"}\n\n'
                   b'data: {"type":"interrupt","id":"i","reason":"why","payload":{"a":1}}\n\n'
                   b"data: [DONE]\n\n")
    assert encode("ag-kit", [RunStarted(), RunError("boom")]) == (b'data: {"type":"error","error":"boom"}\n\n'
                                                                    b"data: [DONE]\n\n")


def test_ag_ui_events_on_the_same_path_are_read_too() -> None:
    """cloudbase-agent-server 0.1.2-0.1.11 answer send-message in AG-UI, followed by [DONE]."""
    stream = (b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
              b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}\n\n'
              b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
              b"data: [DONE]\n\n")
    assert kinds(decode("ag-kit", stream)) == ["RunStarted", "TextStart", "TextDelta", "TextEnd", "RunFinished"]
