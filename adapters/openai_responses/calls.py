"""A run's tool calls and interrupts as a response's output items.

Calls to tools the client offered are `function_call` items as they come. Any other call is held until the run
tells whose it is: with a result it is a tool the agent ran itself (`mcp_call`), waiting on an interrupt it is the
call the approval request asks about, and still held at the run's end it is the client's to run after all. An
interrupt is an `mcp_approval_request` (see `items`), unless the run answered it itself (`mcp_approval_response`).
"""

from __future__ import annotations

import re

import orjson

from gateway.core import events as canonical
from gateway.core.codec import as_text, drop_none, output_of
from gateway.core.dropped import Dropped
from gateway.core.ids import new_id

from .items import APPROVAL_REQUEST, APPROVAL_RESPONSE, function_call_item, mcp_call_item
from .output import OpenItem, Output, Semantic


class Calls:
    """The run's tool calls and interrupts, written into the response's `Output`; `server_label` names the agent
    that runs its own tools (the route the client asked for)."""

    __slots__ = ("_approving", "_held", "_offered", "_open", "server_label")

    def __init__(self, offered: set[str], server_label: str) -> None:
        self._offered = offered
        self.server_label = server_label
        self._open: dict[str, OpenItem] = {}
        """Function calls being written, by call id."""
        self._held: dict[str, OpenItem] = {}
        """Calls to tools the client did not offer, by call id: shown once the run tells whose they are."""
        self._approving: dict[str, tuple[OpenItem, str]] = {}
        """The agent's calls an approval request asks about, by call id, with the request's id: shown with their
        result, if it comes in the run."""

    def start(self, out: Output, e: canonical.ToolCallStart) -> list[Semantic]:
        out.opened(e)
        if e.name not in self._offered:
            self._held[e.tool_call_id] = OpenItem(-1, new_id("fc"), e.name, e.tool_call_id)
            return []
        call = OpenItem(-1, new_id("fc"), e.name, e.tool_call_id)
        call.index = out.add(function_call_item(call.item_id, e.tool_call_id, e.name, "", "in_progress"))
        self._open[e.tool_call_id] = call
        return [("response.output_item.added", {"output_index": call.index, "item": out.items[call.index]})]

    def args(self, out: Output, e: canonical.ToolCallArgs) -> list[Semantic]:
        held = self._held.get(e.tool_call_id)
        if held is not None:
            held.so_far.add(e.delta)
            out.chars += len(e.delta)
            return []
        call = self._open.get(e.tool_call_id)
        if call is None or not e.delta:
            return []
        call.so_far.add(e.delta)
        out.chars += len(e.delta)
        return [("response.function_call_arguments.delta", {"item_id": call.item_id, "output_index": call.index,
                                                            "delta": e.delta})]

    def end(self, out: Output, e: canonical.ToolCallEnd) -> list[Semantic]:
        call = self._open.pop(e.tool_call_id, None)
        return self._done(out, call) if call is not None else []

    def _done(self, out: Output, call: OpenItem) -> list[Semantic]:
        arguments = call.so_far.text() or "{}"
        item = out.items[call.index] = function_call_item(call.item_id, call.call_id, call.name, arguments)
        return [("response.function_call_arguments.done", {"item_id": call.item_id, "output_index": call.index,
                                                           "arguments": arguments}),
                ("response.output_item.done", {"output_index": call.index, "item": item})]

    def result(self, out: Output, e: canonical.ToolResult) -> list[Semantic]:
        held = self._held.pop(e.tool_call_id, None)
        approval = None
        if held is None and e.tool_call_id in self._approving:  # approved within the run, then run
            held, approval = self._approving.pop(e.tool_call_id)
        if held is None:
            return []  # the agent answered a call of the client's own tool itself: the call stands as it went out
        output = as_text(e.content if isinstance(e.content, str) else output_of(e.content))  # parts as JSON objects
        out.chars += len(output)
        return out.added_done(mcp_call_item(held.call_id, held.name, held.so_far.text() or "{}", self.server_label,
                                            output, e.is_error, approval))

    def interrupt(self, out: Output, e: canonical.Interrupt) -> list[Semantic]:
        held = self._held.pop(e.tool_call_id, None) if e.tool_call_id is not None else None
        if held is not None:  # the agent's own call, waiting for the approval: the request shows it
            self._approving[held.call_id] = (held, e.id)
            if e.expires_at is not None:
                out.dropped[Dropped.INTERRUPT_EXPIRY] += 1  # a call's approval request has no field for a deadline
            return out.added_done({"id": e.id, "type": APPROVAL_REQUEST, "server_label": self.server_label,
                                   "name": held.name, "arguments": held.so_far.text() or "{}",
                                   "call_id": held.call_id})
        question = drop_none({"reason": e.reason or None, "message": e.message, "payload": e.payload,
                              "response_schema": e.response_schema, "tool_call_id": e.tool_call_id,
                              "expires_at": e.expires_at})
        return out.added_done({"id": e.id, "type": APPROVAL_REQUEST, "server_label": self.server_label,
                               "name": re.sub(r"[^A-Za-z0-9_-]+", "_", e.reason).strip("_") or "approval",
                               "arguments": orjson.dumps(question).decode()})

    def interrupt_resolved(self, out: Output, e: canonical.InterruptResolved) -> list[Semantic]:
        """Answered within the run."""
        return out.added_done({"id": new_id("mcpr"), "type": APPROVAL_RESPONSE, "approval_request_id": e.interrupt_id,
                               "approve": e.approved, "reason": e.reason})

    def close(self, out: Output) -> list[Semantic]:
        """The run ended: calls held to the end are the client's to run; calls still open are closed."""
        events: list[Semantic] = []
        for call in self._held.values():
            call.index = out.add(function_call_item(call.item_id, call.call_id, call.name, "", "in_progress"))
            events.append(("response.output_item.added", {"output_index": call.index, "item": out.items[call.index]}))
            events += self._done(out, call)
        self._held.clear()
        for call in self._open.values():
            events += self._done(out, call)
        self._open.clear()
        return events

    def fail(self) -> None:
        """The run failed: calls held or awaiting approval are shown no more."""
        self._held.clear()
        self._approving.clear()
