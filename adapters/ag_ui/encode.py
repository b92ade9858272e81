"""Canonical events into AG-UI SSE that `@ag-ui/client` 1.0 accepts without a warning.

Its rules, all enforced here: LF framing, camelCase, no `null` for an optional field, `protocolVersion` on
`RUN_STARTED`, a tool call's `parentMessageId` naming a message already started, interrupts carried in
`RUN_FINISHED.outcome`, and client tools left without a result listed in `outcome.pendingToolCallIds`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import orjson

from gateway.core.codec import as_text, drop_none
from gateway.core.events import (
    Data,
    Event,
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
from gateway.core.sse import KEEP_ALIVE
from gateway.core.turn import Turn

from .request import PROTOCOL_VERSION, message_to_agui

HEADERS = {"content-type": "text/event-stream; charset=utf-8"}

_ROLES = frozenset({"developer", "system", "assistant", "user"})

# AG-UI events that a `Raw` from an AG-UI upstream may carry through as they are; anything else goes in a RAW.
_PASSTHROUGH = frozenset({
    "RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE",
})


def _frame(event: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


class AguiEncoder:
    streams = True

    __slots__ = (
        "_announced", "_interrupts", "_parent", "_pending", "_run_id", "_thread_id", "_usage",
        "dropped", "headers", "status_code",
    )

    def __init__(self, request: Turn | None = None) -> None:
        self.status_code = 200
        self.headers = dict(HEADERS)
        self._thread_id = ""
        self._run_id = ""
        self._announced: set[str] = set()
        self._parent: str | None = None
        self._pending: dict[str, None] = {}
        self._interrupts: list[dict[str, Any]] = []
        self._usage: list[dict[str, Any]] = []
        self.dropped: dict[str, int] = defaultdict(int)

    def encode(self, events: list[Event]) -> bytes:
        if len(events) == 1:
            return _HANDLERS[type(events[0])](self, events[0])
        return b"".join([_HANDLERS[type(event)](self, event) for event in events])

    def keep_alive(self) -> bytes:
        return KEEP_ALIVE

    # lifecycle

    def _run_started(self, e: RunStarted) -> bytes:
        self._thread_id = e.thread_id or new_id("thread")
        self._run_id = e.run_id or new_id("run")
        return _frame(drop_none({
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
        return _frame(event)

    def _run_error(self, e: RunError) -> bytes:
        return _frame(drop_none({"type": "RUN_ERROR", "message": e.message, "code": e.code}))

    # text and reasoning

    def _text_start(self, e: TextStart) -> bytes:
        self._announced.add(e.message_id)
        self._parent = e.message_id
        role = e.role if e.role in _ROLES else "assistant"
        return _frame({"type": "TEXT_MESSAGE_START", "messageId": e.message_id, "role": role})

    def _text_delta(self, e: TextDelta) -> bytes:
        return _frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": e.message_id, "delta": e.delta})

    def _text_end(self, e: TextEnd) -> bytes:
        return _frame({"type": "TEXT_MESSAGE_END", "messageId": e.message_id})

    def _reasoning_start(self, e: ReasoningStart) -> bytes:
        return _frame({"type": "REASONING_START", "messageId": e.message_id}) + _frame(
            {"type": "REASONING_MESSAGE_START", "messageId": e.message_id, "role": "reasoning"})

    def _reasoning_delta(self, e: ReasoningDelta) -> bytes:
        return _frame({"type": "REASONING_MESSAGE_CONTENT", "messageId": e.message_id, "delta": e.delta})

    def _reasoning_end(self, e: ReasoningEnd) -> bytes:
        return _frame({"type": "REASONING_MESSAGE_END", "messageId": e.message_id}) + _frame(
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
        return out + _frame({"type": "TOOL_CALL_START", "toolCallId": e.tool_call_id, "toolCallName": e.name,
                             "parentMessageId": parent})

    def _tool_args(self, e: ToolCallArgs) -> bytes:
        return _frame({"type": "TOOL_CALL_ARGS", "toolCallId": e.tool_call_id, "delta": e.delta})

    def _tool_end(self, e: ToolCallEnd) -> bytes:
        self._pending[e.tool_call_id] = None
        return _frame({"type": "TOOL_CALL_END", "toolCallId": e.tool_call_id})

    def _tool_result(self, e: ToolResult) -> bytes:
        if e.is_error:
            self.dropped["tool_error_as_result"] += 1  # AG-UI results have no error flag
        self._pending.pop(e.tool_call_id, None)
        self._parent = None  # what the agent says after a result is a new assistant message
        return _frame({"type": "TOOL_CALL_RESULT", "messageId": e.message_id or new_id("result"),
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
        return _frame({"type": "STATE_SNAPSHOT", "snapshot": e.snapshot})

    def _state_delta(self, e: StateDelta) -> bytes:
        return _frame({"type": "STATE_DELTA", "delta": e.patch})

    def _messages_snapshot(self, e: MessagesSnapshot) -> bytes:
        return _frame({"type": "MESSAGES_SNAPSHOT", "messages": [message_to_agui(m) for m in e.messages]})

    def _step_started(self, e: StepStarted) -> bytes:
        if e.name:
            return _frame({"type": "STEP_STARTED", "stepName": e.name})
        self.dropped["step"] += 1  # an AG-UI step must have a name
        return b""

    def _step_finished(self, e: StepFinished) -> bytes:
        if e.name:
            return _frame({"type": "STEP_FINISHED", "stepName": e.name})
        self.dropped["step"] += 1
        return b""

    def _data(self, e: Data) -> bytes:
        return _frame({"type": "CUSTOM", "name": e.name, "value": e.data})

    def _usage_event(self, e: Usage) -> bytes:
        self._usage.append(drop_none({"inputTokens": e.input_tokens, "outputTokens": e.output_tokens,
                                      "totalTokens": e.total_tokens, "model": e.model, "provider": e.provider}))
        return b""

    def _raw(self, e: Raw) -> bytes:
        if e.dialect == "ag-ui" and e.event.get("type") in _PASSTHROUGH:
            return _frame(e.event)
        return _frame({"type": "RAW", "event": e.event, "source": e.dialect})


# Plain functions, not bound methods held by each encoder: those would make every encoder a reference cycle.
_HANDLERS: dict[type, Callable[[AguiEncoder, Any], bytes]] = {
    TextDelta: AguiEncoder._text_delta,
    ToolCallArgs: AguiEncoder._tool_args,
    ReasoningDelta: AguiEncoder._reasoning_delta,
    TextStart: AguiEncoder._text_start,
    TextEnd: AguiEncoder._text_end,
    ToolCallStart: AguiEncoder._tool_start,
    ToolCallEnd: AguiEncoder._tool_end,
    ToolResult: AguiEncoder._tool_result,
    ReasoningStart: AguiEncoder._reasoning_start,
    ReasoningEnd: AguiEncoder._reasoning_end,
    Interrupt: AguiEncoder._interrupt,
    StateSnapshot: AguiEncoder._state_snapshot,
    StateDelta: AguiEncoder._state_delta,
    MessagesSnapshot: AguiEncoder._messages_snapshot,
    StepStarted: AguiEncoder._step_started,
    StepFinished: AguiEncoder._step_finished,
    Data: AguiEncoder._data,
    Usage: AguiEncoder._usage_event,
    Raw: AguiEncoder._raw,
    RunStarted: AguiEncoder._run_started,
    RunFinished: AguiEncoder._run_finished,
    RunError: AguiEncoder._run_error,
}
