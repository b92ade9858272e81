"""Canonical events as a Chat Completions reply: `chat.completion.chunk`s over SSE ending in `data: [DONE]`, or one
`chat.completion` body, as the client's `stream` asked.

A completion is one assistant message: the run's text is its `content` (its messages as they came, a paragraph
break between two: `request.SEPARATOR`), a refusal's its `refusal`, reasoning its `reasoning_content` (where
DeepSeek, vLLM and LiteLLM put it), and the calls left for the client its `tool_calls`, the finish reason then
`tool_calls` (`length` or `content_filter` for an answer cut short). Calls to tools the client offered stream as
they come; any other call waits for its result, and a call with a result is a tool the agent ran itself, which a
completion has no place for: it is left out (counted as `server_tool`), as are state, named data, steps, snapshots,
activities, subagents' lifecycles and encrypted reasoning. A subagent's text is the message's like the agent's own
(`subagent`, once per thing it opens). An interrupt becomes a closing note in the text, a paragraph of its own
(`interrupt_as_note`); one the run answered itself is not noted (`interrupt_resolved`). Usage keeps its reasoning
and cached tokens in OpenAI's details; a completion in one body has none when the agent reported none (a stream
asked for `include_usage` has zeros). An event's `metadata` has no place (`metadata`). A failed run is an `error`
frame in the stream, as OpenAI sends one, or a 502 (504 on a timeout) with an OpenAI error object.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from adapters.openai_common.usage import usage_object
from gateway.core import events as canonical
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import HOLE, BodyEncoder, DeltaFrames, SSEEncoder, failed_status, json_bytes
from gateway.core.ids import new_id
from gateway.core.text_pieces import TextPieces
from gateway.core.turn import Turn
from gateway.core.usage import UsageTotals

from .errors import ERRORS
from .request import SEPARATOR

_DROPS = drop_map(Dropped.STATE, Dropped.MESSAGES_SNAPSHOT, Dropped.STEP, Dropped.DATA, Dropped.RAW, Dropped.ACTIVITY,
                  Dropped.SUBAGENT, Dropped.ENCRYPTED_VALUE)
"""What a completion has no place for, by the kind counted in `dropped`."""


def reply_options(request: Turn | None) -> dict[str, Any]:
    """What the client's request asked of the reply (`stream`, `include_usage`); empty for another dialect's."""
    openai = request.metadata.get("openai") if request is not None else None
    return openai if isinstance(openai, dict) else {}


class Completion:
    """What both replies share: the completion's id and model, the tool calls and how each turns out, the usage
    and the finish reason."""

    __slots__ = ("_held", "_offered", "_streamed", "calls", "created", "dropped", "id", "interrupts", "model",
                 "usage")

    def __init__(self, request: Turn | None, dropped: dict[Dropped, int]) -> None:
        self.id = new_id("chatcmpl")
        self.created = int(time.time())
        self.model = (request.model if request is not None else None) or "agent-gateway"
        self._offered = {tool.name for tool in request.tools} if request is not None else set()
        self.calls: dict[str, tuple[int, str, TextPieces]] = {}
        """Tool calls the client will see: id -> (index, name, argument pieces)."""
        self._held: dict[str, tuple[str, TextPieces]] = {}
        """Calls to tools the client did not offer: shown only if no result comes."""
        self._streamed: set[str] = set()
        self.interrupts: list[canonical.Interrupt] = []
        self.usage = UsageTotals()
        self.dropped = dropped

    def opened(self, e: canonical.TextStart | canonical.ReasoningStart | canonical.ToolCallStart) -> None:
        """A message or call opens: a subagent's is the completion's like the agent's own, which is not said."""
        if e.subagent_run_id is not None:
            self.dropped[Dropped.SUBAGENT] += 1
        if e.metadata is not None:
            self.dropped[Dropped.METADATA] += 1

    def start_call(self, e: canonical.ToolCallStart) -> int | None:
        """The call's index in the message if it is shown now; None while it is held."""
        self.opened(e)
        if e.name in self._offered:
            index = len(self.calls)
            self.calls[e.tool_call_id] = (index, e.name, TextPieces())
            self._streamed.add(e.tool_call_id)
            return index
        self._held[e.tool_call_id] = (e.name, TextPieces())
        return None

    def args(self, e: canonical.ToolCallArgs) -> int | None:
        held = self._held.get(e.tool_call_id)
        if held is not None:
            held[1].add(e.delta)
            return None
        call = self.calls.get(e.tool_call_id)
        if call is None:
            return None
        call[2].add(e.delta)
        return call[0]

    def result(self, e: canonical.ToolResult) -> None:
        """A tool the agent ran itself: its call and result are left out (a call already shown stays)."""
        if self._held.pop(e.tool_call_id, None) is not None:
            self.dropped[Dropped.SERVER_TOOL] += 1
        elif e.tool_call_id in self.calls:
            self.dropped[Dropped.SERVER_TOOL] += 1
            del self.calls[e.tool_call_id]

    def interrupt(self, e: canonical.Interrupt) -> None:
        """An interrupt about a call the agent holds for approval: the call is the agent's, never the client's."""
        self.interrupts.append(e)
        if e.expires_at is not None:
            self.dropped[Dropped.INTERRUPT_EXPIRY] += 1  # the note says what is asked, not until when
        if e.tool_call_id is not None and self._held.pop(e.tool_call_id, None) is not None:
            self.dropped[Dropped.SERVER_TOOL] += 1

    def resolved(self, e: canonical.InterruptResolved) -> None:
        """An interrupt the run answered itself: nobody is asked, so the text says nothing of it."""
        self.interrupts = [i for i in self.interrupts if i.id != e.interrupt_id]
        self.dropped[Dropped.INTERRUPT_RESOLVED] += 1

    def release_held(self) -> list[tuple[int, str, str, str]]:
        """The run ended: held calls with no result are the client's to run (index, id, name, arguments)."""
        out = []
        for call_id, (name, pieces) in self._held.items():
            index = max((i for i, _, _ in self.calls.values()), default=-1) + 1
            self.calls[call_id] = (index, name, pieces)
            out.append((index, call_id, name, pieces.text()))
        self._held.clear()
        return out

    def usage_object(self) -> dict[str, Any] | None:
        """Every count the schema requires, or None when the agent reported none."""
        return usage_object(self.usage, "chat", whole=True) if self.usage.counts else None

    def finish_reason(self, e: canonical.RunFinished) -> str:
        return e.stop_reason or ("tool_calls" if self.calls else "stop")

    def note(self, e: canonical.RunFinished) -> str:
        """What the text says of an ending a completion cannot: an interrupt, a cancelled run."""
        if e.outcome == "cancelled":
            self.dropped[Dropped.CANCELLED_AS_FINISH] += 1
        if not self.interrupts:
            return ""
        self.dropped[Dropped.INTERRUPT_AS_NOTE] += len(self.interrupts)
        asks = "; ".join(i.message or i.reason or i.id for i in self.interrupts)
        return f"[interrupted] The agent paused for human input: {asks}"


# -- streamed


def _chunk(self: ChatStreamEncoder, delta: dict[str, Any], finish: str | None = None, chars: int = 0) -> bytes:
    """One chunk, holding about `chars` characters of text (see `json_bytes`)."""
    c = self.completion
    return b"data: " + json_bytes({"id": c.id, "object": "chat.completion.chunk", "created": c.created,
                                   "model": c.model, "choices": [{"index": 0, "delta": delta,
                                                                  "finish_reason": finish}]}, chars) + b"\n\n"


def _run_started(self: ChatStreamEncoder, e: canonical.RunStarted) -> bytes:
    return _chunk(self, {"role": "assistant", "content": ""})


def _text_start(self: ChatStreamEncoder, e: canonical.TextStart) -> bytes:
    self.completion.opened(e)
    if e.refusal:
        self.refusals.add(e.message_id)  # its words are `delta.refusal`, apart from the text
    elif self.lead is None:  # text was written: this message's own begins a paragraph
        self.lead = SEPARATOR
    return b""


def _text_delta(self: ChatStreamEncoder, e: canonical.TextDelta) -> bytes:
    if e.metadata is not None:  # inline, not by the base's wrapper: most of a stream is text deltas
        self.dropped[Dropped.METADATA] += 1
    if self.refusals and e.message_id in self.refusals:
        return self.refusal.frame(e.delta)
    if self.lead is not None and e.delta:  # the run's first text, or a message's after another's
        lead, self.lead = self.lead, None
        return self.text.frame(lead + e.delta)
    return self.text.frame(e.delta)


def _reasoning_delta(self: ChatStreamEncoder, e: canonical.ReasoningDelta) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    return self.reasoning.frame(e.delta)


def _opened(self: ChatStreamEncoder, e: canonical.TextStart | canonical.ReasoningStart) -> bytes:
    self.completion.opened(e)
    return b""


def _tool_start(self: ChatStreamEncoder, e: canonical.ToolCallStart) -> bytes:
    index = self.completion.start_call(e)
    if index is None:
        return b""
    return _chunk(self, {"tool_calls": [{"index": index, "id": e.tool_call_id, "type": "function",
                                         "function": {"name": e.name, "arguments": ""}}]})


def _tool_args(self: ChatStreamEncoder, e: canonical.ToolCallArgs) -> bytes:
    if e.metadata is not None:
        self.dropped[Dropped.METADATA] += 1
    index = self.completion.args(e)
    if index is None or not e.delta:
        return b""
    return _chunk(self, {"tool_calls": [{"index": index, "function": {"arguments": e.delta}}]}, chars=len(e.delta))


def _tool_result(self: ChatStreamEncoder, e: canonical.ToolResult) -> bytes:
    self.completion.result(e)
    return b""


def _interrupt(self: ChatStreamEncoder, e: canonical.Interrupt) -> bytes:
    self.completion.interrupt(e)
    return b""


def _resolved(self: ChatStreamEncoder, e: canonical.InterruptResolved) -> bytes:
    self.completion.resolved(e)
    return b""


def _usage(self: ChatStreamEncoder, e: canonical.Usage) -> bytes:
    self.completion.usage.add(e)
    return b""


def _run_finished(self: ChatStreamEncoder, e: canonical.RunFinished) -> bytes:
    c = self.completion
    out = [_chunk(self, {"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": arguments}}]}, chars=len(arguments))
           for index, call_id, name, arguments in c.release_held()]
    note = c.note(e)
    if note:
        out.append(_chunk(self, {"content": (SEPARATOR if self.lead is None else self.lead) + note}))
    out.append(_chunk(self, {}, c.finish_reason(e)))
    if self.include_usage:
        usage = c.usage_object() or usage_object(UsageTotals(), "chat", whole=True)  # asked for: zeros when none came
        out.append(b"data: " + orjson.dumps({"id": c.id, "object": "chat.completion.chunk", "created": c.created,
                                             "model": c.model, "choices": [], "usage": usage}) + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def _run_error(self: ChatStreamEncoder, e: canonical.RunError) -> bytes:
    return b"data: " + orjson.dumps({"error": ERRORS.failed(e)}) + b"\n\ndata: [DONE]\n\n"


def _nothing(self: ChatStreamEncoder, e: canonical.Event) -> bytes:
    return b""  # message and call boundaries: a completion's chunks have none


class ChatStreamEncoder(SSEEncoder):
    __slots__ = ("completion", "include_usage", "lead", "reasoning", "refusal", "refusals", "text")

    handlers = {
        canonical.RunStarted: _run_started, canonical.TextStart: _text_start, canonical.TextDelta: _text_delta,
        canonical.ReasoningStart: _opened, canonical.ReasoningDelta: _reasoning_delta,
        canonical.ToolCallStart: _tool_start, canonical.ToolCallArgs: _tool_args, canonical.ToolResult: _tool_result,
        canonical.Interrupt: _interrupt, canonical.InterruptResolved: _resolved, canonical.Usage: _usage,
        canonical.RunFinished: _run_finished, canonical.RunError: _run_error, canonical.TextEnd: _nothing,
        canonical.ReasoningEnd: _nothing, canonical.ToolCallEnd: _nothing,
    }
    DROPS = _DROPS
    METADATA = frozenset({canonical.TextStart, canonical.TextDelta, canonical.ReasoningStart, canonical.ReasoningDelta,
                          canonical.ToolCallStart, canonical.ToolCallArgs, *DROPS})
    """Deltas and openers count theirs themselves; what is dropped is counted whole."""

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self.completion = Completion(request, self.dropped)
        self.include_usage = bool(reply_options(request).get("include_usage"))
        self.lead: str | None = ""
        """What goes before the next text: nothing before the run's first, `SEPARATOR` before a later message's;
        None within a message."""
        c = self.completion
        head = {"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model}
        self.text = DeltaFrames(lambda _: _frame(head, {"content": HOLE}))
        self.reasoning = DeltaFrames(lambda _: _frame(head, {"reasoning_content": HOLE}))
        self.refusal = DeltaFrames(lambda _: _frame(head, {"refusal": HOLE}))
        self.refusals: set[str] = set()
        """The messages that are the model's refusal: `delta.refusal`, not `content`."""

    def text_around(self, message_id: str) -> tuple[bytes, bytes] | None:
        if self.lead is not None:  # the next text goes with what leads it
            return None
        return (self.refusal if self.refusals and message_id in self.refusals else self.text).around()


def _frame(head: dict[str, Any], delta: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps({**head, "choices": [{"index": 0, "delta": delta,
                                                          "finish_reason": None}]}) + b"\n\n"


# -- one body

_OPENERS = (canonical.TextStart, canonical.ReasoningStart, canonical.ToolCallStart)
"""What counts its own metadata (`Completion.opened`)."""


class ChatBodyEncoder(BodyEncoder):
    """`stream: false`: the run gathered into one `chat.completion`."""

    __slots__ = ("_lead", "_reasoning", "_refusal", "_refusals", "_text", "completion")

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__()
        self.completion = Completion(request, self.dropped)
        self._text = TextPieces()
        self._refusal = TextPieces()
        self._refusals: set[str] = set()
        self._lead: str | None = ""
        """What goes before the next text (as `ChatStreamEncoder.lead`)."""
        self._reasoning = TextPieces()

    def encode(self, events: list[canonical.Event]) -> bytes:
        c = self.completion
        for e in events:
            if e.metadata is not None and type(e) not in _DROPS and not isinstance(e, _OPENERS):
                self.dropped[Dropped.METADATA] += 1  # no field for an event's metadata
            if isinstance(e, canonical.TextDelta):
                if e.message_id in self._refusals:
                    self._refusal.add(e.delta)
                    continue
                if self._lead is not None and e.delta:
                    self._text.add(self._lead)
                    self._lead = None
                self._text.add(e.delta)
            elif isinstance(e, canonical.TextStart):
                c.opened(e)
                if e.refusal:
                    self._refusals.add(e.message_id)  # its words are the message's `refusal`, apart from its text
                elif self._lead is None:
                    self._lead = SEPARATOR
            elif isinstance(e, canonical.ReasoningDelta):
                self._reasoning.add(e.delta)
            elif isinstance(e, canonical.ToolCallStart):
                c.start_call(e)
            elif isinstance(e, canonical.ReasoningStart):
                c.opened(e)
            elif isinstance(e, canonical.ToolCallArgs):
                c.args(e)
            elif isinstance(e, canonical.ToolResult):
                c.result(e)
            elif isinstance(e, canonical.Interrupt):
                c.interrupt(e)
            elif isinstance(e, canonical.InterruptResolved):
                c.resolved(e)
            elif isinstance(e, canonical.Usage):
                c.usage.add(e)
            elif isinstance(e, canonical.RunFinished):
                return self._finished(e)
            elif isinstance(e, canonical.RunError):
                self.status_code = failed_status(e)
                return orjson.dumps({"error": ERRORS.failed(e, self.status_code)})
            elif (kind := _DROPS.get(type(e))) is not None:
                self.dropped[kind] += 1
        return b""

    def _finished(self, e: canonical.RunFinished) -> bytes:
        c = self.completion
        c.release_held()
        note = c.note(e)
        text = self._text.text() + ((SEPARATOR if self._lead is None else self._lead) + note if note else "")
        chars = len(text)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if self._reasoning.pieces:
            message["reasoning_content"] = reasoning = self._reasoning.text()
            chars += len(reasoning)
        if c.calls:
            message["tool_calls"] = [{"id": call_id, "type": "function",
                                      "function": {"name": name, "arguments": pieces.text() or "{}"}}
                                     for call_id, (_, name, pieces) in sorted(c.calls.items(), key=lambda i: i[1][0])]
            chars += sum(len(call["function"]["arguments"]) for call in message["tool_calls"])
        message["refusal"] = self._refusal.text() or None
        chars += len(message["refusal"] or "")
        return json_bytes({"id": c.id, "object": "chat.completion", "created": c.created, "model": c.model,
                           "choices": [{"index": 0, "message": message, "finish_reason": c.finish_reason(e),
                                        "logprobs": None}],
                           **({"usage": usage} if (usage := c.usage_object()) is not None else {})}, chars)


def new_encoder(request: Turn | None = None) -> ChatStreamEncoder | ChatBodyEncoder:
    """The reply the request asked for: chunks for `stream: true` (and for another dialect's request), else one
    body."""
    if request is not None and reply_options(request).get("stream") is False:
        return ChatBodyEncoder(request)
    return ChatStreamEncoder(request)
