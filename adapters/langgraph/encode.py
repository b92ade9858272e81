"""Canonical events into a LangGraph run stream, in the stream modes the client asked for.

| canonical | frame |
|---|---|
| run started | `metadata {run_id, attempt}` (the request's run id: the one a join or a cancel names) |
| text, reasoning, tool calls | `messages` `[AIMessageChunk, metadata]` (`messages-tuple`); a last chunk ends each |
| tool result | `messages` `[ToolMessage, metadata]`, `status: "error"` for a failed tool |
| interrupt | `updates {"__interrupt__": [...]}` and the last `values` with it |
| state | `values`: the state with this run's messages (the thread's history is the server's: see `GET .../state`) |
| named data | `custom` (its value as is for `custom`, else `{name, data}`) |
| error | `error {error, message}` |
| the end | the stream's end, after the last `values` |

Modes the client did not ask for are not written; `messages` (whole messages, not tuples) is written as
`messages-tuple` is, under the names the SDKs read (`messages/partial` is left out: its chunks are whole messages).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import as_text
from gateway.core.encoding import HOLE, DeltaFrames, SSEEncoder
from gateway.core.events import (
    ActivityDelta,
    ActivitySnapshot,
    Data,
    EncryptedValue,
    Event,
    Interrupt,
    InterruptResolved,
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
    SubagentError,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.ids import new_id
from gateway.core.state import StateTracker
from gateway.core.turn import Turn

from .interrupts import interrupt_item
from .messages import to_langchain
from .request import UPSTREAM_MODES

NODE = "agent"
"""The node a message is said to come from: the gateway sees runs, not the graph that made them."""
_META = {"langgraph_node": NODE}


def frame(event: str, value: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(value) + b"\n\n"


def _chunk(message_id: str, content: Any, **fields: Any) -> dict[str, Any]:
    return {"content": content, "additional_kwargs": {}, "response_metadata": {}, "type": "AIMessageChunk",
            "name": None, "id": message_id, "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": None,
            "tool_call_chunks": [], **fields}


_TEXT = DeltaFrames(lambda message_id: frame("messages", [_chunk(message_id, HOLE), _META]))


def _emit(self: LangGraphEncoder, event: str, value: Any) -> bytes:
    """One frame, numbered: a client that loses its connection joins the run again from after the last id."""
    number = self._next
    self._next = number + 1
    return b"id: %d\n" % number + frame(event, value)


def _tuple(self: LangGraphEncoder, message: dict[str, Any]) -> bytes:
    return _emit(self, "messages", [message, _META]) if "messages-tuple" in self._modes else b""


def _values(self: LangGraphEncoder) -> bytes:
    if "values" not in self._modes:
        return b""
    values: dict[str, Any] = {**self._state, "messages": self._messages}
    if self._interrupts:
        values["__interrupt__"] = self._interrupts
    return _emit(self, "values", values)

def _update(self: LangGraphEncoder, node: str, update: dict[str, Any]) -> bytes:
    return _emit(self, "updates", {node: update}) if "updates" in self._modes else b""


def _ai_message(self: LangGraphEncoder, message_id: str) -> dict[str, Any]:
    """The whole AI message `message_id` is, in the run's messages (added when first seen)."""
    current = self._current
    if current is None or current["id"] != message_id:
        current = self._current = {"type": "ai", "content": "", "id": message_id, "tool_calls": []}
        self._messages.append(current)
    return current


def _run_started(self: LangGraphEncoder, e: RunStarted) -> bytes:
    run_id = self._run_id or e.run_id or new_id("run")
    return _emit(self, "metadata", {"run_id": run_id, "attempt": 1}) + _values(self)


def _text_start(self: LangGraphEncoder, e: TextStart) -> bytes:
    self._texts[e.message_id] = []
    _ai_message(self, e.message_id)
    return b""


def _text_delta(self: LangGraphEncoder, e: TextDelta) -> bytes:
    if not e.delta:
        return b""
    self._texts.setdefault(e.message_id, []).append(e.delta)
    if "messages-tuple" not in self._modes:
        return b""
    number = self._next
    self._next = number + 1
    return b"id: %d\n" % number + _TEXT.frame(e.delta, e.message_id)


def _text_end(self: LangGraphEncoder, e: TextEnd) -> bytes:
    message = _ai_message(self, e.message_id)
    message["content"] = "".join(self._texts.pop(e.message_id, ()))
    return _tuple(self, _chunk(e.message_id, "", chunk_position="last")) + _update(self, NODE, {"messages": [message]})


def _reasoning_start(self: LangGraphEncoder, e: ReasoningStart) -> bytes:
    return b""


def _reasoning_delta(self: LangGraphEncoder, e: ReasoningDelta) -> bytes:
    return _tuple(self, _chunk(e.message_id, [{"type": "reasoning", "reasoning": e.delta}]))


def _reasoning_end(self: LangGraphEncoder, e: ReasoningEnd) -> bytes:
    return b""


def _tool_start(self: LangGraphEncoder, e: ToolCallStart) -> bytes:
    parent = e.parent_message_id or (self._current["id"] if self._current is not None else f"msg-{e.tool_call_id}")
    message = _ai_message(self, parent)
    index = len(message["tool_calls"])
    self._calls[e.tool_call_id] = {"message": message, "index": index, "name": e.name, "args": ""}
    message["tool_calls"].append({"name": e.name, "args": {}, "id": e.tool_call_id, "type": "tool_call"})
    piece = {"name": e.name, "args": "", "id": e.tool_call_id, "index": index, "type": "tool_call_chunk"}
    return _tuple(self, _chunk(parent, "", tool_call_chunks=[piece]))


def _tool_args(self: LangGraphEncoder, e: ToolCallArgs) -> bytes:
    call = self._calls.get(e.tool_call_id)
    if call is None or not e.delta:
        return b""
    call["args"] += e.delta
    piece = {"name": None, "args": e.delta, "id": None, "index": call["index"], "type": "tool_call_chunk"}
    return _tuple(self, _chunk(call["message"]["id"], "", tool_call_chunks=[piece]))


def _tool_end(self: LangGraphEncoder, e: ToolCallEnd) -> bytes:
    call = self._calls.get(e.tool_call_id)
    if call is None:
        return b""
    message = call["message"]
    try:
        args = orjson.loads(call["args"] or "{}")
    except orjson.JSONDecodeError:
        args = {"arguments": call["args"]}
    message["tool_calls"][call["index"]]["args"] = args
    return _update(self, NODE, {"messages": [message]})


def _tool_result(self: LangGraphEncoder, e: ToolResult) -> bytes:
    call = self._calls.get(e.tool_call_id)
    message: dict[str, Any] = {
        "content": as_text(e.content), "additional_kwargs": {}, "response_metadata": {}, "type": "tool",
        "name": call["name"] if call is not None else None, "id": e.message_id or new_id("msg"),
        "tool_call_id": e.tool_call_id, "artifact": None, "status": "error" if e.is_error else "success"}
    self._messages.append(message)
    self._current = None  # what the agent says next is a message of its own
    return _tuple(self, message) + _update(self, "tools", {"messages": [message]})


def _interrupt(self: LangGraphEncoder, e: Interrupt) -> bytes:
    item = interrupt_item(e)
    self._interrupts.append(item)
    return _emit(self, "updates", {"__interrupt__": [item]}) if "updates" in self._modes else b""


def _state_snapshot(self: LangGraphEncoder, e: StateSnapshot) -> bytes:
    if not isinstance(e.snapshot, dict):
        self.dropped["state"] += 1
        return b""
    self._state = dict(e.snapshot)
    return _values(self)


def _state_delta(self: LangGraphEncoder, e: StateDelta) -> bytes:
    state = StateTracker(self._state)
    if not state.apply(e.patch) or not isinstance(state.value, dict):
        self.dropped["state"] += 1
        return b""
    self._state = state.value
    return _values(self)


def _data(self: LangGraphEncoder, e: Data) -> bytes:
    if "custom" not in self._modes:
        return b""
    return _emit(self, "custom", e.data if e.name == "custom" else {"name": e.name, "data": e.data})


def _run_finished(self: LangGraphEncoder, e: RunFinished) -> bytes:
    if e.outcome == "cancelled":
        return _emit(self, "error", {"error": "CancelledError", "message": "the run was cancelled"})
    return _values(self)


def _run_error(self: LangGraphEncoder, e: RunError) -> bytes:
    return _emit(self, "error", {"error": e.code or "Error", "message": e.message})


def _raw(self: LangGraphEncoder, e: Raw) -> bytes:
    event, data = e.event.get("event"), e.event.get("data")
    if e.dialect == "langgraph" and isinstance(event, str) and event.partition("|")[0] in self._modes:
        return _emit(self, event, data)
    self.dropped["raw"] += 1
    return b""


def _dropped_as(kind: str) -> Any:
    def drop(self: LangGraphEncoder, e: Event) -> bytes:
        self.dropped[kind] += 1
        return b""
    return drop


class LangGraphEncoder(SSEEncoder):
    __slots__ = ("_calls", "_current", "_interrupts", "_messages", "_modes", "_next", "_run_id", "_state",
                 "_texts", "_thread_id")

    HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store"}
    handlers = {
        RunStarted: _run_started, RunFinished: _run_finished, RunError: _run_error,
        TextStart: _text_start, TextDelta: _text_delta, TextEnd: _text_end,
        ReasoningStart: _reasoning_start, ReasoningDelta: _reasoning_delta, ReasoningEnd: _reasoning_end,
        ToolCallStart: _tool_start, ToolCallArgs: _tool_args, ToolCallEnd: _tool_end, ToolResult: _tool_result,
        Interrupt: _interrupt, StateSnapshot: _state_snapshot, StateDelta: _state_delta, Data: _data, Raw: _raw,
        MessagesSnapshot: _dropped_as("messages_snapshot"), StepStarted: _dropped_as("step"),
        StepFinished: _dropped_as("step"), Usage: _dropped_as("usage"),
        ActivitySnapshot: _dropped_as("activity"), ActivityDelta: _dropped_as("activity"),
        SubagentStarted: _dropped_as("subagent"), SubagentFinished: _dropped_as("subagent"),
        SubagentError: _dropped_as("subagent"), EncryptedValue: _dropped_as("encrypted_value"),
        InterruptResolved: _dropped_as("interrupt_resolved"),
    }
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
        """The thread's messages: what the gateway knows of it (`Dialect.encoder_history`), then the run's."""
        self._state: dict[str, Any] = dict(request.state) if request and isinstance(request.state, dict) else {}
        self._texts: dict[str, list[str]] = {}
        """Each open text message's text so far, for the whole message `values` and `updates` carry."""
        self._calls: dict[str, dict[str, Any]] = {}
        """Each tool call's message, index and arguments so far."""
        self._current: dict[str, Any] | None = None
        """The AI message the calls of the stream belong to."""
        self._interrupts: list[dict[str, Any]] = []
        self._next = 0
        """The id of the next frame."""
