"""Canonical events into AG-Kit SSE, as `@cloudbase/agent-ui-web` reads it.

Only what the dialect has a word for goes out: text, tool calls, tool results, interrupts and errors, then
`data: [DONE]`. Message boundaries, reasoning, state and steps have none and are left out (see the README's
mapping table).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.codec import as_text, drop_none
from gateway.events import (
    Event,
    Interrupt,
    Raw,
    RunError,
    RunFinished,
    TextDelta,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.sse import DONE, KEEP_ALIVE
from gateway.turn import Turn

HEADERS = {"content-type": "text/event-stream; charset=utf-8"}


def _frame(event: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


class AgKitEncoder:
    __slots__ = ("headers", "status_code")

    def __init__(self, request: Turn | None = None) -> None:
        self.status_code = 200
        self.headers = dict(HEADERS)

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
            return _frame({"type": "tool-result", "toolCallId": e.tool_call_id, "result": as_text(e.content)})
        if isinstance(e, Interrupt):
            payload = e.payload
            if payload is None:
                payload = drop_none({"toolCallId": e.tool_call_id, "message": e.message,
                                     "responseSchema": e.response_schema})
            return _frame({"type": "interrupt", "id": e.id, "reason": e.reason or "interrupt", "payload": payload})
        if isinstance(e, RunFinished):
            return DONE
        if isinstance(e, RunError):
            return _frame({"type": "error", "error": e.message}) + DONE
        if isinstance(e, Raw) and e.dialect == "ag-kit":
            return _frame(e.event)
        return b""
