"""The AG-Kit judge agrees with the real server's own event models (cloudbase-agent-server's `SendMessageEvent`)
on every frame, and finds the stream rules the models cannot see."""

from __future__ import annotations

import warnings
from typing import Any

import orjson
import pytest
from pydantic import TypeAdapter, ValidationError

from adapters.ag_kit.conformance import judge
from gateway.core.conformance import Answer

with warnings.catch_warnings():  # the 0.1.1 server still uses pydantic's class-based config
    warnings.simplefilter("ignore", DeprecationWarning)
    from cloudbase_agent.server.send_message.models import SendMessageEvent

EVENT: TypeAdapter[Any] = TypeAdapter(SendMessageEvent)
HEAD = {"content-type": "text/event-stream; charset=utf-8"}

FRAMES: list[dict[str, Any]] = [
    {"type": "text", "content": "hi"},
    {"type": "text", "content": ""},
    {"type": "text", "content": "hi", "extra": 1},
    {"type": "text"},
    {"type": "text", "content": 7},
    {"type": "text", "content": None},
    {"type": "tool-call-start", "toolCallId": "c1", "toolCallName": "f"},
    {"type": "tool-call-start", "tool_call_id": "c1", "tool_call_name": "f"},
    {"type": "tool-call-start", "toolCallId": "c1"},
    {"type": "tool-call-start", "toolCallId": 1, "toolCallName": "f"},
    {"type": "tool-result", "toolCallId": "c1", "result": "ok"},
    {"type": "tool-result", "toolCallId": "c1", "result": {"ok": True}},
    {"type": "tool-result", "toolCallId": "c1"},
    {"type": "interrupt", "id": "i1", "payload": {"a": 1}},
    {"type": "interrupt", "id": "i1", "payload": None, "reason": "confirm"},
    {"type": "interrupt", "id": "i1", "payload": 1, "reason": None},
    {"type": "interrupt", "id": "i1"},
    {"type": "interrupt", "id": "i1", "payload": 1, "reason": 3},
    {"type": "interrupt", "payload": 1},
    {"type": "error", "error": "boom"},
    {"type": "error", "message": "boom"},
    {"type": "thinking", "content": "hmm"},
]
MODEL_RULES = {"event-shape", "unknown-event", "missing-field", "field-type"}


def model_accepts(frame: dict[str, Any]) -> bool:
    try:
        EVENT.validate_python(frame)
    except ValidationError:
        return False
    return True


def stream(*frames: dict[str, Any] | str) -> bytes:
    return b"".join(b"data: " + (f.encode() if isinstance(f, str) else orjson.dumps(f)) + b"\n\n" for f in frames)


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: orjson.dumps(f).decode())
def test_the_judge_accepts_exactly_the_frames_the_servers_models_accept(frame: dict[str, Any]) -> None:
    found = [v for v in judge(Answer(200, HEAD, stream(frame, "[DONE]"))) if v.rule in MODEL_RULES]
    assert (not found) == model_accepts(frame), found
    assert all(v.index == 0 for v in found)


def test_a_frame_without_a_type_is_unknown_though_the_models_default_one() -> None:
    """The server's models default `type` (they build events); a client dispatches on it, so one without is lost."""
    frame = {"content": "no type"}
    assert model_accepts(frame)
    assert [v.rule for v in judge(Answer(200, HEAD, stream(frame, "[DONE]")))] == ["unknown-event"]


@pytest.mark.parametrize(("frames", "rule", "index"), [
    ((), "no-done", None),
    (({"type": "text", "content": "a"},), "no-done", 0),
    (("[DONE]", {"type": "text", "content": "a"}), "after-done", 1),
    (({"type": "tool-call-args", "toolCallId": "c", "delta": "{}"}, "[DONE]"), "tool-call-not-started", 0),
    (({"type": "tool-call-start", "toolCallId": "c", "toolCallName": "f"}, "[DONE]"), "tool-call-not-ended", 1),
    (({"type": "tool-call-start", "toolCallId": "c", "toolCallName": "f"},
      {"type": "tool-call-start", "toolCallId": "c", "toolCallName": "f"}), "tool-call-started-twice", 1),
    (({"type": "tool-call-start", "toolCallId": "c", "toolCallName": "f"},
      {"type": "tool-call-args", "toolCallId": "c", "delta": "{\"a\":"},
      {"type": "tool-call-end", "toolCallId": "c"}, "[DONE]"), "tool-arguments-json", 2),
])
def test_stream_rules_name_the_frame_that_broke_them(frames: tuple[Any, ...], rule: str, index: int | None) -> None:
    found = judge(Answer(200, HEAD, stream(*frames)))
    assert [(v.rule, v.index) for v in found][:1] == [(rule, index)]


def test_a_whole_tool_call_with_json_arguments_then_its_result_is_clean() -> None:
    body = stream({"type": "tool-call-start", "toolCallId": "c", "toolCallName": "f"},
                  {"type": "tool-call-args", "toolCallId": "c", "delta": "{\"a\":"},
                  {"type": "tool-call-args", "toolCallId": "c", "delta": "1}"},
                  {"type": "tool-call-end", "toolCallId": "c"},
                  {"type": "tool-result", "toolCallId": "c", "result": "ok"}, "[DONE]")
    assert judge(Answer(200, HEAD, body)) == []


def test_the_head_must_be_2xx_and_should_be_a_200_event_stream() -> None:
    found = judge(Answer(500, {"content-type": "application/json"}, b'{"error":"x"}'))
    assert [v.rule for v in found][:2] == ["status", "convention-content-type"]
    found = judge(Answer(201, {}, b"data: [DONE]\n\n"))
    assert [v.rule for v in found] == ["convention-status", "convention-content-type"]
