"""A run as the output items and semantic events of one response, shared by the streamed reply and the one-body
one (and by answers about a stored response).

Text is a `message` item per message (a refusal's content part `refusal`), reasoning a `reasoning` item (its
summary: see `items.reasoning_item`). Tool calls and interrupts are `calls`' to write: a call to a tool the client
offered is a `function_call` item, one the agent ran itself an `mcp_call`, an interrupt an `mcp_approval_request`
(see `items`); the response completes, and only a cancelled run ends it `incomplete` (reason `cancelled`), or one
whose answer was cut short (reason `max_output_tokens` or `content_filter`). Activities and subagents are the
gateway's items (see `items`); encrypted reasoning is its reasoning item's `encrypted_content`. State, named data,
steps and snapshots have no item and are left out, as are an event's `metadata` and which subagent a message or call
is of (counted in `dropped`).

    ResponseWriter      the response object (id, model, status, usage); messages, reasoning, activities and
      │                 subagents; which part writes each event
      ├── out: Output   the output items in order, and the characters of text they hold (output.py)
      └── calls: Calls  tool calls and interrupts, held until the run tells whose a call is, written into `out`
                        (calls.py)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gateway.core import events as canonical
from gateway.core.activity import Shown
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import must_place
from gateway.core.ids import new_id
from gateway.core.turn import Turn
from gateway.core.usage import UsageTotals

from .calls import Calls
from .items import (
    ACTIVITY,
    ERRORS,
    SUBAGENT,
    message_item,
    reasoning_item,
    response_object,
    summary_part,
    text_part,
)
from .output import OpenItem, Output
from .output import Semantic as Semantic
from .request import echo

INCOMPLETE: dict[canonical.StopReason, str] = {"length": "max_output_tokens", "content_filter": "content_filter"}
"""Why a response whose answer was cut short is incomplete, by the run's stop reason."""
DROPS = drop_map(Dropped.STATE, Dropped.MESSAGES_SNAPSHOT, Dropped.STEP, Dropped.DATA, Dropped.RAW)
"""What no item shows, by the kind counted in `dropped`."""


class ResponseWriter:
    __slots__ = ("_encrypted", "_families", "_subagents", "_usage", "calls", "created_at", "dropped", "model", "out",
                 "request", "response_id", "texts")

    def __init__(self, request: Turn | None, dropped: dict[Dropped, int]) -> None:
        self.response_id = request.run_id if request is not None and request.run_id else new_id("resp")
        self.model = (request.model if request is not None else None) or "agent-gateway"
        self.request = echo(request)
        self.created_at = int(time.time())
        self.out = Output(dropped)
        self.dropped = dropped
        self.calls = Calls({t.name for t in request.tools} if request is not None else set(), self.model)
        self.texts: dict[str, OpenItem] = {}
        """Messages and reasoning being written, by their canonical id."""
        self._encrypted: dict[str, str] = {}
        """Encrypted reasoning for a reasoning item still open, by its canonical id."""
        self._families: Shown | None = None
        self._subagents: dict[str, int] = {}
        """Subagents running: run id -> the index of their item."""
        self._usage = UsageTotals()

    def event(self, e: canonical.Event) -> list[Semantic]:
        handler = _HANDLERS.get(type(e))
        if handler is not None:
            return handler(self, e)
        kind = DROPS.get(type(e))
        if kind is not None:
            self.dropped[kind] += 1
        return []

    def response(self, status: str, **extra: Any) -> dict[str, Any]:
        usage = self._usage if self._usage.counts else None
        return response_object(self.response_id, status=status, model=self.model, created_at=self.created_at,
                               output=list(self.out.items), request=self.request, usage=usage, **extra)

    def _run_started(self, e: canonical.RunStarted) -> list[Semantic]:
        response = self.response("in_progress")
        return [("response.created", {"response": response}), ("response.in_progress", {"response": response})]

    def _text_start(self, e: canonical.TextStart) -> list[Semantic]:
        self.out.opened(e)
        item_id = new_id("msg")
        item = message_item(item_id, "", "in_progress")
        index = self.out.add(item)
        self.texts[e.message_id] = OpenItem(index, item_id, refusal=e.refusal)
        part = text_part("", refusal=e.refusal)
        return [("response.output_item.added", {"output_index": index, "item": dict(item, content=[])}),
                ("response.content_part.added", {"item_id": item_id, "output_index": index, "content_index": 0,
                                                 "part": part})]

    def text_delta(self, e: canonical.TextDelta) -> OpenItem | None:
        """The open message a delta belongs to, its delta kept; None for a delta of no open message."""
        text = self.texts.get(e.message_id)
        if text is not None:
            text.so_far.add(e.delta)
            self.out.chars += len(e.delta)
        return text

    def _text_delta(self, e: canonical.TextDelta) -> list[Semantic]:
        text = self.text_delta(e)
        if text is None:
            return []
        where = {"item_id": text.item_id, "output_index": text.index, "content_index": 0}
        if text.refusal:
            return [("response.refusal.delta", {**where, "delta": e.delta})]
        return [("response.output_text.delta", {**where, "delta": e.delta, "logprobs": []})]

    def _text_end(self, e: canonical.TextEnd) -> list[Semantic]:
        text = self.texts.pop(e.message_id, None)
        if text is None:
            return []
        whole = text.so_far.text()
        item = self.out.items[text.index] = message_item(text.item_id, whole, refusal=text.refusal)
        where = {"item_id": text.item_id, "output_index": text.index, "content_index": 0}
        done = ("response.refusal.done", {**where, "refusal": whole}) if text.refusal else \
            ("response.output_text.done", {**where, "text": whole, "logprobs": []})
        return [done,
                ("response.content_part.done", {**where, "part": item["content"][0]}),
                ("response.output_item.done", {"output_index": text.index, "item": item})]

    def _reasoning_start(self, e: canonical.ReasoningStart) -> list[Semantic]:
        self.out.opened(e)
        item_id = new_id("rs")
        index = self.out.add(reasoning_item(item_id, None))
        self.texts[e.message_id] = OpenItem(index, item_id)
        return [("response.output_item.added", {"output_index": index, "item": reasoning_item(item_id, None)}),
                ("response.reasoning_summary_part.added", {"item_id": item_id, "output_index": index,
                                                           "summary_index": 0, "part": summary_part("")})]

    def _reasoning_delta(self, e: canonical.ReasoningDelta) -> list[Semantic]:
        text = self.texts.get(e.message_id)
        if text is None:
            return []
        text.so_far.add(e.delta)
        self.out.chars += len(e.delta)
        return [("response.reasoning_summary_text.delta", {"item_id": text.item_id, "output_index": text.index,
                                                           "summary_index": 0, "delta": e.delta})]

    def _reasoning_end(self, e: canonical.ReasoningEnd) -> list[Semantic]:
        text = self.texts.pop(e.message_id, None)
        if text is None:
            return []
        whole = text.so_far.text()
        item = self.out.items[text.index] = reasoning_item(text.item_id, whole,
                                                           self._encrypted.pop(e.message_id, None))
        where = {"item_id": text.item_id, "output_index": text.index, "summary_index": 0}
        return [("response.reasoning_summary_text.done", {**where, "text": whole}),
                ("response.reasoning_summary_part.done", {**where, "part": item["summary"][0]}),
                ("response.output_item.done", {"output_index": text.index, "item": item})]

    def _encrypted_value(self, e: canonical.EncryptedValue) -> list[Semantic]:
        """Encrypted reasoning: its reasoning item's `encrypted_content`; a reasoning item of its own when its
        reasoning was written already (or never). A tool call's has no place."""
        if e.subtype != "message":
            self.dropped[Dropped.ENCRYPTED_VALUE] += 1
            return []
        text = self.texts.get(e.entity_id)
        if text is not None and self.out.items[text.index]["type"] == "reasoning":
            self._encrypted[e.entity_id] = e.value
            return []
        return self.out.added_done(reasoning_item(new_id("rs"), None, e.value))

    def _activity(self, e: canonical.ActivitySnapshot | canonical.ActivityDelta) -> list[Semantic]:
        """The activity whole, as it stands after this change."""
        if self._families is None:
            self._families = Shown()
        shown = self._families.activity(e)
        if shown is None:  # a patch of an activity never shown whole, or one that does not apply
            self.dropped[Dropped.ACTIVITY] += 1
            return []
        item = {"id": new_id("act"), "type": ACTIVITY, "status": "completed", "activity_id": e.message_id,
                "activity_type": e.activity_type, "content": shown.data["content"]}
        if e.subagent_run_id is not None:
            item["subagent_run_id"] = e.subagent_run_id
        return self.out.added_done(item)

    def _subagent_started(self, e: canonical.SubagentStarted) -> list[Semantic]:
        item = {"id": new_id("sub"), "type": SUBAGENT, "status": "in_progress", "subagent_run_id": e.subagent_run_id,
                "name": e.name, "description": e.description, "parent_subagent_run_id": e.parent_subagent_run_id,
                "parent_tool_call_id": e.parent_tool_call_id, "parent_message_id": e.parent_message_id}
        index = self._subagents[e.subagent_run_id] = self.out.add(item)
        return [("response.output_item.added", {"output_index": index, "item": item})]

    def _subagent_ended(self, e: canonical.SubagentFinished | canonical.SubagentError) -> list[Semantic]:
        out: list[Semantic] = []
        index = self._subagents.pop(e.subagent_run_id, None)
        if index is None:  # its start was not seen (repair lets an end through only for one it saw)
            out = self._subagent_started(canonical.SubagentStarted(e.subagent_run_id, ""))
            index = self._subagents.pop(e.subagent_run_id)
        item = dict(self.out.items[index])
        if isinstance(e, canonical.SubagentFinished):
            item.update(status="incomplete" if e.outcome == "suspended" else "completed", result=e.result)
            if e.interrupt_ids:
                item["interrupt_ids"] = e.interrupt_ids
        else:
            item.update(status="failed", error={"message": e.message, "code": e.code})
        self.out.items[index] = item
        return [*out, ("response.output_item.done", {"output_index": index, "item": item})]

    def _usage_event(self, e: canonical.Usage) -> list[Semantic]:
        self._usage.add(e)
        return []

    def _run_finished(self, e: canonical.RunFinished) -> list[Semantic]:
        out = self.calls.close(self.out)
        if e.outcome == "cancelled":
            reason = "cancelled"
        elif e.stop_reason is not None:
            reason = INCOMPLETE[e.stop_reason]
        else:
            return [*out, ("response.completed", {"response": self.response("completed")})]
        return [*out, ("response.incomplete", {"response": self.response("incomplete", incomplete=reason)})]

    def _run_error(self, e: canonical.RunError) -> list[Semantic]:
        self.calls.fail()
        error = ERRORS.failed(e)
        failed = self.response("failed", error={"code": error["code"], "message": e.message})
        # The `openai` SDKs read the error's fields at the top of the event, Open Responses in its `error`.
        said = {"code": error["code"], "message": e.message, "param": None, "error": error}
        return [("error", said), ("response.failed", {"response": failed})]


_HANDLERS: dict[type, Callable[[ResponseWriter, Any], list[Semantic]]] = {
    canonical.RunStarted: ResponseWriter._run_started,
    canonical.TextStart: ResponseWriter._text_start,
    canonical.TextDelta: ResponseWriter._text_delta,
    canonical.TextEnd: ResponseWriter._text_end,
    canonical.ReasoningStart: ResponseWriter._reasoning_start,
    canonical.ReasoningDelta: ResponseWriter._reasoning_delta,
    canonical.ReasoningEnd: ResponseWriter._reasoning_end,
    canonical.ToolCallStart: lambda writer, e: writer.calls.start(writer.out, e),
    canonical.ToolCallArgs: lambda writer, e: writer.calls.args(writer.out, e),
    canonical.ToolCallEnd: lambda writer, e: writer.calls.end(writer.out, e),
    canonical.ToolResult: lambda writer, e: writer.calls.result(writer.out, e),
    canonical.Interrupt: lambda writer, e: writer.calls.interrupt(writer.out, e),
    canonical.InterruptResolved: lambda writer, e: writer.calls.interrupt_resolved(writer.out, e),
    canonical.EncryptedValue: ResponseWriter._encrypted_value,
    canonical.ActivitySnapshot: ResponseWriter._activity,
    canonical.ActivityDelta: ResponseWriter._activity,
    canonical.SubagentStarted: ResponseWriter._subagent_started,
    canonical.SubagentFinished: ResponseWriter._subagent_ended,
    canonical.SubagentError: ResponseWriter._subagent_ended,
    canonical.Usage: ResponseWriter._usage_event,
    canonical.RunFinished: ResponseWriter._run_finished,
    canonical.RunError: ResponseWriter._run_error,
}

must_place("ResponseWriter", _HANDLERS.keys() | DROPS.keys())
