"""The objects an A2A run's task is told in (`TaskUpdates`), and the client's call the request was read from
(`client_call`): what `encode.TaskWriter` writes a run's events as, in the client's version of A2A (the writer holds
one)."""

from __future__ import annotations

from typing import Any

from gateway.core.ids import new_id
from gateway.core.turn import Turn

from .wire import V03, message_v03, now, role_for, state_for, text_part

Response = tuple[str, dict[str, Any]]
"""One stream response: its kind (`task`, `status-update`, `artifact-update`) and its object."""


def client_call(request: Turn | None) -> dict[str, Any]:
    """The client's call as `request.parse_request` keeps it: its JSON-RPC id, whether it streams, the task it
    continues, its message, what it asked of the reply, and whether it came on HTTP+JSON (`binding`: answered with
    no JSON-RPC envelope); empty for a request of another dialect."""
    a2a = request.metadata.get("a2a") if request is not None else None
    return a2a if isinstance(a2a, dict) else {}



class TaskUpdates:
    """The objects a run's task is told in, as the client's version of A2A spells them: the task as submitted (with
    what the client said), its status updates and its artifact updates, each naming the task and its context."""

    __slots__ = ("_context_id", "_request", "_task_id", "history_length", "version")

    def __init__(self, request: Turn | None, *, spelling_of_client: bool = True) -> None:
        v03 = spelling_of_client and request is not None and request.variant == V03
        self.version = V03 if v03 else None
        """The version the responses are written in: the client's, or 1.0 (a task's record)."""
        self._request = request
        self._task_id = request.run_id if request is not None and request.run_id else new_id("task")
        self._context_id = request.conversation_id if request is not None and request.conversation_id \
            else new_id("ctx")
        length = client_call(request).get("history_length")
        self.history_length: int | None = length if isinstance(length, int) else None
        """How much of the task's history the client asked to see (`configuration.historyLength`)."""

    def started(self, task_id: str | None, context_id: str | None) -> None:
        """The run names its task and its context (an upstream's ids, when it says them): the updates from now on
        carry them."""
        if task_id:
            self._task_id = task_id
        if context_id:
            self._context_id = context_id

    def status(self, name: str, parts: list[dict[str, Any]] | None = None, *, final: bool = False,
                metadata: dict[str, Any] | None = None) -> Response:
        status: dict[str, Any] = {"state": state_for(self.version, name), "timestamp": now()}
        if parts:
            status["message"] = {"messageId": new_id("msg"), "contextId": self._context_id, "taskId": self._task_id,
                                 "role": role_for(self.version, "agent"), "parts": parts}
            if self.version == V03:
                status["message"]["kind"] = "message"
        update: dict[str, Any] = {"taskId": self._task_id, "contextId": self._context_id, "status": status}
        if metadata:
            update["metadata"] = metadata
        if self.version == V03:
            update["final"] = final
        return "status-update", update

    def artifact(self, artifact_id: str, name: str, parts: list[dict[str, Any]], *, append: bool,
                  last: bool) -> Response:
        update: dict[str, Any] = {"taskId": self._task_id, "contextId": self._context_id,
                                  "artifact": {"artifactId": artifact_id, "name": name, "parts": parts}}
        if append or self.version == V03:
            update["append"] = append
        if last or self.version == V03:
            update["lastChunk"] = last
        return "artifact-update", update

    def text(self, message_id: str, text: str, *, append: bool, last: bool) -> Response:
        """A chunk of the artifact a text message is written as (`response`, named by the message's id)."""
        return self.artifact(message_id, "response", [text_part(self.version, text)], append=append, last=last)

    def text_chunk(self, message_id: str, text: str) -> Response:
        """A chunk of a message's artifact after its first."""
        return self.text(message_id, text, append=True, last=False)

    def new_task(self) -> dict[str, Any]:
        """The task the request starts, as it is submitted."""
        task: dict[str, Any] = {"id": self._task_id, "contextId": self._context_id,
                                "status": {"state": state_for(self.version, "submitted"), "timestamp": now()}}
        history = self.history()
        if history:
            task["history"] = history
        return task

    def history(self) -> list[dict[str, Any]]:
        """What the client said in this request, for the task's history: its message as sent."""
        if self._request is None:
            return []
        sent = client_call(self._request).get("message")
        if isinstance(sent, dict):
            message = {**sent, "contextId": self._context_id, "taskId": self._task_id}
            return [message_v03(message) if self.version == V03 else message]
        messages = []
        for m in self._request.messages:
            if m.role == "user" and m.text:
                message = {"messageId": m.id or new_id("msg"), "contextId": self._context_id,
                           "taskId": self._task_id, "role": role_for(self.version, "user"),
                           "parts": [text_part(self.version, m.text)]}
                if self.version == V03:
                    message["kind"] = "message"
                messages.append(message)
        return messages
