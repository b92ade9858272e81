"""A LangGraph server's run stream, into canonical events.

The stream is SSE with named frames, one per stream mode the run was asked for (`request.UPSTREAM_MODES`):

| frame | read as |
|---|---|
| `metadata` `{run_id}` | the run's start; the run id names it for a cancel or a join; its `metadata` the run's |
| `messages` `[message, metadata]` | an AI message chunk: text, reasoning, `tool_call_chunks`; a whole AI message |
| | not streamed (a node's own): its text and `tool_calls`; a tool message: the tool's result |
| | a message's `name` and `response_metadata.agent_gateway` `{metadata, subagent_run_id}`: its opening's |
| | `usage_metadata` with its details: usage; reasoning blocks' encrypted content: encrypted reasoning |
| `updates` / `values` `{"__interrupt__": [...]}` | interrupts, each with its id and value |
| `values` | the state as it stands, without its messages (the thread keeps those); the messages that came after |
| | the run's first `values` and were not streamed (a stream asked for `values` alone): read as `messages` are |
| `custom` | the graph's own data (`get_stream_writer()`), as `Data("custom")`; `{name, data, id?}` as the gateway |
| | writes named data, activities (`activity`) and subagents (`subagent`) for LangGraph clients, read back as such |
| `error` `{error, message}` | the run's error |
| `end`, or the body's end | the run's end: a LangGraph stream ends when its run does |

A connection that breaks before the body ends is joined again (`GET /threads/{id}/runs/{run_id}/stream` with the
last event's id: the run's events after it), once, then it is the run's error.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.codec import UpstreamRequest
from gateway.core.decoding import Events, RepairedDecoder, str_or_none
from gateway.core.errors import ErrorCode
from gateway.core.sse import DEFAULT_MAX_FRAME, FrameTooLarge, SSEEvent, SSEEventDecoder
from gateway.core.steady import SteadyText

from .interrupts import REVIEWED, interrupt_of
from .reading import MessageReader

CANCELLED = frozenset({"CancelledError", "UserInterrupt"})
"""The errors that say the run was cancelled, not that it failed."""
HIDDEN_STATE = frozenset({"messages", "__interrupt__"})
"""Keys of a thread's values that are not its state as clients share it: the history, and what waits."""
_NAMED_DATA = frozenset({"name", "data", "id", "transient"})


class LangGraphDecoder(RepairedDecoder):
    """The run: its start, its state, what waits, its end, and how to cancel or join it again; its messages are its
    `MessageReader`'s (`reading`)."""

    __slots__ = ("_heard", "_interrupts", "_joins", "_max_event_bytes", "_messages", "_run_id", "_sse", "_state",
                 "_steady", "_steady_event", "_thread_id")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__()
        self._messages = MessageReader()
        self._max_event_bytes = max_event_bytes
        self._sse = SSEEventDecoder(max_event_bytes)
        self._steady = SteadyText()
        self._steady_event = ""
        """The name of the frames whose shape `_steady` learnt: `messages`, or `messages|<namespace>`."""
        self._thread_id: str | None = None
        self._run_id: str | None = None
        self._joins = 0
        self._interrupts: set[str] = set()
        self._state: Any = None
        self._heard: int | None = None
        """How many of the thread's messages the run's `values` held that were read: at first its input and the
        history before it, which are not the run's to say."""

    def sent(self, request: UpstreamRequest) -> None:
        parts = (request.path or "").split("/")
        if len(parts) > 2 and parts[1] == "threads":
            self._thread_id = parts[2]

    def feed(self, chunk: bytes) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        if self.repair.done:
            return out
        try:
            frames = self._sse.feed(chunk)
        except FrameTooLarge as exc:
            self.repair.fail(f"upstream sent an oversized event: {exc}", ErrorCode.UPSTREAM_EVENT_TOO_LARGE, out)
            return out
        self._frames(frames, out)
        return out

    def close(self) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        if not self.repair.done:
            self._frames(self._sse.flush(), out)
            # the body's end is the run's
            self.repair.push(canonical.RunFinished(stop_reason=self._messages.stop_reason), out)
        return out

    def cancel_request(self) -> UpstreamRequest | None:
        if self._thread_id is None or self._run_id is None or (self.repair.done and not self.repair.cut):
            return None  # no run yet, or it ended by itself
        return UpstreamRequest(b"{}", {"content-type": "application/json"}, streams=False,
                               path=f"/threads/{self._thread_id}/runs/{self._run_id}/cancel")

    def reattach_request(self, broke: bool = True) -> UpstreamRequest | None:
        if not broke or self._thread_id is None or self._run_id is None or self.repair.done or self._joins:
            return None
        self._joins += 1
        last = self._sse.last_id
        self._sse = SSEEventDecoder(self._max_event_bytes)
        self._steady.forget()
        headers = {"accept": "text/event-stream"}
        if last is not None:
            headers["last-event-id"] = last
        return UpstreamRequest(b"", headers, path=f"/threads/{self._thread_id}/runs/{self._run_id}/stream",
                               method="GET")

    def _frames(self, frames: list[SSEEvent], out: list[canonical.Event]) -> None:
        repair, steady = self.repair, self._steady
        repair.out = out
        for frame in frames:
            if repair.done:
                return
            if frame.event == self._steady_event:
                text = steady.text_of(frame.data)
                if text is not None:  # another token of the message being streamed: the rest need not be read
                    self.on_steady_text(text, repair)
                    continue
            else:
                steady.forget()
            try:
                value = orjson.loads(frame.data)
            except orjson.JSONDecodeError:
                preview = frame.data[:80].decode("utf-8", "replace")
                repair.fail(f"upstream sent invalid JSON in an event: {preview!r}", ErrorCode.UPSTREAM_BAD_EVENT, out)
                continue
            mode = frame.event.partition("|")[0]  # `mode|namespace` from subgraphs
            handler = _HANDLERS.get(mode)
            if handler is None:
                repair.append(canonical.Raw("langgraph", event={"event": frame.event, "data": value}))
                continue
            handler(self, value, repair)
            if mode == "messages" and steady.tries > 0:
                steady.learn(frame.data, value, self.steady_text)
                self._steady_event = frame.event

    # the run, its state and what waits

    def _metadata(self, value: Any, out: Events) -> None:
        if isinstance(value, dict) and isinstance(value.get("run_id"), str):
            self._run_id = value["run_id"]
            metadata = value.get("metadata")
            out.append(canonical.RunStarted(thread_id=self._thread_id, run_id=value["run_id"],
                                            metadata=metadata if isinstance(metadata, dict) and metadata else None))

    def _updates(self, value: Any, out: Events) -> None:
        if isinstance(value, dict) and "__interrupt__" in value:
            self._waiting(value["__interrupt__"], out)

    def _values(self, value: Any, out: Events) -> None:
        if not isinstance(value, dict):
            return
        messages = value.get("messages")
        if isinstance(messages, list):
            self._unstreamed(messages, out)
        if "__interrupt__" in value:
            self._waiting(value["__interrupt__"], out)
        state = {key: item for key, item in value.items() if key not in HIDDEN_STATE}
        if state != self._state and (state or self._state):
            self._state = state
            out.append(canonical.StateSnapshot(state))

    def _unstreamed(self, messages: list[Any], out: Events) -> None:
        """The run's messages as `values` holds them, for a stream asked without `messages` (LangGraph's default
        stream mode is `values` alone): those after the run's first `values`, each once (those streamed already
        add nothing). By place, not id: a thread's messages only grow within a run, and an id may repeat."""
        heard, self._heard = self._heard, len(messages)
        if heard is None:
            return
        for message in messages[heard:]:
            self._messages.message(message, out)

    def _waiting(self, interrupts: Any, out: Events) -> None:
        self._messages.end_all(out)
        for item in interrupts if isinstance(interrupts, list) else ():
            if isinstance(item, dict):
                interrupt = interrupt_of(item)
                if interrupt.tool_call_id is None and interrupt.reason == REVIEWED:
                    interrupt.tool_call_id = self._reviewed(interrupt.payload)
                if interrupt.id not in self._interrupts:
                    self._interrupts.add(interrupt.id)
                    out.append(interrupt)

    def _reviewed(self, review: Any) -> str | None:
        """The call a review of one action is about (LangChain's human-in-the-loop middleware stops the calls its
        model just made): the run's one unanswered call to that tool."""
        actions = review.get("action_requests") if isinstance(review, dict) else None
        if not isinstance(actions, list) or len(actions) != 1 or not isinstance(actions[0], dict):
            return None
        return self._messages.unanswered_call(actions[0].get("name"))

    def _custom(self, value: Any, out: Events) -> None:
        """The graph's own data; `{name, data, id?, transient?}` is named data as the gateway writes it for LangGraph
        clients, and its activities and subagents among them."""
        if not (isinstance(value, dict) and {"name", "data"} <= value.keys() <= _NAMED_DATA
                and isinstance(value["name"], str)):
            out.append(canonical.Data("custom", value))
            return
        name, data, given = value["name"], value["data"], value.get("id")
        data_id = given if isinstance(given, str) else None
        family = _family(name, data_id, data) if data_id is not None else None
        out.append(family or canonical.Data(name, data, id=data_id, transient=value.get("transient") is True))

    def _error(self, value: Any, out: Events) -> None:
        self._messages.end_all(out)
        if isinstance(value, dict) and value.get("error") in CANCELLED:
            out.append(canonical.RunFinished(outcome="cancelled"))
        elif isinstance(value, dict):
            message, code = value.get("message"), value.get("error")
            message = message if isinstance(message, str) and message else str(code or "the run failed")
            out.append(canonical.RunError(message, code=code if isinstance(code, str) else None))
        else:
            out.append(canonical.RunError(str(value) or "the run failed"))

    def _end(self, value: Any, out: Events) -> None:
        self._messages.end_all(out)
        out.append(canonical.RunFinished(stop_reason=self._messages.stop_reason))

    def steady_text(self, value: Any) -> str | None:
        """The text of a `messages` frame that is a token of the AI message being streamed and nothing else."""
        return self._messages.steady_text(value)

    def on_steady_text(self, text: str, out: Events) -> None:
        self._messages.token(text, out)

    def _message(self, value: Any, out: Events) -> None:
        self._messages.message(value, out)

    def _complete(self, value: Any, out: Events) -> None:
        self._messages.complete(value, out)


def _family(name: str, data_id: str, data: Any) -> canonical.Event | None:
    """An activity or a subagent as the gateway writes them for LangGraph clients (`gateway.core.activity`): the
    whole activity after each change, the subagent's status as it runs, finishes or fails."""
    if not isinstance(data, dict):
        return None
    if name == "activity" and isinstance(data.get("activityType"), str) and isinstance(data.get("content"), dict):
        return canonical.ActivitySnapshot(data_id, data["activityType"], data["content"],
                                          subagent_run_id=str_or_none(data.get("subagentRunId")))
    status = data.get("status")
    if name != "subagent" or data.get("subagentRunId") != data_id or not isinstance(status, str):
        return None
    if status == "running":
        return canonical.SubagentStarted(data_id, str_or_none(data.get("name")) or "",
                                         description=str_or_none(data.get("description")),
                                         parent_subagent_run_id=str_or_none(data.get("parentSubagentRunId")),
                                         parent_tool_call_id=str_or_none(data.get("parentToolCallId")),
                                         parent_message_id=str_or_none(data.get("parentMessageId")))
    if status == "error":
        return canonical.SubagentError(data_id, str_or_none(data.get("message")) or "the subagent failed",
                                       code=str_or_none(data.get("code")))
    ids = data.get("interruptIds")
    interrupt_ids = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else None
    return canonical.SubagentFinished(data_id, result=data.get("result"),
                                      outcome="suspended" if status == "suspended" else "success",
                                      interrupt_ids=interrupt_ids)


_HANDLERS = {
    "metadata": LangGraphDecoder._metadata,
    "messages": LangGraphDecoder._message,
    "messages/complete": LangGraphDecoder._complete,
    "updates": LangGraphDecoder._updates,
    "values": LangGraphDecoder._values,
    "custom": LangGraphDecoder._custom,
    "error": LangGraphDecoder._error,
    "end": LangGraphDecoder._end,
}
