"""An A2A agent's reply into canonical events: a stream of task, status-update, artifact-update and message
responses (each in a JSON-RPC envelope, or bare on the HTTP+JSON binding), or one JSON body (`SendMessage`'s
result, or an error sent before any stream: JSON-RPC's, or HTTP+JSON's AIP-193 one). The calls about the task (its
cancel, a re-attach) go on the binding its stream came on.

- The task opens the run (its `contextId` the thread, its `id` the run).
- Artifact chunks are text (one message per artifact, ended by `lastChunk`) or named data; file parts are data.
  A chunk that does not say `append` replaces the artifact: text that goes on from what was said adds the rest, and
  other text (a rewrite) is a new message, since what a client was shown cannot be taken back.
- A status update's message is text, or tool activity where its data parts carry Google ADK's marks.
- `input-required` and `auth-required` are an interrupt named by the task's id: the client's answer continues the
  task. `completed` finishes the run (cut short where the update's, or the task's, `metadata.stopReason` says so, as
  the gateway writes it), `canceled` cancels it, `failed` and `rejected` fail it with the status message's text.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson

from gateway.core import events as canonical
from gateway.core.codec import UpstreamRequest
from gateway.core.decoding import Events, JsonSSEOrBodyDecoder, str_or
from gateway.core.errors import ErrorCode
from gateway.core.ids import new_id
from gateway.core.sse import DEFAULT_MAX_FRAME

from .reading import close_texts, data_of, parts_of, read_message
from .wire import PAUSED, STOP_REASON, part_kind, response_kind, state, text_of

_FAILED_CODES = {"failed": ErrorCode.UPSTREAM_ERROR, "rejected": ErrorCode.UPSTREAM_REJECTED}


class A2ADecoder(JsonSSEOrBodyDecoder):
    __slots__ = ("_attempts", "_context_id", "_foreign", "_open_text", "_rest", "_said", "_steady_artifact",
                 "_task_id", "_whole_task")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes, json_starts=b"{[")
        self._task_id: str | None = None
        self._context_id: str | None = None
        self._open_text: dict[str, str] = {}
        """Artifacts being written as text: artifact id -> the message id they stream into."""
        self._said: dict[str, list[str]] = {}
        """The text of each artifact passed on, in pieces: a replacement (a task read again after a re-attach
        among them) adds only what goes on from it."""
        self._attempts = 0
        self._whole_task = False
        """The body being read is `GetTask`'s: its result is the task itself."""
        self._foreign = False
        """The body read after a re-attach is about another task (an agent that ran the request anew): ignored."""
        self._steady_artifact = ""
        """The artifact the last steady text delta wrote to (`steady_text`)."""
        self._rest: bool | None = None
        """The agent answers on HTTP+JSON (its responses come bare, with no JSON-RPC envelope): the calls about its
        task go there too. Known from the first response."""

    def cancel_request(self) -> UpstreamRequest | None:
        if self._task_id is None or (self.repair.done and not self.repair.cut):
            return None  # no task, or it ended by itself
        return self.task_call("CancelTask", self._task_id, streams=False)

    def reattach_request(self, broke: bool = True) -> UpstreamRequest | None:
        """`SubscribeToTask` for the task the stream was running (it answers the task as it stands, then the rest),
        and if that fails too, `GetTask` for where the task got to."""
        if self._task_id is None or self.repair.done or self._attempts >= 2:
            return None
        self._attempts += 1
        self._foreign = False
        self.restart()
        self._whole_task = self._attempts == 2
        if self._whole_task:
            return self.task_call("GetTask", self._task_id, streams=False, accept="application/json",
                                  json_reply=True)
        return self.task_call("SubscribeToTask", self._task_id, streams=True, accept="text/event-stream",
                              json_reply=True)

    def task_call(self, method: str, task_id: str, *, streams: bool, accept: str | None = None,
                  json_reply: bool = False) -> UpstreamRequest:
        """A call about the task, on the binding the run was sent on: HTTP+JSON's for an agent that answered bare."""
        return _task_call(method, task_id, streams=streams, accept=accept, json_reply=json_reply,
                          rest=self._rest is True)

    def on_body(self, body: Any, out: Events) -> None:
        if isinstance(body, dict):
            self.on_frame(body, out)
        else:
            self.repair.fail("upstream returned JSON that is not an object", ErrorCode.UPSTREAM_BAD_EVENT,
                             self.repair.out)

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        if self._rest is None:
            self._rest = "jsonrpc" not in frame
        error = frame.get("error")
        if error is not None:
            if self._attempts:
                return  # a re-attach the agent refused: the next is tried, or the break is the run's error
            out.append(_rpc_error(error))
            return
        result = frame.get("result", frame)
        if not isinstance(result, dict):
            out.append(canonical.RunError("upstream sent a JSON-RPC result that is not an object",
                                          code=ErrorCode.UPSTREAM_BAD_EVENT))
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
            self._status(value.get("status"), value.get("metadata"), out)
        elif kind == "task":
            self._started(value.get("contextId"), value.get("id"), out)
            for artifact in value.get("artifacts") or ():
                if isinstance(artifact, dict):  # after a re-attach, an artifact may go on streaming: left open
                    self._artifact({"artifact": artifact, "lastChunk": not self._attempts}, out, whole=True)
            self._status(value.get("status"), value.get("metadata"), out)
        elif kind == "message":
            self._started(value.get("contextId"), value.get("taskId"), out)
            read_message(value, self._open_text, out)
            if value.get("taskId") is None:  # a reply without a task: the run is this message
                out.append(canonical.RunFinished())
        else:
            out.append(canonical.Raw("a2a", event=frame))  # a kind of response this version does not know: passed over

    def steady_text(self, frame: dict[str, Any]) -> str | None:
        """An update of this task's text artifact already open, of one text part and not its last chunk."""
        if self._attempts or self._context_id is None or frame.get("error") is not None:
            return None
        result = frame.get("result", frame)
        if not isinstance(result, dict):
            return None
        kind, value = response_kind(result)
        if kind != "artifact-update" or value.get("lastChunk") is True or value.get("append") is not True:
            return None
        task_id, context_id = value.get("taskId"), value.get("contextId")
        if _another(task_id, self._task_id) or _another(context_id, self._context_id):
            return None
        artifact = value.get("artifact")
        artifact_id = artifact.get("artifactId") if isinstance(artifact, dict) else None
        if not isinstance(artifact_id, str) or artifact_id not in self._open_text:
            return None
        parts = parts_of(artifact)
        part = parts[0] if len(parts) == 1 else None
        text = part.get("text") if isinstance(part, dict) and part_kind(part) == "text" else None
        if not isinstance(text, str):
            return None
        self._steady_artifact = artifact_id
        return text

    def on_steady_text(self, text: str, out: Events) -> None:
        if text:
            artifact_id = self._steady_artifact
            out.append(canonical.TextDelta(self._open_text[artifact_id], text))
            self._said[artifact_id].append(text)

    def on_done(self, out: Events) -> None:
        self._end_without_state(out)

    def _started(self, context_id: Any, task_id: Any, out: Events) -> None:
        if isinstance(task_id, str) and self._task_id is None:
            self._task_id = task_id
        if self._context_id is None:
            self._context_id = context_id if isinstance(context_id, str) else None
            out.append(canonical.RunStarted(thread_id=self._context_id, run_id=self._task_id))

    def _artifact(self, update: dict[str, Any], out: Events, *, whole: bool = False) -> None:
        """An artifact update; `whole`, an artifact as a task holds it (all its chunks so far), which like an update
        that does not `append` replaces what was said of it."""
        artifact = update.get("artifact")
        if not isinstance(artifact, dict):
            return
        self._started(update.get("contextId"), update.get("taskId"), out)
        artifact_id = artifact.get("artifactId")
        artifact_id = artifact_id if isinstance(artifact_id, str) else new_id("artifact")
        name = str_or(artifact.get("name"), "artifact")
        said = self._said.get(artifact_id)
        replaces = said is not None and (whole or update.get("append") is not True)
        texts: list[str] = []
        for part in parts_of(artifact):
            if not isinstance(part, dict):
                continue
            kind = part_kind(part)
            if kind == "text" and isinstance(part.get("text"), str):
                if replaces:
                    texts.append(part["text"])
                else:
                    self._say(artifact_id, part["text"], out)
            elif whole and said is not None:
                continue  # data and files of an artifact already passed on
            elif kind == "data":
                out.append(canonical.Data(name, part.get("data"), id=artifact_id))
            elif kind == "file":
                out.append(canonical.Data("file", part.get("file", part), id=artifact_id))
        if texts:
            self._replace(artifact_id, "".join(texts), out)
        self._said.setdefault(artifact_id, [])  # seen, though it held no text: its data was passed on
        if update.get("lastChunk") is True and artifact_id in self._open_text:
            out.append(canonical.TextEnd(self._open_text.pop(artifact_id)))

    def _say(self, artifact_id: str, text: str, out: Events) -> None:
        """Text added to an artifact, in the message it is written as."""
        message_id = self._open_text.get(artifact_id)
        if message_id is None:
            message_id = self._open_text[artifact_id] = new_id("msg")
            out.append(canonical.TextStart(message_id))
        said = self._said.setdefault(artifact_id, [])
        if text:
            said.append(text)
            out.append(canonical.TextDelta(message_id, text))

    def _replace(self, artifact_id: str, text: str, out: Events) -> None:
        """An artifact's text replaced: what goes on from the text said adds the rest to its message; any other
        text, or text after its message ended, is a message of its own. A client keeps what it was shown: the same
        text, or less of it (a task read while its store lags), adds nothing."""
        before = "".join(self._said[artifact_id])
        if before.startswith(text):
            return
        if text.startswith(before) and artifact_id in self._open_text:
            self._say(artifact_id, text[len(before):], out)
            return
        if artifact_id in self._open_text:
            out.append(canonical.TextEnd(self._open_text.pop(artifact_id)))
        self._said[artifact_id] = []
        self._say(artifact_id, text, out)

    def _status(self, status: Any, metadata: Any, out: Events) -> None:
        if not isinstance(status, dict):
            return
        name = state(status.get("state"))
        message = status.get("message")
        if name in PAUSED:
            close_texts(self._open_text, out)
            text = text_of(parts_of(message))
            out.append(canonical.Interrupt(self._task_id or new_id("task"), reason=name.replace("-", "_"),
                                           message=text or None, payload=data_of(message)))
            out.append(canonical.RunFinished(outcome="interrupt"))
            return
        if name in _FAILED_CODES:
            close_texts(self._open_text, out)
            text = text_of(parts_of(message))
            out.append(canonical.RunError(text or f"upstream task {name}", code=_FAILED_CODES[name]))
            return
        if isinstance(message, dict):
            read_message(message, self._open_text, out)
        if name == "completed":
            close_texts(self._open_text, out)
            reason = metadata.get(STOP_REASON) if isinstance(metadata, dict) else None
            out.append(canonical.RunFinished(stop_reason=reason if reason in ("length", "content_filter") else None))
        elif name == "canceled":
            close_texts(self._open_text, out)
            out.append(canonical.RunFinished(outcome="cancelled"))

    def _end_without_state(self, out: Events) -> None:
        """The stream ended with no final state: a task still working is a truncated run (repair says so); one
        that never started is an empty reply."""
        if self._context_id is None and self._task_id is None:
            out.append(canonical.RunError("upstream answered with no task and no message",
                                          code=ErrorCode.UPSTREAM_BAD_EVENT))


def _another(named: Any, this: str | None) -> bool:
    """Whether a response names a task (or context) other than the stream's, once the stream's is known."""
    return this is not None and isinstance(named, str) and named != this


_REST_CALLS = {"CancelTask": ("POST", ":cancel"), "SubscribeToTask": ("POST", ":subscribe"), "GetTask": ("GET", "")}
"""Where each call about a task goes on HTTP+JSON: `{url}/tasks/{id}<suffix>`."""


def _task_call(method: str, task_id: str, *, streams: bool, accept: str | None = None, json_reply: bool = False,
               rest: bool = False) -> UpstreamRequest:
    """A 1.0 call about the task, on the binding its stream came on (a task's id is only known from a stream that
    began, which 1.0 spoke): JSON-RPC, or HTTP+JSON's path with no body."""
    headers = {"a2a-version": "1.0"}
    if accept is not None:
        headers["accept"] = accept
    if rest:
        verb, suffix = _REST_CALLS[method]
        return UpstreamRequest(b"", headers, streams=streams, path=f"/tasks/{quote(task_id, safe='')}{suffix}",
                               json_reply=json_reply, method=verb)
    body = {"jsonrpc": "2.0", "id": new_id("rpc"), "method": method, "params": {"id": task_id}}
    headers["content-type"] = "application/json"
    return UpstreamRequest(orjson.dumps(body), headers, streams=streams, json_reply=json_reply)


def _rpc_error(error: Any) -> canonical.RunError:
    """A JSON-RPC error (its ErrorInfo first in `data`), or HTTP+JSON's AIP-193 one (in `details`, before the stream
    or in an `event: error` frame), as the run's error: the ErrorInfo's reason its code."""
    if not isinstance(error, dict):
        return canonical.RunError("upstream answered with an A2A error", code=ErrorCode.UPSTREAM_ERROR)
    message = str_or(error.get("message"), "upstream error")
    code = error.get("code")
    rest = "data" not in error and ("details" in error or isinstance(error.get("status"), str))
    details = error.get("details") if rest else error.get("data")
    info = next((d for d in details if isinstance(d, dict) and "reason" in d), {}) if isinstance(details, list) \
        else {}
    reason = str_or(info.get("reason")).lower()  # google.rpc.ErrorInfo's: the gateway's own code, past a gateway
    metadata = info.get("metadata")
    if rest and reason == "internal_error" and isinstance(metadata, dict):  # on HTTP+JSON, in the metadata
        reason = str_or(metadata.get("code"), reason)
    if rest:
        said = " ".join(str(x) for x in (code, error.get("status"), info.get("reason")) if x)
        return canonical.RunError(f"{message} (HTTP+JSON error {said})" if said else message,
                                  code=reason or ErrorCode.UPSTREAM_ERROR)
    return canonical.RunError(f"{message} (A2A error {code})" if code is not None else message,
                              code=reason or ErrorCode.UPSTREAM_ERROR)
