"""Canonical events into AG-Kit SSE, as `@cloudbase/agent-ui-web` reads it.

Only what the dialect has a word for goes out: text, tool calls, tool results, interrupts and errors, then
`data: [DONE]`. Message boundaries, reasoning, state and steps have none and are left out (see the README's
mapping table); what carried something is counted in `dropped`.
"""

from __future__ import annotations

from collections import defaultdict
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
    StateDelta,
    StateSnapshot,
    StepFinished,
    StepStarted,
    TextDelta,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.sse import DONE, KEEP_ALIVE
from gateway.core.turn import Turn

HEADERS = {"content-type": "text/event-stream; charset=utf-8"}

_DROPPED: dict[type, str] = {
    ReasoningStart: "reasoning", ReasoningDelta: "reasoning", ReasoningEnd: "reasoning",
    StateSnapshot: "state", StateDelta: "state", MessagesSnapshot: "messages_snapshot",
    StepStarted: "step", StepFinished: "step", Data: "data", Usage: "usage", Raw: "raw",
}
"""What the dialect has no word for, by the kind counted in `dropped`. Run starts and message boundaries are
left out too, but lose nothing: the client knows its ids, and a message ends where something else begins."""


def _frame(event: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


class AgKitEncoder:
    streams = True

    __slots__ = ("dropped", "headers", "status_code")

    def __init__(self, request: Turn | None = None) -> None:
        self.status_code = 200
        self.headers = dict(HEADERS)
        self.dropped: dict[str, int] = defaultdict(int)

    def encode(self, events: list[Event]) -> bytes:
        if len(events) == 1:
            return self._encode(events[0])
        return b"".join([self._encode(event) for event in events])

    def keep_alive(self) -> bytes:
        return KEEP_ALIVE

    def _encode(self, e: Event) -> bytes:
        if isinstance(e, TextDelta):
            return _frame({"type": "text", "content": e.delta}) if e.delta else b""
        if isinstance(e, ToolCallArgs):
            return _frame({"type": "tool-call-args", "toolCallId": e.tool_call_id, "delta": e.delta})
        if isinstance(e, ToolCallStart):
            return _frame({"type": "tool-call-start", "toolCallId": e.tool_call_id, "toolCallName": e.name})
        if isinstance(e, ToolCallEnd):
            return _frame({"type": "tool-call-end", "toolCallId": e.tool_call_id})
        if isinstance(e, ToolResult):
            if e.is_error:
                self.dropped["tool_error_as_result"] += 1  # the result holds the error's text, with no flag
            return _frame({"type": "tool-result", "toolCallId": e.tool_call_id, "result": as_text(e.content)})
        if isinstance(e, Interrupt):
            payload = e.payload
            if payload is None:
                payload = drop_none({"toolCallId": e.tool_call_id, "message": e.message,
                                     "responseSchema": e.response_schema})
            return _frame({"type": "interrupt", "id": e.id, "reason": e.reason or "interrupt", "payload": payload})
        if isinstance(e, RunFinished):
            if e.outcome == "cancelled":
                self.dropped["cancelled_as_finish"] += 1  # no way to say it: the run just ends
            return DONE
        if isinstance(e, RunError):
            return _frame({"type": "error", "error": e.message}) + DONE
        if isinstance(e, Raw) and e.dialect == "ag-kit":
            return _frame(e.event)
        kind = _DROPPED.get(type(e))
        if kind is not None:
            self.dropped[kind] += 1
        return b""
