from __future__ import annotations

import orjson
import pytest
from helpers import decode, encode, kinds

from adapters.vercel import INKEEP
from adapters.vercel.request import build_request, parse_request
from gateway.core.errors import InvalidRequest
from gateway.core.events import (
    Data,
    Interrupt,
    RunError,
    RunFinished,
    RunStarted,
    StateSnapshot,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.turn import Message, Resume, ToolCall

# What `chat.addToolOutput` makes useChat send (the second POST of `ai` 7.0.173's `AbstractChat` with
# `DefaultChatTransport`, captured in a client tool flow), plus a custom body key.
CONTINUATION = {
    "conversationId": "conv-123", "id": "chat-abc", "trigger": "submit-message", "messageId": "msg_tool_1",
    "tenant": "acme",
    "messages": [
        {"parts": [{"type": "text", "text": "hello there"}], "id": "u1", "role": "user"},
        {"id": "msg_tool_1", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "tool-getLocation", "toolCallId": "call_loc", "state": "output-available",
             "input": {"precision": "city"}, "output": {"city": "Berlin"}},
            {"type": "step-start"},
            {"type": "text", "text": "You are in Berlin.", "state": "done"}]},
    ],
}


def test_use_chat_history_splits_assistant_steps_into_openai_style_messages() -> None:
    turn = parse_request(CONTINUATION)
    assert turn.history == "full" and turn.conversation_id == "conv-123"
    assert turn.forwarded_props == {"tenant": "acme"}
    assert [(m.role, m.text) for m in turn.messages] == [
        ("user", "hello there"), ("assistant", ""), ("tool", '{"city":"Berlin"}'), ("assistant", "You are in Berlin.")]
    assert turn.messages[1].tool_calls == [ToolCall("call_loc", "getLocation", '{"precision":"city"}')]


def test_approval_response_becomes_a_resume_for_that_tool_call() -> None:
    body = {"id": "chat", "trigger": "submit-message", "messages": [
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "delete it"}]},
        {"id": "a", "role": "assistant", "parts": [
            {"type": "tool-deleteFile", "toolCallId": "call_del", "state": "approval-responded",
             "input": {"path": "/tmp/x"}, "approval": {"id": "appr_1", "approved": True}}]}]}
    assert parse_request(body).resume == [Resume("appr_1", "resolved", {"approved": True}, "call_del")]


def test_inkeep_body_is_a_delta_turn_and_answers_in_the_inkeep_variant() -> None:
    turn = parse_request({"messages": [{"role": "user", "content": "What can you do?"}], "conversationId": "c"})
    assert (turn.history, turn.variant, turn.conversation_id) == ("delta", INKEEP, "c")
    assert turn.messages == [Message("user", "What can you do?")]


def test_bad_parts_are_named() -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_request({"id": "c", "trigger": "submit-message", "messages": [
            {"id": "u", "role": "user", "parts": [{"type": "text"}]},
            {"id": "a", "role": "assistant", "parts": [{"type": "tool-x", "state": "done"}]}]})
    assert [d["field"] for d in caught.value.details] == ["messages[0].parts[0]", "messages[1].parts[0]"]
    assert "needs `text`" in caught.value.message


def test_full_history_goes_upstream_as_ui_messages_with_tool_parts() -> None:
    turn = parse_request(CONTINUATION)
    body = orjson.loads(build_request(turn).body)
    assert body["id"] == "conv-123" and body["tenant"] == "acme" and body["trigger"] == "submit-message"
    assistant = body["messages"][1]
    assert body["messageId"] == assistant["id"]
    assert assistant["parts"] == [
        {"type": "step-start"},
        {"type": "tool-getLocation", "toolCallId": "call_loc", "input": {"precision": "city"},
         "state": "output-available", "output": {"city": "Berlin"}},
        {"type": "step-start"}, {"type": "text", "text": "You are in Berlin."}]


def test_inkeep_upstream_gets_the_last_user_message_and_no_message_id() -> None:
    turn = parse_request(CONTINUATION)
    body = orjson.loads(build_request(turn, INKEEP).body)
    assert body == {"messages": [{"role": "user", "content": "hello there"}], "conversationId": "conv-123"}


def test_reused_text_id_is_renamed_per_segment() -> None:
    segment = [{"type": "text-start", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "a"},
               {"type": "text-end", "id": "t"}]
    stream = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in segment * 2) + b"data: [DONE]\n\n"
    starts = [e.message_id for e in decode("vercel", stream) if isinstance(e, TextStart)]
    assert len(set(starts)) == 2


def test_inkeep_error_operation_is_a_run_error_and_goes_back_to_inkeep_clients_the_same_way() -> None:
    stream = (b'data: {"type":"data-operation","data":{"type":"error","message":"nope","severity":"error"}}\n\n'
              b"data: [DONE]\n\n")
    events = decode("vercel", stream)
    assert events[-1] == RunError("nope", code="upstream_error")
    out = encode("vercel", events, INKEEP)
    assert b'"type":"data-operation","data":{"type":"error","message":"nope"' in out
    assert out.endswith(b'data: {"type":"error","errorText":"nope"}\n\ndata: [DONE]\n\n')


def test_warning_operations_are_data_not_errors() -> None:
    stream = b'data: {"type":"data-operation","data":{"type":"error","severity":"warning"}}\n\ndata: [DONE]\n\n'
    assert kinds(decode("vercel", stream)) == ["RunStarted", "Data", "RunFinished"]


def test_atomic_tool_input_becomes_start_args_end() -> None:
    stream = (b'data: {"type":"tool-input-available","toolCallId":"c","toolName":"f","input":{"a":1}}\n\n'
              b"data: [DONE]\n\n")
    events = decode("vercel", stream)
    assert events[1:4] == [ToolCallStart("c", "f"), ToolCallArgs("c", '{"a":1}'), ToolCallEnd("c")]


def test_encoder_sends_input_at_the_end_of_the_call_and_required_keys_always() -> None:
    out = encode("vercel", [RunStarted(), ToolCallStart("c", "f"), ToolCallArgs("c", '{"a":'), ToolCallArgs("c", "1}"),
                            ToolCallEnd("c"), ToolResult("c", None), Data("x", None), RunFinished()])
    assert b'{"type":"tool-input-available","toolCallId":"c","toolName":"f","input":{"a":1}}' in out
    assert b'{"type":"tool-output-available","toolCallId":"c","output":null}' in out
    assert b'{"type":"data-x","data":null}' in out
    assert out.endswith(b'data: {"type":"finish"}\n\ndata: [DONE]\n\n')


def test_an_interrupt_about_no_tool_call_is_a_call_of_its_own_waiting_for_approval() -> None:
    events = [RunStarted(), ToolCallStart("c", "f"), ToolCallEnd("c"), Interrupt("a1", tool_call_id="c"),
              Interrupt("i2", reason="confirm delete", message="Sure?", payload=[1]), RunFinished(outcome="interrupt")]
    out = encode("vercel", events)
    assert b'{"type":"tool-approval-request","approvalId":"a1","toolCallId":"c"}' in out
    assert (b'{"type":"tool-input-available","toolCallId":"interrupt-i2","toolName":"confirm_delete",'
            b'"input":{"reason":"confirm delete","message":"Sure?","payload":[1]}}') in out
    assert b'{"type":"tool-approval-request","approvalId":"i2","toolCallId":"interrupt-i2"}' in out
    decoded = decode("vercel", out)
    assert Interrupt("i2", reason="confirm delete", message="Sure?", payload=[1]) in decoded
    assert [e.tool_call_id for e in decoded if isinstance(e, ToolCallStart)] == ["c"]


def test_answering_the_call_that_stands_for_an_interrupt_resumes_it_and_leaves_no_tool_call() -> None:
    body = {"id": "chat", "trigger": "submit-message", "messageId": "a", "messages": [
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "delete it"}]},
        {"id": "a", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "tool-confirm_delete", "toolCallId": "interrupt-i2", "state": "approval-responded",
             "input": {"message": "Sure?"}, "approval": {"id": "i2", "approved": False, "reason": "no"}}]}]}
    turn = parse_request(body)
    assert turn.resume == [Resume("i2", "resolved", {"approved": False, "reason": "no"}, None)]
    assert [m.role for m in turn.messages] == ["user"]
    out = encode("vercel", [RunStarted(), TextStart("m"), TextEnd("m"), RunFinished()], request=turn)
    assert out.startswith(b'data: {"type":"start"}\n\ndata: {"type":"tool-output-denied","toolCallId":"interrupt-i2"}'
                          b'\n\ndata: {"type":"start-step"}')


def test_an_approval_in_an_earlier_message_is_not_answered_again() -> None:
    answered = {"id": "a", "role": "assistant", "parts": [
        {"type": "tool-f", "toolCallId": "c", "state": "approval-responded", "input": {},
         "approval": {"id": "x", "approved": True}}]}
    body = {"id": "chat", "trigger": "submit-message", "messages": [
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "go"}]}, answered,
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "and now?"}]}]}
    assert parse_request(body).resume == []


def test_the_whole_state_written_as_data_state_reads_back_as_a_snapshot() -> None:
    out = encode("vercel", [RunStarted(), StateSnapshot({"count": 1}), RunFinished()])
    assert StateSnapshot({"count": 1}) in decode("vercel", out)


@pytest.mark.parametrize("message", [
    {"role": "user", "content": "hello"},
    {"role": "user", "content": {"parts": [{"type": "text", "text": "hello"}]}},
    {"role": "user", "content": "hello", "parts": [{"type": "text", "text": "hello"}]},
])
def test_inkeep_content_as_a_string_or_parts_reads_as_the_same_text(message: dict[str, object]) -> None:
    turn = parse_request({"messages": [message], "conversationId": "c"})
    assert turn.variant == INKEEP and turn.messages[0].text == "hello"


def test_inkeep_body_without_a_conversation_id_is_a_whole_history() -> None:
    turn = parse_request({"messages": [{"role": "user", "content": "hi"}]})
    assert turn.variant == INKEEP and turn.history == "full"


def test_text_message_events_map_one_to_one_inside_a_step() -> None:
    out = encode("vercel", [TextStart("m"), TextDelta("m", "hi"), TextEnd("m"), RunFinished()])
    assert out == (b'data: {"type":"start-step"}\n\ndata: {"type":"text-start","id":"m"}\n\n'
                   b'data: {"type":"text-delta","id":"m","delta":"hi"}\n\ndata: {"type":"text-end","id":"m"}\n\n'
                   b'data: {"type":"finish-step"}\n\ndata: {"type":"finish"}\n\ndata: [DONE]\n\n')


def test_a_new_step_follows_tool_results_so_use_chat_does_not_send_again() -> None:
    out = encode("vercel", [RunStarted(), ToolCallStart("c", "f"), ToolCallEnd("c"), ToolResult("c", "ok"),
                            TextStart("m"), TextEnd("m"), RunFinished()])
    kinds = [orjson.loads(line[6:])["type"] for line in out.split(b"\n\n") if line.startswith(b"data: {")]
    assert kinds == ["start", "start-step", "tool-input-start", "tool-input-available", "tool-output-available",
                     "finish-step", "start-step", "text-start", "text-end", "finish-step", "finish"]


def test_cancelled_run_is_an_abort() -> None:
    assert encode("vercel", [RunFinished(outcome="cancelled")]) == b'data: {"type":"abort"}\n\ndata: [DONE]\n\n'
