"""Make any upstream's events a well formed run, so that no encoder has to defend itself.

Every decoder's mapping appends what it parsed to one `RunRepair` (see `gateway.core.decoding`). It guarantees:

- `RunStarted` comes first and once; nothing follows the single terminal event (`RunFinished` or `RunError`);
- a delta for a message or tool call nobody started starts it; an end for one that is not open is dropped;
- before the terminal event, whatever is still open is closed; before an error, tool calls still waiting for a
  result are failed, so no client shows them running forever;
- a run that paused on an interrupt it did not resolve itself finishes with outcome "interrupt", and only such a run
  does;
- a subagent starts once per run, under a parent that is running, and ends once: those still running when the run
  ends are finished (or failed, before an error).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.core.errors import ErrorCode
from gateway.core.events import (
    Event,
    Interrupt,
    InterruptResolved,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
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
)

INTERRUPTED_TOOL = "Tool execution was interrupted by an error."
UNKNOWN_TOOL = "unknown_tool"


class RunRepair:
    __slots__ = (
        "cut",
        "done",
        "interrupted",
        "open_reasoning",
        "open_steps",
        "open_subagents",
        "open_text",
        "open_tools",
        "out",
        "seen_subagents",
        "started",
        "unresolved_tools",
    )

    def __init__(self) -> None:
        self.started = False
        self.done = False
        self.cut = False
        """The run was ended here, not by its upstream (a deadline, a limit, a broken stream): it may still be
        running there."""
        self.interrupted: dict[str, None] = {}
        """The interrupts the run asked and has not resolved itself."""
        self.open_text: dict[str, None] = {}
        self.open_reasoning: dict[str, None] = {}
        self.open_tools: dict[str, None] = {}
        self.unresolved_tools: dict[str, None] = {}
        self.open_steps: list[str | None] = []
        self.open_subagents: dict[str, None] = {}
        self.seen_subagents: dict[str, None] = {}
        self.out: list[Event] = []
        """Where `append` writes: the list of events a decoder is about to return."""

    def append(self, event: Event) -> None:
        """Take one event of the upstream's run, writing what it makes well formed to `self.out`.

        A decoder's mapping appends its events here as to a list: this is the decoder's repair stage.
        """
        if type(event) is TextDelta and event.message_id in self.open_text:
            self.out.append(event)  # most of a stream: a delta of an open message (so the run started, not ended)
            return
        if self.done:
            return
        out = self.out
        if not self.started:
            self.started = True
            if type(event) is RunStarted:
                out.append(event)
                return
            out.append(RunStarted())
        handler = _HANDLERS.get(type(event))
        if handler is None:
            out.append(event)
        else:
            handler(self, event, out)

    def push(self, event: Event, out: list[Event]) -> None:
        self.out = out
        self.append(event)

    def end_of_stream(self, out: list[Event]) -> None:
        """The upstream's body ended. Without its terminator that is a truncated run, never a success."""
        if not self.done:
            self.fail("upstream stream ended before the run finished", ErrorCode.UPSTREAM_TRUNCATED, out)

    def fail(self, message: str, code: str | None, out: list[Event]) -> None:
        if not self.done:
            self.cut = True
        self.push(RunError(message, code=code), out)

    # text and reasoning

    def _message_start(self, event: TextStart | ReasoningStart, out: list[Event]) -> None:
        opened = self._messages(event)
        if event.message_id not in opened:
            opened[event.message_id] = None
            out.append(event)

    def _message_delta(self, event: TextDelta | ReasoningDelta, out: list[Event]) -> None:
        opened = self._messages(event)
        if event.message_id not in opened:
            opened[event.message_id] = None
            out.append(TextStart(event.message_id) if type(event) is TextDelta else ReasoningStart(event.message_id))
        out.append(event)

    def _message_end(self, event: TextEnd | ReasoningEnd, out: list[Event]) -> None:
        if self._messages(event).pop(event.message_id, 0) is None:
            out.append(event)

    def _messages(self, event: Event) -> dict[str, None]:
        """The open messages of the event's kind: text and reasoning open and close alike, each by its own ids."""
        return self.open_text if type(event) in (TextStart, TextDelta, TextEnd) else self.open_reasoning

    # tool calls

    def _tool_start(self, event: ToolCallStart, out: list[Event]) -> None:
        if event.tool_call_id not in self.open_tools and event.tool_call_id not in self.unresolved_tools:
            self.open_tools[event.tool_call_id] = None
            self.unresolved_tools[event.tool_call_id] = None
            out.append(event)

    def _tool_args(self, event: ToolCallArgs, out: list[Event]) -> None:
        if event.tool_call_id not in self.open_tools:
            if event.tool_call_id in self.unresolved_tools:
                return  # arguments after the call ended: too late to change them
            self._tool_start(ToolCallStart(event.tool_call_id, UNKNOWN_TOOL), out)
        out.append(event)

    def _tool_end(self, event: ToolCallEnd, out: list[Event]) -> None:
        if self.open_tools.pop(event.tool_call_id, 0) is None:
            out.append(event)

    def _tool_result(self, event: ToolResult, out: list[Event]) -> None:
        if event.tool_call_id in self.open_tools:
            self._tool_end(ToolCallEnd(event.tool_call_id), out)
        self.unresolved_tools.pop(event.tool_call_id, None)
        out.append(event)

    # steps, interrupts, lifecycle

    def _step_started(self, event: StepStarted, out: list[Event]) -> None:
        self.open_steps.append(event.name)
        out.append(event)

    def _step_finished(self, event: StepFinished, out: list[Event]) -> None:
        if event.name in self.open_steps:
            # Close the steps opened inside this one first, so steps nest.
            while self.open_steps:
                name = self.open_steps.pop()
                out.append(StepFinished(name=name))
                if name == event.name:
                    break

    def _subagent_started(self, event: SubagentStarted, out: list[Event]) -> None:
        if event.subagent_run_id in self.seen_subagents:
            return  # an id names one invocation: a second start is not another
        self.seen_subagents[event.subagent_run_id] = None
        if event.parent_subagent_run_id is not None and event.parent_subagent_run_id not in self.open_subagents:
            event.parent_subagent_run_id = None
        self.open_subagents[event.subagent_run_id] = None
        out.append(event)

    def _subagent_ended(self, event: SubagentFinished | SubagentError, out: list[Event]) -> None:
        if self.open_subagents.pop(event.subagent_run_id, 0) is None:
            out.append(event)

    def _interrupt(self, event: Interrupt, out: list[Event]) -> None:
        self.interrupted[event.id] = None
        out.append(event)

    def _interrupt_resolved(self, event: InterruptResolved, out: list[Event]) -> None:
        if self.interrupted.pop(event.interrupt_id, 0) is None:
            out.append(event)

    def _run_started(self, event: RunStarted, out: list[Event]) -> None:
        """A second start is dropped: one upstream request is one run."""

    def _run_finished(self, event: RunFinished, out: list[Event]) -> None:
        self._close_open(out)
        out.extend(SubagentFinished(subagent_run_id) for subagent_run_id in reversed(self.open_subagents))
        self.open_subagents.clear()
        if self.interrupted:
            event.outcome = "interrupt"
        elif event.outcome == "interrupt":
            event.outcome = "success"
        self.done = True
        out.append(event)

    def _run_error(self, event: RunError, out: list[Event]) -> None:
        self._close_open(out)
        for tool_call_id in self.unresolved_tools:
            out.append(ToolResult(tool_call_id, INTERRUPTED_TOOL, is_error=True))
        self.unresolved_tools.clear()
        out.extend(SubagentError(subagent_run_id, event.message, code=event.code)
                   for subagent_run_id in reversed(self.open_subagents))
        self.open_subagents.clear()
        self.done = True
        out.append(event)

    def _close_open(self, out: list[Event]) -> None:
        out.extend(TextEnd(message_id) for message_id in self.open_text)
        out.extend(ReasoningEnd(message_id) for message_id in self.open_reasoning)
        out.extend(ToolCallEnd(tool_call_id) for tool_call_id in self.open_tools)
        out.extend(StepFinished(name=name) for name in reversed(self.open_steps))
        self.open_text.clear()
        self.open_reasoning.clear()
        self.open_tools.clear()
        self.open_steps.clear()


# A table of plain functions, not bound methods: a per-instance table of bound methods is a reference cycle,
# which only the cyclic collector frees, once per stream.
_HANDLERS: dict[type, Callable[[RunRepair, Any, list[Event]], None]] = {
    TextDelta: RunRepair._message_delta,
    TextStart: RunRepair._message_start,
    TextEnd: RunRepair._message_end,
    ToolCallArgs: RunRepair._tool_args,
    ToolCallStart: RunRepair._tool_start,
    ToolCallEnd: RunRepair._tool_end,
    ToolResult: RunRepair._tool_result,
    ReasoningDelta: RunRepair._message_delta,
    ReasoningStart: RunRepair._message_start,
    ReasoningEnd: RunRepair._message_end,
    StepStarted: RunRepair._step_started,
    StepFinished: RunRepair._step_finished,
    Interrupt: RunRepair._interrupt,
    InterruptResolved: RunRepair._interrupt_resolved,
    SubagentStarted: RunRepair._subagent_started,
    SubagentFinished: RunRepair._subagent_ended,
    SubagentError: RunRepair._subagent_ended,
    RunStarted: RunRepair._run_started,
    RunFinished: RunRepair._run_finished,
    RunError: RunRepair._run_error,
}
