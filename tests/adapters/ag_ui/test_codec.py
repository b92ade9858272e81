from __future__ import annotations

import orjson
import pytest
from helpers import decode, encode, kinds

from adapters.ag_ui.request import build_request, parse_request
from gateway.core.errors import InvalidRequest
from gateway.core.events import (
    Interrupt,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.turn import Message, Resume, Tool, ToolCall, Turn

REQUEST = {
    "threadId": "t1", "runId": "r1", "protocolVersion": "1.0", "state": {"count": 0},
    "messages": [
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "", "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "ask", "arguments": "{\"q\":1}"}}]},
        {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "yes"},
        {"id": "x1", "role": "activity", "activityType": "progress", "content": {}},
    ],
    "tools": [{"name": "ask", "description": "Ask", "parameters": {"type": "object"}}],
    "context": [{"description": "locale", "value": "en"}],
    "forwardedProps": {"demo": True},
    "resume": [{"interruptId": "int-1", "status": "resolved", "payload": {"ok": True}}],
}


def test_run_agent_input_reads_as_a_full_history_turn() -> None:
    turn = parse_request(REQUEST)
    assert (turn.conversation_id, turn.run_id, turn.history) == ("t1", "r1", "full")
    assert [m.role for m in turn.messages] == ["user", "assistant", "tool"]  # activity is UI state, left out
    assert turn.messages[1].tool_calls == [ToolCall("c1", "ask", "{\"q\":1}")]
    assert turn.tools == [Tool("ask", "Ask", {"type": "object"})]
    assert turn.resume == [Resume("int-1", "resolved", {"ok": True})]


def test_invalid_request_names_the_field_and_what_was_expected() -> None:
    bad = dict(REQUEST, messages=[{"id": "u1", "role": "user"}], runId=5)
    with pytest.raises(InvalidRequest) as caught:
        parse_request(bad)
    fields = {d["field"] for d in caught.value.details}
    assert fields == {"runId", "messages[0].content"}
    assert "runId: Input should be a valid string" in caught.value.message


def test_unknown_role_is_rejected_with_the_roles_it_could_be() -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_request(dict(REQUEST, messages=[{"id": "m", "role": "robot", "content": "x"}]))
    assert "'user'" in caught.value.message and "messages[0]" in caught.value.message


def test_built_request_round_trips_and_has_no_nulls() -> None:
    turn = parse_request(REQUEST)
    body = orjson.loads(build_request(turn).body)
    assert b"null" not in build_request(turn).body
    assert body["threadId"] == "t1" and body["protocolVersion"] == "1.0"
    again = parse_request(body)
    assert again.messages == turn.messages and again.resume == turn.resume


def test_messages_without_ids_get_ids_upstream() -> None:
    body = orjson.loads(build_request(Turn([Message("user", "hi")])).body)
    assert body["messages"][0]["id"] and body["threadId"] and body["runId"]


def test_chunk_events_expand_and_close_when_another_event_arrives() -> None:
    stream = (b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
              b'data: {"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"a"}\n\n'
              b'data: {"type":"TEXT_MESSAGE_CHUNK","delta":"b"}\n\n'
              b'data: {"type":"STEP_STARTED","stepName":"s"}\n\n'
              b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    assert kinds(decode("ag-ui", stream)) == ["RunStarted", "TextStart", "TextDelta", "TextDelta", "TextEnd",
                                              "StepStarted", "StepFinished", "RunFinished"]


def test_langgraph_on_interrupt_custom_event_is_an_interrupt() -> None:
    stream = (b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
              b'data: {"type":"CUSTOM","name":"on_interrupt","value":"{\\"steps\\":[1]}","rawEvent":"int_1"}\n\n'
              b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    events = decode("ag-ui", stream)
    assert Interrupt("int_1", reason="agent requested interrupt", payload={"steps": [1]}) in events
    assert events[-1] == RunFinished(outcome="interrupt")


def test_pre_1_0_thinking_events_read_as_reasoning() -> None:
    stream = (b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
              b'data: {"type":"THINKING_TEXT_MESSAGE_START"}\n\n'
              b'data: {"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"hmm"}\n\n'
              b'data: {"type":"THINKING_TEXT_MESSAGE_END"}\n\n'
              b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    assert kinds(decode("ag-ui", stream))[1:4] == ["ReasoningStart", "ReasoningDelta", "ReasoningEnd"]


def test_unknown_event_is_kept_as_raw_and_sent_to_ag_ui_clients_inside_a_raw_event() -> None:
    stream = (b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
              b'data: {"type":"FOO_BAR","x":1}\n\n'
              b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    out = encode("ag-ui", decode("ag-ui", stream))
    assert b'{"type":"RAW","event":{"type":"FOO_BAR","x":1},"source":"ag-ui"}' in out


def test_tool_call_without_parent_gets_an_announced_parent_message() -> None:
    out = encode("ag-ui", [RunStarted(thread_id="t", run_id="r"), ToolCallStart("c", "f"), ToolCallEnd("c"),
                           RunFinished()])
    lines = [orjson.loads(line[6:]) for line in out.split(b"\n\n") if line]
    start = next(e for e in lines if e["type"] == "TOOL_CALL_START")
    assert {"type": "TEXT_MESSAGE_START", "messageId": start["parentMessageId"], "role": "assistant"} in lines


def test_client_tool_left_without_result_is_pending_and_interrupts_go_in_the_outcome() -> None:
    events = [RunStarted(thread_id="t", run_id="r"), ToolCallStart("c", "f"), ToolCallEnd("c"),
              Usage(input_tokens=1, output_tokens=2, total_tokens=3), RunFinished()]
    finished = orjson.loads(encode("ag-ui", events).split(b"\n\n")[-2][6:])
    assert finished["outcome"] == {"type": "success", "pendingToolCallIds": ["c"]}
    assert finished["usage"] == [{"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}]
    events = [RunStarted(thread_id="t", run_id="r"), ToolCallStart("c", "f"), ToolCallEnd("c"),
              Interrupt("i", reason="approve", message="Delete?", payload={"p": 1}, tool_call_id="c"),
              RunFinished(outcome="interrupt")]
    finished = orjson.loads(encode("ag-ui", events).split(b"\n\n")[-2][6:])
    assert finished["outcome"] == {"type": "interrupt", "interrupts": [
        {"id": "i", "reason": "approve", "message": "Delete?", "toolCallId": "c", "metadata": {"payload": {"p": 1}}}]}


def test_structured_tool_result_is_sent_as_a_json_string() -> None:
    out = encode("ag-ui", [RunStarted(), ToolResult("c", {"t": 21}), RunFinished()])
    assert b'"content":"{\\"t\\":21}"' in out


def test_deltas_are_passed_through_event_by_event() -> None:
    events = [RunStarted(), TextDelta("m", "a")]
    assert encode("ag-ui", events[1:]) == b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}\n\n'
