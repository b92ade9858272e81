"""Canonical events into AG-UI SSE that `@ag-ui/client` 1.0 accepts without a warning.

Its rules, all enforced here: LF framing, camelCase, no `null` for an optional field, `protocolVersion` on
`RUN_STARTED`, a tool call's `parentMessageId` naming a message already started, interrupts carried in
`RUN_FINISHED.outcome`, client tools left without a result listed in `outcome.pendingToolCallIds`, and a subagent's
content tagged with its `subagentRunId` from the event that opens it to the one that closes it (the client refuses a
continuation whose tag differs from its opener's). An answer cut short is a success whose `RUN_FINISHED.metadata`
says why (`stopReason`): the outcome's schema has no other word for it. A client before 1.0 gets
`legacy.LegacyAguiEncoder` instead.

Each event type's handler is a function of the encoder and the event, written before the class that lists them in
`handlers`, as the decoders' are: the class keeps the stream's state and what several handlers share.
"""

from __future__ import annotations

from typing import Any

from gateway.core import events as canonical
from gateway.core.codec import as_text, drop_none
from gateway.core.dropped import Dropped
from gateway.core.encoding import EVENT_TYPES, HOLE, DeltaFrames, SSEEncoder, is_one_of, sse_frame
from gateway.core.ids import new_id
from gateway.core.turn import ContentPart, Turn

from .content import content_to_agui
from .decode import STOP_REASON
from .request import message_to_agui
from .versions import PROTOCOL_VERSION

_ROLES = frozenset({"developer", "system", "assistant", "user"})

# AG-UI events that a `Raw` from an AG-UI upstream may carry through as they are; anything else goes in a RAW.
_PASSTHROUGH = frozenset({"RAW"})


def _text_content(message_id: str) -> bytes:
    return sse_frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": HOLE})


def tagged(event: dict[str, Any], e: canonical.Event, owner: str | None = None) -> dict[str, Any]:
    """An event's frame with what every AG-UI event may carry: its metadata, and the subagent it belongs to."""
    metadata = e.metadata
    if metadata is not None:
        event["metadata"] = metadata
    if owner is not None:
        event["subagentRunId"] = owner
    return event


def usage_entry(e: canonical.Usage) -> dict[str, Any]:
    return drop_none({"inputTokens": e.input_tokens, "outputTokens": e.output_tokens, "totalTokens": e.total_tokens,
                      "reasoningTokens": e.reasoning_tokens, "cachedInputTokens": e.cached_input_tokens,
                      "cacheWriteInputTokens": e.cache_write_input_tokens, "model": e.model, "provider": e.provider})


def _run_started(enc: AguiEncoder, e: canonical.RunStarted) -> bytes:
    enc._thread_id = e.thread_id or new_id("thread")
    enc._run_id = e.run_id or new_id("run")
    return sse_frame(enc.tag(drop_none({
        "type": "RUN_STARTED",
        "threadId": enc._thread_id,
        "runId": enc._run_id,
        "parentRunId": e.parent_run_id,
        "protocolVersion": PROTOCOL_VERSION,
    }), e))


def _run_finished(enc: AguiEncoder, e: canonical.RunFinished) -> bytes:
    event: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": enc._thread_id, "runId": enc._run_id}
    if e.outcome == "interrupt" and enc._interrupts:
        event["outcome"] = {"type": "interrupt", "interrupts": enc._interrupts}
    elif e.outcome == "cancelled":
        event["outcome"] = {"type": "cancelled"}
    elif enc._pending:
        event["outcome"] = {"type": "success", "pendingToolCallIds": list(enc._pending)}
    else:
        event["outcome"] = {"type": "success"}
    if e.result is not None:
        event["result"] = e.result
    if enc._usage:
        event["usage"] = enc._usage
    event = enc.tag(event, e)
    if e.stop_reason is not None:  # the outcome's schema is closed: a cut answer is a success that says so here
        event["metadata"] = {**event.get("metadata", {}), STOP_REASON: e.stop_reason}
    return sse_frame(event)


def _run_error(enc: AguiEncoder, e: canonical.RunError) -> bytes:
    event = drop_none({"type": "RUN_ERROR", "message": e.message, "code": e.code})
    if enc._usage:
        event["usage"] = enc._usage
    return sse_frame(enc.tag(event, e))


def _text_start(enc: AguiEncoder, e: canonical.TextStart) -> bytes:
    enc._announced[e.message_id] = e.subagent_run_id
    enc._parent = e.message_id
    role = e.role if e.role in _ROLES else "assistant"
    event = {"type": "TEXT_MESSAGE_START", "messageId": e.message_id, "role": role}
    if e.name is not None:
        event["name"] = e.name
    return sse_frame(enc.tag(event, e, enc._open(e.message_id, e.subagent_run_id)))


def _text_delta(enc: AguiEncoder, e: canonical.TextDelta) -> bytes:
    if e.metadata is None and not enc._owners:
        return enc._text.frame(e.delta, e.message_id)
    return sse_frame(enc.tag({"type": "TEXT_MESSAGE_CONTENT", "messageId": e.message_id, "delta": e.delta}, e,
                             enc._owners.get(e.message_id)))


def _text_end(enc: AguiEncoder, e: canonical.TextEnd) -> bytes:
    return sse_frame(enc.tag({"type": "TEXT_MESSAGE_END", "messageId": e.message_id}, e,
                             enc._close(e.message_id)))


def _reasoning_start(enc: AguiEncoder, e: canonical.ReasoningStart) -> bytes:
    owner = enc._open(e.message_id, e.subagent_run_id)
    return sse_frame(enc.tag({"type": "REASONING_START", "messageId": e.message_id}, e, owner)) + sse_frame(
        enc.tag({"type": "REASONING_MESSAGE_START", "messageId": e.message_id, "role": "reasoning"}, e, owner))


def _reasoning_delta(enc: AguiEncoder, e: canonical.ReasoningDelta) -> bytes:
    return sse_frame(enc.tag({"type": "REASONING_MESSAGE_CONTENT", "messageId": e.message_id, "delta": e.delta},
                             e, enc._owners.get(e.message_id)))


def _reasoning_end(enc: AguiEncoder, e: canonical.ReasoningEnd) -> bytes:
    owner = enc._close(e.message_id)
    return sse_frame(enc.tag({"type": "REASONING_MESSAGE_END", "messageId": e.message_id}, e, owner)) + sse_frame(
        enc.tag({"type": "REASONING_END", "messageId": e.message_id}, e, owner))


def _encrypted(enc: AguiEncoder, e: canonical.EncryptedValue) -> bytes:
    return sse_frame(enc.tag({"type": "REASONING_ENCRYPTED_VALUE", "subtype": e.subtype, "entityId": e.entity_id,
                             "encryptedValue": e.value}, e, e.subagent_run_id))


def _tool_start(enc: AguiEncoder, e: canonical.ToolCallStart) -> bytes:
    out = b""
    parent = e.parent_message_id if e.parent_message_id in enc._announced else enc._parent
    owner = e.subagent_run_id
    if parent is None or enc._announced.get(parent) != owner:
        # The client makes one assistant message per tool call without a parent; give it one to hang on, of
        # the call's own subagent (a call inherits its owner from its parent message).
        parent = new_id("msg")
        opened = _text_start(enc, canonical.TextStart(parent, subagent_run_id=owner))
        out = opened + _text_end(enc, canonical.TextEnd(parent))
    enc._parent = parent
    return out + sse_frame(enc.tag({"type": "TOOL_CALL_START", "toolCallId": e.tool_call_id,
                                   "toolCallName": e.name, "parentMessageId": parent}, e,
                                   enc._open(e.tool_call_id, owner)))


def _tool_args(enc: AguiEncoder, e: canonical.ToolCallArgs) -> bytes:
    return sse_frame(enc.tag({"type": "TOOL_CALL_ARGS", "toolCallId": e.tool_call_id, "delta": e.delta}, e,
                             enc._owners.get(e.tool_call_id) if enc._owners else None))


def _tool_end(enc: AguiEncoder, e: canonical.ToolCallEnd) -> bytes:
    enc._pending[e.tool_call_id] = None
    return sse_frame(enc.tag({"type": "TOOL_CALL_END", "toolCallId": e.tool_call_id}, e,
                             enc._close(e.tool_call_id)))


def _tool_result(enc: AguiEncoder, e: canonical.ToolResult) -> bytes:
    if e.is_error:
        enc.dropped[Dropped.TOOL_ERROR_AS_RESULT] += 1  # AG-UI results have no error flag
    enc._pending.pop(e.tool_call_id, None)
    enc._parent = None  # what the agent says after a result is a new assistant message
    content = content_to_agui(e.content) if isinstance(e.content, list) and _all_parts(e.content) \
        else as_text(e.content)
    return sse_frame(enc.tag({"type": "TOOL_CALL_RESULT", "messageId": e.message_id or new_id("result"),
                             "toolCallId": e.tool_call_id, "content": content, "role": "tool"}, e,
                             e.subagent_run_id))


def _interrupt(enc: AguiEncoder, e: canonical.Interrupt) -> bytes:
    if e.tool_call_id:
        enc._pending.pop(e.tool_call_id, None)  # the interrupt, not the client, settles this call
    metadata = e.metadata if e.payload is None else {**(e.metadata or {}), "payload": e.payload}
    enc._interrupts.append(drop_none({
        "id": e.id,
        "reason": e.reason or "interrupt",
        "message": e.message,
        "toolCallId": e.tool_call_id,
        "responseSchema": e.response_schema if isinstance(e.response_schema, dict) else None,
        "expiresAt": e.expires_at,
        "metadata": metadata or None,
        "subagentRunId": e.subagent_run_id,
    }))
    return b""


def _interrupt_resolved(enc: AguiEncoder, e: canonical.InterruptResolved) -> bytes:
    # Asked and answered within the run: the client is not asked. That it happened has no event here.
    enc._interrupts = [i for i in enc._interrupts if i["id"] != e.interrupt_id]
    enc.dropped[Dropped.INTERRUPT_RESOLVED] += 1
    return b""


def _state_snapshot(enc: AguiEncoder, e: canonical.StateSnapshot) -> bytes:
    return sse_frame(enc.tag({"type": "STATE_SNAPSHOT", "snapshot": e.snapshot}, e, e.subagent_run_id))


def _state_delta(enc: AguiEncoder, e: canonical.StateDelta) -> bytes:
    return sse_frame(enc.tag({"type": "STATE_DELTA", "delta": e.patch}, e, e.subagent_run_id))


def _messages_snapshot(enc: AguiEncoder, e: canonical.MessagesSnapshot) -> bytes:
    return sse_frame(enc.tag({"type": "MESSAGES_SNAPSHOT", "messages": [message_to_agui(m) for m in e.messages]},
                             e))


def _activity_snapshot(enc: AguiEncoder, e: canonical.ActivitySnapshot) -> bytes:
    event: dict[str, Any] = {"type": "ACTIVITY_SNAPSHOT", "messageId": e.message_id,
                             "activityType": e.activity_type, "content": e.content}
    if not e.replace:
        event["replace"] = False
    return sse_frame(enc.tag(event, e, e.subagent_run_id))


def _activity_delta(enc: AguiEncoder, e: canonical.ActivityDelta) -> bytes:
    return sse_frame(enc.tag({"type": "ACTIVITY_DELTA", "messageId": e.message_id, "activityType": e.activity_type,
                             "patch": e.patch}, e, e.subagent_run_id))


def _subagent_started(enc: AguiEncoder, e: canonical.SubagentStarted) -> bytes:
    return sse_frame(enc.tag(drop_none({
        "type": "SUBAGENT_STARTED", "subagentRunId": e.subagent_run_id, "name": e.name,
        "description": e.description, "parentSubagentRunId": e.parent_subagent_run_id,
        "parentToolCallId": e.parent_tool_call_id, "parentMessageId": e.parent_message_id}), e))


def _subagent_finished(enc: AguiEncoder, e: canonical.SubagentFinished) -> bytes:
    event = drop_none({"type": "SUBAGENT_FINISHED", "subagentRunId": e.subagent_run_id, "result": e.result})
    if e.outcome is not None:
        event["outcome"] = drop_none({"type": e.outcome, "interruptIds": e.interrupt_ids
                                      if e.outcome == "suspended" else None})
    return sse_frame(enc.tag(event, e))


def _subagent_error(enc: AguiEncoder, e: canonical.SubagentError) -> bytes:
    return sse_frame(enc.tag(drop_none({"type": "SUBAGENT_ERROR", "subagentRunId": e.subagent_run_id,
                                       "message": e.message, "code": e.code}), e))


def _step_started(enc: AguiEncoder, e: canonical.StepStarted) -> bytes:
    if e.name:
        return sse_frame(enc.tag({"type": "STEP_STARTED", "stepName": e.name}, e, e.subagent_run_id))
    enc.dropped[Dropped.STEP] += 1  # an AG-UI step must have a name
    return b""


def _step_finished(enc: AguiEncoder, e: canonical.StepFinished) -> bytes:
    if e.name:
        return sse_frame(enc.tag({"type": "STEP_FINISHED", "stepName": e.name}, e, e.subagent_run_id))
    enc.dropped[Dropped.STEP] += 1
    return b""


def _data(enc: AguiEncoder, e: canonical.Data) -> bytes:
    if e.id is not None or e.transient:
        enc.dropped[Dropped.DATA_ID] += 1  # a CUSTOM event has no id to be replaced by, and is never transient
    return sse_frame(enc.tag({"type": "CUSTOM", "name": e.name, "value": e.data}, e, e.subagent_run_id))


def _usage_event(enc: AguiEncoder, e: canonical.Usage) -> bytes:
    enc._usage.append(usage_entry(e))
    return b""


def _raw(enc: AguiEncoder, e: canonical.Raw) -> bytes:
    if e.dialect == "ag-ui" and is_one_of(e.event.get("type"), _PASSTHROUGH):
        return sse_frame(e.event)
    return sse_frame(enc.tag({"type": "RAW", "event": e.event, "source": e.dialect}, e, e.subagent_run_id))


class AguiEncoder(SSEEncoder):
    METADATA = EVENT_TYPES

    __slots__ = ("_announced", "_interrupts", "_owners", "_parent", "_pending", "_run_id", "_text", "_thread_id",
                 "_usage")

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self._thread_id = ""
        self._run_id = ""
        self._announced: dict[str, str | None] = {}
        """Each message started in this run, and the subagent it belongs to (None: the agent's own)."""
        self._parent: str | None = None
        self._pending: dict[str, None] = {}
        self._interrupts: list[dict[str, Any]] = []
        self._usage: list[dict[str, Any]] = []
        self._owners: dict[str, str] = {}
        """The subagent each open message, reasoning message and tool call belongs to, when not the agent's own."""
        self._text = DeltaFrames(_text_content)

    def text_around(self, message_id: str) -> tuple[bytes, bytes] | None:
        return None if self._owners else self._text.around(message_id)

    def tag(self, event: dict[str, Any], e: canonical.Event, owner: str | None = None) -> dict[str, Any]:
        return tagged(event, e, owner)

    def _open(self, entity_id: str, owner: str | None) -> str | None:
        if owner is not None:
            self._owners[entity_id] = owner
        return owner

    def _close(self, entity_id: str) -> str | None:
        return self._owners.pop(entity_id, None) if self._owners else None

    handlers = {
        canonical.TextDelta: _text_delta,
        canonical.ToolCallArgs: _tool_args,
        canonical.ReasoningDelta: _reasoning_delta,
        canonical.TextStart: _text_start,
        canonical.TextEnd: _text_end,
        canonical.ToolCallStart: _tool_start,
        canonical.ToolCallEnd: _tool_end,
        canonical.ToolResult: _tool_result,
        canonical.ReasoningStart: _reasoning_start,
        canonical.ReasoningEnd: _reasoning_end,
        canonical.EncryptedValue: _encrypted,
        canonical.Interrupt: _interrupt,
        canonical.InterruptResolved: _interrupt_resolved,
        canonical.StateSnapshot: _state_snapshot,
        canonical.StateDelta: _state_delta,
        canonical.MessagesSnapshot: _messages_snapshot,
        canonical.ActivitySnapshot: _activity_snapshot,
        canonical.ActivityDelta: _activity_delta,
        canonical.SubagentStarted: _subagent_started,
        canonical.SubagentFinished: _subagent_finished,
        canonical.SubagentError: _subagent_error,
        canonical.StepStarted: _step_started,
        canonical.StepFinished: _step_finished,
        canonical.Data: _data,
        canonical.Usage: _usage_event,
        canonical.Raw: _raw,
        canonical.RunStarted: _run_started,
        canonical.RunFinished: _run_finished,
        canonical.RunError: _run_error,
    }


def _all_parts(content: list[Any]) -> bool:
    return all(isinstance(part, ContentPart) for part in content)
