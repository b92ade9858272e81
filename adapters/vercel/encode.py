"""Canonical events into a Vercel UI message stream that every `ai` 5, 6 and 7 client accepts.

Chunks carry only keys of the `ai` schema (clients before 5.0.217 / 6.0.231 / 7.0.32 reject any other key),
always carry the keys the schema requires even where they are typed `unknown` (`input`, `output`, `data`), and the
stream ends with `data: [DONE]`. A tool call's `input` is only known when its arguments are complete, so it is sent
with `tool-input-available` at the call's end.

An interrupt is always a tool approval for the client, the one human-in-the-loop answer useChat has
(`addToolApprovalResponse`): of the tool call it is about, or else of a call that stands for it (see
`request.INTERRUPT_CALL_PREFIX`), named after its reason. The continuation that answers such a call settles it
first, so the client shows the answer and never sends it again.
"""

from __future__ import annotations

import re
from typing import Any

from gateway.core.codec import as_text, drop_none, json_or_text
from gateway.core.encoding import HOLE, SSE_HEADERS, DeltaFrames, SSEEncoder, is_one_of, json_bytes, sse_frame
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
from gateway.core.sse import DONE
from gateway.core.state import StateTracker
from gateway.core.turn import Turn, approves

from .request import INKEEP, INTERRUPT_CALL_PREFIX

# Chunk types a `Raw` from a Vercel upstream may carry to a Vercel client: those every supported `ai` accepts.
_PASSTHROUGH = frozenset({"message-metadata", "source-url", "source-document", "file"})


def _text_delta(message_id: str) -> bytes:
    return sse_frame({"type": "text-delta", "id": message_id, "delta": HOLE})


_START_STEP = sse_frame({"type": "start-step"})
_FINISH_STEP = sse_frame({"type": "finish-step"})


class VercelEncoder(SSEEncoder):
    __slots__ = ("_after_results", "_args", "_inkeep", "_names", "_settles", "_state", "_step_open", "_text")

    HEADERS = {**SSE_HEADERS, "x-vercel-ai-ui-message-stream": "v1"}

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self._inkeep = request is not None and request.variant == INKEEP
        self._settles = [r for r in request.resume if r.tool_call_id is None] if request is not None else []
        self._args: dict[str, list[str]] = {}
        self._names: dict[str, str] = {}
        self._step_open = False
        self._after_results = False
        self._state = StateTracker()
        self._text = DeltaFrames(_text_delta)

    def _text_delta(self, e: TextDelta) -> bytes:
        return self._text.frame(e.delta, e.message_id)

    def _tool_call_args(self, e: ToolCallArgs) -> bytes:
        args = self._args.get(e.tool_call_id)
        if args is not None:
            args.append(e.delta)
        return sse_frame({"type": "tool-input-delta", "toolCallId": e.tool_call_id, "inputTextDelta": e.delta})

    def _reasoning_delta(self, e: ReasoningDelta) -> bytes:
        return sse_frame({"type": "reasoning-delta", "id": e.message_id, "delta": e.delta})

    def _text_start(self, e: TextStart) -> bytes:
        return self._step() + sse_frame({"type": "text-start", "id": e.message_id})

    def _text_end(self, e: TextEnd) -> bytes:
        return sse_frame({"type": "text-end", "id": e.message_id})

    def _reasoning_start(self, e: ReasoningStart) -> bytes:
        return self._step() + sse_frame({"type": "reasoning-start", "id": e.message_id})

    def _reasoning_end(self, e: ReasoningEnd) -> bytes:
        return sse_frame({"type": "reasoning-end", "id": e.message_id})

    def _tool_call_start(self, e: ToolCallStart) -> bytes:
        self._args[e.tool_call_id] = []
        self._names[e.tool_call_id] = e.name
        return self._step() + sse_frame({"type": "tool-input-start", "toolCallId": e.tool_call_id,
                                      "toolName": e.name})

    def _tool_call_end(self, e: ToolCallEnd) -> bytes:
        text = "".join(self._args.pop(e.tool_call_id, ()))
        frame = {"type": "tool-input-available", "toolCallId": e.tool_call_id,
                 "toolName": self._names.get(e.tool_call_id, "unknown_tool"),
                 "input": json_or_text(text) if text else {}}
        return b"data: " + json_bytes(frame, len(text)) + b"\n\n"

    def _tool_result(self, e: ToolResult) -> bytes:
        self._after_results = True
        if e.is_error:
            error_text = as_text(e.content)
            return sse_frame({"type": "tool-output-error", "toolCallId": e.tool_call_id, "errorText": error_text})
        return sse_frame({"type": "tool-output-available", "toolCallId": e.tool_call_id, "output": e.content})

    def _interrupt(self, e: Interrupt) -> bytes:
        if e.tool_call_id in self._names:  # the client needs the call's part to hang the approval on
            return sse_frame({"type": "tool-approval-request", "approvalId": e.id, "toolCallId": e.tool_call_id})
        self.dropped["interrupt_as_tool_call"] += 1
        return self._interrupt_call(e)

    def _data(self, e: Data) -> bytes:
        chunk: dict[str, Any] = {"type": f"data-{e.name}", "data": e.data}  # `data` is required, null or not
        if e.id is not None:
            chunk["id"] = e.id
        if e.transient:
            chunk["transient"] = True
        return sse_frame(chunk)

    def _run_started(self, e: RunStarted) -> bytes:
        start = sse_frame(drop_none({"type": "start", "messageId": e.message_id}))
        return start + self._settle() if self._settles and e.message_id is None else start

    def _step_started(self, e: StepStarted) -> bytes:
        # A Vercel upstream's own steps pass through; named (AG-UI) steps are not model steps: left out.
        if e.name is not None or self._step_open:
            if e.name is not None:
                self.dropped["step"] += 1
            return b""
        self._step_open, self._after_results = True, False
        return _START_STEP

    def _step_finished(self, e: StepFinished) -> bytes:
        if e.name is not None or not self._step_open:
            if e.name is not None:
                self.dropped["step"] += 1
            return b""
        self._step_open = False
        return _FINISH_STEP

    def _state_snapshot(self, e: StateSnapshot) -> bytes:
        self._state.snapshot(e.snapshot)
        return self._state_part()

    def _state_delta(self, e: StateDelta) -> bytes:
        return self._state_part() if self._state.apply(e.patch) else b""

    def _usage(self, e: Usage) -> bytes:
        usage = drop_none({"inputTokens": e.input_tokens, "outputTokens": e.output_tokens,
                           "totalTokens": e.total_tokens, "model": e.model, "provider": e.provider})
        return sse_frame({"type": "message-metadata", "messageMetadata": {"usage": usage}})

    def _run_finished(self, e: RunFinished) -> bytes:
        return self._end_step() + sse_frame({"type": "abort" if e.outcome == "cancelled" else "finish"}) + DONE

    def _run_error(self, e: RunError) -> bytes:
        return self._end_step() + self._error(e) + DONE

    def _raw(self, e: Raw) -> bytes:
        if e.dialect == "vercel" and is_one_of(e.event.get("type"), _PASSTHROUGH):
            return sse_frame(e.event)
        self.dropped["raw"] += 1
        return b""

    def _messages_snapshot(self, e: MessagesSnapshot) -> bytes:
        self.dropped["messages_snapshot"] += 1  # the client owns the history
        return b""

    def _interrupt_call(self, e: Interrupt) -> bytes:
        """A tool call of the gateway's own that stands for an interrupt not about one, waiting for approval."""
        call_id = INTERRUPT_CALL_PREFIX + e.id
        name = re.sub(r"[^A-Za-z0-9_]+", "_", e.reason).strip("_") or "approval"
        self._names[call_id] = name
        details = drop_none({"reason": e.reason or None, "message": e.message, "payload": e.payload,
                             "responseSchema": e.response_schema})
        return (self._step()
                + sse_frame({"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": details})
                + sse_frame({"type": "tool-approval-request", "approvalId": e.id, "toolCallId": call_id}))

    def _settle(self) -> bytes:
        """Close the calls that stood for the interrupts this continuation answers, as the client answered them.
        Only on a continuation of the client's own message (a `start` with no new message id)."""
        self._after_results = True
        out = []
        for resume in self._settles:
            call_id = INTERRUPT_CALL_PREFIX + resume.interrupt_id
            if approves(resume):
                out.append(sse_frame({"type": "tool-output-available", "toolCallId": call_id,
                                      "output": resume.payload}))
            else:
                out.append(sse_frame({"type": "tool-output-denied", "toolCallId": call_id}))
        return b"".join(out)

    def _step(self) -> bytes:
        """Open a step before the model's output, and a new one after tool results.

        `useChat`'s automatic sending (`lastAssistantMessageIsCompleteWithToolCalls`, `...WithApprovalResponses`)
        looks at the last step of the message only: without step boundaries a settled tool call stays in "the last
        step" and the client posts again and again.
        """
        if self._after_results and self._step_open:
            self._after_results = False
            return _FINISH_STEP + _START_STEP
        self._after_results = False
        if self._step_open:
            return b""
        self._step_open = True
        return _START_STEP

    def _end_step(self) -> bytes:
        if not self._step_open:
            return b""
        self._step_open = False
        return _FINISH_STEP

    def _state_part(self) -> bytes:
        """The whole state as one data part with a fixed id: the client replaces it in place on every change."""
        return sse_frame({"type": "data-state", "id": "state", "data": self._state.value})

    def _error(self, e: RunError) -> bytes:
        error = sse_frame({"type": "error", "errorText": e.message})
        if not self._inkeep:
            return error
        operation = drop_none({"type": "error", "message": e.message, "severity": "error", "code": e.code})
        return sse_frame({"type": "data-operation", "data": operation}) + error

    handlers = {
        TextDelta: _text_delta,
        ToolCallArgs: _tool_call_args,
        ReasoningDelta: _reasoning_delta,
        TextStart: _text_start,
        TextEnd: _text_end,
        ReasoningStart: _reasoning_start,
        ReasoningEnd: _reasoning_end,
        ToolCallStart: _tool_call_start,
        ToolCallEnd: _tool_call_end,
        ToolResult: _tool_result,
        Interrupt: _interrupt,
        Data: _data,
        RunStarted: _run_started,
        StepStarted: _step_started,
        StepFinished: _step_finished,
        StateSnapshot: _state_snapshot,
        StateDelta: _state_delta,
        Usage: _usage,
        RunFinished: _run_finished,
        RunError: _run_error,
        Raw: _raw,
        MessagesSnapshot: _messages_snapshot,
    }
