"""AG-Kit's rules for a `send-message` stream: each event one of the server's own models (`SendMessageEvent` in
cloudbase-agent-server, field names or their camelCase aliases, unknown keys ignored as pydantic ignores them),
tool calls started before their arguments and ended with arguments that parse as JSON, and `data: [DONE]` last."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.conformance import (
    Answer,
    Violation,
    each_frame,
    in_frame_order,
    json_type,
    preview,
    sse_head,
    sse_json_frames,
)

_STRING, _OPTIONAL_STRING, _ANY = "a string", "a string or null", "any value"
# type -> {field (camelCase alias or name as the server's model has it): what it must be}; every field is required
# but an optional one.
EVENTS: dict[str, dict[tuple[str, ...], str]] = {
    "text": {("content",): _STRING},
    "tool-call-start": {("toolCallId", "tool_call_id"): _STRING, ("toolCallName", "tool_call_name"): _STRING},
    "tool-call-args": {("toolCallId", "tool_call_id"): _STRING, ("delta",): _STRING},
    "tool-call-end": {("toolCallId", "tool_call_id"): _STRING},
    "tool-result": {("toolCallId", "tool_call_id"): _STRING, ("result",): _STRING},
    "interrupt": {("id",): _STRING, ("payload",): _ANY, ("reason",): _OPTIONAL_STRING},
    "error": {("error",): _STRING},
}


def judge(answer: Answer) -> list[Violation]:
    found = sse_head(answer)
    frames = sse_json_frames(answer, found)
    stream = _Stream(found)
    for index, shown, value in each_frame(frames, found):
        stream.frame(index, shown, value)
    last = max([index for index, _, _ in frames] + [v.index for v in found if v.index is not None], default=None)
    stream.end(last)
    return in_frame_order(found)


class _Stream:
    """Tool calls open in the stream, and whether `[DONE]` came."""

    def __init__(self, found: list[Violation]) -> None:
        self.found = found
        self.done_at: int | None = None
        self.arguments: dict[str, list[str]] = {}
        """Open tool calls: their argument deltas so far."""
        self.ended: set[str] = set()

    def frame(self, index: int, frame: str, value: object) -> None:
        if self.done_at is not None:
            self.fail("after-done", "an event after data: [DONE], which ends the stream", frame, index)
            return
        if value == "[DONE]":
            self.done_at = index
            for call in self.arguments:
                self.fail("tool-call-not-ended", f"tool call {call!r} never ended (tool-call-end)", frame, index)
            self.arguments.clear()
            return
        if not isinstance(value, dict):
            self.fail("event-shape", "an event must be a JSON object", frame, index)
            return
        kind = value.get("type")
        if not isinstance(kind, str) or kind not in EVENTS:
            known = ", ".join(EVENTS)
            self.fail("unknown-event", f"unknown event type {kind!r}: AG-Kit events are {known}", frame, index)
            return
        values: dict[str, Any] = {}
        for names, wanted in EVENTS[kind].items():
            name = next((n for n in names if n in value), None)
            if name is None:
                if wanted != _OPTIONAL_STRING:
                    self.fail("missing-field", f"{kind} needs {names[0]} ({wanted})", frame, index)
                continue
            if (wanted == _STRING and not isinstance(value[name], str)) or (
                    wanted == _OPTIONAL_STRING and value[name] is not None and not isinstance(value[name], str)):
                self.fail("field-type", f"{kind}.{name} must be {wanted}, got {json_type(value[name])}", frame,
                          index)
                continue
            values[names[0]] = value[name]
        tool_call_id = values.get("toolCallId")
        if isinstance(tool_call_id, str):
            self.tool_call(kind, tool_call_id, values, frame, index)

    def tool_call(self, kind: str, call: str, values: dict[str, Any], frame: str, index: int) -> None:
        if kind == "tool-call-start":
            if call in self.arguments or call in self.ended:
                self.fail("tool-call-started-twice", f"tool call {call!r} started twice", frame, index)
            self.arguments[call] = []
        elif kind in ("tool-call-args", "tool-call-end") and call not in self.arguments:
            self.fail("tool-call-not-started", f"{kind} for tool call {call!r}, which was never started "
                                               f"(tool-call-start) or has ended", frame, index)
        elif kind == "tool-call-args" and isinstance(values.get("delta"), str):
            self.arguments[call].append(values["delta"])
        elif kind == "tool-call-end":
            arguments = "".join(self.arguments.pop(call))
            self.ended.add(call)
            if arguments.strip():
                try:
                    orjson.loads(arguments)
                except orjson.JSONDecodeError:
                    self.fail("tool-arguments-json", f"tool call {call!r} ended with arguments that are not JSON: "
                                                     f"{preview(arguments)!r}", frame, index)

    def end(self, last: int | None) -> None:
        if self.done_at is None:
            self.fail("no-done", "the stream ended without data: [DONE]", None, last)

    def fail(self, rule: str, message: str, frame: str | None, index: int | None) -> None:
        self.found.append(Violation(rule, message, frame, index))
