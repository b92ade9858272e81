"""A run's tool calls and interrupts as a response's output items.

Calls to tools the client offered are `function_call` items as they come. Any other call is held until the run
tells whose it is: with a result it is a tool the agent ran itself (`agent_gateway:tool_call`), waiting on an
interrupt it is shown as the agent's, not yet run (and again, done, if its result comes), and still held at the
run's end it is the client's to run after all. An interrupt is an `agent_gateway:interrupt` item, unless the run
answered it itself (`agent_gateway:interrupt_resolved`); those left open make the response `incomplete`.
"""

from __future__ import annotations

from gateway.core.codec import as_text, json_or_text, output_of
from gateway.core.events import Interrupt, InterruptResolved, ToolCallArgs, ToolCallEnd, ToolCallStart, ToolResult
from gateway.core.ids import new_id

from .items import INTERRUPT, INTERRUPT_RESOLVED, function_call_item, tool_call_item
from .output import OpenItem, Output, Semantic


class Calls:
    """The run's tool calls and interrupts, written into the response's `Output`."""

    __slots__ = ("_approving", "_held", "_offered", "_open", "interrupts")

    def __init__(self, offered: set[str]) -> None:
        self._offered = offered
        self._open: dict[str, OpenItem] = {}
        """Function calls being written, by call id."""
        self._held: dict[str, OpenItem] = {}
        """Calls to tools the client did not offer, by call id: shown once the run tells whose they are."""
        self._approving: dict[str, OpenItem] = {}
        """The agent's calls an interrupt asks to approve, by call id: shown again with their result, if it comes."""
        self.interrupts: list[Interrupt] = []
        """Interrupts the run has not answered itself."""

    def start(self, out: Output, e: ToolCallStart) -> list[Semantic]:
        out.opened(e)
        if e.name not in self._offered:
            self._held[e.tool_call_id] = OpenItem(-1, new_id("fc"), e.name, e.tool_call_id)
            return []
        call = OpenItem(-1, new_id("fc"), e.name, e.tool_call_id)
        call.index = out.add(function_call_item(call.item_id, e.tool_call_id, e.name, "", "in_progress"))
        self._open[e.tool_call_id] = call
        return [("response.output_item.added", {"output_index": call.index, "item": out.output[call.index]})]

    def args(self, out: Output, e: ToolCallArgs) -> list[Semantic]:
        held = self._held.get(e.tool_call_id)
        if held is not None:
            held.pieces.append(e.delta)
            out.chars += len(e.delta)
            return []
        call = self._open.get(e.tool_call_id)
        if call is None or not e.delta:
            return []
        call.pieces.append(e.delta)
        out.chars += len(e.delta)
        return [("response.function_call_arguments.delta", {"item_id": call.item_id, "output_index": call.index,
                                                            "delta": e.delta})]

    def end(self, out: Output, e: ToolCallEnd) -> list[Semantic]:
        call = self._open.pop(e.tool_call_id, None)
        return self._done(out, call) if call is not None else []

    def _done(self, out: Output, call: OpenItem) -> list[Semantic]:
        arguments = "".join(call.pieces) or "{}"
        item = out.output[call.index] = function_call_item(call.item_id, call.call_id, call.name, arguments)
        return [("response.function_call_arguments.done", {"item_id": call.item_id, "output_index": call.index,
                                                           "arguments": arguments}),
                ("response.output_item.done", {"output_index": call.index, "item": item})]

    def result(self, out: Output, e: ToolResult) -> list[Semantic]:
        held = self._held.pop(e.tool_call_id, None)
        item_id = held.item_id if held is not None else new_id("fc")
        if held is None:
            # The result of a call shown waiting for approval (approved within the run): the call again, done.
            held = self._approving.pop(e.tool_call_id, None)
        if held is None:
            return []  # the agent answered a call of the client's own tool itself: the call stands as it went out
        if isinstance(e.content, str):
            output = json_or_text(e.content)
            out.chars += len(e.content)
        else:
            output = output_of(e.content)  # content parts as JSON objects
            out.chars += len(as_text(output))
        return out.added_done(tool_call_item(item_id, held.call_id, held.name, "".join(held.pieces) or "{}",
                                                   output, e.is_error))

    def interrupt(self, out: Output, e: Interrupt) -> list[Semantic]:
        self.interrupts.append(e)
        shown: list[Semantic] = []
        held = self._held.pop(e.tool_call_id, None) if e.tool_call_id is not None else None
        if held is not None:  # the agent's own call, waiting for the approval: shown as its, not yet run
            self._approving[held.call_id] = held
            call = tool_call_item(held.item_id, held.call_id, held.name, "".join(held.pieces) or "{}", None)
            call["status"] = "in_progress"
            shown += out.added_done(call)
        item = {"id": e.id, "type": INTERRUPT, "status": "completed", "reason": e.reason, "message": e.message,
                "payload": e.payload, "tool_call_id": e.tool_call_id, "response_schema": e.response_schema}
        if e.expires_at is not None:
            item["expires_at"] = e.expires_at
        return [*shown, *out.added_done(item)]

    def interrupt_resolved(self, out: Output, e: InterruptResolved) -> list[Semantic]:
        """Answered within the run: the response does not wait for it."""
        self.interrupts = [i for i in self.interrupts if i.id != e.interrupt_id]
        return out.added_done({"id": new_id("ir"), "type": INTERRUPT_RESOLVED, "status": "completed",
                                     "interrupt_id": e.interrupt_id, "approved": e.approved, "reason": e.reason})

    def close(self, out: Output) -> list[Semantic]:
        """The run ended: calls held to the end are the client's to run; calls still open are closed."""
        events: list[Semantic] = []
        for call in self._held.values():
            call.index = out.add(function_call_item(call.item_id, call.call_id, call.name, "", "in_progress"))
            events.append(("response.output_item.added", {"output_index": call.index, "item": out.output[call.index]}))
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
