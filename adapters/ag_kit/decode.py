"""AG-Kit SSE from an upstream, into canonical events.

The dialect is loose: `text` events carry no message id and no boundaries. A text message starts at the first
`text` after anything else and ends where a tool call, a tool result or an interrupt begins; a tool call's parent
is the text the agent said just before it. `[DONE]` ends the run; a stream cut before it is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.ag_ui.decode import AguiDecoder
from gateway.core import events as canonical
from gateway.core.decoding import Events
from gateway.core.errors import ErrorCode
from gateway.core.ids import new_id
from gateway.core.sse import DEFAULT_MAX_FRAME


class AgKitDecoder(AguiDecoder):
    """Also reads AG-UI events: cloudbase-agent-server 0.1.2 to 0.1.11 answer on the same path in AG-UI (then
    `[DONE]`), and a stream of events we would drop is worse than one we can read."""

    __slots__ = ("_parent", "_text")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._text: str | None = None
        self._parent: str | None = None

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        kind = frame.get("type")
        if kind == "text":  # most of a stream, read here rather than through the table
            content = frame.get("content")
            if type(content) is str:
                if self._text is None:
                    self._text = self._parent = new_id("msg")
                out.append(canonical.TextDelta(self._text, content))
                return
        handler = _HANDLERS.get(kind) if type(kind) is str else None
        if handler is not None and handler(self, frame, out):
            return
        if kind is None and "error" in frame:
            # The 0.1.1 server's `{"error": "Server error", "details": ...}`.
            _error(self, frame, out)
        elif isinstance(kind, str) and kind.isupper():
            super().on_frame(frame, out)
        else:
            out.append(canonical.Raw("ag-kit", event=frame))

    def steady_text(self, frame: Any) -> str | None:
        if frame.get("type") != "text":
            return super().steady_text(frame)
        content = frame.get("content")
        if type(content) is str and self._text is not None:
            self._steady_message = self._text
            return content
        return None

    def _end_text(self, out: Events) -> None:
        if self._text is not None:
            out.append(canonical.TextEnd(self._text))
            self._text = None


# Each returns whether the frame was what its type says; one that was not is read as AG-UI or kept as `Raw`.

def _tool_args(d: AgKitDecoder, f: dict[str, Any], out: Events) -> bool:
    tool_call_id, delta = f.get("toolCallId"), f.get("delta")
    if not (isinstance(tool_call_id, str) and isinstance(delta, str)):
        return False
    out.append(canonical.ToolCallArgs(tool_call_id, delta))
    return True


def _tool_start(d: AgKitDecoder, f: dict[str, Any], out: Events) -> bool:
    tool_call_id, name = f.get("toolCallId"), f.get("toolCallName")
    if not (isinstance(tool_call_id, str) and isinstance(name, str)):
        return False
    d._end_text(out)
    out.append(canonical.ToolCallStart(tool_call_id, name, parent_message_id=d._parent))
    return True


def _tool_end(d: AgKitDecoder, f: dict[str, Any], out: Events) -> bool:
    tool_call_id = f.get("toolCallId")
    if not isinstance(tool_call_id, str):
        return False
    out.append(canonical.ToolCallEnd(tool_call_id))
    return True


def _tool_result(d: AgKitDecoder, f: dict[str, Any], out: Events) -> bool:
    tool_call_id, result = f.get("toolCallId"), f.get("result")
    if not isinstance(tool_call_id, str):
        return False
    d._end_text(out)
    d._parent = None
    out.append(canonical.ToolResult(tool_call_id, result if isinstance(result,
                                                                       str) else "" if result is None else result))
    return True


def _interrupt(d: AgKitDecoder, f: dict[str, Any], out: Events) -> bool:
    interrupt_id = f.get("id")
    if not isinstance(interrupt_id, str):
        return False
    d._end_text(out)
    reason = f.get("reason")
    payload = f.get("payload")
    # An interrupt about a tool call names it in its payload (as the gateway writes one for an AG-Kit client).
    call = payload.get("toolCallId") if isinstance(payload, dict) else None
    out.append(canonical.Interrupt(interrupt_id, reason=reason if isinstance(reason, str) else "", payload=payload,
                                   tool_call_id=call if isinstance(call, str) and call else None))
    return True


def _error(d: AgKitDecoder, f: dict[str, Any], out: Events) -> bool:
    """`{"type":"error","error":...}`."""
    message = str(f.get("error") or "upstream agent failed")
    if f.get("details"):
        message = f"{message}: {f['details']}"
    out.append(canonical.RunError(message, code=ErrorCode.UPSTREAM_ERROR))
    return True


_HANDLERS: dict[str, Callable[[AgKitDecoder, dict[str, Any], Events], bool]] = {
    "tool-call-args": _tool_args,
    "tool-call-start": _tool_start,
    "tool-call-end": _tool_end,
    "tool-result": _tool_result,
    "interrupt": _interrupt,
    "error": _error,
}
