"""A Vercel UI message stream from an upstream, into canonical events.

Also reads what Inkeep's `/api/chat` really sends: one text id reused for every text segment (renamed here, so
that ids stay unique per message in the other dialects), run failures as `data-operation` parts of type `error`,
and an `{"error": ...}` frame with no type on its durable path. And what our own encoder writes beyond the AI
SDK's words: the whole state as `data-state`, and the tool call that stands for an interrupt.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import JsonSSEDecoder
from gateway.core.events import (
    Data,
    Event,
    Interrupt,
    Raw,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateSnapshot,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.sse import DEFAULT_MAX_FRAME

from .request import INTERRUPT_CALL_PREFIX

DENIED = "The user denied this tool call."
_TOOL_CHUNKS = frozenset({"tool-input-start", "tool-input-delta", "tool-input-available", "tool-approval-request",
                          "tool-output-available", "tool-output-denied", "tool-output-error"})


def _s(frame: dict[str, Any], key: str) -> str:
    value = frame[key]
    if type(value) is not str:
        raise TypeError(key)
    return value


class VercelDecoder(JsonSSEDecoder):
    __slots__ = ("_args_seen", "_ended", "_interrupt_calls", "_renamed", "_tools")

    dialect = "vercel"

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._tools: dict[str, str] = {}  # tool call id -> name, for calls started in this stream
        self._args_seen: set[str] = set()
        self._ended: set[str] = set()  # text and reasoning ids already ended once
        self._renamed: dict[str, str] = {}
        self._interrupt_calls: dict[str, dict[str, Any]] = {}  # tool call id -> the interrupt it stands for

    def on_frame(self, frame: dict[str, Any], out: list[Event]) -> None:
        push = self.repair.push
        kind = frame.get("type")
        try:
            if kind == "text-delta":
                push(TextDelta(self._id(_s(frame, "id")), _s(frame, "delta")), out)
            elif kind == "tool-input-delta":
                self._args_seen.add(_s(frame, "toolCallId"))
                push(ToolCallArgs(_s(frame, "toolCallId"), _s(frame, "inputTextDelta")), out)
            elif kind == "reasoning-delta":
                push(ReasoningDelta(self._id(_s(frame, "id")), _s(frame, "delta")), out)
            elif kind == "text-start":
                push(TextStart(self._start_id(_s(frame, "id"))), out)
            elif kind == "text-end":
                push(TextEnd(self._end_id(_s(frame, "id"))), out)
            elif kind == "reasoning-start":
                push(ReasoningStart(self._start_id(_s(frame, "id"))), out)
            elif kind == "reasoning-end":
                push(ReasoningEnd(self._end_id(_s(frame, "id"))), out)
            elif kind in _TOOL_CHUNKS and _s(frame, "toolCallId").startswith(INTERRUPT_CALL_PREFIX):
                self._interrupt_call(frame, out)
            elif kind == "tool-input-start":
                self._tools[_s(frame, "toolCallId")] = _s(frame, "toolName")
                push(ToolCallStart(_s(frame, "toolCallId"), _s(frame, "toolName")), out)
            elif kind == "tool-input-available" or kind == "tool-input-error":
                self._input_available(frame, out)
            elif kind == "tool-output-available":
                if not frame.get("preliminary"):  # a preliminary output is a progress update; the final one follows
                    push(ToolResult(_s(frame, "toolCallId"), frame["output"]), out)
            elif kind == "tool-output-error":
                push(ToolResult(_s(frame, "toolCallId"), _s(frame, "errorText"), is_error=True), out)
            elif kind == "tool-output-denied":
                push(ToolResult(_s(frame, "toolCallId"), DENIED, is_error=True), out)
            elif kind == "tool-approval-request":
                push(Interrupt(_s(frame, "approvalId"), "tool_approval", tool_call_id=_s(frame, "toolCallId")), out)
            elif kind == "start":
                message_id = frame.get("messageId")
                push(RunStarted(message_id=message_id if isinstance(message_id, str) else None), out)
                self._metadata(frame, out)
            elif kind == "start-step":
                push(StepStarted(), out)
            elif kind == "finish-step":
                push(StepFinished(), out)
            elif kind == "finish":
                self._metadata(frame, out)
                push(RunFinished(), out)
            elif kind == "abort":
                push(RunFinished("cancelled"), out)
            elif kind == "error":
                push(RunError(str(frame["errorText"]), "upstream_error"), out)
            elif isinstance(kind, str) and kind.startswith("data-"):
                self._data(kind[5:], frame, out)
            elif kind is None and "error" in frame:
                push(RunError(str(frame["error"]), "upstream_error"), out)
            else:
                push(Raw("vercel", frame), out)
        except (KeyError, TypeError):
            push(Raw("vercel", frame), out)

    def _interrupt_call(self, frame: dict[str, Any], out: list[Event]) -> None:
        """A call that stands for an interrupt is that interrupt, once its approval is asked; its settling is
        the client's answer, already known."""
        call_id = _s(frame, "toolCallId")
        if frame["type"] == "tool-input-available":
            details = frame.get("input")
            details = details if isinstance(details, dict) else {}
            self._interrupt_calls[call_id] = {**details, "name": _s(frame, "toolName")}
        elif frame["type"] == "tool-approval-request" and call_id in self._interrupt_calls:
            details = self._interrupt_calls[call_id]
            reason, message = details.get("reason"), details.get("message")
            self.repair.push(Interrupt(_s(frame, "approvalId"), reason if isinstance(reason, str) else details["name"],
                                       message if isinstance(message, str) else None, details.get("payload"), None,
                                       details.get("responseSchema")), out)

    def _input_available(self, frame: dict[str, Any], out: list[Event]) -> None:
        push = self.repair.push
        call_id = _s(frame, "toolCallId")
        if call_id not in self._tools:
            self._tools[call_id] = _s(frame, "toolName")
            push(ToolCallStart(call_id, _s(frame, "toolName")), out)
        if call_id not in self._args_seen:
            value = frame.get("input")
            push(ToolCallArgs(call_id, value if isinstance(value, str) else orjson.dumps(value or {}).decode()), out)
        push(ToolCallEnd(call_id), out)
        if frame["type"] == "tool-input-error":
            push(ToolResult(call_id, _s(frame, "errorText"), is_error=True), out)

    def _data(self, name: str, frame: dict[str, Any], out: list[Event]) -> None:
        data = frame["data"]
        if name == "operation" and isinstance(data, dict) and data.get("type") == "error" \
                and data.get("severity", "error") == "error":
            self.repair.push(RunError(str(data.get("message") or "upstream agent failed"),
                                      data.get("code") if isinstance(data.get("code"), str) else "upstream_error"), out)
            return
        if name == "state" and frame.get("id") == "state":
            self.repair.push(StateSnapshot(data), out)  # how our encoder carries the whole state
            return
        item_id = frame.get("id")
        self.repair.push(Data(name, data, item_id if isinstance(item_id, str) else None,
                              bool(frame.get("transient"))), out)

    def _metadata(self, frame: dict[str, Any], out: list[Event]) -> None:
        if "messageMetadata" in frame:
            self.repair.push(Raw("vercel", {"type": "message-metadata", "messageMetadata": frame["messageMetadata"]}),
                             out)

    def _id(self, raw_id: str) -> str:
        return self._renamed.get(raw_id, raw_id) if self._renamed else raw_id

    def _start_id(self, raw_id: str) -> str:
        if raw_id in self._ended:
            self._renamed[raw_id] = f"{raw_id}-{len(self._ended)}-{len(self._renamed)}"
        else:
            self._renamed.pop(raw_id, None)
        return self._id(raw_id)

    def _end_id(self, raw_id: str) -> str:
        self._ended.add(raw_id)
        return self._id(raw_id)
