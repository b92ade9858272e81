"""Canonical events into AG-Kit SSE, as `@cloudbase/agent-ui-web` reads it.

Only what the dialect has a word for goes out: text, tool calls, tool results, interrupts and errors, then
`data: [DONE]`. Message boundaries, reasoning, state and steps have none and are left out (see
docs/dialects/ag-kit.md); what carried something is counted in `dropped`.
"""

from __future__ import annotations

from gateway.core.codec import as_text, drop_none
from gateway.core.encoding import HOLE, DeltaFrames, SSEEncoder, dropped_as, sse_frame
from gateway.core.events import (
    ActivityDelta,
    ActivitySnapshot,
    Data,
    EncryptedValue,
    Event,
    Interrupt,
    InterruptResolved,
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
    SubagentError,
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
from gateway.core.sse import DONE

_DROPPED: dict[type, str] = {
    ReasoningStart: "reasoning", ReasoningDelta: "reasoning", ReasoningEnd: "reasoning",
    StateSnapshot: "state", StateDelta: "state", MessagesSnapshot: "messages_snapshot",
    StepStarted: "step", StepFinished: "step", Data: "data", Usage: "usage", Raw: "raw",
    ActivitySnapshot: "activity", ActivityDelta: "activity", EncryptedValue: "encrypted_value",
    SubagentStarted: "subagent", SubagentFinished: "subagent", SubagentError: "subagent",
    InterruptResolved: "interrupt_resolved",  # its `interrupt` went out already: the client still sees it asked
}
"""What the dialect has no word for, by the kind counted in `dropped`. Run starts and message boundaries are
left out too, but lose nothing: the client knows its ids, and a message ends where something else begins."""


_TEXT = DeltaFrames(lambda _: sse_frame({"type": "text", "content": HOLE}))


def _text(self: AgKitEncoder, e: TextDelta) -> bytes:
    if e.metadata is not None:
        self.dropped["metadata"] += 1
    return _TEXT.frame(e.delta) if e.delta else b""


def _tool_args(self: AgKitEncoder, e: ToolCallArgs) -> bytes:
    if e.metadata is not None:
        self.dropped["metadata"] += 1
    return sse_frame({"type": "tool-call-args", "toolCallId": e.tool_call_id, "delta": e.delta})


def _tool_start(self: AgKitEncoder, e: ToolCallStart) -> bytes:
    return sse_frame({"type": "tool-call-start", "toolCallId": e.tool_call_id, "toolCallName": e.name})


def _tool_end(self: AgKitEncoder, e: ToolCallEnd) -> bytes:
    return sse_frame({"type": "tool-call-end", "toolCallId": e.tool_call_id})


def _tool_result(self: AgKitEncoder, e: ToolResult) -> bytes:
    if e.is_error:
        self.dropped["tool_error_as_result"] += 1  # the result holds the error's text, with no flag
    return sse_frame({"type": "tool-result", "toolCallId": e.tool_call_id, "result": as_text(e.content)})


def _interrupt(self: AgKitEncoder, e: Interrupt) -> bytes:
    payload = e.payload
    if payload is None:
        payload = drop_none({"toolCallId": e.tool_call_id, "message": e.message, "responseSchema": e.response_schema})
    return sse_frame({"type": "interrupt", "id": e.id, "reason": e.reason or "interrupt", "payload": payload})


def _run_finished(self: AgKitEncoder, e: RunFinished) -> bytes:
    if e.outcome == "cancelled":
        self.dropped["cancelled_as_finish"] += 1  # no way to say it: the run just ends
    if e.stop_reason is not None:
        self.dropped["stop_reason"] += 1  # nor that the answer was cut short
    return DONE


def _run_error(self: AgKitEncoder, e: RunError) -> bytes:
    return sse_frame({"type": "error", "error": e.message}) + DONE


def _raw(self: AgKitEncoder, e: Raw) -> bytes:
    if e.dialect == "ag-kit":
        return sse_frame(e.event)
    self.dropped["raw"] += 1
    return b""


def _nothing(self: AgKitEncoder, e: Event) -> bytes:
    """Run starts and message boundaries: left out, losing nothing (the client knows its ids, and a message ends
    where something else begins)."""
    return b""


class AgKitEncoder(SSEEncoder):
    __slots__ = ()

    METADATA = frozenset({TextDelta, ToolCallArgs, *_DROPPED})  # deltas count theirs; the dropped are counted whole

    handlers = {
        TextDelta: _text,
        ToolCallArgs: _tool_args,
        ToolCallStart: _tool_start,
        ToolCallEnd: _tool_end,
        ToolResult: _tool_result,
        Interrupt: _interrupt,
        RunFinished: _run_finished,
        RunError: _run_error,
        Raw: _raw,
        RunStarted: _nothing,
        TextStart: _nothing,
        TextEnd: _nothing,
        **{event_type: dropped_as(kind) for event_type, kind in _DROPPED.items() if event_type is not Raw},
    }
