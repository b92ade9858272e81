"""A Responses server's reply into canonical events: semantic events over SSE, or one response object (a server
that does not stream, or an error object before any stream).

Items open and close runs of events: a `message` item is a text message (its `refusal` parts a message of their
own, marked as the model's refusal), `reasoning` reasoning (OpenAI's `response.reasoning_text.delta` and summaries,
and Open Responses' `response.reasoning.delta`), a `function_call` a tool call left for the client, an `mcp_call` a
tool the agent ran with its result, an `mcp_approval_request` an interrupt (about the agent's call its `call_id`
names, when the gateway wrote it) and an `mcp_approval_response` one answered in the run, `agent_gateway:activity` an
activity's snapshot and `agent_gateway:subagent` a subagent's start and end. A reasoning item's `encrypted_content`
is encrypted reasoning.

Text comes in deltas, or only in the `.done` events that repeat it (`output_text.done`, `content_part.done`,
`output_item.done`; a reasoning item's summary): a part's text is passed on from the first that holds it, once. A
delta of an item never added opens it where its kind says what it is (text, a refusal, reasoning); one that cannot
be placed (an item already done, a call never named) is kept as `Raw`. `response.completed` ends the run (with its
usage), `incomplete` ends it (interrupted, cancelled, or cut short by `max_output_tokens` or `content_filter`),
`failed` and `error` fail it.
"""

from __future__ import annotations

from typing import Any

import orjson

from adapters.openai_common.errors import failure
from adapters.openai_common.usage import read_usage
from gateway.core import events as canonical
from gateway.core.codec import as_text
from gateway.core.decoding import Events, JsonSSEOrBodyDecoder, str_at, str_or
from gateway.core.errors import ErrorCode
from gateway.core.ids import new_id
from gateway.core.sse import DEFAULT_MAX_FRAME
from gateway.core.steady import SteadyText

from .items import ACTIVITY, APPROVAL_REQUEST, APPROVAL_RESPONSE, MCP_CALL, SUBAGENT

_REASONING_DELTAS = frozenset({"response.reasoning.delta", "response.reasoning_text.delta",
                               "response.reasoning_summary_text.delta"})
_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_STOP_REASONS: dict[str, canonical.StopReason] = {"max_output_tokens": "length", "content_filter": "content_filter"}
"""Reasons a response is incomplete that say its answer was cut short."""
_TEXT_DONE = frozenset({"response.output_text.done", "response.refusal.done", "response.content_part.added",
                        "response.content_part.done"})
"""Events that may hold a part's text whole."""
_REASONING_PARTS = frozenset({"reasoning_text", "summary_text"})
"""Content parts that hold reasoning, not the answer."""


class ResponsesDecoder(JsonSSEOrBodyDecoder):
    __slots__ = ("_calls", "_ended", "_items", "_said", "_steady_message", "_streamed")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._steady = SteadyText(unread=(b'"sequence_number":', b'"obfuscation":'))  # changing in every event
        self._steady_message = ""
        """The message the last steady text delta wrote to (`steady_text`)."""
        self._items: dict[str, tuple[str, str]] = {}
        """Items open: item id -> (kind, the canonical id: the message's, or the call's)."""
        self._ended: set[str] = set()
        """Items done: what comes for one after is not the run's to say again."""
        self._said: set[str] = set()
        """Messages (and reasoning) whose text was passed on: the `.done` events that repeat it add nothing."""
        self._streamed: set[str] = set()
        """Calls whose arguments came as deltas."""
        self._calls: set[str] = set()
        """The agent's calls read with an approval request: its `mcp_call` is only the call's result."""

    def on_done(self, out: Events) -> None:
        """`[DONE]` follows the terminal event; before one, the stream was cut short (repair says so)."""

    def steady_text(self, frame: dict[str, Any]) -> str | None:
        """A text delta of a message item that is open."""
        delta = frame.get("delta")
        if frame.get("type") != "response.output_text.delta" or not isinstance(delta, str) or not delta:
            return None  # an empty delta says nothing of what the `.done` events may hold
        found = self._items.get(str_or(frame.get("item_id")))
        if found is None or found[0] != "message":
            return None
        self._steady_message = found[1]
        return delta

    def on_steady_text(self, text: str, out: Events) -> None:
        if text:
            out.append(canonical.TextDelta(self._steady_message, text))

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        kind = frame.get("type")
        if not isinstance(kind, str) or not (kind.startswith("response.") or kind == "error"):
            # no Responses event: another dialect's, most likely
            out.append(canonical.Raw("openai-responses", event=frame))
            return
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = frame.get("delta")
            if isinstance(delta, str) and delta:
                self._text(frame, kind == "response.refusal.delta", delta, out)
        elif kind == "response.function_call_arguments.delta":
            item_id = str_or(frame.get("item_id"))
            found = self._items.get(item_id)
            if found is None:
                # a call never named: no tool to give them to
                out.append(canonical.Raw("openai-responses", event=frame))
            elif isinstance(frame.get("delta"), str) and frame["delta"]:
                self._streamed.add(item_id)
                out.append(canonical.ToolCallArgs(found[1], frame["delta"]))
        elif kind in _REASONING_DELTAS:
            found = self._found(frame, "reasoning", out)
            if found is not None and isinstance(frame.get("delta"), str) and frame["delta"]:
                self._said.add(found[1])
                out.append(canonical.ReasoningDelta(found[1], frame["delta"]))
        elif kind in _TEXT_DONE:
            part = frame.get("part") if kind.startswith("response.content_part") else frame
            if isinstance(part, dict):
                self._part(frame, part, out)
        elif kind == "response.output_item.added":
            self._added(frame.get("item"), out)
        elif kind == "response.output_item.done":
            self._done(frame.get("item"), out)
        elif kind in ("response.created", "response.in_progress", "response.queued"):
            self._started(frame.get("response"), out)
        elif kind in _ENDS:
            response = frame.get("response")
            self._started(response, out)
            self._end(kind, response if isinstance(response, dict) else {}, out)
        elif kind == "error":
            out.append(_error(frame.get("error") or frame))

    def _started(self, response: Any, out: Events) -> None:
        if not self.repair.started:
            response_id = response.get("id") if isinstance(response, dict) else None
            out.append(canonical.RunStarted(run_id=response_id if isinstance(response_id, str) else None))

    def _added(self, item: Any, out: Events) -> str:
        """An item added: the run of events it opens begins (a message's, with its first text). Its id."""
        if not isinstance(item, dict):
            return ""
        self._started(None, out)
        kind, item_id = item.get("type"), str_or(item.get("id")) or new_id("item")
        if kind == "message":
            self._items[item_id] = ("message", item_id)  # its text opens with its first part: text or a refusal
        elif kind == "reasoning":
            self._items[item_id] = ("reasoning", item_id)
            out.append(canonical.ReasoningStart(item_id))
        elif kind == "function_call":
            call_id = str_or(item.get("call_id")) or item_id
            self._items[item_id] = ("function_call", call_id)
            out.append(canonical.ToolCallStart(call_id, str_or(item.get("name")) or "unknown_tool"))
        elif kind == SUBAGENT:
            _subagent_started(item, out)  # what it says comes before its item is done
        return item_id

    def _done(self, item: Any, out: Events) -> None:
        if not isinstance(item, dict):
            return
        self._started(None, out)
        item_id = str_or(item.get("id"))
        kind = item.get("type")
        if item_id not in self._items and kind in ("message", "reasoning", "function_call"):
            if item_id in self._ended:
                return  # done already
            item_id = self._added(item, out)  # a server that sends only the finished item: its content with it
        if kind in ("message", "reasoning"):  # a reasoning item's summary, when it holds no reasoning text
            parts = item.get("content") or (item.get("summary") if kind == "reasoning" else None)
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, dict):
                    self._part({"item_id": item_id}, part, out)  # what no delta said
        found = self._items.pop(item_id, None)
        self._ended.add(item_id)
        if kind == "message" and found is not None:
            out.append(canonical.TextEnd(found[1]))
            out.append(canonical.TextEnd(_refusal_of(found[1])))
        elif kind == "reasoning" and found is not None:
            encrypted = item.get("encrypted_content")
            if isinstance(encrypted, str) and encrypted:
                out.append(canonical.EncryptedValue("message", found[1], encrypted))
            out.append(canonical.ReasoningEnd(found[1]))
        elif kind == "function_call" and found is not None:
            arguments = item.get("arguments")
            if item_id not in self._streamed and isinstance(arguments, str) and arguments:
                out.append(canonical.ToolCallArgs(found[1], arguments))
            self._streamed.discard(item_id)
            out.append(canonical.ToolCallEnd(found[1]))
        elif kind == MCP_CALL:
            call_id = item_id or new_id("call")
            self._agents_call(call_id, item, out)
            error = item.get("error")
            if error is not None:
                said = error.get("content", error.get("message")) if isinstance(error, dict) else error
                out.append(canonical.ToolResult(call_id, as_text(said), is_error=True))
            else:
                out.append(canonical.ToolResult(call_id, str_or(item.get("output"))))
        elif kind == APPROVAL_REQUEST:
            self._approval_request(item, item_id or new_id("int"), out)
        elif kind is not None and kind in _EXTENSIONS:
            _EXTENSIONS[kind](item, item_id, out)

    def _agents_call(self, call_id: str, item: dict[str, Any], out: Events) -> None:
        """A call of the agent's own, once: an approval request may have shown it before its `mcp_call`."""
        if call_id in self._calls:
            return
        self._calls.add(call_id)
        arguments = item.get("arguments")
        out.append(canonical.ToolCallStart(call_id, str_or(item.get("name")) or "unknown_tool"))
        out.append(canonical.ToolCallArgs(call_id, arguments if isinstance(arguments, str) and arguments else "{}"))
        out.append(canonical.ToolCallEnd(call_id))

    def _approval_request(self, item: dict[str, Any], item_id: str, out: Events) -> None:
        """About the agent's call `call_id` names, that call; else its arguments are the question."""
        call_id = str_at(item, "call_id")
        if call_id is not None:
            self._agents_call(call_id, item, out)
            out.append(canonical.Interrupt(item_id, reason="tool_approval", tool_call_id=call_id))
            return
        try:
            question = orjson.loads(str_or(item.get("arguments")))
        except orjson.JSONDecodeError:
            question = None
        asked = question if isinstance(question, dict) else {}
        out.append(canonical.Interrupt(item_id, reason=str_at(asked, "reason") or str_or(item.get("name")),
                                       message=str_at(asked, "message"), payload=asked.get("payload"),
                                       tool_call_id=str_at(asked, "tool_call_id"),
                                       response_schema=asked.get("response_schema"),
                                       expires_at=str_at(asked, "expires_at")))

    def _found(self, frame: dict[str, Any], kind: str, out: Events) -> tuple[str, str] | None:
        """The item an event is about, as `_items` holds it. One never added is, as the event says (`kind`); one
        already done is not the run's any more: the event is kept as `Raw`."""
        item_id = str_or(frame.get("item_id"))
        found = self._items.get(item_id)
        if found is not None:
            return found
        if item_id in self._ended or not item_id:
            out.append(canonical.Raw("openai-responses", event=frame))
            return None
        self._added({"type": kind, "id": item_id}, out)
        return self._items[item_id]

    def _text(self, frame: dict[str, Any], refusal: bool, text: str, out: Events) -> None:
        """A delta of a message item's text, or of its refusal: each a message of its own, opened by its first
        text."""
        found = self._found(frame, "message", out)
        if found is not None:
            self._say(_refusal_of(found[1]) if refusal else found[1], refusal, text, out)

    def _say(self, message_id: str, refusal: bool, text: str, out: Events) -> None:
        """Text of a message, opened by its first."""
        if message_id not in self._said:
            self._said.add(message_id)
            out.append(canonical.TextStart(message_id, refusal=refusal))
        out.append(canonical.TextDelta(message_id, text))

    def _part(self, frame: dict[str, Any], part: dict[str, Any], out: Events) -> None:
        """A content part held whole (`output_text.done`, `refusal.done`, `content_part.*`, a done item's): its
        text, where no delta said it."""
        refusal = part.get("type") == "refusal" or frame.get("type") == "response.refusal.done"
        text = part.get("refusal") if refusal else part.get("text")
        if not isinstance(text, str) or not text:
            return
        found = self._found(frame, "reasoning" if part.get("type") in _REASONING_PARTS else "message", out)
        if found is None:
            return
        kind, canonical_id = found
        if kind == "message":
            message_id = _refusal_of(canonical_id) if refusal else canonical_id
            if message_id not in self._said:
                self._say(message_id, refusal, text, out)
        elif kind == "reasoning" and canonical_id not in self._said:
            self._said.add(canonical_id)
            out.append(canonical.ReasoningDelta(canonical_id, text))

    def _end(self, kind: str, response: dict[str, Any], out: Events) -> None:
        usage = response.get("usage")
        if isinstance(usage, dict):
            model = response.get("model")
            out.append(read_usage(usage, "responses", model if isinstance(model, str) else None))
        if kind == "response.failed":
            out.append(_error(response.get("error") or {"message": "upstream response failed"}))
            return
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) and kind == "response.incomplete" else None
        if reason == "interrupt":
            out.append(canonical.RunFinished(outcome="interrupt"))
        elif reason == "cancelled":
            out.append(canonical.RunFinished(outcome="cancelled"))
        else:
            out.append(canonical.RunFinished(stop_reason=_STOP_REASONS.get(reason) if isinstance(reason,
                                                                                                 str) else None))

    def on_body(self, body: Any, out: Events) -> None:
        """One response object (or an error object): its items as the events of a run."""
        if not isinstance(body, dict):
            out.append(canonical.RunError("upstream returned JSON that is not an object",
                                          code=ErrorCode.UPSTREAM_BAD_EVENT))
            return
        if body.get("error") and body.get("object") != "response":
            out.append(_error(body["error"]))
            return
        self._started(body, out)
        for item in body.get("output") or ():
            self._done(item, out)
        status = body.get("status")
        kind = {"failed": "response.failed", "incomplete": "response.incomplete"}.get(str(status),
                                                                                        "response.completed")
        self._end(kind, body, out)


def _refusal_of(message_id: str) -> str:
    """The canonical id of a message item's refusal: a message apart from its text."""
    return message_id + "-refusal"


def _approval_response(item: dict[str, Any], item_id: str, out: Events) -> None:
    interrupt_id = str_at(item, "approval_request_id")
    if interrupt_id is not None:
        out.append(canonical.InterruptResolved(interrupt_id, approved=item.get("approve") is not False,
                                               reason=str_at(item, "reason")))


def _activity(item: dict[str, Any], item_id: str, out: Events) -> None:
    content = item.get("content")
    if isinstance(content, dict):
        out.append(canonical.ActivitySnapshot(str_at(item, "activity_id") or item_id, str_or(item.get("activity_type")),
                                              content, subagent_run_id=str_at(item, "subagent_run_id")))


def _subagent_started(item: dict[str, Any], out: Events) -> str | None:
    run_id = str_at(item, "subagent_run_id")
    if run_id is not None:
        out.append(canonical.SubagentStarted(run_id, str_or(item.get("name")), description=str_at(item, "description"),
                                             parent_subagent_run_id=str_at(item, "parent_subagent_run_id"),
                                             parent_tool_call_id=str_at(item, "parent_tool_call_id"),
                                             parent_message_id=str_at(item, "parent_message_id")))
    return run_id


def _subagent(item: dict[str, Any], item_id: str, out: Events) -> None:
    """A subagent's item, done: it started (repair drops a second start) and ended as its status says."""
    run_id = _subagent_started(item, out)
    if run_id is None:
        return
    status = item.get("status")
    if status == "failed":
        error = item.get("error")
        error = error if isinstance(error, dict) else {}
        out.append(canonical.SubagentError(run_id, str_or(error.get("message")), code=str_at(error, "code")))
    elif status in ("completed", "incomplete"):
        ids = item.get("interrupt_ids")
        out.append(canonical.SubagentFinished(run_id, result=item.get("result"),
                                              outcome="suspended" if status == "incomplete" else "success",
                                              interrupt_ids=[i for i in ids if isinstance(i, str)]
                                              if isinstance(ids, list) else None))


_EXTENSIONS = {APPROVAL_RESPONSE: _approval_response, ACTIVITY: _activity, SUBAGENT: _subagent}
"""Items read when done that stand for one event each (see `items`)."""


def _error(error: Any) -> canonical.RunError:
    """An error object (or anything else said as one)."""
    if isinstance(error, dict):
        return failure(error)
    return canonical.RunError(orjson.dumps(error).decode() if error is not None else "upstream error",
                              code=ErrorCode.UPSTREAM_ERROR)
