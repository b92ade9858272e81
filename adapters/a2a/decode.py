"""An A2A agent's reply into canonical events: a stream of task, status-update, artifact-update and message
responses (each in a JSON-RPC envelope, or bare on the HTTP+JSON binding), or one JSON body (`SendMessage`'s
result, or a JSON-RPC error sent before any stream).

- The task opens the run (its `contextId` the thread, its `id` the run).
- Artifact chunks are text (one message per artifact, ended by `lastChunk`) or named data; file parts are data.
- A status update's message is text, or tool activity where its data parts carry Google ADK's marks.
- `input-required` and `auth-required` are an interrupt named by the task's id: the client's answer continues the
  task. `completed` finishes the run, `canceled` cancels it, `failed` and `rejected` fail it with the status
  message's text.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import UpstreamRequest
from gateway.core.decoding import Events, JsonSSEOrBodyDecoder
from gateway.core.errors import ErrorCode
from gateway.core.events import (
    Data,
    Interrupt,
    Raw,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.ids import new_id
from gateway.core.sse import DEFAULT_MAX_FRAME

from .request import FUNCTION_CALL, FUNCTION_RESPONSE
from .wire import PAUSED, part_kind, response_kind, state, text_of

_FAILED_CODES = {"failed": ErrorCode.UPSTREAM_ERROR, "rejected": "upstream_rejected"}


class A2ADecoder(JsonSSEOrBodyDecoder):
    __slots__ = ("_attempts", "_context_id", "_foreign", "_open_text", "_said", "_task_id", "_whole_task")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes, json_starts=b"{[")
        self._task_id: str | None = None
        self._context_id: str | None = None
        self._open_text: dict[str, str] = {}
        """Artifacts being written as text: artifact id -> the message id they stream into."""
        self._said: dict[str, int] = {}
        """Characters of each text artifact passed on: a task read again after a re-attach adds only the rest."""
        self._attempts = 0
        self._whole_task = False
        """The body being read is `GetTask`'s: its result is the task itself."""
        self._foreign = False
        """The body read after a re-attach is about another task (an agent that ran the request anew): ignored."""

    def cancel_request(self) -> UpstreamRequest | None:
        if self._task_id is None or (self.repair.done and not self.repair.cut):
            return None  # no task, or it ended by itself
        body = {"jsonrpc": "2.0", "id": new_id("rpc"), "method": "CancelTask", "params": {"id": self._task_id}}
        return UpstreamRequest(orjson.dumps(body), {"content-type": "application/json", "a2a-version": "1.0"},
                               streams=False)

    def reattach_request(self, broke: bool = True) -> UpstreamRequest | None:
        """`SubscribeToTask` for the task the stream was running (it answers the task as it stands, then the rest),
        and if that fails too, `GetTask` for where the task got to. JSON-RPC 1.0, as a task's id is only known from
        a stream that began."""
        if self._task_id is None or self.repair.done or self._attempts >= 2:
            return None
        self._attempts += 1
        self._foreign = False
        self.restart()
        self._whole_task = self._attempts == 2
        method = "GetTask" if self._whole_task else "SubscribeToTask"
        body = {"jsonrpc": "2.0", "id": new_id("rpc"), "method": method, "params": {"id": self._task_id}}
        accept = "application/json" if self._whole_task else "text/event-stream"
        return UpstreamRequest(orjson.dumps(body), {"content-type": "application/json", "accept": accept,
                                                    "a2a-version": "1.0"}, streams=not self._whole_task,
                               json_reply=True)

    def on_body(self, body: Any, out: Events) -> None:
        if isinstance(body, dict):
            self.on_frame(body, out)
        else:
            self.repair.fail("upstream returned JSON that is not an object", ErrorCode.UPSTREAM_BAD_EVENT,
                             self.repair.out)

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        error = frame.get("error")
        if error is not None:
            if self._attempts:
                return  # a re-attach the agent refused: the next is tried, or the break is the run's error
            out.append(_rpc_error(error))
            return
        result = frame.get("result", frame)
        if not isinstance(result, dict):
            out.append(RunError("upstream sent a JSON-RPC result that is not an object", ErrorCode.UPSTREAM_BAD_EVENT))
            return
        kind, value = ("task", result) if self._whole_task else response_kind(result)
        task_id = value.get("id") if kind == "task" else value.get("taskId")
        if self._attempts and (self._foreign or task_id not in (None, self._task_id)):
            self._foreign = True
            return
        context_id = value.get("contextId")
        if ((task_id != self._task_id and _another(task_id, self._task_id))
                or (context_id != self._context_id and _another(context_id, self._context_id))):
            self.ignored += 1  # another task's update on this stream: not this run's words
            return
        if kind == "artifact-update":
            self._artifact(value, out)
        elif kind == "status-update":
            self._started(value.get("contextId"), value.get("taskId"), out)
            self._status(value.get("status"), out)
        elif kind == "task":
            self._started(value.get("contextId"), value.get("id"), out)
            for artifact in value.get("artifacts") or ():
                if isinstance(artifact, dict):  # after a re-attach, an artifact may go on streaming: left open
                    self._artifact({"artifact": artifact, "lastChunk": not self._attempts}, out, whole=True)
            self._status(value.get("status"), out)
        elif kind == "message":
            self._started(value.get("contextId"), value.get("taskId"), out)
            self._message(value, out)
            if value.get("taskId") is None:  # a reply without a task: the run is this message
                out.append(RunFinished())
        else:
            out.append(Raw("a2a", frame))  # a kind of response this version does not know: passed over

    def on_done(self, out: Events) -> None:
        self._end_without_state(out)

    def _started(self, context_id: Any, task_id: Any, out: Events) -> None:
        if isinstance(task_id, str) and self._task_id is None:
            self._task_id = task_id
        if self._context_id is None:
            self._context_id = context_id if isinstance(context_id, str) else None
            out.append(RunStarted(self._context_id, self._task_id))

    def _artifact(self, update: dict[str, Any], out: Events, whole: bool = False) -> None:
        """An artifact update; `whole`, an artifact as a task holds it (all its chunks so far): only what was not
        passed on already."""
        artifact = update.get("artifact")
        if not isinstance(artifact, dict):
            return
        self._started(update.get("contextId"), update.get("taskId"), out)
        artifact_id = artifact.get("artifactId")
        artifact_id = artifact_id if isinstance(artifact_id, str) else new_id("artifact")
        name = _str(artifact.get("name"), "artifact")
        said_before = self._said.get(artifact_id)
        seen = whole and said_before is not None
        skip = (said_before or 0) if whole else 0
        passed = 0
        for part in _parts(artifact):
            if not isinstance(part, dict):
                continue
            kind = part_kind(part)
            if kind == "text" and isinstance(part.get("text"), str):
                text = part["text"]
                if skip:
                    text, skip = text[skip:], max(0, skip - len(text))
                if not text and seen:
                    continue
                message_id = self._open_text.get(artifact_id)
                if message_id is None:
                    message_id = self._open_text[artifact_id] = new_id("msg")
                    out.append(TextStart(message_id))
                if text:
                    passed += len(text)
                    out.append(TextDelta(message_id, text))
            elif seen:
                continue  # data and files of an artifact already passed on
            elif kind == "data":
                out.append(Data(name, part.get("data"), artifact_id))
            elif kind == "file":
                out.append(Data("file", part.get("file", part), artifact_id))
        self._said[artifact_id] = (said_before or 0) + passed
        if update.get("lastChunk") is True and artifact_id in self._open_text:
            out.append(TextEnd(self._open_text.pop(artifact_id)))

    def _status(self, status: Any, out: Events) -> None:
        if not isinstance(status, dict):
            return
        name = state(status.get("state"))
        message = status.get("message")
        if name in PAUSED:
            self._close_text(out)
            text = text_of(_parts(message))
            out.append(Interrupt(self._task_id or new_id("task"), name.replace("-", "_"), text or None,
                                 _data_of(message)))
            out.append(RunFinished("interrupt"))
            return
        if name in _FAILED_CODES:
            self._close_text(out)
            text = text_of(_parts(message))
            out.append(RunError(text or f"upstream task {name}", _FAILED_CODES[name]))
            return
        if isinstance(message, dict):
            self._message(message, out)
        if name == "completed":
            self._close_text(out)
            out.append(RunFinished())
        elif name == "canceled":
            self._close_text(out)
            out.append(RunFinished("cancelled"))

    def _message(self, message: dict[str, Any], out: Events) -> None:
        """An agent's message: its text as one message, its ADK-marked data parts as tool calls and results, and
        any other data part as named data."""
        message_id = _str(message.get("messageId")) or new_id("msg")
        text_open = False
        for part in _parts(message):
            if not isinstance(part, dict):
                continue
            kind = part_kind(part)
            if kind == "text" and isinstance(part.get("text"), str):
                if not text_open:
                    self._close_text(out)
                    out.append(TextStart(message_id))
                    text_open = True
                out.append(TextDelta(message_id, part["text"]))
                continue
            if text_open:
                out.append(TextEnd(message_id))
                text_open = False
            metadata = part.get("metadata")
            mark = metadata.get("adk_type") if isinstance(metadata, dict) else None
            data = part.get("data")
            if mark == FUNCTION_CALL and isinstance(data, dict):
                call_id = _str(data.get("id")) or new_id("call")
                out.append(ToolCallStart(call_id, str(data.get("name") or "unknown_tool"), message_id))
                out.append(ToolCallArgs(call_id, orjson.dumps(data.get("args") or {}).decode()))
                out.append(ToolCallEnd(call_id))
            elif mark == FUNCTION_RESPONSE and isinstance(data, dict) and isinstance(data.get("id"), str):
                response = data.get("response")
                if isinstance(response, dict) and set(response) == {"result"}:
                    response = response["result"]
                out.append(ToolResult(data["id"], response))
            elif kind == "data":
                out.append(Data("data", data, message_id))
            elif kind == "file":
                out.append(Data("file", part.get("file", part), message_id))
        if text_open:
            out.append(TextEnd(message_id))

    def _close_text(self, out: Events) -> None:
        for message_id in self._open_text.values():
            out.append(TextEnd(message_id))
        self._open_text.clear()

    def _end_without_state(self, out: Events) -> None:
        """The stream ended with no final state: a task still working is a truncated run (repair says so); one
        that never started is an empty reply."""
        if self._context_id is None and self._task_id is None:
            out.append(RunError("upstream answered with no task and no message", ErrorCode.UPSTREAM_BAD_EVENT))


def _another(named: Any, this: str | None) -> bool:
    """Whether a response names a task (or context) other than the stream's, once the stream's is known."""
    return this is not None and isinstance(named, str) and named != this


def _rpc_error(error: Any) -> RunError:
    if not isinstance(error, dict):
        return RunError("upstream answered with a JSON-RPC error", ErrorCode.UPSTREAM_ERROR)
    message = _str(error.get("message"), "upstream error")
    code = error.get("code")
    data = error.get("data")
    info = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    reason = _str(info.get("reason")).lower()  # google.rpc.ErrorInfo's: the gateway's own code, past a gateway
    return RunError(f"{message} (A2A error {code})" if code is not None else message,
                    reason or ErrorCode.UPSTREAM_ERROR)


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _parts(message: Any) -> list[Any]:
    """A message's parts; 0.3's HTTP+JSON binding calls them `content`."""
    if not isinstance(message, dict):
        return []
    parts = message.get("parts") or message.get("content")
    return parts if isinstance(parts, list) else []


def _data_of(message: Any) -> Any:
    """The data parts of a status message, for an interrupt's payload (what the agent asks for, as data)."""
    data = [p.get("data") for p in _parts(message) if isinstance(p, dict) and part_kind(p) == "data"]
    return data[0] if len(data) == 1 else (data or None)
