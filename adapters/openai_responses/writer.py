"""A run as the output items and semantic events of one response, shared by the streamed reply and the one-body
one (and by answers about a stored response).

Text is a `message` item per message, reasoning a `reasoning` item (`reasoning_text` content). Calls to tools the
client offered are `function_call` items as they come; any other call waits for its result: with one it is a tool
the agent ran itself (`agent_gateway:tool_call`, see `items`), without one by the run's end it is the client's to
run after all. An interrupt is an `agent_gateway:interrupt` item and the response ends `incomplete` (reason
`interrupt`), unless the run answered it itself (an `agent_gateway:interrupt_resolved` item); a cancelled run ends
`incomplete` (reason `cancelled`). Activities and subagents are the gateway's items too (see `items`); encrypted
reasoning is its reasoning item's `encrypted_content`. State, named data, steps and snapshots have no item and are
left out, as are an event's `metadata` and which subagent a message or call is of (counted in `dropped`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gateway.core.activity import Shown
from gateway.core.codec import as_text, json_or_text, output_of
from gateway.core.encoding import EVENT_TYPES
from gateway.core.errors import ErrorCode
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
from gateway.core.turn import Turn
from gateway.core.usage import UsageTotals

from .items import (
    ACTIVITY,
    INTERRUPT,
    INTERRUPT_RESOLVED,
    SUBAGENT,
    error_object,
    function_call_item,
    message_item,
    reasoning_item,
    response_object,
    tool_call_item,
)
from .request import echo

Semantic = tuple[str, dict[str, Any]]
"""One streaming event: its type and its fields (without `type` and `sequence_number`)."""

DROPPED: dict[type, str] = {
    StateSnapshot: "state", StateDelta: "state", MessagesSnapshot: "messages_snapshot", StepStarted: "step",
    StepFinished: "step", Data: "data", Raw: "raw",
}


class _Open:
    """An item being written: where it is in the output, and its text or arguments so far."""

    __slots__ = ("call_id", "index", "item_id", "name", "pieces")

    def __init__(self, index: int, item_id: str, name: str = "", call_id: str = "") -> None:
        self.index = index
        self.item_id = item_id
        self.name = name
        self.call_id = call_id
        self.pieces: list[str] = []


class ResponseWriter:
    __slots__ = ("_approving", "_encrypted", "_families", "_held", "_interrupts", "_offered", "_open", "_subagents",
                 "_usage", "chars", "created_at", "dropped", "model", "output", "request", "response_id", "texts")

    def __init__(self, request: Turn | None, dropped: dict[str, int]) -> None:
        self.response_id = request.run_id if request is not None and request.run_id else new_id("resp")
        self.model = (request.model if request is not None else None) or "agent-gateway"
        self.request = echo(request)
        self.created_at = int(time.time())
        self._offered = {t.name for t in request.tools} if request is not None else set()
        self.output: list[dict[str, Any]] = []
        self.texts: dict[str, _Open] = {}
        """Messages and reasoning being written, by their canonical id."""
        self._open: dict[str, _Open] = {}
        """Function calls being written, by call id."""
        self._held: dict[str, _Open] = {}
        """Calls to tools the client did not offer, by call id: shown once the run tells whose they are."""
        self._interrupts: list[Interrupt] = []
        self._approving: dict[str, _Open] = {}
        """The agent's calls an interrupt asks to approve, by call id: shown again with their result, if it comes."""
        self._encrypted: dict[str, str] = {}
        """Encrypted reasoning for a reasoning item still open, by its canonical id."""
        self._families: Shown | None = None
        self._subagents: dict[str, int] = {}
        """Subagents running: run id -> the index of their item."""
        self._usage = UsageTotals()
        self.dropped = dropped
        self.chars = 0
        """Characters of text, arguments and results the response holds, for how its JSON is written
        (`json_bytes`)."""

    def event(self, e: Event) -> list[Semantic]:
        handler = _HANDLERS.get(type(e))
        if handler is not None:
            return handler(self, e)
        kind = DROPPED.get(type(e))
        if kind is not None:
            self.dropped[kind] += 1
        return []

    def response(self, status: str, **extra: Any) -> dict[str, Any]:
        usage = self._usage if self._usage.counts else None
        return response_object(self.response_id, status=status, model=self.model, created_at=self.created_at,
                               output=list(self.output), request=self.request, usage=usage, **extra)

    def _add(self, item: dict[str, Any]) -> int:
        self.output.append(item)
        return len(self.output) - 1

    def _run_started(self, e: RunStarted) -> list[Semantic]:
        response = self.response("in_progress")
        return [("response.created", {"response": response}), ("response.in_progress", {"response": response})]

    def _added_done(self, item: dict[str, Any]) -> list[Semantic]:
        """An item that comes whole."""
        index = self._add(item)
        return [("response.output_item.added", {"output_index": index, "item": item}),
                ("response.output_item.done", {"output_index": index, "item": item})]

    def _opened(self, e: TextStart | ReasoningStart | ToolCallStart) -> None:
        if e.subagent_run_id is not None:
            self.dropped["subagent"] += 1  # a message or a call has no author but the agent: whose it is, is lost

    def _text_start(self, e: TextStart) -> list[Semantic]:
        self._opened(e)
        item_id = new_id("msg")
        item = message_item(item_id, "", "in_progress")
        index = self._add(item)
        self.texts[e.message_id] = _Open(index, item_id)
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        return [("response.output_item.added", {"output_index": index, "item": dict(item, content=[])}),
                ("response.content_part.added", {"item_id": item_id, "output_index": index, "content_index": 0,
                                                 "part": part})]

    def text_delta(self, e: TextDelta) -> _Open | None:
        """The open message a delta belongs to, its delta kept; None for a delta of no open message."""
        text = self.texts.get(e.message_id)
        if text is not None:
            text.pieces.append(e.delta)
            self.chars += len(e.delta)
        return text

    def _text_delta(self, e: TextDelta) -> list[Semantic]:
        text = self.text_delta(e)
        if text is None:
            return []
        return [("response.output_text.delta", {"item_id": text.item_id, "output_index": text.index,
                                                "content_index": 0, "delta": e.delta, "logprobs": []})]

    def _text_end(self, e: TextEnd) -> list[Semantic]:
        text = self.texts.pop(e.message_id, None)
        if text is None:
            return []
        whole = "".join(text.pieces)
        item = self.output[text.index] = message_item(text.item_id, whole)
        where = {"item_id": text.item_id, "output_index": text.index, "content_index": 0}
        return [("response.output_text.done", {**where, "text": whole, "logprobs": []}),
                ("response.content_part.done", {**where, "part": item["content"][0]}),
                ("response.output_item.done", {"output_index": text.index, "item": item})]

    def _reasoning_start(self, e: ReasoningStart) -> list[Semantic]:
        self._opened(e)
        item_id = new_id("rs")
        index = self._add(reasoning_item(item_id, None))
        self.texts[e.message_id] = _Open(index, item_id)
        return [("response.output_item.added", {"output_index": index, "item": reasoning_item(item_id, None)}),
                ("response.content_part.added", {"item_id": item_id, "output_index": index, "content_index": 0,
                                                 "part": {"type": "reasoning_text", "text": ""}})]

    def _reasoning_delta(self, e: ReasoningDelta) -> list[Semantic]:
        text = self.texts.get(e.message_id)
        if text is None:
            return []
        text.pieces.append(e.delta)
        self.chars += len(e.delta)
        return [("response.reasoning.delta", {"item_id": text.item_id, "output_index": text.index,
                                              "content_index": 0, "delta": e.delta})]

    def _reasoning_end(self, e: ReasoningEnd) -> list[Semantic]:
        text = self.texts.pop(e.message_id, None)
        if text is None:
            return []
        whole = "".join(text.pieces)
        item = self.output[text.index] = reasoning_item(text.item_id, whole, self._encrypted.pop(e.message_id, None))
        where = {"item_id": text.item_id, "output_index": text.index, "content_index": 0}
        return [("response.reasoning.done", {**where, "text": whole}),
                ("response.content_part.done", {**where, "part": item["content"][0]}),
                ("response.output_item.done", {"output_index": text.index, "item": item})]

    def _encrypted_value(self, e: EncryptedValue) -> list[Semantic]:
        """Encrypted reasoning: its reasoning item's `encrypted_content`; a reasoning item of its own when its
        reasoning was written already (or never). A tool call's has no place."""
        if e.subtype != "message":
            self.dropped["encrypted_value"] += 1
            return []
        text = self.texts.get(e.entity_id)
        if text is not None and self.output[text.index]["type"] == "reasoning":
            self._encrypted[e.entity_id] = e.value
            return []
        return self._added_done(reasoning_item(new_id("rs"), None, e.value))

    def _tool_start(self, e: ToolCallStart) -> list[Semantic]:
        self._opened(e)
        if e.name not in self._offered:
            self._held[e.tool_call_id] = _Open(-1, new_id("fc"), e.name, e.tool_call_id)
            return []
        call = _Open(-1, new_id("fc"), e.name, e.tool_call_id)
        call.index = self._add(function_call_item(call.item_id, e.tool_call_id, e.name, "", "in_progress"))
        self._open[e.tool_call_id] = call
        return [("response.output_item.added", {"output_index": call.index, "item": self.output[call.index]})]

    def _tool_args(self, e: ToolCallArgs) -> list[Semantic]:
        held = self._held.get(e.tool_call_id)
        if held is not None:
            held.pieces.append(e.delta)
            self.chars += len(e.delta)
            return []
        call = self._open.get(e.tool_call_id)
        if call is None or not e.delta:
            return []
        call.pieces.append(e.delta)
        self.chars += len(e.delta)
        return [("response.function_call_arguments.delta", {"item_id": call.item_id, "output_index": call.index,
                                                            "delta": e.delta})]

    def _tool_end(self, e: ToolCallEnd) -> list[Semantic]:
        call = self._open.pop(e.tool_call_id, None)
        return self._call_done(call) if call is not None else []

    def _call_done(self, call: _Open) -> list[Semantic]:
        arguments = "".join(call.pieces) or "{}"
        item = self.output[call.index] = function_call_item(call.item_id, call.call_id, call.name, arguments)
        return [("response.function_call_arguments.done", {"item_id": call.item_id, "output_index": call.index,
                                                           "arguments": arguments}),
                ("response.output_item.done", {"output_index": call.index, "item": item})]

    def _tool_result(self, e: ToolResult) -> list[Semantic]:
        held = self._held.pop(e.tool_call_id, None)
        item_id = held.item_id if held is not None else new_id("fc")
        if held is None:
            # The result of a call shown waiting for approval (approved within the run): the call again, done.
            held = self._approving.pop(e.tool_call_id, None)
        if held is None:
            return []  # the agent answered a call of the client's own tool itself: the call stands as it went out
        if isinstance(e.content, str):
            output = json_or_text(e.content)
            self.chars += len(e.content)
        else:
            output = output_of(e.content)  # content parts as JSON objects
            self.chars += len(as_text(output))
        return self._added_done(tool_call_item(item_id, held.call_id, held.name, "".join(held.pieces) or "{}",
                                               output, e.is_error))

    def _interrupt(self, e: Interrupt) -> list[Semantic]:
        self._interrupts.append(e)
        out: list[Semantic] = []
        held = self._held.pop(e.tool_call_id, None) if e.tool_call_id is not None else None
        if held is not None:  # the agent's own call, waiting for the approval: shown as its, not yet run
            self._approving[held.call_id] = held
            call = tool_call_item(held.item_id, held.call_id, held.name, "".join(held.pieces) or "{}", None)
            call["status"] = "in_progress"
            out += self._added_done(call)
        item = {"id": e.id, "type": INTERRUPT, "status": "completed", "reason": e.reason, "message": e.message,
                "payload": e.payload, "tool_call_id": e.tool_call_id, "response_schema": e.response_schema}
        if e.expires_at is not None:
            item["expires_at"] = e.expires_at
        return [*out, *self._added_done(item)]

    def _interrupt_resolved(self, e: InterruptResolved) -> list[Semantic]:
        """Answered within the run: the response does not wait for it."""
        self._interrupts = [i for i in self._interrupts if i.id != e.interrupt_id]
        return self._added_done({"id": new_id("ir"), "type": INTERRUPT_RESOLVED, "status": "completed",
                                 "interrupt_id": e.interrupt_id, "approved": e.approved, "reason": e.reason})

    def _activity(self, e: ActivitySnapshot | ActivityDelta) -> list[Semantic]:
        """The activity whole, as it stands after this change."""
        if self._families is None:
            self._families = Shown()
        shown = self._families.activity(e)
        if shown is None:  # a patch of an activity never shown whole, or one that does not apply
            self.dropped["activity"] += 1
            return []
        item = {"id": new_id("act"), "type": ACTIVITY, "status": "completed", "activity_id": e.message_id,
                "activity_type": e.activity_type, "content": shown.data["content"]}
        if e.subagent_run_id is not None:
            item["subagent_run_id"] = e.subagent_run_id
        return self._added_done(item)

    def _subagent_started(self, e: SubagentStarted) -> list[Semantic]:
        item = {"id": new_id("sub"), "type": SUBAGENT, "status": "in_progress", "subagent_run_id": e.subagent_run_id,
                "name": e.name, "description": e.description, "parent_subagent_run_id": e.parent_subagent_run_id,
                "parent_tool_call_id": e.parent_tool_call_id, "parent_message_id": e.parent_message_id}
        index = self._subagents[e.subagent_run_id] = self._add(item)
        return [("response.output_item.added", {"output_index": index, "item": item})]

    def _subagent_ended(self, e: SubagentFinished | SubagentError) -> list[Semantic]:
        out: list[Semantic] = []
        index = self._subagents.pop(e.subagent_run_id, None)
        if index is None:  # its start was not seen (repair lets an end through only for one it saw)
            out = self._subagent_started(SubagentStarted(e.subagent_run_id, ""))
            index = self._subagents.pop(e.subagent_run_id)
        item = dict(self.output[index])
        if isinstance(e, SubagentFinished):
            item.update(status="incomplete" if e.outcome == "suspended" else "completed", result=e.result)
            if e.interrupt_ids:
                item["interrupt_ids"] = e.interrupt_ids
        else:
            item.update(status="failed", error={"message": e.message, "code": e.code})
        self.output[index] = item
        return [*out, ("response.output_item.done", {"output_index": index, "item": item})]

    def _usage_event(self, e: Usage) -> list[Semantic]:
        self._usage.add(e)
        return []

    def _close(self) -> list[Semantic]:
        """Calls held to the end are the client's to run; calls still open are closed."""
        out: list[Semantic] = []
        for call in self._held.values():
            call.index = self._add(function_call_item(call.item_id, call.call_id, call.name, "", "in_progress"))
            out.append(("response.output_item.added", {"output_index": call.index, "item": self.output[call.index]}))
            out += self._call_done(call)
        self._held.clear()
        for call in self._open.values():
            out += self._call_done(call)
        self._open.clear()
        return out

    def _run_finished(self, e: RunFinished) -> list[Semantic]:
        out = self._close()
        if self._interrupts or e.outcome == "cancelled":
            reason = "interrupt" if self._interrupts else "cancelled"
            return [*out, ("response.incomplete", {"response": self.response("incomplete", incomplete=reason)})]
        return [*out, ("response.completed", {"response": self.response("completed")})]

    def _run_error(self, e: RunError) -> list[Semantic]:
        self._held.clear()
        self._approving.clear()
        error = error_object(e.message, 502, e.code or ErrorCode.UPSTREAM_ERROR)
        failed = self.response("failed", error={"code": error["code"], "message": e.message})
        return [("error", {"error": error}), ("response.failed", {"response": failed})]


_HANDLERS: dict[type, Callable[[ResponseWriter, Any], list[Semantic]]] = {
    RunStarted: ResponseWriter._run_started,
    TextStart: ResponseWriter._text_start,
    TextDelta: ResponseWriter._text_delta,
    TextEnd: ResponseWriter._text_end,
    ReasoningStart: ResponseWriter._reasoning_start,
    ReasoningDelta: ResponseWriter._reasoning_delta,
    ReasoningEnd: ResponseWriter._reasoning_end,
    ToolCallStart: ResponseWriter._tool_start,
    ToolCallArgs: ResponseWriter._tool_args,
    ToolCallEnd: ResponseWriter._tool_end,
    ToolResult: ResponseWriter._tool_result,
    Interrupt: ResponseWriter._interrupt,
    InterruptResolved: ResponseWriter._interrupt_resolved,
    EncryptedValue: ResponseWriter._encrypted_value,
    ActivitySnapshot: ResponseWriter._activity,
    ActivityDelta: ResponseWriter._activity,
    SubagentStarted: ResponseWriter._subagent_started,
    SubagentFinished: ResponseWriter._subagent_ended,
    SubagentError: ResponseWriter._subagent_ended,
    Usage: ResponseWriter._usage_event,
    RunFinished: ResponseWriter._run_finished,
    RunError: ResponseWriter._run_error,
}

_UNPLACED = EVENT_TYPES - _HANDLERS.keys() - DROPPED.keys()
if _UNPLACED:  # an event type added to the model: say what it becomes, or what it is counted as, before it is lost
    raise TypeError(f"ResponseWriter has no place for {sorted(t.__name__ for t in _UNPLACED)}")
