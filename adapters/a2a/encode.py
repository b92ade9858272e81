"""Canonical events into an A2A task, as an `a2a-sdk` server writes one: streamed (`SendStreamingMessage`) as
JSON-RPC responses over SSE, or folded into the final task (`SendMessage`).

The task's id is the run's and its `contextId` the conversation's. Text goes out as chunks of an artifact per
message; named data as a data artifact; tool calls and results as working-status messages with Google ADK's data
parts; an interrupt, or a tool call left for the client, as `input-required` (the client's next message with the
task's id answers it); the end as `completed`, `canceled` or `failed`. A2A has no state for an answer cut short: it
is `completed`, and its last status update's `metadata.stopReason` (`length`, `content_filter`) says why. Reasoning,
state and usage have no place in a task and are left out (counted in `dropped`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from gateway.core import events as canonical
from gateway.core.activity import Shown
from gateway.core.codec import as_text, json_or_text
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import EVENT_TYPES, HOLE, BodyEncoder, DeltaFrames, SSEEncoder, json_bytes, must_place
from gateway.core.ids import new_id
from gateway.core.text_pieces import TextPieces
from gateway.core.turn import Turn

from .errors import STREAM_CUT, stream_error
from .fold import Folded, limit_history
from .request import FUNCTION_CALL, FUNCTION_RESPONSE
from .updates import Response, TaskUpdates, client_call
from .wire import STOP_REASON, V03, data_part, part_v03, part_v10, task_v03, text_part, wrap

_DROPS = drop_map(Dropped.REASONING, Dropped.STATE, Dropped.MESSAGES_SNAPSHOT, Dropped.USAGE,
                  Dropped.ENCRYPTED_VALUE, Dropped.RAW)
"""What a task has no place for, by the kind counted in `dropped`."""


class TaskWriter:
    """The task a run makes, as the responses an A2A server streams; shared by the streamed and the one-body
    reply. What each event becomes is the writer's; how a response is spelled, in the client's version and naming
    the task, its `updates` (`TaskUpdates`)."""

    __slots__ = ("_calls", "_continues", "_dropped", "_families", "_interrupts", "_unresolved", "held_chars", "sent",
                 "updates")

    def __init__(self, request: Turn | None, dropped: dict[Dropped, int], *, spelling_of_client: bool = True) -> None:
        self.updates = TaskUpdates(request, spelling_of_client=spelling_of_client)
        self._continues = bool(client_call(request).get("continues"))
        self.sent: dict[str, bool] = {}
        """Text messages being written as artifacts: message id -> whether a chunk went out."""
        self._calls: dict[str, tuple[str, TextPieces]] = {}
        self.held_chars = 0
        """Characters of text the reply holds whole: a tool call's arguments once gathered, and for a reply in one
        body all it holds (what its JSON is written by, `json_bytes`, goes by)."""
        self._unresolved: dict[str, dict[str, Any]] = {}
        """Tool calls made and not answered: id -> the call's data part, asked of the client at the end."""
        self._interrupts: list[canonical.Interrupt] = []
        self._families: Shown | None = None
        self._dropped = dropped

    def event(self, e: canonical.Event) -> list[Response]:
        if e.metadata is not None:
            self._dropped[Dropped.METADATA] += 1
        handler = _HANDLERS.get(type(e))
        if handler is not None:
            return handler(self, e)
        kind = _DROPS.get(type(e))
        if kind is not None:
            self._dropped[kind] += 1
        return []

    def _run_started(self, e: canonical.RunStarted) -> list[Response]:
        self.updates.started(e.run_id, e.thread_id)
        working = self.updates.status("working")
        if self._continues:
            return [working]  # a continued task's stream starts with its new status, as the SDK's does
        return [("task", self.updates.new_task()), working]

    def _text_start(self, e: canonical.TextStart) -> list[Response]:
        self.sent[e.message_id] = False
        return []

    def _text_delta(self, e: canonical.TextDelta) -> list[Response]:
        if self.sent.get(e.message_id):
            return [self.updates.text_chunk(e.message_id, e.delta)]
        self.sent[e.message_id] = True
        return [self.updates.text(e.message_id, e.delta, append=False, last=False)]

    def _text_end(self, e: canonical.TextEnd) -> list[Response]:
        if not self.sent.pop(e.message_id, False):
            return []
        return [self.updates.text(e.message_id, "", append=True, last=True)]

    def _tool_start(self, e: canonical.ToolCallStart) -> list[Response]:
        self._calls[e.tool_call_id] = (e.name, TextPieces())
        return []

    def _tool_args(self, e: canonical.ToolCallArgs) -> list[Response]:
        call = self._calls.get(e.tool_call_id)
        if call is not None:
            call[1].add(e.delta)
        return []

    def _tool_end(self, e: canonical.ToolCallEnd) -> list[Response]:
        call = self._calls.pop(e.tool_call_id, None)
        if call is None:
            return []
        name, pieces = call
        text = pieces.text()
        self.held_chars = len(text)
        args = json_or_text(text) if pieces.pieces else {}
        part = data_part(self.updates.version, {"id": e.tool_call_id, "name": name, "args": args},
                         {"adk_type": FUNCTION_CALL})
        self._unresolved[e.tool_call_id] = part
        return [self.updates.status("working", [part])]

    def _tool_result(self, e: canonical.ToolResult) -> list[Response]:
        call = self._unresolved.pop(e.tool_call_id, None)
        name = call["data"]["name"] if call is not None else ""
        response = {"error": as_text(e.content)} if e.is_error else {"result": e.content}
        part = data_part(self.updates.version, {"id": e.tool_call_id, "name": name, "response": response},
                         {"adk_type": FUNCTION_RESPONSE})
        return [self.updates.status("working", [part])]

    def _interrupt(self, e: canonical.Interrupt) -> list[Response]:
        self._interrupts.append(e)
        return []

    def _data(self, e: canonical.Data) -> list[Response]:
        """Named data as an artifact named after it; a file (the decoder's `file` data: a 1.0 file part, or 0.3's
        file object) as a file part."""
        data, updates = e.data, self.updates
        if e.name == "file" and isinstance(data, dict) and ({"raw", "url", "bytes", "uri"} & data.keys()):
            part = part_v10(data if "raw" in data or "url" in data else {"kind": "file", "file": data})
            return [updates.artifact(e.id or new_id("artifact"), e.name,
                                     [part_v03(part) if updates.version == V03 else part], append=False, last=True)]
        return [updates.artifact(e.id or new_id("artifact"), e.name, [data_part(updates.version, data)], append=False,
                                 last=True)]

    def _interrupt_resolved(self, e: canonical.InterruptResolved) -> list[Response]:
        self._interrupts = [i for i in self._interrupts if i.id != e.interrupt_id]
        self._dropped[Dropped.INTERRUPT_RESOLVED] += 1
        return []

    def _shown(self) -> Shown:
        if self._families is None:
            self._families = Shown()
        return self._families

    def _activity(self, e: canonical.ActivitySnapshot | canonical.ActivityDelta) -> list[Response]:
        """An activity as a data artifact of its own, replaced whole at each change."""
        data = self._shown().activity(e)
        if data is None:
            self._dropped[Dropped.ACTIVITY] += 1
            return []
        return self._data(data)

    def _subagent(
        self, e: canonical.SubagentStarted | canonical.SubagentFinished | canonical.SubagentError,
    ) -> list[Response]:
        return self._data(self._shown().subagent(e))

    def _steps(self, e: canonical.Event) -> list[Response]:
        return []  # a task has no steps; nothing of the run's content is in them

    def _run_finished(self, e: canonical.RunFinished) -> list[Response]:
        out = self._close_text()
        if self._interrupts or self._unresolved:
            return [*out, self._paused()]
        if e.outcome == "cancelled":
            return [*out, self.updates.status("canceled", final=True)]
        cut = {STOP_REASON: e.stop_reason} if e.stop_reason is not None else None
        return [*out, self.updates.status("completed", final=True, metadata=cut)]

    def _paused(self) -> Response:
        """`input-required` (or `auth-required`) naming what the client must answer: each interrupt's question and
        its data, and each tool call left for the client."""
        parts: list[dict[str, Any]] = []
        auth = False
        version = self.updates.version
        for interrupt in self._interrupts:
            auth = auth or interrupt.reason in ("auth_required", "auth-required")
            parts.append(text_part(version, interrupt.message or interrupt.reason or "The agent needs input."))
            details = {k: v for k, v in (("interruptId", interrupt.id), ("reason", interrupt.reason),
                                         ("payload", interrupt.payload), ("toolCallId", interrupt.tool_call_id),
                                         ("responseSchema", interrupt.response_schema)) if v not in (None, "")}
            if len(details) > 2:  # more than its id and reason: the agent's data is worth a part
                parts.append(data_part(version, details))
        parts += self._unresolved.values()
        # Not `final` in 0.3: a2a-sdk sets it only on a task that is done.
        return self.updates.status("auth-required" if auth else "input-required", parts)

    def _run_error(self, e: canonical.RunError) -> list[Response]:
        closed = self._close_text()
        return [*closed, self.updates.status("failed", [text_part(self.updates.version, e.message)], final=True)]

    def _close_text(self) -> list[Response]:
        out = [self.updates.text(message_id, "", append=True, last=True)
               for message_id, sent in self.sent.items() if sent]
        self.sent.clear()
        return out


_HANDLERS: dict[type, Callable[[TaskWriter, Any], list[Response]]] = {
    canonical.RunStarted: TaskWriter._run_started,
    canonical.TextStart: TaskWriter._text_start,
    canonical.TextDelta: TaskWriter._text_delta,
    canonical.TextEnd: TaskWriter._text_end,
    canonical.ToolCallStart: TaskWriter._tool_start,
    canonical.ToolCallArgs: TaskWriter._tool_args,
    canonical.ToolCallEnd: TaskWriter._tool_end,
    canonical.ToolResult: TaskWriter._tool_result,
    canonical.Interrupt: TaskWriter._interrupt,
    canonical.InterruptResolved: TaskWriter._interrupt_resolved,
    canonical.Data: TaskWriter._data,
    canonical.ActivitySnapshot: TaskWriter._activity,
    canonical.ActivityDelta: TaskWriter._activity,
    canonical.SubagentStarted: TaskWriter._subagent,
    canonical.SubagentFinished: TaskWriter._subagent,
    canonical.SubagentError: TaskWriter._subagent,
    canonical.RunFinished: TaskWriter._run_finished,
    canonical.RunError: TaskWriter._run_error,
}
_HANDLERS[canonical.StepStarted] = _HANDLERS[canonical.StepFinished] = TaskWriter._steps
must_place("TaskWriter", _HANDLERS.keys() | _DROPS.keys())

BARE = object()
"""The JSON-RPC id of a request that came on HTTP+JSON: its responses have no envelope."""


def _frame(version: str | None, rpc_id: Any, kind: str, value: dict[str, Any], chars: int = 0) -> bytes:
    """One stream response in the client's JSON-RPC envelope; on HTTP+JSON (`rpc_id` is `BARE`), as it is."""
    result = wrap(version, kind, value)
    response = result if rpc_id is BARE else {"jsonrpc": "2.0", "id": rpc_id, "result": result}
    return b"data: " + json_bytes(response, chars) + b"\n\n"


def _rpc_id(request: Turn | None) -> Any:
    call = client_call(request)
    return BARE if call.get("binding") else call.get("id")


def _stream_event(self: A2AStreamEncoder, e: canonical.Event) -> bytes:
    responses = self.writer.event(e)
    if not responses:
        return b""
    version, rpc_id = self.writer.updates.version, self.rpc_id
    held = self.writer.held_chars if type(e) is canonical.ToolCallEnd else 0  # a call's arguments, gathered whole
    out = b"".join([_frame(version, rpc_id, kind, value, held) for kind, value in responses])
    if rpc_id is BARE and type(e) is canonical.RunError and e.code in STREAM_CUT:
        out += stream_error(e.message, e.code)  # on HTTP+JSON, after the task's failed end: the stream's own error
    return out


def _stream_text(self: A2AStreamEncoder, e: canonical.TextDelta) -> bytes:
    """Most of a stream: each chunk after a message's first is the same envelope around a new delta."""
    if self.writer.sent.get(e.message_id) and e.metadata is None:
        return self.chunks.frame(e.delta, e.message_id)
    return _stream_event(self, e)


class A2AStreamEncoder(SSEEncoder):
    """`SendStreamingMessage`'s reply: each response in a JSON-RPC envelope carrying the request's id (bare on
    HTTP+JSON)."""

    __slots__ = ("chunks", "rpc_id", "writer")

    handlers = {**dict.fromkeys(EVENT_TYPES, _stream_event), canonical.TextDelta: _stream_text}
    METADATA = EVENT_TYPES  # the writer counts what it leaves out

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self.writer = TaskWriter(request, self.dropped)
        self.rpc_id = _rpc_id(request)
        updates, rpc_id = self.writer.updates, self.rpc_id
        self.chunks = DeltaFrames(lambda message_id: _frame(updates.version, rpc_id,
                                                            *updates.text_chunk(message_id, HOLE)))
        """The envelope of a message's chunks after its first (closed over the task's updates, not this encoder: no
        reference cycle)."""


class A2ATaskEncoder(BodyEncoder):
    """`SendMessage`'s reply: the task as it stands when the run ends (or pauses), in one JSON-RPC response; a task
    that the request continues, whole (with what its earlier requests made)."""

    __slots__ = ("_answered", "_chars", "_folded", "immediately", "rpc_id", "writer")

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__()
        self.immediately = client_call(request).get("return_immediately") is True
        """The client asked for the task as soon as it exists (`returnImmediately`): the run goes on without it."""
        self._answered = False
        self._chars = 0
        """Characters of text and arguments the task holds, for how its JSON is written (`json_bytes`)."""
        self.writer = TaskWriter(request, self.dropped)
        self.rpc_id = _rpc_id(request)
        earlier = client_call(request).get("task")
        task: dict[str, Any] = {}
        if isinstance(earlier, dict):
            task = task_v03(earlier) if self.writer.updates.version == V03 else copy.deepcopy(earlier)
            task.setdefault("history", []).extend(self.writer.updates.history())
        self._folded = Folded(task)

    def encode(self, events: list[canonical.Event]) -> bytes:
        folded = self._folded
        for e in events:
            if type(e) is canonical.TextDelta or type(e) is canonical.ToolCallArgs:
                self._chars += len(e.delta)
            for kind, value in self.writer.event(e):
                folded.add(kind, value)
            if type(e) in (canonical.RunFinished, canonical.RunError) or (self.immediately and folded.has_id()):
                if self._answered:
                    return b""
                self._answered = True
                updates = self.writer.updates
                shown = limit_history(folded.task(), updates.history_length)
                result = {"kind": "task", **shown} if updates.version == V03 else {"task": shown}
                if self.rpc_id is BARE:  # HTTP+JSON's SendMessageResponse
                    return json_bytes(result, self._chars)
                return json_bytes({"jsonrpc": "2.0", "id": self.rpc_id, "result": result}, self._chars)
        return b""


def new_encoder(request: Turn | None = None) -> A2AStreamEncoder | A2ATaskEncoder:
    """The reply the request asked for: streamed for `SendStreamingMessage`, one task for `SendMessage`."""
    if client_call(request).get("stream") is False:
        return A2ATaskEncoder(request)
    return A2AStreamEncoder(request)
