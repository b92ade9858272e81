"""Canonical events into a Vercel UI message stream that the client's `ai` release accepts (see `versions`).

Chunks carry only keys of that release's schema (clients before 5.0.217 / 6.0.231 / 7.0.32 reject any other key),
always carry the keys the schema requires even where they are typed `unknown` (`input`, `output`, `data`), and the
stream ends with `data: [DONE]`. A tool call's `input` is only known when its arguments are complete, so it is sent
with `tool-input-available` at the call's end.

An interrupt is a tool approval for a 6 or 7 client, the one human-in-the-loop answer useChat has
(`addToolApprovalResponse`): of the tool call it is about, or else of a call that stands for it (see
`request.INTERRUPT_CALL_PREFIX`), named after its reason. The continuation that answers such a call settles it
first, so the client shows the answer and never sends it again. A 5 client has no approvals: it gets the call that
stands for the interrupt, to answer with `addToolResult`.

What AG-UI adds beyond the AI SDK's words goes where the SDK has room: activities and subagents as data parts
replaced in place (`data-activity`, `data-subagent`), event metadata and a subagent's authorship in a part's
`providerMetadata` under `agent-gateway`, encrypted reasoning on its reasoning part (or, once that part has ended,
a `data-reasoning-encrypted` part), usage and run metadata in the message's metadata. An answer cut short ends with
the `finish` chunk's `finishReason` (`length`, `content-filter`).

Each event type's handler is a function of the encoder and the event, written before the class that lists them in
`handlers`, as the decoders' are: the class keeps the stream's state and what several handlers share.
"""

from __future__ import annotations

from typing import Any

from gateway.core import events as canonical
from gateway.core.activity import Shown
from gateway.core.codec import as_text, drop_none, json_or_text, output_of
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import HOLE, SSE_HEADERS, DeltaFrames, SSEEncoder, json_bytes, sse_frame
from gateway.core.sse import DONE
from gateway.core.state import StateTracker
from gateway.core.text_pieces import TextPieces
from gateway.core.turn import Turn

from . import approvals
from .decode import STOP_REASONS
from .request import INKEEP
from .versions import AiSdk

FINISH_REASONS = {stop: finish for finish, stop in STOP_REASONS.items()}
PROVIDER = "agent-gateway"
"""The `providerMetadata` key under which a part carries what AG-UI said of it (its metadata, its subagent)."""


def _text_delta_frame(message_id: str) -> bytes:
    return sse_frame({"type": "text-delta", "id": message_id, "delta": HOLE})


_START_STEP = sse_frame({"type": "start-step"})
_FINISH_STEP = sse_frame({"type": "finish-step"})


def _text_delta(enc: VercelEncoder, e: canonical.TextDelta) -> bytes:
    if e.metadata is None:
        return enc._text.frame(e.delta, e.message_id)
    chunk = enc._part({"type": "text-delta", "id": e.message_id, "delta": e.delta}, e)
    return b"data: " + json_bytes(chunk, len(e.delta)) + b"\n\n"


def _tool_call_args(enc: VercelEncoder, e: canonical.ToolCallArgs) -> bytes:
    args = enc._args.get(e.tool_call_id)
    if args is not None:
        args.add(e.delta)
    if e.metadata is not None:
        enc.dropped[Dropped.METADATA] += 1
    return sse_frame({"type": "tool-input-delta", "toolCallId": e.tool_call_id, "inputTextDelta": e.delta})


def _reasoning_delta(enc: VercelEncoder, e: canonical.ReasoningDelta) -> bytes:
    return sse_frame(enc._part({"type": "reasoning-delta", "id": e.message_id, "delta": e.delta}, e))


def _text_start(enc: VercelEncoder, e: canonical.TextStart) -> bytes:
    return enc._step() + sse_frame(enc._part({"type": "text-start", "id": e.message_id}, e, e.subagent_run_id))


def _text_end(enc: VercelEncoder, e: canonical.TextEnd) -> bytes:
    return sse_frame(enc._part({"type": "text-end", "id": e.message_id}, e))


def _reasoning_start(enc: VercelEncoder, e: canonical.ReasoningStart) -> bytes:
    enc._open.add(e.message_id)
    return enc._step() + sse_frame(enc._part({"type": "reasoning-start", "id": e.message_id}, e, e.subagent_run_id))


def _reasoning_end(enc: VercelEncoder, e: canonical.ReasoningEnd) -> bytes:
    enc._open.discard(e.message_id)
    encrypted = enc._encrypted.pop(e.message_id, None) if enc._encrypted else None
    return sse_frame(enc._part({"type": "reasoning-end", "id": e.message_id}, e, encrypted=encrypted))


def _encrypted_value(enc: VercelEncoder, e: canonical.EncryptedValue) -> bytes:
    if e.entity_id in enc._open or e.entity_id in enc._args:
        enc._encrypted[e.entity_id] = e.value  # said on the part's last chunk
        return b""
    data = drop_none({"subtype": e.subtype, "entityId": e.entity_id, "encryptedValue": e.value,
                      "subagentRunId": e.subagent_run_id})
    return sse_frame({"type": "data-reasoning-encrypted", "id": e.entity_id, "data": data})


def _tool_call_start(enc: VercelEncoder, e: canonical.ToolCallStart) -> bytes:
    enc._args[e.tool_call_id] = TextPieces()
    enc._names[e.tool_call_id] = e.name
    if e.subagent_run_id is not None:
        enc._authors[e.tool_call_id] = e.subagent_run_id
    chunk = {"type": "tool-input-start", "toolCallId": e.tool_call_id, "toolName": e.name}
    return enc._step() + sse_frame(enc._part(chunk, e, carried=enc._sdk.tool_metadata))


def _tool_call_end(enc: VercelEncoder, e: canonical.ToolCallEnd) -> bytes:
    args = enc._args.pop(e.tool_call_id, None)
    text = args.text() if args is not None else ""
    encrypted = enc._encrypted.pop(e.tool_call_id, None) if enc._encrypted else None
    chunk = {"type": "tool-input-available", "toolCallId": e.tool_call_id,
             "toolName": enc._names.get(e.tool_call_id, "unknown_tool"),
             "input": json_or_text(text) if text else {}}
    chunk = enc._part(chunk, e, enc._authors.pop(e.tool_call_id, None), encrypted)
    return b"data: " + json_bytes(chunk, len(text)) + b"\n\n"  # the arguments, gathered whole


def _tool_result(enc: VercelEncoder, e: canonical.ToolResult) -> bytes:
    enc._after_results = True
    carried = enc._sdk.tool_metadata
    if e.denied and enc._sdk.approvals:
        chunk = {"type": "tool-output-denied", "toolCallId": e.tool_call_id}
        carried = False
    elif e.is_error:
        error_text = as_text(e.content)
        chunk = {"type": "tool-output-error", "toolCallId": e.tool_call_id, "errorText": error_text}
    else:
        chunk = {"type": "tool-output-available", "toolCallId": e.tool_call_id, "output": output_of(e.content)}
    return sse_frame(enc._part(chunk, e, e.subagent_run_id, carried=carried))


def _interrupt(enc: VercelEncoder, e: canonical.Interrupt) -> bytes:
    if e.tool_call_id in enc._names and enc._sdk.approvals:  # the call's part holds the approval
        if e.expires_at is not None:
            enc.dropped[Dropped.INTERRUPT_EXPIRY] += 1  # an approval has no deadline
        return sse_frame(approvals.approval(e, enc._sdk))
    enc.dropped[Dropped.INTERRUPT_AS_TOOL_CALL] += 1
    call_id, name, chunks = approvals.stand_in(e, enc._sdk)
    enc._names[call_id] = name
    return enc._step() + b"".join(sse_frame(chunk) for chunk in chunks)


def _interrupt_resolved(enc: VercelEncoder, e: canonical.InterruptResolved) -> bytes:
    chunk = approvals.resolved(e, enc._sdk)
    if chunk is None:
        enc.dropped[Dropped.INTERRUPT_RESOLVED] += 1  # before 7 an approval is only answered by the client
        return b""
    return sse_frame(chunk)


def _data(enc: VercelEncoder, e: canonical.Data) -> bytes:
    if e.custom:
        if enc._sdk.seven and isinstance(e.data, dict):
            return sse_frame({"type": "custom", "kind": e.name, "providerMetadata": e.data})
        enc.dropped[Dropped.CUSTOM_AS_DATA] += 1  # before 7 a custom part is a data part named after its kind
    chunk: dict[str, Any] = {"type": f"data-{e.name}", "data": e.data}  # `data` is required, null or not
    if e.id is not None:
        chunk["id"] = e.id
    if e.transient:
        chunk["transient"] = True
    return sse_frame(chunk)


def _activity_snapshot(enc: VercelEncoder, e: canonical.ActivitySnapshot) -> bytes:
    data = enc._shown().activity(e)
    assert data is not None  # a snapshot always shows
    return _data(enc, data)


def _activity_delta(enc: VercelEncoder, e: canonical.ActivityDelta) -> bytes:
    data = enc._shown().activity(e)
    if data is None:
        enc.dropped[Dropped.ACTIVITY] += 1  # a patch of an activity this stream never showed whole
        return b""
    return _data(enc, data)


def _subagent(enc: VercelEncoder,
              e: canonical.SubagentStarted | canonical.SubagentFinished | canonical.SubagentError) -> bytes:
    return _data(enc, enc._shown().subagent(e))


def _run_started(enc: VercelEncoder, e: canonical.RunStarted) -> bytes:
    start = sse_frame(drop_none({"type": "start", "messageId": e.message_id,
                                 "messageMetadata": None if e.metadata is None else {"metadata": e.metadata}}))
    return start + enc._settle() if enc._settles and e.message_id is None else start


def _step_started(enc: VercelEncoder, e: canonical.StepStarted) -> bytes:
    # A Vercel upstream's own steps pass through; named (AG-UI) steps are not model steps: left out.
    if e.name is not None or enc._step_open:
        if e.name is not None:
            enc.dropped[Dropped.STEP] += 1
        return b""
    enc._step_open, enc._after_results, enc._own_steps = True, False, True
    return _START_STEP


def _step_finished(enc: VercelEncoder, e: canonical.StepFinished) -> bytes:
    if e.name is not None or not enc._step_open:
        if e.name is not None:
            enc.dropped[Dropped.STEP] += 1
        return b""
    enc._step_open = False
    return _FINISH_STEP


def _state_snapshot(enc: VercelEncoder, e: canonical.StateSnapshot) -> bytes:
    enc._state.snapshot(e.snapshot)
    return enc._state_part()


def _state_delta(enc: VercelEncoder, e: canonical.StateDelta) -> bytes:
    return enc._state_part() if enc._state.apply(e.patch) else b""


def _usage(enc: VercelEncoder, e: canonical.Usage) -> bytes:
    usage = drop_none({"inputTokens": e.input_tokens, "outputTokens": e.output_tokens,
                       "totalTokens": e.total_tokens, "reasoningTokens": e.reasoning_tokens,
                       "cachedInputTokens": e.cached_input_tokens,
                       "cacheWriteInputTokens": e.cache_write_input_tokens, "model": e.model,
                       "provider": e.provider})
    return sse_frame({"type": "message-metadata", "messageMetadata": {"usage": usage}})


def _run_finished(enc: VercelEncoder, e: canonical.RunFinished) -> bytes:
    if e.outcome == "cancelled":
        if e.metadata is not None:
            enc.dropped[Dropped.METADATA] += 1
        return enc._end_step() + sse_frame({"type": "abort"}) + DONE
    finish: dict[str, Any] = {"type": "finish"}
    if e.stop_reason is not None:
        finish["finishReason"] = FINISH_REASONS[e.stop_reason]
    if e.metadata is not None:
        finish["messageMetadata"] = {"metadata": e.metadata}
    return enc._end_step() + sse_frame(finish) + DONE


def _run_error(enc: VercelEncoder, e: canonical.RunError) -> bytes:
    return enc._end_step() + enc._error(e) + DONE


def _raw(enc: VercelEncoder, e: canonical.Raw) -> bytes:
    kind = e.event.get("type")
    if e.dialect == "vercel" and isinstance(kind, str):
        if enc._sdk.passes(kind):
            return sse_frame(e.event)
        if kind == "reasoning-file" and "url" in e.event and "mediaType" in e.event:
            enc.dropped[Dropped.REASONING_FILE_AS_FILE] += 1  # before 7, a file of the message's
            return sse_frame({"type": "file", "url": e.event["url"], "mediaType": e.event["mediaType"]})
    enc.dropped[Dropped.RAW] += 1
    return b""


class VercelEncoder(SSEEncoder):
    __slots__ = (
        "_after_results",
        "_args",
        "_authors",
        "_encrypted",
        "_families",
        "_inkeep",
        "_names",
        "_open",
        "_own_steps",
        "_sdk",
        "_settles",
        "_state",
        "_step_open",
        "_text",
    )

    HEADERS = {**SSE_HEADERS, "x-vercel-ai-ui-message-stream": "v1"}
    METADATA = frozenset({canonical.TextDelta, canonical.ToolCallArgs, canonical.ReasoningDelta, canonical.TextStart,
                          canonical.TextEnd, canonical.ReasoningStart, canonical.ReasoningEnd, canonical.ToolCallStart,
                          canonical.ToolCallEnd, canonical.ToolResult, canonical.RunStarted, canonical.RunFinished})
    """Their handlers put it in a part's `providerMetadata` or the message's metadata, or count it."""

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self._sdk = AiSdk.of(request.client_version if request is not None else None)
        self._inkeep = request is not None and request.variant == INKEEP
        self._settles = [r for r in request.resume if r.tool_call_id is None] \
            if request is not None and self._sdk.approvals else []
        self._args: dict[str, TextPieces] = {}
        self._names: dict[str, str] = {}
        self._authors: dict[str, str] = {}  # tool call id -> the subagent that made it, said when its input is
        self._open: set[str] = set()  # reasoning parts not yet ended, whose encrypted value can still join them
        self._encrypted: dict[str, str] = {}  # reasoning id or tool call id -> its encrypted value, held to its end
        self._step_open = False
        self._after_results = False
        self._own_steps = False  # the upstream says where its steps are (an AI SDK one): none are made up
        self._state = StateTracker()
        self._families: Shown | None = None
        self._text = DeltaFrames(_text_delta_frame)

    def text_around(self, message_id: str) -> tuple[bytes, bytes] | None:
        return self._text.around(message_id)

    def _part(self, chunk: dict[str, Any], e: canonical.Event, author: str | None = None, encrypted: str | None = None,
              carried: bool = True) -> dict[str, Any]:
        """A chunk with what AG-UI said of its part, in its `providerMetadata` where its schema has one."""
        extra = drop_none({"metadata": e.metadata, "subagentRunId": author, "encryptedValue": encrypted})
        if extra:
            if carried:
                chunk["providerMetadata"] = {PROVIDER: extra}
            elif e.metadata is not None:
                self.dropped[Dropped.METADATA] += 1
        return chunk

    def _shown(self) -> Shown:
        if self._families is None:
            self._families = Shown()
        return self._families

    def _settle(self) -> bytes:
        """The calls that stood for the interrupts this continuation answers, settled; only on a continuation of the
        client's own message (a `start` with no new message id)."""
        self._after_results = True
        return b"".join(sse_frame(chunk) for chunk in approvals.settled(self._settles))

    def _step(self) -> bytes:
        """Open a step before the model's output, and a new one after tool results.

        `useChat`'s automatic sending (`lastAssistantMessageIsCompleteWithToolCalls`, `...WithApprovalResponses`)
        looks at the last step of the message only: without step boundaries a settled tool call stays in "the last
        step" and the client posts again and again.
        """
        if self._after_results and self._step_open and not self._own_steps:
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

    def _error(self, e: canonical.RunError) -> bytes:
        error = sse_frame({"type": "error", "errorText": e.message})
        if not self._inkeep:
            return error
        operation = drop_none({"type": "error", "message": e.message, "severity": "error", "code": e.code})
        return sse_frame({"type": "data-operation", "data": operation}) + error

    handlers = {
        canonical.TextDelta: _text_delta,
        canonical.ToolCallArgs: _tool_call_args,
        canonical.ReasoningDelta: _reasoning_delta,
        canonical.TextStart: _text_start,
        canonical.TextEnd: _text_end,
        canonical.ReasoningStart: _reasoning_start,
        canonical.ReasoningEnd: _reasoning_end,
        canonical.EncryptedValue: _encrypted_value,
        canonical.ActivitySnapshot: _activity_snapshot,
        canonical.ActivityDelta: _activity_delta,
        canonical.SubagentStarted: _subagent,
        canonical.SubagentFinished: _subagent,
        canonical.SubagentError: _subagent,
        canonical.ToolCallStart: _tool_call_start,
        canonical.ToolCallEnd: _tool_call_end,
        canonical.ToolResult: _tool_result,
        canonical.Interrupt: _interrupt,
        canonical.InterruptResolved: _interrupt_resolved,
        canonical.Data: _data,
        canonical.RunStarted: _run_started,
        canonical.StepStarted: _step_started,
        canonical.StepFinished: _step_finished,
        canonical.StateSnapshot: _state_snapshot,
        canonical.StateDelta: _state_delta,
        canonical.Usage: _usage,
        canonical.RunFinished: _run_finished,
        canonical.RunError: _run_error,
        canonical.Raw: _raw,
    }
    DROPS = drop_map(Dropped.MESSAGES_SNAPSHOT)  # the client owns the history
