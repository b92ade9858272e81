"""A Vercel UI message stream from an upstream, into canonical events.

Also reads what Inkeep's `/api/chat` really sends: one text id reused for every text segment (renamed here, so
that ids stay unique per message in the other dialects), run failures as `data-operation` parts of type `error`,
and an `{"error": ...}` frame with no type on its durable path. And what our own encoder writes beyond the AI
SDK's words: the whole state as `data-state`, and the tool call that stands for an interrupt. A `finish` chunk's
`finishReason` of `length` or `content-filter` says the answer was cut short.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.decoding import Events, JsonSSEDecoder, required_str
from gateway.core.errors import ErrorCode
from gateway.core.sse import DEFAULT_MAX_FRAME

from .request import INTERRUPT_CALL_PREFIX

DENIED = "The user denied this tool call."
STOP_REASONS: dict[str, canonical.StopReason] = {"length": "length", "content-filter": "content_filter"}
"""The finish reasons that say the answer was cut short."""


Handler = Callable[["VercelDecoder", dict[str, Any], Events], None]


class VercelDecoder(JsonSSEDecoder):
    __slots__ = ("_args_seen", "_ended", "_interrupt_calls", "_renamed", "_segments", "_tools")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._tools: dict[str, str] = {}  # tool call id -> name, for calls started in this stream
        self._args_seen: set[str] = set()
        self._ended: set[str] = set()  # text and reasoning ids already ended once
        self._renamed: dict[str, str] = {}
        self._segments = 0
        """Segments that reused an ended id so far: each is renamed after its count, so no two share a name."""
        self._interrupt_calls: dict[str, dict[str, Any]] = {}  # tool call id -> the interrupt it stands for

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        kind = frame.get("type")
        try:
            if kind == "text-delta":  # most of a stream, read here rather than through the table
                out.append(canonical.TextDelta(self._id(required_str(frame, "id")), required_str(frame, "delta")))
                return
            handler = _HANDLERS.get(kind) if type(kind) is str else None
            if handler is not None:
                handler(self, frame, out)
            elif type(kind) is str and kind.startswith("data-"):
                self._data(kind[5:], frame, out)
            elif kind is None and "error" in frame:
                out.append(canonical.RunError(str(frame["error"]), code=ErrorCode.UPSTREAM_ERROR))
            else:
                out.append(canonical.Raw("vercel", event=frame))
        except (KeyError, TypeError):
            out.append(canonical.Raw("vercel", event=frame))

    def _interrupt_call(self, frame: dict[str, Any], out: Events) -> None:
        """A call that stands for an interrupt is that interrupt, once its approval is asked; its settling is
        the client's answer, already known."""
        call_id = required_str(frame, "toolCallId")
        if frame["type"] == "tool-input-available":
            details = frame.get("input")
            details = details if isinstance(details, dict) else {}
            self._interrupt_calls[call_id] = {**details, "name": required_str(frame, "toolName")}
        elif frame["type"] == "tool-approval-request" and call_id in self._interrupt_calls:
            details = self._interrupt_calls[call_id]
            reason, message = details.get("reason"), details.get("message")
            out.append(canonical.Interrupt(required_str(frame, "approvalId"),
                                           reason=reason if isinstance(reason, str) else details["name"],
                                           message=message if isinstance(message, str) else None,
                                           payload=details.get("payload"),
                                           response_schema=details.get("responseSchema")))

    def _input_available(self, frame: dict[str, Any], out: Events) -> None:
        call_id = required_str(frame, "toolCallId")
        if call_id not in self._tools:
            self._tools[call_id] = required_str(frame, "toolName")
            out.append(canonical.ToolCallStart(call_id, required_str(frame, "toolName")))
        if call_id not in self._args_seen:
            value = frame.get("input")
            arguments = value if isinstance(value, str) else orjson.dumps(value or {}).decode()
            out.append(canonical.ToolCallArgs(call_id, arguments))
        out.append(canonical.ToolCallEnd(call_id))
        if frame["type"] == "tool-input-error":
            out.append(canonical.ToolResult(call_id, required_str(frame, "errorText"), is_error=True))

    def _data(self, name: str, frame: dict[str, Any], out: Events) -> None:
        data = frame["data"]
        if name == "operation" and isinstance(data, dict) and data.get("type") == "error" \
                and data.get("severity", "error") == "error":
            code = data.get("code")
            out.append(canonical.RunError(str(data.get("message") or "upstream agent failed"),
                                          code=code if isinstance(code, str) else ErrorCode.UPSTREAM_ERROR))
            return
        if name == "state" and frame.get("id") == "state":
            out.append(canonical.StateSnapshot(data))  # how our encoder carries the whole state
            return
        item_id = frame.get("id")
        out.append(canonical.Data(name, data, id=item_id if isinstance(item_id, str) else None,
                                  transient=bool(frame.get("transient"))))

    def _metadata(self, frame: dict[str, Any], out: Events) -> None:
        if "messageMetadata" in frame:
            out.append(canonical.Raw("vercel",
                                     event={"type": "message-metadata", "messageMetadata": frame["messageMetadata"]}))

    def _id(self, raw_id: str) -> str:
        return self._renamed.get(raw_id, raw_id) if self._renamed else raw_id

    def _start_id(self, raw_id: str) -> str:
        if raw_id in self._ended:
            self._segments += 1
            self._renamed[raw_id] = f"{raw_id}-{self._segments}"
        else:
            self._renamed.pop(raw_id, None)
        return self._id(raw_id)

    def _end_id(self, raw_id: str) -> str:
        self._ended.add(raw_id)
        return self._id(raw_id)


def _interrupt_call(handler: Handler) -> Handler:
    """A tool chunk of a call that stands for an interrupt goes to `_interrupt_call` instead."""
    def handle(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
        if required_str(f, "toolCallId").startswith(INTERRUPT_CALL_PREFIX):
            d._interrupt_call(f, out)
        else:
            handler(d, f, out)
    return handle


def _tool_input_delta(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    d._args_seen.add(required_str(f, "toolCallId"))
    out.append(canonical.ToolCallArgs(required_str(f, "toolCallId"), required_str(f, "inputTextDelta")))


def _reasoning_delta(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ReasoningDelta(d._id(required_str(f, "id")), required_str(f, "delta")))


def _text_start(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.TextStart(d._start_id(required_str(f, "id"))))


def _text_end(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.TextEnd(d._end_id(required_str(f, "id"))))


def _reasoning_start(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ReasoningStart(d._start_id(required_str(f, "id"))))


def _reasoning_end(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ReasoningEnd(d._end_id(required_str(f, "id"))))


def _tool_input_start(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    d._tools[required_str(f, "toolCallId")] = required_str(f, "toolName")
    out.append(canonical.ToolCallStart(required_str(f, "toolCallId"), required_str(f, "toolName")))


def _input_available(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    d._input_available(f, out)


def _tool_output_available(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    if not f.get("preliminary"):  # a preliminary output is a progress update; the final one follows
        out.append(canonical.ToolResult(required_str(f, "toolCallId"), f["output"]))


def _tool_output_error(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ToolResult(required_str(f, "toolCallId"), required_str(f, "errorText"), is_error=True))


def _tool_output_denied(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ToolResult(required_str(f, "toolCallId"), DENIED, is_error=True, denied=True))


_APPROVAL_EXTRAS = ("signature", "isAutomatic", "reason", "approvalDescriptor", "inputSchemaInput")


def _tool_approval_request(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    # What AI SDK 6 and 7 say beyond the ids (a signature, an automatic approval, why) is kept for a client that
    # reads it; `reason` is also the interrupt's message, for one that does not.
    said = {key: f[key] for key in _APPROVAL_EXTRAS if key in f}
    reason = f.get("reason")
    out.append(canonical.Interrupt(required_str(f, "approvalId"), reason="tool_approval",
                                   message=reason if isinstance(reason, str) else None,
                                   tool_call_id=required_str(f, "toolCallId"),
                                   metadata={"vercel": said} if said else None))


def _tool_approval_response(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    """AI SDK 7: an approval the agent answered itself, in the stream (an automatic one): the run does not wait."""
    approved, reason = f.get("approved"), f.get("reason")
    out.append(canonical.InterruptResolved(required_str(f, "approvalId"), approved=approved is not False,
                                           reason=reason if isinstance(reason, str) else None))


def _custom(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    """AI SDK 7's provider-specific part: named by its `kind`, its provider metadata the data."""
    metadata = f.get("providerMetadata")
    out.append(canonical.Data(required_str(f, "kind"), metadata if isinstance(metadata, dict) else {}, custom=True))


def _start(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    message_id = f.get("messageId")
    out.append(canonical.RunStarted(message_id=message_id if isinstance(message_id, str) else None))
    d._metadata(f, out)


def _start_step(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.StepStarted())


def _finish_step(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.StepFinished())


def _finish(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    d._metadata(f, out)
    reason = f.get("finishReason")
    out.append(canonical.RunFinished(stop_reason=STOP_REASONS.get(reason) if isinstance(reason, str) else None))


def _abort(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.RunFinished(outcome="cancelled"))


def _error(d: VercelDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.RunError(str(f["errorText"]), code=ErrorCode.UPSTREAM_ERROR))


_HANDLERS: dict[str, Handler] = {
    "tool-input-delta": _tool_input_delta,
    "reasoning-delta": _reasoning_delta,
    "text-start": _text_start,
    "text-end": _text_end,
    "reasoning-start": _reasoning_start,
    "reasoning-end": _reasoning_end,
    "tool-input-start": _interrupt_call(_tool_input_start),
    "tool-input-available": _interrupt_call(_input_available),
    "tool-input-error": _input_available,
    "tool-output-available": _interrupt_call(_tool_output_available),
    "tool-output-error": _interrupt_call(_tool_output_error),
    "tool-output-denied": _interrupt_call(_tool_output_denied),
    "tool-approval-request": _interrupt_call(_tool_approval_request),
    "start": _start,
    "start-step": _start_step,
    "finish-step": _finish_step,
    "finish": _finish,
    "abort": _abort,
    "error": _error,
    "custom": _custom,
    "tool-approval-response": _tool_approval_response,
}
