"""What a run added to the conversation, read off its canonical events as they pass.

The recorder rebuilds the messages a client would have assembled (assistant text with the tool calls it made,
one tool message per result, reasoning), and notes what is left open: client tool calls without a result,
interrupts waiting for a resume, the last shared state, and the thread id the upstream named.
"""

from __future__ import annotations

from typing import Any

from gateway.codec import as_text
from gateway.events import (
    Event,
    Interrupt,
    ReasoningDelta,
    RunStarted,
    StateDelta,
    StateSnapshot,
    TextDelta,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.state import StateTracker
from gateway.turn import Message, ToolCall


class RunRecorder:
    __slots__ = ("_args", "_assistant", "_reasoning", "_reasoning_text", "_text", "interrupts", "messages",
                 "pending_tools", "state", "upstream_thread_id")

    def __init__(self, state: Any = None) -> None:
        self.messages: list[Message] = []
        self.pending_tools: dict[str, str] = {}
        self.interrupts: list[Interrupt] = []
        self.state = StateTracker(state)
        self.upstream_thread_id: str | None = None
        self._assistant: Message | None = None
        self._text: list[str] = []  # the open assistant message's text, joined once it closes
        self._reasoning: Message | None = None
        self._reasoning_text: list[str] = []
        self._args: dict[str, list[str]] = {}

    def record(self, events: list[Event]) -> None:
        for e in events:
            if isinstance(e, TextDelta):
                self._open()
                self._text.append(e.delta)
            elif isinstance(e, ToolCallArgs):
                pieces = self._args.get(e.tool_call_id)
                if pieces is not None:
                    pieces.append(e.delta)
            elif isinstance(e, TextStart):
                if self._assistant is not None and self._assistant.tool_calls:
                    self._close()
                self._open(e.message_id)
            elif isinstance(e, ToolCallStart):
                self._open(e.parent_message_id).tool_calls.append(ToolCall(e.tool_call_id, e.name, ""))
                self._args[e.tool_call_id] = []
            elif isinstance(e, ToolCallEnd):
                self._finish_call(e.tool_call_id)
            elif isinstance(e, ToolResult):
                self._close()
                name = self.pending_tools.pop(e.tool_call_id, None)
                error = as_text(e.content) if e.is_error else None
                self.messages.append(Message("tool", as_text(e.content), e.message_id, tool_call_id=e.tool_call_id,
                                             name=name, error=error))
            elif isinstance(e, ReasoningDelta):
                if self._reasoning is None or self._reasoning.id != e.message_id:
                    self._close_reasoning()
                    self._reasoning = Message("reasoning", "", e.message_id)
                    self.messages.append(self._reasoning)
                self._reasoning_text.append(e.delta)
            elif isinstance(e, Interrupt):
                self.interrupts.append(e)
            elif isinstance(e, StateSnapshot):
                self.state.snapshot(e.snapshot)
            elif isinstance(e, StateDelta):
                self.state.apply(e.patch)
            elif isinstance(e, RunStarted):
                self.upstream_thread_id = e.thread_id

    def close(self) -> list[Message]:
        """The messages of the run, the last assistant one included."""
        self._close()
        self._close_reasoning()
        return self.messages

    def _close_reasoning(self) -> None:
        if self._reasoning is not None:
            self._reasoning.content = "".join(self._reasoning_text)
            self._reasoning, self._reasoning_text = None, []

    def _open(self, message_id: str | None = None) -> Message:
        if self._assistant is None:
            self._assistant = Message("assistant", "", message_id)
        return self._assistant

    def _finish_call(self, tool_call_id: str) -> None:
        pieces = self._args.pop(tool_call_id, None)
        if pieces is None or self._assistant is None:
            return
        for call in self._assistant.tool_calls:
            if call.id == tool_call_id:
                call.arguments = "".join(pieces) or "{}"
                self.pending_tools[tool_call_id] = call.name

    def _close(self) -> None:
        if self._assistant is not None:
            for tool_call_id in list(self._args):
                self._finish_call(tool_call_id)
            self._assistant.content = "".join(self._text)
            if self._assistant.content or self._assistant.tool_calls:
                self.messages.append(self._assistant)
            self._assistant, self._text = None, []
