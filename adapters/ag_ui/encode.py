"""Canonical events into AG-UI SSE that `@ag-ui/client` 1.0 accepts without a warning.

Its rules, all enforced here: LF framing, camelCase, no `null` for an optional field, `protocolVersion` on
`RUN_STARTED`, a tool call's `parentMessageId` naming a message already started, interrupts carried in
`RUN_FINISHED.outcome`, and client tools left without a result listed in `outcome.pendingToolCallIds`.
"""

from __future__ import annotations

from typing import Any

from gateway.core.codec import as_text, drop_none
from gateway.core.encoding import HOLE, DeltaFrames, SSEEncoder, is_one_of, sse_frame
from gateway.core.events import (
    Data,
    Interrupt,
    MessagesSnapshot,
    Raw,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
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
    Usage,
)
from gateway.core.ids import new_id
from gateway.core.turn import Turn

from .request import PROTOCOL_VERSION, message_to_agui

_ROLES = frozenset({"developer", "system", "assistant", "user"})

# AG-UI events that a `Raw` from an AG-UI upstream may carry through as they are; anything else goes in a RAW.
_PASSTHROUGH = frozenset({
    "RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE",
})


def _text_content(message_id: str) -> bytes:
    return sse_frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": HOLE})


class AguiEncoder(SSEEncoder):
    __slots__ = ("_announced", "_interrupts", "_parent", "_pending", "_run_id", "_text", "_thread_id", "_usage")

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self._thread_id = ""
        self._run_id = ""
        self._announced: set[str] = set()
        self._parent: str | None = None
        self._pending: dict[str, None] = {}
        self._interrupts: list[dict[str, Any]] = []
        self._usage: list[dict[str, Any]] = []
        self._text = DeltaFrames(_text_content)

    # lifecycle

    def _run_started(self, e: RunStarted) -> bytes:
        self._thread_id = e.thread_id or new_id("thread")
        self._run_id = e.run_id or new_id("run")
        return sse_frame(drop_none({
            "type": "RUN_STARTED",
            "threadId": self._thread_id,
            "runId": self._run_id,
            "parentRunId": e.parent_run_id,
            "protocolVersion": PROTOCOL_VERSION,
        }))

    def _run_finished(self, e: RunFinished) -> bytes:
        event: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": self._thread_id, "runId": self._run_id}
        if e.outcome == "interrupt" and self._interrupts:
            event["outcome"] = {"type": "interrupt", "interrupts": self._interrupts}
        elif e.outcome == "cancelled":
            event["outcome"] = {"type": "cancelled"}
        elif self._pending:
            event["outcome"] = {"type": "success", "pendingToolCallIds": list(self._pending)}
        else:
            event["outcome"] = {"type": "success"}
        if e.result is not None:
            event["result"] = e.result
        if self._usage:
            event["usage"] = self._usage
        return sse_frame(event)

    def _run_error(self, e: RunError) -> bytes:
        return sse_frame(drop_none({"type": "RUN_ERROR", "message": e.message, "code": e.code}))

    # text and reasoning

    def _text_start(self, e: TextStart) -> bytes:
        self._announced.add(e.message_id)
        self._parent = e.message_id
        role = e.role if e.role in _ROLES else "assistant"
        return sse_frame({"type": "TEXT_MESSAGE_START", "messageId": e.message_id, "role": role})

    def _text_delta(self, e: TextDelta) -> bytes:
        return self._text.frame(e.delta, e.message_id)

    def _text_end(self, e: TextEnd) -> bytes:
        return sse_frame({"type": "TEXT_MESSAGE_END", "messageId": e.message_id})

    def _reasoning_start(self, e: ReasoningStart) -> bytes:
        return sse_frame({"type": "REASONING_START", "messageId": e.message_id}) + sse_frame(
            {"type": "REASONING_MESSAGE_START", "messageId": e.message_id, "role": "reasoning"})

    def _reasoning_delta(self, e: ReasoningDelta) -> bytes:
        return sse_frame({"type": "REASONING_MESSAGE_CONTENT", "messageId": e.message_id, "delta": e.delta})

    def _reasoning_end(self, e: ReasoningEnd) -> bytes:
        return sse_frame({"type": "REASONING_MESSAGE_END", "messageId": e.message_id}) + sse_frame(
            {"type": "REASONING_END", "messageId": e.message_id})

    # tool calls

    def _tool_start(self, e: ToolCallStart) -> bytes:
        out = b""
        parent = e.parent_message_id if e.parent_message_id in self._announced else self._parent
        if parent is None:
            # The client makes one assistant message per tool call without a parent; give it one to hang on.
            parent = new_id("msg")
            out = self._text_start(TextStart(parent)) + self._text_end(TextEnd(parent))
        self._parent = parent
        return out + sse_frame({"type": "TOOL_CALL_START", "toolCallId": e.tool_call_id, "toolCallName": e.name,
                             "parentMessageId": parent})

    def _tool_args(self, e: ToolCallArgs) -> bytes:
        return sse_frame({"type": "TOOL_CALL_ARGS", "toolCallId": e.tool_call_id, "delta": e.delta})

    def _tool_end(self, e: ToolCallEnd) -> bytes:
        self._pending[e.tool_call_id] = None
        return sse_frame({"type": "TOOL_CALL_END", "toolCallId": e.tool_call_id})

    def _tool_result(self, e: ToolResult) -> bytes:
        if e.is_error:
            self.dropped["tool_error_as_result"] += 1  # AG-UI results have no error flag
        self._pending.pop(e.tool_call_id, None)
        self._parent = None  # what the agent says after a result is a new assistant message
        return sse_frame({"type": "TOOL_CALL_RESULT", "messageId": e.message_id or new_id("result"),
                       "toolCallId": e.tool_call_id, "content": as_text(e.content), "role": "tool"})

    def _interrupt(self, e: Interrupt) -> bytes:
        if e.tool_call_id:
            self._pending.pop(e.tool_call_id, None)  # the interrupt, not the client, settles this call
        self._interrupts.append(drop_none({
            "id": e.id,
            "reason": e.reason or "interrupt",
            "message": e.message,
            "toolCallId": e.tool_call_id,
            "responseSchema": e.response_schema,
            "metadata": None if e.payload is None else {"payload": e.payload},
        }))
        return b""

    # state, steps, data

    def _state_snapshot(self, e: StateSnapshot) -> bytes:
        return sse_frame({"type": "STATE_SNAPSHOT", "snapshot": e.snapshot})

    def _state_delta(self, e: StateDelta) -> bytes:
        return sse_frame({"type": "STATE_DELTA", "delta": e.patch})

    def _messages_snapshot(self, e: MessagesSnapshot) -> bytes:
        return sse_frame({"type": "MESSAGES_SNAPSHOT", "messages": [message_to_agui(m) for m in e.messages]})

    def _step_started(self, e: StepStarted) -> bytes:
        if e.name:
            return sse_frame({"type": "STEP_STARTED", "stepName": e.name})
        self.dropped["step"] += 1  # an AG-UI step must have a name
        return b""

    def _step_finished(self, e: StepFinished) -> bytes:
        if e.name:
            return sse_frame({"type": "STEP_FINISHED", "stepName": e.name})
        self.dropped["step"] += 1
        return b""

    def _data(self, e: Data) -> bytes:
        return sse_frame({"type": "CUSTOM", "name": e.name, "value": e.data})

    def _usage_event(self, e: Usage) -> bytes:
        self._usage.append(drop_none({"inputTokens": e.input_tokens, "outputTokens": e.output_tokens,
                                      "totalTokens": e.total_tokens, "model": e.model, "provider": e.provider}))
        return b""

    def _raw(self, e: Raw) -> bytes:
        if e.dialect == "ag-ui" and is_one_of(e.event.get("type"), _PASSTHROUGH):
            return sse_frame(e.event)
        return sse_frame({"type": "RAW", "event": e.event, "source": e.dialect})

    handlers = {
        TextDelta: _text_delta,
        ToolCallArgs: _tool_args,
        ReasoningDelta: _reasoning_delta,
        TextStart: _text_start,
        TextEnd: _text_end,
        ToolCallStart: _tool_start,
        ToolCallEnd: _tool_end,
        ToolResult: _tool_result,
        ReasoningStart: _reasoning_start,
        ReasoningEnd: _reasoning_end,
        Interrupt: _interrupt,
        StateSnapshot: _state_snapshot,
        StateDelta: _state_delta,
        MessagesSnapshot: _messages_snapshot,
        StepStarted: _step_started,
        StepFinished: _step_finished,
        Data: _data,
        Usage: _usage_event,
        Raw: _raw,
        RunStarted: _run_started,
        RunFinished: _run_finished,
        RunError: _run_error,
    }
