"""AG-UI SSE from an upstream, into canonical events.

Every 1.0 family is read (activity, subagents, encrypted reasoning, usage, metadata on any event, tool results as
content parts, interrupts with their expiry). Lenient on the way in: `*_CHUNK` events are expanded, pre-1.0
`THINKING_*` events read as reasoning, and events with no canonical meaning kept as `Raw`. The upstream's version is
read from `RUN_STARTED.protocolVersion`: from one before 1.0 (which declares none), LangGraph's `CUSTOM on_interrupt`
is an interrupt, as such servers meant it; from a 1.0 one, which has `RUN_FINISHED.outcome` for that, it is data.
An answer cut short, which the outcome has no word for, is said in `RUN_FINISHED.metadata.stopReason`, as the
gateway writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.core import events as canonical
from gateway.core.codec import json_or_text
from gateway.core.decoding import Events, JsonSSEDecoder, required_str, str_at
from gateway.core.ids import new_id
from gateway.core.sse import DEFAULT_MAX_FRAME

from .content import parts_from_agui
from .request import message_from_agui
from .versions import declared, speaks_1_0

STOP_REASON = "stopReason"
"""The key of `RUN_FINISHED.metadata` in which the gateway says an answer was cut short (`length`,
`content_filter`)."""

Handler = Callable[["AguiDecoder", dict[str, Any], Events], None]

_CHUNKS = ("TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK")


class AguiDecoder(JsonSSEDecoder):
    __slots__ = ("_chunk_reasoning", "_chunk_text", "_chunk_tool", "_spans", "_steady_message", "_thinking", "version")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._chunk_text: str | None = None
        self._chunk_tool: str | None = None
        self._chunk_reasoning: str | None = None
        self._thinking: str | None = None
        self._spans: dict[str, bool] = {}
        """Open `REASONING_START` spans: id -> whether the reasoning message of the same id has ended. Its end
        waits for the span's, so what the span holds after the message (its encrypted value) still belongs to it."""
        self.version: str | None = None
        """The protocol version the upstream declared in `RUN_STARTED`; None if it declared none (before 1.0)."""
        self._steady_message: str | None = None
        """The message of the last frame `steady_text` named."""

    def steady_text(self, frame: Any) -> str | None:
        if frame.get("type") == "TEXT_MESSAGE_CONTENT" and len(frame) == 3 \
                and self._chunk_text is self._chunk_tool is self._chunk_reasoning is None:
            message_id, delta = frame.get("messageId"), frame.get("delta")
            if type(message_id) is str and type(delta) is str:
                self._steady_message = message_id
                return delta
        return None

    def on_steady_text(self, text: str, out: Events) -> None:
        assert self._steady_message is not None
        out.append(canonical.TextDelta(self._steady_message, text))

    def steady_message(self) -> str | None:
        return self._steady_message

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        kind = frame.get("type")
        handler: Handler
        if kind == "TEXT_MESSAGE_CONTENT" and self._chunk_text is self._chunk_tool is self._chunk_reasoning is None:
            handler = _text_content  # the hot path, most of any stream: no chunk stream to close, no table lookup
        else:
            if (self._chunk_text or self._chunk_tool or self._chunk_reasoning) and kind not in _CHUNKS:
                self._close_chunks(out)
            found = _HANDLERS.get(kind) if isinstance(kind, str) else None
            if found is None:
                out.append(canonical.Raw("ag-ui", event=frame))
                return
            handler = found
        try:
            handler(self, frame, out)
        except (KeyError, TypeError, ValueError, AttributeError):
            out.append(canonical.Raw("ag-ui", event=frame))

    def _close_chunks(self, out: Events) -> None:
        """Any other event closes the chunk streams that are open (the client's own rule)."""
        if self._chunk_text:
            out.append(canonical.TextEnd(self._chunk_text))
        if self._chunk_tool:
            out.append(canonical.ToolCallEnd(self._chunk_tool))
        if self._chunk_reasoning:
            out.append(canonical.ReasoningEnd(self._chunk_reasoning))
        self._chunk_text = self._chunk_tool = self._chunk_reasoning = None


def _meta(frame: dict[str, Any]) -> dict[str, Any] | None:
    """An event's `metadata`, when it is the object AG-UI says it is."""
    value = frame.get("metadata")
    return value if type(value) is dict else None


def _stop_reason(metadata: dict[str, Any] | None) -> tuple[dict[str, Any] | None, canonical.StopReason | None]:
    """`RUN_FINISHED`'s metadata without the gateway's `stopReason`, and that reason: an answer cut short, which
    the outcome has no word for."""
    if metadata is None:
        return None, None
    reason = metadata.get(STOP_REASON)
    if reason == "length" or reason == "content_filter":
        return {k: v for k, v in metadata.items() if k != STOP_REASON} or None, reason
    return metadata, None


def _int(mapping: dict[str, Any], key: str) -> int | None:
    value = mapping.get(key)
    return value if type(value) is int else None


def _run_started(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    d.version = str_at(f, "protocolVersion")
    out.append(canonical.RunStarted(thread_id=str_at(f, "threadId"), run_id=str_at(f, "runId"),
                                    parent_run_id=str_at(f, "parentRunId"), metadata=_meta(f)))


def _run_finished(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    for usage in f.get("usage") or ():
        if isinstance(usage, dict):
            out.append(_usage(usage))
    outcome = f.get("outcome")
    kind = outcome.get("type") if isinstance(outcome, dict) else None
    if kind == "interrupt":
        for item in outcome.get("interrupts") or ():  # type: ignore[union-attr]
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                out.append(_interrupt(item))
        out.append(canonical.RunFinished(outcome="interrupt", result=f.get("result"), metadata=_meta(f)))
    else:
        metadata, reason = _stop_reason(_meta(f))
        out.append(canonical.RunFinished(outcome="cancelled" if kind == "cancelled" else "success",
                                         result=f.get("result"), metadata=metadata, stop_reason=reason))


def _interrupt(item: dict[str, Any]) -> canonical.Interrupt:
    """One interrupt of an outcome; the gateway's own payload travels in its `metadata.payload`."""
    metadata = item.get("metadata")
    payload = None
    if type(metadata) is dict:
        payload = metadata.get("payload")
        metadata = {k: v for k, v in metadata.items() if k != "payload"} or None
    else:
        metadata = None
    schema = item.get("responseSchema")
    return canonical.Interrupt(item["id"], reason=str_at(item, "reason") or "", message=str_at(item, "message"),
                               payload=payload, tool_call_id=str_at(item, "toolCallId"),
                               response_schema=schema if type(schema) is dict else None,
                               expires_at=str_at(item, "expiresAt"), subagent_run_id=str_at(item, "subagentRunId"),
                               metadata=metadata)


def _usage(usage: dict[str, Any]) -> canonical.Usage:
    return canonical.Usage(input_tokens=_int(usage, "inputTokens"), output_tokens=_int(usage, "outputTokens"),
                           total_tokens=_int(usage, "totalTokens"), model=str_at(usage, "model"),
                           provider=str_at(usage, "provider"), reasoning_tokens=_int(usage, "reasoningTokens"),
                           cached_input_tokens=_int(usage, "cachedInputTokens"),
                           cache_write_input_tokens=_int(usage, "cacheWriteInputTokens"))


def _run_error(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    for usage in f.get("usage") or ():
        if isinstance(usage, dict):
            out.append(_usage(usage))
    message = f.get("message")
    out.append(canonical.RunError(message if isinstance(message, str) else "upstream run failed",
                                  code=str_at(f, "code"), metadata=_meta(f)))


def _text_start(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.TextStart(required_str(f, "messageId"), role=str_at(f, "role") or "assistant",
                                   subagent_run_id=str_at(f, "subagentRunId"), name=str_at(f, "name"),
                                   metadata=_meta(f)))


def _text_content(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    message_id, delta = f["messageId"], f["delta"]  # the hot path: `required_str` inlined
    if type(message_id) is not str or type(delta) is not str:
        raise TypeError("messageId and delta must be strings")
    # type, messageId and delta: nothing else to read (a subagent's tag repeats its opener's)
    out.append(canonical.TextDelta(message_id, delta) if len(f) == 3 else canonical.TextDelta(message_id, delta,
                                                                                              metadata=_meta(f)))


def _text_end(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.TextEnd(required_str(f, "messageId"), metadata=_meta(f)))


def _text_chunk(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    message_id = str_at(f, "messageId")
    if message_id and message_id != d._chunk_text:
        if d._chunk_text:
            out.append(canonical.TextEnd(d._chunk_text))
        d._chunk_text = message_id
        out.append(canonical.TextStart(message_id, role=str_at(f, "role") or "assistant",
                                       subagent_run_id=str_at(f, "subagentRunId"), name=str_at(f, "name")))
    elif d._chunk_text is None:
        d._chunk_text = new_id("msg")
        out.append(canonical.TextStart(d._chunk_text, role=str_at(f, "role") or "assistant",
                                       subagent_run_id=str_at(f, "subagentRunId"), name=str_at(f, "name")))
    delta = str_at(f, "delta")
    if delta:
        out.append(canonical.TextDelta(d._chunk_text, delta))


def _tool_start(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ToolCallStart(required_str(f, "toolCallId"), required_str(f, "toolCallName"),
                                       parent_message_id=str_at(f, "parentMessageId"),
                                       subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


def _tool_args(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ToolCallArgs(required_str(f, "toolCallId"), required_str(f, "delta"), metadata=_meta(f)))


def _tool_end(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ToolCallEnd(required_str(f, "toolCallId"), metadata=_meta(f)))


def _tool_chunk(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    tool_call_id = str_at(f, "toolCallId")
    if tool_call_id and tool_call_id != d._chunk_tool:
        if d._chunk_tool:
            out.append(canonical.ToolCallEnd(d._chunk_tool))
        d._chunk_tool = tool_call_id
        out.append(canonical.ToolCallStart(tool_call_id, str_at(f, "toolCallName") or "unknown_tool",
                                           parent_message_id=str_at(f, "parentMessageId"),
                                           subagent_run_id=str_at(f, "subagentRunId")))
    if d._chunk_tool is None:
        return  # a continuation with no call open: nothing to attach it to
    delta = str_at(f, "delta")
    if delta:
        out.append(canonical.ToolCallArgs(d._chunk_tool, delta))


def _tool_result(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    content: Any = f.get("content")
    if isinstance(content, list):
        content = parts_from_agui(content)  # text, images, documents: kept as parts
    elif not isinstance(content, str):
        raise TypeError("content")
    out.append(canonical.ToolResult(required_str(f, "toolCallId"), content, message_id=str_at(f, "messageId"),
                                    subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


def _reasoning_start(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ReasoningStart(required_str(f, "messageId"), subagent_run_id=str_at(f, "subagentRunId"),
                                        metadata=_meta(f)))


def _reasoning_content(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.ReasoningDelta(required_str(f, "messageId"), required_str(f, "delta"), metadata=_meta(f)))


def _reasoning_end(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    message_id = required_str(f, "messageId")
    if message_id in d._spans:
        d._spans[message_id] = True
        return
    out.append(canonical.ReasoningEnd(message_id, metadata=_meta(f)))


def _encrypted(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    subtype = f.get("subtype")
    if subtype != "message" and subtype != "tool-call":
        raise ValueError("subtype")
    out.append(canonical.EncryptedValue(subtype, required_str(f, "entityId"), required_str(f, "encryptedValue"),
                                        subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


def _reasoning_chunk(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    message_id = str_at(f, "messageId")
    if message_id and message_id != d._chunk_reasoning:
        if d._chunk_reasoning:
            out.append(canonical.ReasoningEnd(d._chunk_reasoning))
        d._chunk_reasoning = message_id
        out.append(canonical.ReasoningStart(message_id, subagent_run_id=str_at(f, "subagentRunId")))
    elif d._chunk_reasoning is None:
        d._chunk_reasoning = new_id("reasoning")
        out.append(canonical.ReasoningStart(d._chunk_reasoning, subagent_run_id=str_at(f, "subagentRunId")))
    delta = str_at(f, "delta")
    if delta:
        out.append(canonical.ReasoningDelta(d._chunk_reasoning, delta))


def _span_start(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    """REASONING_START/END bracket reasoning messages, which carry the content."""
    d._spans[required_str(f, "messageId")] = False


def _span_end(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    message_id = required_str(f, "messageId")
    if d._spans.pop(message_id, False):
        out.append(canonical.ReasoningEnd(message_id, metadata=_meta(f)))


def _span(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    """THINKING_START/END bracket the thinking messages, which carry everything."""


def _thinking_start(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    d._thinking = new_id("reasoning")
    out.append(canonical.ReasoningStart(d._thinking))


def _thinking_content(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    if d._thinking is None:
        _thinking_start(d, f, out)
    out.append(canonical.ReasoningDelta(d._thinking or "", required_str(f, "delta")))


def _thinking_end(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    if d._thinking is not None:
        out.append(canonical.ReasoningEnd(d._thinking))
        d._thinking = None


def _state_snapshot(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.StateSnapshot(f["snapshot"], subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


def _state_delta(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    patch = f["delta"]
    if not isinstance(patch, list):
        raise TypeError("delta")
    out.append(canonical.StateDelta(patch, subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


def _messages_snapshot(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    messages = [m for value in f["messages"] if (m := message_from_agui(value)) is not None]
    out.append(canonical.MessagesSnapshot(messages, metadata=_meta(f)))


def _activity_snapshot(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    content = f["content"]
    if type(content) is not dict:
        raise TypeError("content")
    out.append(canonical.ActivitySnapshot(required_str(f, "messageId"), required_str(f, "activityType"), content,
                                          replace=f.get("replace") is not False,
                                          subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


def _activity_delta(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    patch = f["patch"]
    if not isinstance(patch, list):
        raise TypeError("patch")
    out.append(canonical.ActivityDelta(required_str(f, "messageId"), required_str(f, "activityType"), patch,
                                       subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


def _subagent_started(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.SubagentStarted(required_str(f, "subagentRunId"), required_str(f, "name"),
                                         description=str_at(f, "description"),
                                         parent_subagent_run_id=str_at(f, "parentSubagentRunId"),
                                         parent_tool_call_id=str_at(f, "parentToolCallId"),
                                         parent_message_id=str_at(f, "parentMessageId"), metadata=_meta(f)))


def _subagent_finished(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    outcome = f.get("outcome")
    kind = outcome.get("type") if type(outcome) is dict else None
    ids = outcome.get("interruptIds") if type(outcome) is dict else None
    interrupt_ids = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else None
    out.append(canonical.SubagentFinished(required_str(f, "subagentRunId"), result=f.get("result"),
                                          outcome="suspended" if kind == "suspended" else
                                          "success" if kind == "success" else None,
                                          interrupt_ids=interrupt_ids, metadata=_meta(f)))


def _subagent_error(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.SubagentError(required_str(f, "subagentRunId"), required_str(f, "message"),
                                       code=str_at(f, "code"), metadata=_meta(f)))


def _step_started(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.StepStarted(name=required_str(f, "stepName"), subagent_run_id=str_at(f, "subagentRunId"),
                                     metadata=_meta(f)))


def _step_finished(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.StepFinished(name=required_str(f, "stepName"), subagent_run_id=str_at(f, "subagentRunId"),
                                      metadata=_meta(f)))


def _custom(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    name = required_str(f, "name")
    value = f.get("value")
    if name == "on_interrupt" and not speaks_1_0(declared(d.version)):
        # LangGraph's (and cloudbase-agent-server's) interrupt: a JSON string value, the id in rawEvent if anywhere.
        raw = f.get("rawEvent")
        interrupt_id = raw if isinstance(raw, str) else new_id("interrupt")
        payload = json_or_text(value) if isinstance(value, str) else value
        out.append(canonical.Interrupt(interrupt_id, reason="agent requested interrupt", payload=payload))
        return
    out.append(canonical.Data(name, value, subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


def _raw(d: AguiDecoder, f: dict[str, Any], out: Events) -> None:
    out.append(canonical.Raw("ag-ui", event=f, subagent_run_id=str_at(f, "subagentRunId"), metadata=_meta(f)))


_HANDLERS: dict[str, Handler] = {
    "TEXT_MESSAGE_CONTENT": _text_content,
    "TOOL_CALL_ARGS": _tool_args,
    "REASONING_MESSAGE_CONTENT": _reasoning_content,
    "TEXT_MESSAGE_START": _text_start,
    "TEXT_MESSAGE_END": _text_end,
    "TEXT_MESSAGE_CHUNK": _text_chunk,
    "TOOL_CALL_START": _tool_start,
    "TOOL_CALL_END": _tool_end,
    "TOOL_CALL_CHUNK": _tool_chunk,
    "TOOL_CALL_RESULT": _tool_result,
    "REASONING_START": _span_start,
    "REASONING_END": _span_end,
    "REASONING_MESSAGE_START": _reasoning_start,
    "REASONING_MESSAGE_END": _reasoning_end,
    "REASONING_MESSAGE_CHUNK": _reasoning_chunk,
    "THINKING_START": _span,
    "THINKING_END": _span,
    "THINKING_TEXT_MESSAGE_START": _thinking_start,
    "THINKING_TEXT_MESSAGE_CONTENT": _thinking_content,
    "THINKING_TEXT_MESSAGE_END": _thinking_end,
    "STATE_SNAPSHOT": _state_snapshot,
    "STATE_DELTA": _state_delta,
    "MESSAGES_SNAPSHOT": _messages_snapshot,
    "STEP_STARTED": _step_started,
    "STEP_FINISHED": _step_finished,
    "CUSTOM": _custom,
    "RAW": _raw,
    "ACTIVITY_SNAPSHOT": _activity_snapshot,
    "ACTIVITY_DELTA": _activity_delta,
    "REASONING_ENCRYPTED_VALUE": _encrypted,
    "SUBAGENT_STARTED": _subagent_started,
    "SUBAGENT_FINISHED": _subagent_finished,
    "SUBAGENT_ERROR": _subagent_error,
    "RUN_STARTED": _run_started,
    "RUN_FINISHED": _run_finished,
    "RUN_ERROR": _run_error,
}
