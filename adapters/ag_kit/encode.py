"""Canonical events into AG-Kit SSE, as `@cloudbase/agent-ui-web` reads it.

Only what the dialect has a word for goes out: text, tool calls, tool results, interrupts and errors, then
`data: [DONE]`. Message boundaries, reasoning, state and steps have none and are left out (see
docs/dialects/ag-kit.md); what carried something is counted in `dropped`.
"""

from __future__ import annotations

from gateway.core import events as canonical
from gateway.core.codec import as_text, drop_none
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import HOLE, DeltaFrames, SSEEncoder, sse_frame
from gateway.core.sse import DONE

_TEXT = DeltaFrames(lambda _: sse_frame({"type": "text", "content": HOLE}))


def _text(self: AgKitEncoder, e: canonical.TextDelta) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    return _TEXT.frame(e.delta) if e.delta else b""


def _tool_args(self: AgKitEncoder, e: canonical.ToolCallArgs) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    return sse_frame({"type": "tool-call-args", "toolCallId": e.tool_call_id, "delta": e.delta})


def _tool_start(self: AgKitEncoder, e: canonical.ToolCallStart) -> bytes:
    return sse_frame({"type": "tool-call-start", "toolCallId": e.tool_call_id, "toolCallName": e.name})


def _tool_end(self: AgKitEncoder, e: canonical.ToolCallEnd) -> bytes:
    return sse_frame({"type": "tool-call-end", "toolCallId": e.tool_call_id})


def _tool_result(self: AgKitEncoder, e: canonical.ToolResult) -> bytes:
    if e.is_error:
        self.dropped[Dropped.TOOL_ERROR_AS_RESULT] += 1  # the result holds the error's text, with no flag
    return sse_frame({"type": "tool-result", "toolCallId": e.tool_call_id, "result": as_text(e.content)})


def _interrupt(self: AgKitEncoder, e: canonical.Interrupt) -> bytes:
    payload = e.payload
    if payload is None:
        payload = drop_none({"toolCallId": e.tool_call_id, "message": e.message, "responseSchema": e.response_schema})
    return sse_frame({"type": "interrupt", "id": e.id, "reason": e.reason or "interrupt", "payload": payload})


def _run_finished(self: AgKitEncoder, e: canonical.RunFinished) -> bytes:
    if e.outcome == "cancelled":
        self.dropped[Dropped.CANCELLED_AS_FINISH] += 1  # no way to say it: the run just ends
    if e.stop_reason is not None:
        self.dropped[Dropped.STOP_REASON] += 1  # nor that the answer was cut short
    return DONE


def _run_error(self: AgKitEncoder, e: canonical.RunError) -> bytes:
    return sse_frame({"type": "error", "error": e.message}) + DONE


def _raw(self: AgKitEncoder, e: canonical.Raw) -> bytes:
    if e.dialect == "ag-kit":
        return sse_frame(e.event)
    self.dropped[Dropped.RAW] += 1
    return b""


def _nothing(self: AgKitEncoder, e: canonical.Event) -> bytes:
    """Run starts and message boundaries: left out, losing nothing (the client knows its ids, and a message ends
    where something else begins)."""
    return b""


class AgKitEncoder(SSEEncoder):
    __slots__ = ()

    DROPS = drop_map(Dropped.REASONING, Dropped.STATE, Dropped.MESSAGES_SNAPSHOT, Dropped.STEP, Dropped.DATA,
                     Dropped.USAGE, Dropped.ACTIVITY, Dropped.ENCRYPTED_VALUE, Dropped.SUBAGENT,
                     Dropped.INTERRUPT_RESOLVED)  # its `interrupt` went out already: the client still sees it asked
    """What the dialect has no word for (and a `Raw` of another dialect's, `_raw`). Run starts and message
    boundaries are left out too, but lose nothing: the client knows its ids, and a message ends where something else
    begins."""
    METADATA = frozenset({canonical.TextDelta, canonical.ToolCallArgs, canonical.Raw, *DROPS})
    """Deltas count theirs; the dropped are counted whole."""

    def text_around(self, message_id: str) -> tuple[bytes, bytes] | None:
        return _TEXT.around()

    handlers = {
        canonical.TextDelta: _text,
        canonical.ToolCallArgs: _tool_args,
        canonical.ToolCallStart: _tool_start,
        canonical.ToolCallEnd: _tool_end,
        canonical.ToolResult: _tool_result,
        canonical.Interrupt: _interrupt,
        canonical.RunFinished: _run_finished,
        canonical.RunError: _run_error,
        canonical.Raw: _raw,
        canonical.RunStarted: _nothing,
        canonical.TextStart: _nothing,
        canonical.TextEnd: _nothing,
    }
