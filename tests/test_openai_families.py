"""AG-UI 1.0's families through the OpenAI dialects: what an openai-chat and an openai-responses client get of a
run with an activity, a subagent, encrypted reasoning, usage details, metadata and interrupts answered in the run,
what is counted dropped, and what an OpenAI upstream's reply is read back as."""

from __future__ import annotations

from typing import Any

import orjson
from helpers import FIXTURES, decode, sse_payloads

from adapters import registry
from gateway.core.conformance import Answer
from gateway.core.events import (
    ActivitySnapshot,
    EncryptedValue,
    Event,
    Interrupt,
    InterruptResolved,
    RunFinished,
    RunStarted,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.turn import ContentPart, Message, Turn

EVERYTHING = FIXTURES / "ag-ui" / "agui10_everything.sse"
AI7 = FIXTURES / "vercel" / "ai7" / "ai7_everything.sse"


def _events(path: Any) -> list[Event]:
    return decode("ag-ui" if "agui10" in path.name else "vercel", path.read_bytes())


def _written(dialect: str, events: list[Event], openai: dict[str, Any] | None = None) -> tuple[bytes, dict[str, int]]:
    key = "openai" if dialect == "openai-chat" else "openai_responses"  # what each dialect's request keeps
    encoder = registry.get(dialect).new_encoder(Turn(metadata={key: openai} if openai else {}))
    body = encoder.encode(events)
    violations = [v for v in registry.get(dialect).judge(Answer(encoder.status_code, encoder.headers, body))
                  if not v.convention]
    assert violations == []
    return body, dict(encoder.dropped)


def _responses_events(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(p) for p in sse_payloads(body) if p != b"[DONE]"]


def test_a_chat_client_gets_the_text_and_usage_details_and_each_loss_counted() -> None:
    body, dropped = _written("openai-chat", _events(EVERYTHING), {"stream": True, "include_usage": True})
    chunks = [orjson.loads(p) for p in sse_payloads(body) if p != b"[DONE]"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Helper here.\n\nAll done."  # two messages, two paragraphs
    usage = chunks[-1]["usage"]
    assert usage == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
                     "prompt_tokens_details": {"cached_tokens": 2},
                     "completion_tokens_details": {"reasoning_tokens": 1}}
    # two activity events, the subagent's start and end and its message, the encrypted reasoning; the run's and the
    # message's metadata
    assert dropped == {"activity": 2, "subagent": 3, "encrypted_value": 1, "metadata": 2, "step": 2, "state": 2,
                       "data": 1}


def test_a_one_body_chat_completion_counts_the_same() -> None:
    body, dropped = _written("openai-chat", _events(EVERYTHING), {"stream": False})
    completion = orjson.loads(body)
    assert completion["choices"][0]["message"]["content"] == "Helper here.\n\nAll done."
    assert completion["usage"]["completion_tokens_details"] == {"reasoning_tokens": 1}
    assert dropped == {"activity": 2, "subagent": 3, "encrypted_value": 1, "metadata": 2, "step": 2, "state": 2,
                       "data": 1}


def test_a_responses_client_gets_activities_subagents_and_encrypted_reasoning_as_items() -> None:
    body, dropped = _written("openai-responses", _events(EVERYTHING))
    response = _responses_events(body)[-1]["response"]
    assert response["status"] == "completed"
    output = response["output"]
    assert [i["type"] for i in output] == ["agent_gateway:activity", "reasoning", "agent_gateway:subagent", "message",
                                           "agent_gateway:activity", "message"]
    assert [(i["activity_id"], i["content"]) for i in output if i["type"] == "agent_gateway:activity"] == [
        ("act-1", {"status": "started"}), ("act-1", {"status": "done"})]
    assert output[1]["encrypted_content"] == "opaque"
    assert output[2]["subagent_run_id"] == "sub-x" and output[2]["status"] == "completed"
    assert output[2]["name"] == "helper" and output[2]["result"] == "ok"
    assert response["usage"] == {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8,
                                 "input_tokens_details": {"cached_tokens": 2, "cache_write_tokens": 0},
                                 "output_tokens_details": {"reasoning_tokens": 1}}
    # the subagent's message is the agent's (its author lost); metadata, steps, state and data have no item
    assert dropped == {"subagent": 1, "metadata": 2, "step": 2, "state": 2, "data": 1}
    subagent = [e for e in _responses_events(body) if e.get("item", {}).get("type") == "agent_gateway:subagent"]
    assert [(e["type"], e["item"]["status"]) for e in subagent] == [("response.output_item.added", "in_progress"),
                                                                    ("response.output_item.done", "completed")]


def test_a_responses_upstreams_items_are_read_back_as_the_families() -> None:
    body, _ = _written("openai-responses", _events(EVERYTHING))
    for data in (body, orjson.dumps(_responses_events(body)[-1]["response"])):  # streamed, and one body
        events = decode("openai-responses", data)
        activities = [e for e in events if isinstance(e, ActivitySnapshot)]
        assert [(a.message_id, a.activity_type, a.content) for a in activities] == [
            ("act-1", "plan", {"status": "started"}), ("act-1", "plan", {"status": "done"})]
        assert [e.value for e in events if isinstance(e, EncryptedValue)] == ["opaque"]
        assert [(e.subagent_run_id, e.name) for e in events if isinstance(e, SubagentStarted)] == [("sub-x", "helper")]
        assert [(e.subagent_run_id, e.result) for e in events if isinstance(e, SubagentFinished)] == [("sub-x", "ok")]
        usage = next(e for e in events if isinstance(e, Usage))
        assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_input_tokens) == (
            5, 3, 1, 2)


def test_an_interrupt_answered_in_the_run_is_not_a_note_nor_an_incomplete_response() -> None:
    events = _events(AI7)  # two approvals the run decided itself (one approved, one denied)
    body, dropped = _written("openai-chat", events, {"stream": False})
    message = orjson.loads(body)["choices"][0]["message"]
    assert "[interrupted]" not in message["content"]
    assert dropped["interrupt_resolved"] == 2 and "interrupt_as_note" not in dropped

    body, dropped = _written("openai-responses", events)
    response = _responses_events(body)[-1]["response"]
    assert response["status"] == "completed"
    resolved = [i for i in response["output"] if i["type"] == "mcp_approval_response"]
    assert [(i["approval_request_id"], i["approve"]) for i in resolved] == [("appr-1", True), ("appr-2", False)]
    calls = [i for i in response["output"] if i["type"] == "mcp_call" and i["id"] == "call-del"]
    assert [(c["status"], c["output"], c["approval_request_id"]) for c in calls] == [
        ("completed", '{"deleted":true}', "appr-1")]
    assert "interrupt_resolved" not in dropped

    read = decode("openai-responses", body)
    assert [(e.interrupt_id, e.approved) for e in read if isinstance(e, InterruptResolved)] == [
        ("appr-1", True), ("appr-2", False)]
    assert [e.content for e in read if isinstance(e, ToolResult) and e.tool_call_id == "call-del"] == [
        '{"deleted":true}']
    assert isinstance(read[-1], RunFinished) and read[-1].outcome == "success"


def test_an_interrupts_deadline_is_in_its_question_or_counted() -> None:
    run: list[Event] = [RunStarted(thread_id="t", run_id="r"),
                        Interrupt("i1", reason="confirm", message="go on?", expires_at="2026-10-01T00:00:00Z"),
                        RunFinished(outcome="interrupt")]
    body, dropped = _written("openai-chat", run, {"stream": False})
    assert "[interrupted]" in orjson.loads(body)["choices"][0]["message"]["content"]
    assert dropped == {"interrupt_as_note": 1, "interrupt_expiry": 1}

    body, dropped = _written("openai-responses", run)
    assert dropped == {}
    read = [e for e in decode("openai-responses", body) if isinstance(e, Interrupt)]
    assert [(i.id, i.reason, i.message, i.expires_at) for i in read] == [
        ("i1", "confirm", "go on?", "2026-10-01T00:00:00Z")]

    approving: list[Event] = [RunStarted(thread_id="t", run_id="r"), ToolCallStart("c1", "delete_file"),
                              ToolCallArgs("c1", "{}"), ToolCallEnd("c1"),
                              Interrupt("i2", reason="tool_approval", tool_call_id="c1",
                                        expires_at="2026-10-01T00:00:00Z"),
                              RunFinished(outcome="interrupt")]
    body, dropped = _written("openai-responses", approving)
    assert dropped == {"interrupt_expiry": 1}  # the call's approval request has no place for it
    read = [e for e in decode("openai-responses", body) if isinstance(e, Interrupt)]
    assert [(i.id, i.tool_call_id) for i in read] == [("i2", "c1")]


def test_metadata_on_a_text_delta_is_counted_on_the_fast_path_and_in_one_body() -> None:
    run: list[Event] = [RunStarted(thread_id="t", run_id="r"), TextStart("m"), TextDelta("m", "a"),
                        TextDelta("m", "b", metadata={"k": 1}),
                        TextEnd("m"), RunFinished()]
    for dialect in ("openai-chat", "openai-responses"):
        for stream in (True, False):
            body, dropped = _written(dialect, run, {"stream": stream})
            assert dropped == {"metadata": 1}, (dialect, stream)
            assert (b'"ab"' if not stream else b'"b"') in body


def test_a_text_delta_after_its_id_comes_back_goes_to_the_new_message() -> None:
    run: list[Event] = [RunStarted(thread_id="t", run_id="r"), TextStart("m"), TextDelta("m", "one"), TextEnd("m"),
                        TextStart("m"), TextDelta("m", "two"), TextEnd("m"), RunFinished()]
    body, _ = _written("openai-responses", run)
    output = _responses_events(body)[-1]["response"]["output"]
    assert [i["content"][0]["text"] for i in output] == ["one", "two"]


def test_chat_usage_details_are_read_back() -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
             "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13,
                       "prompt_tokens_details": {"cached_tokens": 6},
                       "completion_tokens_details": {"reasoning_tokens": 3}}}
    body = b"data: " + orjson.dumps(chunk) + b"\n\ndata: [DONE]\n\n"
    usage = next(e for e in decode("openai-chat", body) if isinstance(e, Usage))
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_input_tokens) == (9, 4, 3, 6)


def test_a_file_uploaded_to_a_provider_goes_by_its_id() -> None:
    turn = Turn(messages=[Message("user", [ContentPart("text", text="read this"),
                                           ContentPart("document", file_id="file-abc", provider="openai",
                                                       filename="a.pdf")])], history="full")
    chat = orjson.loads(registry.get("openai-chat").build_request(turn, None).body)
    assert chat["messages"][-1]["content"][1] == {"type": "file", "file": {"file_id": "file-abc",
                                                                           "filename": "a.pdf"}}
    responses = orjson.loads(registry.get("openai-responses").build_request(turn, None).body)
    assert responses["input"][-1]["content"][1] == {"type": "input_file", "file_id": "file-abc", "filename": "a.pdf"}
    parsed = registry.get("openai-responses").parse_request({"model": "agent", "input": responses["input"]})
    assert parsed.messages[-1].content[1].file_id == "file-abc"  # type: ignore[index, union-attr]
    parsed = registry.get("openai-chat").parse_request({"model": "agent", "messages": chat["messages"]})
    assert parsed.messages[-1].content[1].file_id == "file-abc"  # type: ignore[index, union-attr]


def test_the_judges_hold_usage_details_to_the_schemas() -> None:
    head = {"content-type": "application/json"}
    completion = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2,
                            "completion_tokens_details": {"reasoning_tokens": "1"}}}
    judged = registry.get("openai-chat").judge(Answer(200, head, orjson.dumps(completion)))
    assert [v.rule for v in judged] == ["usage-details"]
    body, _ = _written("openai-responses",
                       [RunStarted(thread_id="t", run_id="r"), Usage(input_tokens=1, output_tokens=1), RunFinished()],
                       {"stream": False})
    response = orjson.loads(body)
    assert response["usage"]["output_tokens_details"] == {"reasoning_tokens": 0}
    del response["usage"]["input_tokens_details"]
    judged = registry.get("openai-responses").judge(Answer(200, head, orjson.dumps(response)))
    assert [v.rule for v in judged] == ["usage"]
