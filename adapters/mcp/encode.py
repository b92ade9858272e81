"""A run's events as the answer to a client's `tools/call`: on the call's SSE stream, `notifications/progress` with
the text so far while the agent writes (when the client sent a `progressToken`: progress counts the pieces), then
one JSON-RPC response holding the `CallToolResult`.

```
text            progress {message: the text so far}; the result's content
tool call/result, data, the conversation's id, an answer cut short
                the result's structuredContent: toolCalls [{id, name, arguments, result?, isError?}],
                data [{name, data}], conversation_id, stopReason ("length", "content_filter"), and for a failure
                error {code, message}
interrupt       what is asked, and how to answer it (a later call with the same conversation_id), in the content's
                text; the interrupts in structuredContent.interrupts (a 2025 client that elicits is asked in band:
                elicitation.py; a 2026-07-28 client that takes elicitation forms gets an input_required result
                instead: input_required.py)
tool call, tool result, reasoning
                for a client that set a log level of info or below: notifications/message lines at info, logger
                "agent", data {toolCall} / {toolResult} / {reasoning}
error           a result with isError: true, the text so far and the error's text last (never a JSON-RPC error:
                the agent failed, not the call)
```
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.codec import drop_none, json_or_text, output_of
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import SSEEncoder
from gateway.core.text_pieces import TextPieces
from gateway.core.turn import Turn

from .input_required import input_required
from .url_elicitation import link_of, with_link
from .wire import PROGRESS, SAID, typed

LOGGED_AT = ("debug", "info")
"""The levels a client may set that show the run's log lines, which go at info."""

PROGRESS_GROWTH = 8
"""A progress notification goes out once the text has grown by an eighth since the last one showed it (or
`PROGRESS_EVERY_S` has passed, or the message ended): each repeats the text so far, so sending one per delta would
cost bytes in the square of the answer's length, and a hostile upstream's one-character deltas a megabyte of answer
half a terabyte. Growth by a fraction keeps what the client is sent under nine times the answer."""
PROGRESS_EVERY_S = 1.0
"""At most this long between progress notifications while text comes, however little it grew."""
HOW_TO_ANSWER = ('To answer, call {tool} again with conversation_id "{conversation}" and the answer as the message '
                 '(for an approval: yes or no).')
"""What an interrupted result tells a person (or a model) reading it: the way that works for every client."""


def message_event(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as the SSE event the SDKs read (`event: message`)."""
    return b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"


def _text(self: McpEncoder, e: canonical.TextDelta) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    delta = e.delta
    if not delta:
        return b""
    if self.between_messages:
        self.between_messages = False
        if self.text_length:
            self.so_far.add("\n\n")
            self.text_length += 2
    self.so_far.add(delta)
    self.text_length += len(delta)
    if self.token is None:
        return b""
    now = time.monotonic()
    if self.text_length - self.shown < self.shown // PROGRESS_GROWTH and now - self.shown_at < PROGRESS_EVERY_S:
        return b""
    self.shown_at = now
    return self.progress()


def _text_start(self: McpEncoder, e: canonical.TextStart) -> bytes:
    self.between_messages = True
    return b""


def _text_end(self: McpEncoder, e: canonical.TextEnd) -> bytes:
    """What the last notification held back of the message, shown as it ends."""
    return self.progress() if self.token is not None and self.text_length > self.shown else b""


def _tool_start(self: McpEncoder, e: canonical.ToolCallStart) -> bytes:
    self.calls[e.tool_call_id] = {"id": e.tool_call_id, "name": e.name, "arguments": ""}
    self.arguments[e.tool_call_id] = TextPieces()
    return b""


def _tool_args(self: McpEncoder, e: canonical.ToolCallArgs) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    arguments = self.arguments.get(e.tool_call_id)
    if arguments is not None:
        arguments.add(e.delta)
    return b""


def _tool_end(self: McpEncoder, e: canonical.ToolCallEnd) -> bytes:
    call = self.calls.get(e.tool_call_id)
    if call is None:
        return b""
    arguments = self.arguments.pop(e.tool_call_id, None)
    call["arguments"] = json_or_text((arguments.text() if arguments is not None else "") or "{}")
    return self.log({"toolCall": {"id": call["id"], "name": call["name"], "arguments": call["arguments"]}})


def _tool_result(self: McpEncoder, e: canonical.ToolResult) -> bytes:
    call = self.calls.setdefault(e.tool_call_id, {"id": e.tool_call_id})
    call["result"] = output_of(e.content)
    if e.is_error:
        call["isError"] = True
    return self.log({"toolResult": drop_none({"id": e.tool_call_id, "result": call["result"],
                                              "isError": True if e.is_error else None})})


def _reasoning(self: McpEncoder, e: canonical.ReasoningDelta) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    if self.log_level is None:
        self.dropped[Dropped.REASONING] += 1
    else:
        self.reasoning.add(e.delta)
    return b""


def _reasoning_end(self: McpEncoder, e: canonical.ReasoningEnd) -> bytes:
    said, self.reasoning = self.reasoning.text(), TextPieces()
    return self.log({"reasoning": said}) if said else b""


def _data(self: McpEncoder, e: canonical.Data) -> bytes:
    self.data.append({"name": e.name, "data": e.data})
    return b""


def _interrupt(self: McpEncoder, e: canonical.Interrupt) -> bytes:
    self.interrupts.append(drop_none({"id": e.id, "message": e.message, "reason": e.reason,
                                      "toolCallId": e.tool_call_id, "responseSchema": e.response_schema,
                                      **link_of(e)}))
    return b""


def _run_finished(self: McpEncoder, e: canonical.RunFinished) -> bytes:
    self.stop_reason = e.stop_reason
    if e.outcome == "cancelled":
        self.dropped[Dropped.CANCELLED_AS_FINISH] += 1
    return self.result(self.text, is_error=False)


def _run_error(self: McpEncoder, e: canonical.RunError) -> bytes:
    self.error = {"code": e.code, "message": e.message} if e.code is not None else None
    return self.result(e.message, is_error=True)


def _nothing(self: McpEncoder, e: canonical.Event) -> bytes:
    """Run starts and message ends: nothing to say (a message's end is where the next begins)."""
    return b""


class McpEncoder(SSEEncoder):
    __slots__ = ("arguments", "between_messages", "calls", "conversation_id", "data", "elicits", "era", "error", "id",
                 "interrupts", "links", "log_level", "outcome", "pieces", "reasoning", "shown", "shown_at",
                 "so_far", "stop_reason", "text_length", "token", "tool")

    DROPS = drop_map(Dropped.STATE, Dropped.MESSAGES_SNAPSHOT, Dropped.STEP, Dropped.USAGE, Dropped.RAW,
                     Dropped.ACTIVITY, Dropped.SUBAGENT, Dropped.ENCRYPTED_VALUE, Dropped.INTERRUPT_RESOLVED)
    """What a `CallToolResult` has no place for. Reasoning goes only to a client that asked for log lines (counted
    as dropped for one that did not); tool calls go in the result, and in the log lines too."""
    METADATA = frozenset({canonical.TextDelta, canonical.ToolCallArgs, canonical.ReasoningDelta, *DROPS})

    handlers = {
        canonical.TextDelta: _text,
        canonical.TextStart: _text_start,
        canonical.ToolCallStart: _tool_start,
        canonical.ToolCallArgs: _tool_args,
        canonical.ToolCallEnd: _tool_end,
        canonical.ToolResult: _tool_result,
        canonical.Data: _data,
        canonical.Interrupt: _interrupt,
        canonical.RunFinished: _run_finished,
        canonical.RunError: _run_error,
        canonical.ReasoningDelta: _reasoning,
        canonical.ReasoningEnd: _reasoning_end,
        canonical.RunStarted: _nothing,
        canonical.TextEnd: _text_end,
        canonical.ReasoningStart: _nothing,
    }

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self.headers["x-accel-buffering"] = "no"
        asked = request.metadata.get("mcp") if request is not None else None
        asked = asked if isinstance(asked, dict) else {"progressToken": "progress"}
        self.id: str | int = asked.get("id", 1)
        """The JSON-RPC id of the client's `tools/call`."""
        self.token: str | int | None = asked.get("progressToken")
        """Where progress goes: the client's token (none: no progress); for no request known, as to a client that
        asked for it, as the gateway does of an MCP upstream."""
        self.conversation_id = request.conversation_id if request is not None else None
        self.tool = request.agent if request is not None else None
        """The tool the client called: the route, which a later call answers an interrupt with."""
        said = asked.get("said")
        said = said if isinstance(said, str) else ""
        self.so_far = TextPieces(said)
        """The text so far: the call's, which may go on from another run's."""
        self.text_length = len(said)
        self.between_messages = False
        after = asked.get("progressAfter")
        self.pieces = after if isinstance(after, int) else 0
        """Progress notifications sent for the call's token: the call may go on from another run's."""
        self.shown = self.text_length
        """How much of `text` the last progress notification showed."""
        self.shown_at = 0.0
        self.calls: dict[str, dict[str, Any]] = {}
        self.arguments: dict[str, TextPieces] = {}
        """The arguments of the calls still open, so far."""
        self.data: list[dict[str, Any]] = []
        self.interrupts: list[dict[str, Any]] = []
        self.stop_reason: str | None = None
        level = asked.get("logLevel")
        self.log_level = level if level in LOGGED_AT else None
        """The client asked for log lines at a level that shows the run's (`notifications/message`, at info)."""
        self.reasoning = TextPieces()
        self.error: dict[str, Any] | None = None
        self.outcome: dict[str, Any] | None = None
        """The `CallToolResult` the call ended with, once it has (what a task's `tasks/result` returns)."""
        self.era: str | None = asked.get("era")
        """The client's 2026-07-28 (its results typed), or None for the handshake era."""
        self.elicits = bool(asked.get("elicitation"))
        """The client takes elicitation forms: an interrupt is asked as `input_required`."""
        self.links = bool(asked.get("links"))
        """The client opens links (URL mode): an interrupt that has one is asked so."""

    @property
    def text(self) -> str:
        """The text so far."""
        return self.so_far.text()

    def progress(self) -> bytes:
        """A progress notification with the text so far."""
        self.pieces += 1
        self.shown = self.text_length
        return message_event({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": self.token, "progress": self.pieces, "message": self.text}})

    def log(self, data: dict[str, Any]) -> bytes:
        """A log line about the run, for a client that asked for them."""
        if self.log_level is None:
            return b""
        return message_event({"jsonrpc": "2.0", "method": "notifications/message",
                              "params": {"level": "info", "logger": "agent", "data": data}})

    def result(self, text: str, *, is_error: bool) -> bytes:
        """The JSON-RPC response that ends the call: after a failure, the text so far and the error's, each a block."""
        if self.interrupts and not is_error:
            asked = "\n".join(with_link(i.get("message"), i.get("url")) or "the agent waits for an answer"
                              for i in self.interrupts)
            asked += f"\n\n{HOW_TO_ANSWER.format(tool=self.tool or 'this tool', conversation=self.conversation_id)}"
            text = f"{text}\n\n{asked}" if text else asked
        for call_id, arguments in self.arguments.items():  # calls still open: their arguments so far
            self.calls[call_id]["arguments"] = arguments.text()
        structured = drop_none({"conversation_id": self.conversation_id,
                                "toolCalls": list(self.calls.values()) or None, "data": self.data or None,
                                "interrupts": self.interrupts or None, "stopReason": self.stop_reason,
                                "error": self.error})
        texts = [self.text, text] if is_error and self.text else [text] if text else []
        result = {"content": [{"type": "text", "text": said} for said in texts], "structuredContent": structured,
                  "isError": is_error}
        if self.interrupts and not is_error:  # what a call that goes on after it counts on from
            result["_meta"] = {PROGRESS: self.pieces, SAID: self.text_length}
        if self.era is not None and self.interrupts and self.elicits and not is_error and self.tool is not None:
            questions = input_required(self.interrupts, self.tool, self.conversation_id, links=self.links)
            result = typed(questions, "input_required")
        elif self.era is not None:
            result = typed(result)
        self.outcome = result
        return message_event({"jsonrpc": "2.0", "id": self.id, "result": result})
