"""A2A's rules for a reply, as `a2a-sdk`'s client reads one: JSON-RPC 2.0 responses carrying the request's id
(on HTTP+JSON, the responses bare, told by their first having no `jsonrpc`), each result exactly one of task,
message, status update or artifact update (1.0) or an object with a known `kind` (0.3); a task's updates naming it;
a streamed task that ends in a final state or waits for the client; and a `SendMessage` reply that is one such
result. An error is JSON-RPC's (an integer code and a message), or HTTP+JSON's AIP-193 one (`{"error": {code,
status, message}}`)."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.conformance import (
    Answer,
    Violation,
    each_frame,
    in_frame_order,
    preview,
    sse_head,
    sse_json_frames,
)

from .wire import PAUSED, TERMINAL, response_kind, state

_KINDS_1_0 = ("task", "message", "statusUpdate", "artifactUpdate")
_KINDS_0_3 = ("task", "message", "status-update", "artifact-update")


def judge(answer: Answer) -> list[Violation]:
    media = answer.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "application/json":
        return _one_body(answer)
    found = sse_head(answer)
    frames = sse_json_frames(answer, found)
    stream = _Stream(found)
    for index, shown, value in each_frame(frames, found):
        stream.frame(index, shown, value)
    stream.end()
    return in_frame_order(found)


def _one_body(answer: Answer) -> list[Violation]:
    try:
        value = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        return [Violation("json", "the reply is not JSON", preview(answer.body))]
    found: list[Violation] = []
    rest = isinstance(value, dict) and "jsonrpc" not in value
    if rest and (answer.status >= 300) != ("error" in value):
        found.append(Violation("status", f"an HTTP+JSON error has an error status and a body saying it, and only it; "
                                         f"got {answer.status}"))
    elif not rest and answer.status != 200:
        found.append(Violation("status", f"a JSON-RPC reply is HTTP 200, errors included; got {answer.status}"))
    stream = _Stream(found)
    stream.frame(0, preview(answer.body), value)
    result = value if rest else value.get("result") if isinstance(value, dict) else None
    if isinstance(result, dict) and "error" not in result:
        kind, _ = response_kind(result)
        if kind not in ("task", "message"):
            found.append(Violation("send-result", f"SendMessage's result is a task or a message, not a {kind}"))
    return found


class _Stream:
    def __init__(self, found: list[Violation]) -> None:
        self.found = found
        self.task_id: str | None = None
        self.rpc_id: Any = ...
        self.last_state: str | None = None
        self.ended_at: int | None = None
        self.error = False
        self.rest: bool | None = None
        """The responses come bare (HTTP+JSON): known from the first."""

    def fail(self, rule: str, message: str, frame: str | None, index: int | None) -> None:
        self.found.append(Violation(rule, message, frame, index))

    def frame(self, index: int, frame: str, value: object) -> None:
        if self.rest is None:
            self.rest = isinstance(value, dict) and "jsonrpc" not in value
        if self.rest:
            self._rest_frame(index, frame, value)
            return
        if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
            self.fail("jsonrpc", 'each event is a JSON-RPC 2.0 response ("jsonrpc": "2.0")', frame, index)
            return
        if self.rpc_id is ... :
            self.rpc_id = value.get("id")
        elif value.get("id") != self.rpc_id:
            self.fail("id", "every response of a stream carries the request's id", frame, index)
        if "error" in value:
            error = value["error"]
            if not (isinstance(error, dict) and isinstance(error.get("code"), int)
                    and isinstance(error.get("message"), str)):
                self.fail("error", "a JSON-RPC error has an integer code and a message", frame, index)
            self.error = True
            return
        self._result(index, frame, value.get("result"))

    def _rest_frame(self, index: int, frame: str, value: object) -> None:
        """An HTTP+JSON response: the result itself, or an AIP-193 error (an `event: error` frame's)."""
        if not isinstance(value, dict) or "jsonrpc" in value:
            self.fail("binding", "an HTTP+JSON stream's responses are all bare, with no JSON-RPC envelope", frame,
                      index)
            return
        if "error" in value:
            error = value["error"]
            if not (isinstance(error, dict) and isinstance(error.get("code"), int)
                    and isinstance(error.get("status"), str) and isinstance(error.get("message"), str)):
                self.fail("error", "an HTTP+JSON error is AIP-193's: an integer code, a status and a message", frame,
                          index)
            self.error = True
            return
        self._result(index, frame, value)

    def _result(self, index: int, frame: str, result: object) -> None:
        if not isinstance(result, dict):
            self.fail("result", "a response has a result object or an error", frame, index)
            return
        if self.ended_at is not None:
            self.fail("after-final", "a response after the task's final state", frame, index)
        if "kind" in result:
            if result["kind"] not in _KINDS_0_3:
                self.fail("kind", f"a 0.3 result's kind is one of {', '.join(_KINDS_0_3)}", frame, index)
                return
        elif sum(key in result for key in _KINDS_1_0) != 1:
            self.fail("one-of", f"a stream response holds exactly one of {', '.join(_KINDS_1_0)}", frame, index)
            return
        kind, body = response_kind(result)
        task_id = body.get("id") if kind == "task" else body.get("taskId")
        if kind in ("task", "status-update", "artifact-update"):
            if not isinstance(task_id, str) or not isinstance(body.get("contextId"), str):
                self.fail("ids", f"a {kind} names its task and its context", frame, index)
            elif self.task_id is None:
                self.task_id = task_id
            elif task_id != self.task_id:
                self.fail("task-id", "every update of a stream is about the same task", frame, index)
        if kind == "status-update" or kind == "task":
            status = body.get("status")
            name = state(status.get("state")) if isinstance(status, dict) else "unknown"
            if name == "unknown" or name not in TERMINAL | PAUSED | {"submitted", "working"}:
                self.fail("state", "a status has a known task state", frame, index)
            self.last_state = name
            if name in TERMINAL | PAUSED:
                self.ended_at = index
        elif kind == "message":
            self.ended_at = index
        elif kind == "artifact-update" and not isinstance((body.get("artifact") or {}).get("parts"), list):
            self.fail("artifact", "an artifact update carries an artifact with parts", frame, index)

    def end(self) -> None:
        if self.ended_at is None and not self.error:
            self.fail("unfinished", "the stream ended before the task reached a final state or asked for input",
                      None, None)
