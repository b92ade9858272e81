"""AG-Kit SSE from an upstream, into canonical events.

The dialect is loose: `text` events carry no message id and no boundaries. A text message starts at the first
`text` after anything else and ends where a tool call, a tool result or an interrupt begins; a tool call's parent
is the text the agent said just before it. `[DONE]` ends the run; a stream cut before it is an error.
"""

from __future__ import annotations

from typing import Any

from adapters.ag_ui.decode import AguiDecoder
from gateway.core.events import (
    Event,
    Interrupt,
    Raw,
    RunError,
    TextDelta,
    TextEnd,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.ids import new_id
from gateway.core.sse import DEFAULT_MAX_FRAME


class AgKitDecoder(AguiDecoder):
    """Also reads AG-UI events: cloudbase-agent-server 0.1.2 to 0.1.11 answer on the same path in AG-UI (then
    `[DONE]`), and a stream of events we would drop is worse than one we can read."""

    __slots__ = ("_parent", "_text")

    dialect = "ag-kit"

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._text: str | None = None
        self._parent: str | None = None

    def on_frame(self, frame: dict[str, Any], out: list[Event]) -> None:
        push = self.repair.push
        kind = frame.get("type")
        if kind == "text":
            content = frame.get("content")
            if isinstance(content, str):
                if self._text is None:
                    self._text = self._parent = new_id("msg")
                push(TextDelta(self._text, content), out)
                return
        elif kind == "tool-call-args":
            tool_call_id, delta = frame.get("toolCallId"), frame.get("delta")
            if isinstance(tool_call_id, str) and isinstance(delta, str):
                push(ToolCallArgs(tool_call_id, delta), out)
                return
        elif kind == "tool-call-start":
            tool_call_id, name = frame.get("toolCallId"), frame.get("toolCallName")
            if isinstance(tool_call_id, str) and isinstance(name, str):
                self._end_text(out)
                push(ToolCallStart(tool_call_id, name, self._parent), out)
                return
        elif kind == "tool-call-end":
            tool_call_id = frame.get("toolCallId")
            if isinstance(tool_call_id, str):
                push(ToolCallEnd(tool_call_id), out)
                return
        elif kind == "tool-result":
            tool_call_id, result = frame.get("toolCallId"), frame.get("result")
            if isinstance(tool_call_id, str):
                self._end_text(out)
                self._parent = None
                push(ToolResult(tool_call_id, result if isinstance(result, str) else "" if result is None else result),
                     out)
                return
        elif kind == "interrupt":
            interrupt_id = frame.get("id")
            if isinstance(interrupt_id, str):
                self._end_text(out)
                reason = frame.get("reason")
                push(Interrupt(interrupt_id, reason if isinstance(reason, str) else "", payload=frame.get("payload")),
                     out)
                return
        elif kind == "error" or (kind is None and "error" in frame):
            # `{"type":"error","error":...}`, or the 0.1.1 server's `{"error": "Server error", "details": ...}`.
            message = str(frame.get("error") or "upstream agent failed")
            if frame.get("details"):
                message = f"{message}: {frame['details']}"
            push(RunError(message, "upstream_error"), out)
            return
        if isinstance(kind, str) and kind.isupper():
            super().on_frame(frame, out)
            return
        push(Raw("ag-kit", frame), out)

    def _end_text(self, out: list[Event]) -> None:
        if self._text is not None:
            self.repair.push(TextEnd(self._text), out)
            self._text = None
