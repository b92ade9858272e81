"""What a run added to the conversation, read off its canonical events as they pass.

The recorder rebuilds the messages a client would have assembled (assistant text with the tool calls it made,
one tool message per result, reasoning), and notes what is left open: client tool calls without a result,
interrupts waiting for a resume, the last shared state, the thread id the upstream named, and the tokens it said
the run used.

It holds at most what the store would keep (`max_chars` of text, arguments and results): a longer run could not be
stored anyway, so the recorder lets go of what it held and says so (`overflowed`), and a stream costs the same
memory however long it runs.
"""

from __future__ import annotations

from typing import Any

from gateway.core.codec import as_text
from gateway.core.events import (
    Event,
    Interrupt,
    InterruptResolved,
    Raw,
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
    Usage,
)
from gateway.core.state import StateTracker
from gateway.core.text_pieces import TextPieces
from gateway.core.turn import Message, ToolCall

LEFT_OUT = "[The agent's reply is left out here: it was longer than the gateway stores of a conversation.]"
"""What stands for a run's reply in the stored history when the run was longer than the store keeps."""

_MAX_TOKENS = 1 << 53
"""Token counts above this are not believed (and would not fit a span attribute's 64 bits when summed)."""
_MAX_NAME = 256
"""Characters kept of a model or provider name."""


class RunRecorder:
    __slots__ = ("_args", "_assistant", "_call_sizes", "_reasoning", "_reasoning_text", "_text", "held",
                 "interrupts", "largest_call", "max_chars", "messages", "overflowed", "pending_tools", "raw", "state",
                 "upstream_thread_id", "usage")

    def __init__(self, state: Any = None, max_chars: int = 1 << 62) -> None:
        self.messages: list[Message] = []
        self.pending_tools: dict[str, str] = {}
        self.interrupts: list[Interrupt] = []
        self.state = StateTracker(state)
        self.upstream_thread_id: str | None = None
        self.usage: Usage | None = None
        """What the upstream reported the run used, summed over its reports; None if it reported nothing."""
        self._assistant: Message | None = None
        self._text = TextPieces()  # the open assistant message's text, joined once it closes
        self._reasoning: Message | None = None
        self._reasoning_text = TextPieces()
        self._args: dict[str, TextPieces] = {}
        self.max_chars = max_chars
        self.held = 0
        """Characters of text, arguments, results and reasoning the run has brought: what a one-body reply holds."""
        self.largest_call = 0
        """Characters of the longest tool call's arguments so far: what any client builds whole."""
        self._call_sizes: dict[str, int] = {}
        self.overflowed = False
        self.raw = 0
        """Events of the upstream's that its dialect's decoder did not know (`Raw`)."""

    def record(self, events: list[Event]) -> None:
        for e in events:
            if type(e) is TextDelta:  # most events: checked first, the open message made only when needed
                if self._assistant is None:
                    self._open()
                if self._within_limit(e.delta):
                    self._text.pieces.append(e.delta)
            elif isinstance(e, ToolCallArgs):
                size = self._call_sizes.get(e.tool_call_id, 0) + len(e.delta)
                self._call_sizes[e.tool_call_id] = size
                if size > self.largest_call:
                    self.largest_call = size
                args = self._args.get(e.tool_call_id)
                if args is not None and self._within_limit(e.delta):
                    args.pieces.append(e.delta)
            elif isinstance(e, TextStart):
                if self._assistant is not None and self._assistant.tool_calls:
                    self._close()
                self._open(e.message_id)
            elif isinstance(e, ToolCallStart):
                self._open(e.parent_message_id).tool_calls.append(ToolCall(e.tool_call_id, e.name, ""))
                self._args[e.tool_call_id] = TextPieces()
            elif isinstance(e, ToolCallEnd):
                self._finish_call(e.tool_call_id)
            elif isinstance(e, ToolResult):
                self._close()
                name = self.pending_tools.pop(e.tool_call_id, None)
                content = as_text(e.content)
                if not self._within_limit(content):
                    content = ""
                self.messages.append(Message("tool", content, e.message_id, tool_call_id=e.tool_call_id,
                                             name=name, error=content if e.is_error else None))
            elif isinstance(e, ReasoningDelta):
                if self._reasoning is None or self._reasoning.id != e.message_id:
                    self._close_reasoning()
                    self._reasoning = Message("reasoning", "", e.message_id)
                    self.messages.append(self._reasoning)
                if self._within_limit(e.delta):
                    self._reasoning_text.pieces.append(e.delta)
            elif isinstance(e, Interrupt):
                self.interrupts.append(e)
            elif isinstance(e, InterruptResolved):
                self.interrupts = [i for i in self.interrupts if i.id != e.interrupt_id]
            elif isinstance(e, StateSnapshot):
                self.state.snapshot(e.snapshot)
            elif isinstance(e, StateDelta):
                self.state.apply(e.patch)
            elif isinstance(e, RunStarted):
                self.upstream_thread_id = e.thread_id
            elif isinstance(e, Usage):
                self._add_usage(e)
            elif isinstance(e, Raw):
                self.raw += 1
        self._text.settle()  # per batch, not per delta: the loop above is every event's
        if self._reasoning is not None:
            self._reasoning_text.settle()
        if self._args:
            for args in self._args.values():
                args.settle()

    def _add_usage(self, reported: Any) -> None:  # a Usage, as Any: compiled, its fields would be type-checked
        """Token counts summed (each a non-negative integer, else left out: upstreams send what they like), the
        last model and provider named kept, cut to a sane length: these go into metrics and spans."""
        usage = self.usage = self.usage or Usage()
        if type(reported.input_tokens) is int and 0 <= reported.input_tokens < _MAX_TOKENS:
            usage.input_tokens = min((usage.input_tokens or 0) + reported.input_tokens, _MAX_TOKENS)
        if type(reported.output_tokens) is int and 0 <= reported.output_tokens < _MAX_TOKENS:
            usage.output_tokens = min((usage.output_tokens or 0) + reported.output_tokens, _MAX_TOKENS)
        if type(reported.reasoning_tokens) is int and 0 <= reported.reasoning_tokens < _MAX_TOKENS:
            usage.reasoning_tokens = min((usage.reasoning_tokens or 0) + reported.reasoning_tokens, _MAX_TOKENS)
        if type(reported.cached_input_tokens) is int and 0 <= reported.cached_input_tokens < _MAX_TOKENS:
            usage.cached_input_tokens = min((usage.cached_input_tokens or 0) + reported.cached_input_tokens,
                                            _MAX_TOKENS)
        if isinstance(reported.model, str) and reported.model:
            usage.model = reported.model[:_MAX_NAME]
        if isinstance(reported.provider, str) and reported.provider:
            usage.provider = reported.provider[:_MAX_NAME]

    def _within_limit(self, text: str) -> bool:
        """Count `text` as held: whether the run is still within what the store keeps (past it, the recorder
        overflows once and holds nothing more)."""
        self.held += len(text)
        if self.held <= self.max_chars:
            return True
        if not self.overflowed:
            self._overflow()
        return False

    def _overflow(self) -> None:
        """Past what the store keeps: let go of the text held, and from now on hold none."""
        self.overflowed = True
        self._text.clear()
        self._reasoning_text.clear()
        for pieces in self._args.values():
            pieces.clear()
        for message in self.messages:
            message.content = ""

    def close(self) -> list[Message]:
        """The messages of the run, the last assistant one included; a run longer than the store keeps, as one
        assistant message saying its reply was left out (the turn, the user's words with it, is still stored)."""
        self._close()
        self._close_reasoning()
        if self.overflowed:
            return [Message("assistant", LEFT_OUT)]
        return self.messages

    def _close_reasoning(self) -> None:
        if self._reasoning is not None:
            self._reasoning.content = self._reasoning_text.text()
            self._reasoning, self._reasoning_text = None, TextPieces()

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
                call.arguments = pieces.text() or "{}"
                self.pending_tools[tool_call_id] = call.name

    def _close(self) -> None:
        if self._assistant is not None:
            for tool_call_id in list(self._args):
                self._finish_call(tool_call_id)
            self._assistant.content = self._text.text()
            if self._assistant.content or self._assistant.tool_calls:
                self.messages.append(self._assistant)
            self._assistant, self._text = None, TextPieces()
