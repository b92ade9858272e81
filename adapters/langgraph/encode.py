"""Canonical events into a LangGraph run stream, in the stream modes the client asked for.

| canonical | frame |
|---|---|
| run started | `metadata {run_id, attempt}` (the request's run id: the one a join or a cancel names), its `metadata` |
| text, reasoning, tool calls | `messages` `[AIMessageChunk, metadata]` (`messages-tuple`); a last chunk ends each |
| a message's author, | the AI message's `name`; `response_metadata.agent_gateway {metadata, subagent_run_id}`, |
| metadata, subagent | in a chunk before its content and on the whole message |
| encrypted reasoning | a reasoning block's `extras.encrypted_content`, in a chunk of its reasoning message |
| tool result | `messages` `[ToolMessage, metadata]`, `status: "error"` for a failed or denied tool; content |
| | parts as LangChain's blocks |
| usage | `usage_metadata` (`input_token_details.cache_read`/`cache_creation`, |
| | `output_token_details.reasoning`) on the run's last AI message: in a last chunk of it, and added up in |
| | `values`; the model in its `response_metadata.model_name` |
| interrupt | `updates {"__interrupt__": [...]}` and the last `values` with it; its `expires_at` in its value |
| interrupt answered in the run | left out of the last `values` (LangGraph has no word for it: `interrupt_resolved`) |
| state | `values`: the state with this run's messages (the thread's history is the server's: see `GET .../state`) |
| named data | `custom` (its value as is for `custom`, else `{name, data}` and its `id`, `transient`) |
| activity, subagent | `custom {name: "activity" / "subagent", id, data}`, whole after each change |
| | (`gateway.core.activity`) |
| error | `error {error, message}` |
| an answer cut short | `response_metadata.finish_reason` (`length`, `content_filter`) on the run's last AI message: |
| | a last chunk of it, and the whole message in `values` |
| the end | the stream's end, after the last `values` |

What has no place is counted in `dropped`: a tool call's subagent and encrypted reasoning, metadata on any event but
a run's start, a message's opening and a tool result, usage that comes before the run's first AI message, and an
answer cut short in a run with no AI message.

Modes the client did not ask for are not written; `messages` (whole messages, not tuples) is written as
`messages-tuple` is, under the names the SDKs read (`messages/partial` is left out: its chunks are whole messages).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.activity import Shown
from gateway.core.codec import drop_none
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import HOLE, DeltaFrames, SSEEncoder
from gateway.core.ids import new_id
from gateway.core.state import StateTracker
from gateway.core.text_pieces import TextPieces
from gateway.core.turn import Turn
from gateway.core.usage import UsageTotals

from .interrupts import interrupt_item
from .messages import result_content, to_langchain
from .request import UPSTREAM_MODES
from .shapes import ai_chunk, message_tags, usage_metadata

NODE = "agent"
"""The node a message is said to come from: the gateway sees runs, not the graph that made them."""
_META = {"langgraph_node": NODE}


def frame(event: str, value: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(value) + b"\n\n"


_TEXT = DeltaFrames(lambda message_id: frame("messages", [ai_chunk(message_id, HOLE), _META]))


def _emit(self: LangGraphEncoder, event: str, value: Any) -> bytes:
    """One frame, numbered: a client that loses its connection joins the run again from after the last id."""
    number = self._next
    self._next = number + 1
    return b"id: %d\n" % number + frame(event, value)


def _tuple(self: LangGraphEncoder, message: dict[str, Any]) -> bytes:
    return _emit(self, "messages", [message, _META]) if "messages-tuple" in self._modes else b""


def _values(self: LangGraphEncoder) -> bytes:
    return _emit(self, "values", self.values()) if "values" in self._modes else b""

def _update(self: LangGraphEncoder, node: str, update: dict[str, Any]) -> bytes:
    return _emit(self, "updates", {node: update}) if "updates" in self._modes else b""


def _ai_message(self: LangGraphEncoder, message_id: str) -> dict[str, Any]:
    """The whole AI message `message_id` is, in the run's messages (added when first seen)."""
    current = self._current
    if current is None or current["id"] != message_id:
        current = self._current = {"type": "ai", "content": "", "id": message_id, "tool_calls": []}
        self._messages.append(current)
    self._last_ai = current
    return current


def _run_started(self: LangGraphEncoder, e: canonical.RunStarted) -> bytes:
    run_id = self._run_id or e.run_id or new_id("run")
    head: dict[str, Any] = {"run_id": run_id, "attempt": 1}
    if e.metadata is not None:
        head["metadata"] = e.metadata
    return _emit(self, "metadata", head) + _values(self)


def _text_start(self: LangGraphEncoder, e: canonical.TextStart) -> bytes:
    self._texts[e.message_id] = TextPieces()
    message = self._text_messages[e.message_id] = _ai_message(self, e.message_id)
    tags = message_tags(e.name, e.subagent_run_id, e.metadata)
    if not tags:
        return b""
    message.update(tags)  # said first, so that a reader knows the message by them before its text
    return _tuple(self, ai_chunk(e.message_id, "", **tags))


def _text_delta(self: LangGraphEncoder, e: canonical.TextDelta) -> bytes:
    if e.metadata is not None:  # inline, not by the base's wrapper: most of a stream is text deltas
        self.dropped[Dropped.METADATA] += 1
    if not e.delta:
        return b""
    text = self._texts.get(e.message_id)
    if text is None:  # a delta of a message never started
        text = self._texts[e.message_id] = TextPieces()
    text.add(e.delta)
    if "messages-tuple" not in self._modes:
        return b""
    number = self._next
    self._next = number + 1
    return b"id: %d\n" % number + _TEXT.frame(e.delta, e.message_id)


def _text_end(self: LangGraphEncoder, e: canonical.TextEnd) -> bytes:
    message = self._text_messages.pop(e.message_id, None) or _ai_message(self, e.message_id)  # others may be open
    text = self._texts.pop(e.message_id, None)
    if text is not None:
        message["content"] += text.text()  # an id used again adds to its message
    last = _tuple(self, ai_chunk(e.message_id, "", chunk_position="last"))
    return last + _update(self, NODE, {"messages": [message]})


def _reasoning_start(self: LangGraphEncoder, e: canonical.ReasoningStart) -> bytes:
    tags = message_tags(None, e.subagent_run_id, e.metadata)
    if tags:
        self._reasoning_tags[e.message_id] = tags
    return b""


def _reasoning_delta(self: LangGraphEncoder, e: canonical.ReasoningDelta) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    tags = self._reasoning_tags.get(e.message_id, {}) if self._reasoning_tags else {}
    return _tuple(self, ai_chunk(e.message_id, [{"type": "reasoning", "reasoning": e.delta}], **tags))


def _encrypted(self: LangGraphEncoder, e: canonical.EncryptedValue) -> bytes:
    """Reasoning kept encrypted, where LangChain's reasoning blocks keep a provider's extras; a tool call's has no
    place."""
    if e.subtype != "message":
        self.dropped[Dropped.ENCRYPTED_VALUE] += 1
        return b""
    block = {"type": "reasoning", "reasoning": "", "extras": {"encrypted_content": e.value}}
    return _tuple(self, ai_chunk(e.entity_id, [block]))


def _reasoning_end(self: LangGraphEncoder, e: canonical.ReasoningEnd) -> bytes:
    return b""


def _tool_start(self: LangGraphEncoder, e: canonical.ToolCallStart) -> bytes:
    if e.subagent_run_id is not None:  # the call is the agent's message's: who made it is not said
        self.dropped[Dropped.SUBAGENT] += 1
    parent = e.parent_message_id or (self._current["id"] if self._current is not None else f"msg-{e.tool_call_id}")
    message = _ai_message(self, parent)
    index = len(message["tool_calls"])
    self._calls[e.tool_call_id] = {"message": message, "index": index, "name": e.name, "args": TextPieces()}
    message["tool_calls"].append({"name": e.name, "args": {}, "id": e.tool_call_id, "type": "tool_call"})
    piece = {"name": e.name, "args": "", "id": e.tool_call_id, "index": index, "type": "tool_call_chunk"}
    return _tuple(self, ai_chunk(parent, "", tool_call_chunks=[piece]))


def _tool_args(self: LangGraphEncoder, e: canonical.ToolCallArgs) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    call = self._calls.get(e.tool_call_id)
    if call is None or not e.delta:
        return b""
    call["args"].add(e.delta)
    piece = {"name": None, "args": e.delta, "id": None, "index": call["index"], "type": "tool_call_chunk"}
    return _tuple(self, ai_chunk(call["message"]["id"], "", tool_call_chunks=[piece]))


def _tool_end(self: LangGraphEncoder, e: canonical.ToolCallEnd) -> bytes:
    call = self._calls.get(e.tool_call_id)
    if call is None:
        return b""
    message = call["message"]
    text = call["args"].text()
    try:
        args = orjson.loads(text or "{}")
    except orjson.JSONDecodeError:
        args = {"arguments": text}
    message["tool_calls"][call["index"]]["args"] = args
    return _update(self, NODE, {"messages": [message]})


def _tool_result(self: LangGraphEncoder, e: canonical.ToolResult) -> bytes:
    call = self._calls.get(e.tool_call_id)
    message: dict[str, Any] = {
        "content": result_content(e.content), "additional_kwargs": {}, "response_metadata": {}, "type": "tool",
        "name": call["name"] if call is not None else None, "id": e.message_id or new_id("msg"),
        "tool_call_id": e.tool_call_id, "artifact": None, "status": "error" if e.is_error or e.denied else "success"}
    tags = message_tags(None, e.subagent_run_id, e.metadata)
    if tags:
        message.update(tags)
    self._messages.append(message)
    self._current = None  # what the agent says next is a message of its own
    return _tuple(self, message) + _update(self, "tools", {"messages": [message]})


def _interrupt(self: LangGraphEncoder, e: canonical.Interrupt) -> bytes:
    item = interrupt_item(e)
    if e.expires_at is not None and not (isinstance(item["value"], dict) and "expires_at" in item["value"]):
        self.dropped[Dropped.INTERRUPT_EXPIRY] += 1  # a graph's own value that is not an object has no room for it
    self._interrupts.append(item)
    return _emit(self, "updates", {"__interrupt__": [item]}) if "updates" in self._modes else b""


def _resolved(self: LangGraphEncoder, e: canonical.InterruptResolved) -> bytes:
    """An interrupt the run answered itself: it no longer waits in the thread's `values`; its `updates` went out."""
    self._interrupts = [item for item in self._interrupts if item.get("id") != e.interrupt_id]
    self.dropped[Dropped.INTERRUPT_RESOLVED] += 1
    return b""


def _usage(self: LangGraphEncoder, e: canonical.Usage) -> bytes:
    """Usage on the run's last AI message, as a model's last chunk carries it (chunks' counts add up, as
    LangChain adds them) and, added up, on the whole message `values` carry."""
    message = self._last_ai
    if message is None:
        self.dropped[Dropped.USAGE] += 1  # no AI message yet to hold it
        return b""
    totals = self._usage_totals
    if totals is None:
        totals = self._usage_totals = UsageTotals()
    totals.add(e)
    message["usage_metadata"] = usage_metadata(totals.counts)
    this = UsageTotals()
    this.add(e)
    fields: dict[str, Any] = {"usage_metadata": usage_metadata(this.counts), "chunk_position": "last"}
    model = drop_none({"model_name": totals.model, "model_provider": totals.provider})
    if model:
        message["response_metadata"] = {**message.get("response_metadata", {}), **model}
        fields["response_metadata"] = model
    return _tuple(self, ai_chunk(message["id"], "", **fields))


def _state_snapshot(self: LangGraphEncoder, e: canonical.StateSnapshot) -> bytes:
    if not isinstance(e.snapshot, dict):
        self.dropped[Dropped.STATE] += 1
        return b""
    self._state = dict(e.snapshot)
    return _values(self)


def _state_delta(self: LangGraphEncoder, e: canonical.StateDelta) -> bytes:
    state = StateTracker(self._state)
    if not state.apply(e.patch) or not isinstance(state.value, dict):
        self.dropped[Dropped.STATE] += 1
        return b""
    self._state = state.value
    return _values(self)


def _data(self: LangGraphEncoder, e: canonical.Data) -> bytes:
    if e.custom:
        self.dropped[Dropped.CUSTOM_AS_DATA] += 1  # an AI SDK 7 `custom` part is named data like any other
    if "custom" not in self._modes:
        return b""
    if e.name == "custom":
        if e.id is not None or e.transient:
            self.dropped[Dropped.DATA_ID] += 1  # a graph's own value, written as it is
        return _emit(self, "custom", e.data)
    value: dict[str, Any] = {"name": e.name, "data": e.data}
    if e.id is not None:
        value["id"] = e.id
    if e.transient:
        value["transient"] = True
    return _emit(self, "custom", value)


def _shown(self: LangGraphEncoder) -> Shown:
    shown = self._families
    if shown is None:  # most runs have neither activities nor subagents
        shown = self._families = Shown()
    return shown


def _activity(self: LangGraphEncoder, e: canonical.ActivitySnapshot | canonical.ActivityDelta) -> bytes:
    data = _shown(self).activity(e)
    if data is None:
        self.dropped[Dropped.ACTIVITY] += 1  # a patch of an activity never shown whole
        return b""
    return _data(self, data)


def _subagent(self: LangGraphEncoder,
              e: canonical.SubagentStarted | canonical.SubagentFinished | canonical.SubagentError) -> bytes:
    return _data(self, _shown(self).subagent(e))


def _run_finished(self: LangGraphEncoder, e: canonical.RunFinished) -> bytes:
    if e.outcome == "cancelled":
        return _emit(self, "error", {"error": "CancelledError", "message": "the run was cancelled"})
    return _cut_short(self, e) + _values(self)


def _cut_short(self: LangGraphEncoder, e: canonical.RunFinished) -> bytes:
    """An answer cut short: the last AI message's `finish_reason`, as a chat model's last chunk says it."""
    message = self._last_ai
    if e.stop_reason is None:
        return b""
    if message is None:
        self.dropped[Dropped.STOP_REASON] += 1  # no AI message to say it of
        return b""
    said = {"finish_reason": e.stop_reason}
    message["response_metadata"] = {**message.get("response_metadata", {}), **said}
    return _tuple(self, ai_chunk(message["id"], "", response_metadata=said, chunk_position="last"))


def _run_error(self: LangGraphEncoder, e: canonical.RunError) -> bytes:
    return _emit(self, "error", {"error": e.code or "Error", "message": e.message})


def _raw(self: LangGraphEncoder, e: canonical.Raw) -> bytes:
    event, data = e.event.get("event"), e.event.get("data")
    if e.dialect == "langgraph" and isinstance(event, str) and event.partition("|")[0] in self._modes:
        return _emit(self, event, data)
    self.dropped[Dropped.RAW] += 1
    return b""


class LangGraphEncoder(SSEEncoder):
    __slots__ = ("_calls", "_current", "_families", "_interrupts", "_last_ai", "_messages", "_modes", "_next",
                 "_reasoning_tags", "_run_id", "_state", "_text_messages", "_texts", "_thread_id", "_usage_totals")

    HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store"}
    handlers = {
        canonical.RunStarted: _run_started, canonical.RunFinished: _run_finished, canonical.RunError: _run_error,
        canonical.TextStart: _text_start, canonical.TextDelta: _text_delta, canonical.TextEnd: _text_end,
        canonical.ReasoningStart: _reasoning_start, canonical.ReasoningDelta: _reasoning_delta,
        canonical.ReasoningEnd: _reasoning_end, canonical.ToolCallStart: _tool_start,
        canonical.ToolCallArgs: _tool_args, canonical.ToolCallEnd: _tool_end, canonical.ToolResult: _tool_result,
        canonical.Interrupt: _interrupt, canonical.StateSnapshot: _state_snapshot, canonical.StateDelta: _state_delta,
        canonical.Data: _data, canonical.Raw: _raw, canonical.Usage: _usage, canonical.EncryptedValue: _encrypted,
        canonical.InterruptResolved: _resolved, canonical.ActivitySnapshot: _activity,
        canonical.ActivityDelta: _activity, canonical.SubagentStarted: _subagent, canonical.SubagentFinished: _subagent,
        canonical.SubagentError: _subagent,
    }
    DROPS = drop_map(Dropped.MESSAGES_SNAPSHOT, Dropped.STEP)
    METADATA = frozenset({canonical.RunStarted, canonical.TextStart, canonical.TextDelta, canonical.ReasoningStart,
                          canonical.ReasoningDelta, canonical.ToolCallArgs, canonical.ToolResult})
    """Where an event's metadata goes (a run's start, a message's opening, a tool result), or counted inline on the
    deltas; any other event's is counted by the base."""
    KEEP_ALIVE = b": heartbeat\n\n"

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        asked = request.metadata.get("langgraph") if request is not None else None
        modes = asked.get("stream_mode") if isinstance(asked, dict) else None
        self._modes = frozenset(modes if isinstance(modes, list) else UPSTREAM_MODES)
        if "messages" in self._modes:
            self._modes |= {"messages-tuple"}
        self._run_id = request.run_id if request is not None else None
        self._thread_id = request.conversation_id if request is not None else None
        if self._run_id and self._thread_id:
            self.headers["content-location"] = f"/threads/{self._thread_id}/runs/{self._run_id}"
        self._messages: list[dict[str, Any]] = \
            [to_langchain(m) for m in request.messages if m.role != "reasoning"] if request else []
        """The thread's messages: what the gateway knows of it (`WholeHistory`), then the run's."""
        self._state: dict[str, Any] = dict(request.state) if request and isinstance(request.state, dict) else {}
        self._texts: dict[str, TextPieces] = {}
        """Each open text message's text so far, for the whole message `values` and `updates` carry."""
        self._text_messages: dict[str, dict[str, Any]] = {}
        """Each open text message's whole message: messages streamed at once each end in their own."""
        self._calls: dict[str, dict[str, Any]] = {}
        """Each tool call's message, index and arguments so far."""
        self._current: dict[str, Any] | None = None
        """The AI message the calls of the stream belong to."""
        self._interrupts: list[dict[str, Any]] = []
        self._last_ai: dict[str, Any] | None = None
        """The run's last AI message: where usage goes."""
        self._usage_totals: UsageTotals | None = None
        self._reasoning_tags: dict[str, dict[str, Any]] = {}
        self._families: Shown | None = None
        self._next = 0
        """The id of the next frame."""

    def values(self) -> dict[str, Any]:
        """The thread's values as they stand: its state, its every message, and what waits."""
        values: dict[str, Any] = {**self._state, "messages": self._messages}
        if self._interrupts:
            values["__interrupt__"] = self._interrupts
        return values
