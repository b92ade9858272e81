"""A run's events gathered into one `AgentResponse` body, as the eval platform validates it.

Assistant text said before tool calls shares their message (OpenAI style), each result is a `role: tool` message
with the tool's name, and the last message is always an assistant one: when the run stopped on an interrupt or on
client tools that nobody here can run, a final assistant message says so, because the platform rejects a response
that ends otherwise. An answer cut short says why in `metadata.finish_reason` (`length`, `content_filter`, as
OpenAI names them). A failed run is a 502 (504 for a timeout) with an error body and the messages made so far.
"""

from __future__ import annotations

from typing import Any

from adapters.openai_common.usage import usage_object
from gateway.core import events as canonical
from gateway.core.activity import Shown
from gateway.core.codec import as_text, drop_none
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import BodyEncoder, failed_status, json_bytes
from gateway.core.errors import ErrorCode
from gateway.core.state import StateTracker
from gateway.core.text_pieces import TextPieces
from gateway.core.turn import Turn
from gateway.core.usage import UsageTotals

_DROPS = drop_map(Dropped.REASONING, Dropped.MESSAGES_SNAPSHOT, Dropped.STEP, Dropped.DATA, Dropped.RAW,
                  Dropped.ENCRYPTED_VALUE)
"""What the contract has no field for, by the kind counted in `dropped`."""


class AgentRespondEncoder(BodyEncoder):
    __slots__ = (
        "_activity",
        "_arguments",
        "_calls",
        "_chars",
        "_families",
        "_interrupts",
        "_messages",
        "_names",
        "_pending",
        "_state",
        "_subagent",
        "_text",
        "_usage",
    )

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__()
        self._messages: list[dict[str, Any]] = []
        self._text: TextPieces | None = None  # the open assistant message's text, None when none is open
        self._calls: dict[str, dict[str, Any]] = {}
        self._arguments: dict[str, TextPieces] = {}
        self._names: dict[str, str] = {}
        self._pending: dict[str, str] = {}
        self._interrupts: list[canonical.Interrupt] = []
        self._usage = UsageTotals()
        self._state = StateTracker()
        self._families: Shown | None = None
        self._activity: dict[str, Any] = {}  # message id -> the activity as last shown
        self._subagent: dict[str, Any] = {}  # subagent run id -> how it stands
        self._chars = 0
        """Characters of text, arguments and results the body holds, for how its JSON is written (`json_bytes`)."""

    def encode(self, events: list[canonical.Event]) -> bytes:
        for e in events:
            if e.metadata is not None:
                self.dropped[Dropped.METADATA] += 1  # no field for an event's metadata
            if isinstance(e, canonical.TextDelta):
                self._open().pieces.append(e.delta)  # settled at the batch's end
                self._chars += len(e.delta)
            elif isinstance(e, canonical.ToolCallArgs):
                pieces = self._arguments.get(e.tool_call_id)
                if pieces is not None:
                    pieces.add(e.delta)
                    self._chars += len(e.delta)
            elif isinstance(e, canonical.TextStart):
                if self._calls:
                    self._flush()  # the agent speaks again after calling tools: a new message
            elif isinstance(e, canonical.ToolCallStart):
                self._open()
                self._names[e.tool_call_id] = e.name
                self._arguments[e.tool_call_id] = TextPieces()
                self._calls[e.tool_call_id] = {"id": e.tool_call_id, "type": "function",
                                               "function": {"name": e.name, "arguments": ""}}
            elif isinstance(e, canonical.ToolCallEnd):
                self._pending[e.tool_call_id] = self._names.get(e.tool_call_id, "unknown_tool")
            elif isinstance(e, canonical.ToolResult):
                if e.is_error:
                    self.dropped[Dropped.TOOL_ERROR_AS_RESULT] += 1  # the content holds the error's text
                self._flush()
                self._pending.pop(e.tool_call_id, None)
                content = as_text(e.content)
                self._chars += len(content)
                self._messages.append(drop_none({"role": "tool", "content": content,
                                                 "tool_call_id": e.tool_call_id,
                                                 "name": self._names.get(e.tool_call_id)}))
            elif isinstance(e, canonical.Interrupt):
                self._interrupts.append(e)
            elif isinstance(e, canonical.InterruptResolved):
                self._interrupts = [i for i in self._interrupts if i.id != e.interrupt_id]
                self.dropped[Dropped.INTERRUPT_RESOLVED] += 1
            elif isinstance(e, canonical.Usage):
                self._usage.add(e)
            elif isinstance(e, canonical.StateSnapshot):
                self._state.snapshot(e.snapshot)
            elif isinstance(e, canonical.StateDelta):
                self._state.apply(e.patch)
            elif isinstance(e, canonical.ActivitySnapshot | canonical.ActivityDelta):
                shown = self._shown().activity(e)
                if shown is None:
                    self.dropped[Dropped.ACTIVITY] += 1
                else:
                    self._activity[e.message_id] = shown.data
            elif isinstance(e, canonical.SubagentStarted | canonical.SubagentFinished | canonical.SubagentError):
                self._subagent[e.subagent_run_id] = self._shown().subagent(e).data
            elif isinstance(e, canonical.RunFinished):
                if e.outcome == "cancelled":
                    self.dropped[Dropped.CANCELLED_AS_FINISH] += 1
                return self._finished(e)
            elif isinstance(e, canonical.RunError):
                return self._failed(e)
            elif (kind := _DROPS.get(type(e))) is not None:
                self.dropped[kind] += 1
        if self._text is not None:
            self._text.settle()
        return b""

    def _shown(self) -> Shown:
        if self._families is None:
            self._families = Shown()
        return self._families

    def _open(self) -> TextPieces:
        if self._text is None:
            self._text = TextPieces()
        return self._text

    def _flush(self) -> None:
        if self._text is None:
            return
        text = self._text.text()
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if self._calls:
            for call_id, call in self._calls.items():
                arguments = self._arguments.pop(call_id, None)
                call["function"]["arguments"] = arguments.text() if arguments is not None else ""
            message["tool_calls"] = list(self._calls.values())
        if text or self._calls:
            self._messages.append(message)
        self._text = None
        self._calls = {}

    def _finished(self, e: canonical.RunFinished) -> bytes:
        self._flush()
        closing = self._closing_note()
        if closing is not None:
            self._messages.append({"role": "assistant", "content": closing})
        elif self._messages and self._messages[-1]["role"] != "assistant":
            self._messages.append({"role": "assistant", "content": ""})
        body: dict[str, Any] = {"messages": self._messages}
        usage = self._usage
        body.update(drop_none({"model": usage.model, "provider": usage.provider, "usage": usage_object(usage, "chat")}))
        metadata = drop_none({"state": self._state.value if self._state.known else None,
                              "activities": list(self._activity.values()) or None,
                              "subagents": list(self._subagent.values()) or None, "finish_reason": e.stop_reason})
        if metadata:
            body["metadata"] = metadata
        return json_bytes(body, self._chars)

    def _closing_note(self) -> str | None:
        if self._interrupts:
            self.dropped[Dropped.INTERRUPT_AS_NOTE] = len(self._interrupts)
            asks = "; ".join(i.message or i.reason or i.id for i in self._interrupts)
            return f"[interrupted] The agent paused for human input: {asks}"
        if self._pending:
            self.dropped[Dropped.PENDING_TOOL_AS_NOTE] = len(self._pending)
            return f"[pending tools] The agent asked the client to run: {', '.join(self._pending.values())}"
        return None

    def _failed(self, e: canonical.RunError) -> bytes:
        self._flush()
        self.status_code = failed_status(e)
        error = drop_none({"code": e.code or ErrorCode.UPSTREAM_ERROR, "message": e.message})
        return json_bytes({"error": error, "messages": self._messages}, self._chars)
