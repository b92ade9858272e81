"""A task as the sum of its stream responses, as the SDK's task store makes it:

- a `task` response is the task; a status update replaces its status, the status message it replaces going to the
  history (so the last question, or the failure, stays in `status.message`), and adds its `metadata` to the task's;
- an artifact update adds an artifact, or (`append`) adds to one: text onto the text before it;
- a message goes to the history.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from gateway.core.queries import RunState
from gateway.core.text_pieces import TextPieces

from .wire import now, response_kind, state_for


def fold(task: dict[str, Any], kind: str, value: dict[str, Any]) -> None:
    """One stream response (0.3's names for its kind, `response_kind`) applied to the task it is about."""
    if kind == "task":
        task.update(copy.deepcopy(value))
    elif kind == "status-update":
        task.setdefault("id", value.get("taskId"))
        task.setdefault("contextId", value.get("contextId"))
        previous = task.get("status")
        if isinstance(previous, dict) and isinstance(previous.get("message"), dict):
            task.setdefault("history", []).append(previous["message"])
        task["status"] = copy.deepcopy(value.get("status"))
        metadata = value.get("metadata")
        if isinstance(metadata, dict) and metadata:
            before = task.get("metadata")
            task["metadata"] = {**(before if isinstance(before, dict) else {}), **copy.deepcopy(metadata)}
    elif kind == "artifact-update":
        artifact = value.get("artifact")
        if not isinstance(artifact, dict):
            return
        artifacts = task.setdefault("artifacts", [])
        for index, existing in enumerate(artifacts):
            if existing.get("artifactId") == artifact.get("artifactId"):
                if value.get("append"):
                    _extend(existing.setdefault("parts", []), artifact.get("parts") or [])
                else:
                    artifacts[index] = copy.deepcopy(artifact)
                return
        artifacts.append({**artifact, "parts": list(artifact.get("parts") or [])})
    elif kind == "message":
        task.setdefault("history", []).append(copy.deepcopy(value))


class Folded:
    """A task folded response by response (`fold`), with the text appended to an artifact held in pieces until the
    task is read: joining each chunk onto the text before it would copy the whole text at every chunk."""

    __slots__ = ("_appended", "_open", "_task")

    def __init__(self, task: dict[str, Any]) -> None:
        self._task = task
        self._open: tuple[Any, dict[str, Any]] | None = None
        """The artifact whose text is being appended to (its id), and its last part, which the text goes into."""
        self._appended = TextPieces()

    def add(self, kind: str, value: dict[str, Any]) -> None:
        appended = _appended_text(value) if kind == "artifact-update" else None
        if appended is not None and self._open is not None and self._open[0] == appended[0]:
            self._appended.add(appended[1])
            return
        self._settle()
        fold(self._task, kind, value)
        if appended is not None:
            self._open_last_part(appended[0])

    def has_id(self) -> bool:
        """Whether the task has been given its id yet."""
        return "id" in self._task

    def task(self) -> dict[str, Any]:
        """The task as it stands."""
        self._settle()
        return self._task

    def _open_last_part(self, artifact_id: Any) -> None:
        for artifact in self._task.get("artifacts") or ():
            if artifact.get("artifactId") == artifact_id:
                parts = artifact.get("parts")
                if parts and "text" in parts[-1]:
                    parts[-1] = dict(parts[-1])  # the task's own, to add to: not an update's
                    self._open = (artifact_id, parts[-1])
                return

    def _settle(self) -> None:
        if self._open is not None:
            if self._appended.pieces:
                part = self._open[1]
                part["text"] += self._appended.text()
                self._appended = TextPieces()
            self._open = None


def _appended_text(value: dict[str, Any]) -> tuple[Any, str] | None:
    """The artifact and the text of an update that appends one text chunk to it, which `fold` joins onto the text
    before it; None for any other."""
    artifact = value.get("artifact")
    if not value.get("append") or not isinstance(artifact, dict):
        return None
    parts = artifact.get("parts")
    if not isinstance(parts, list) or len(parts) != 1:
        return None
    part = parts[0]
    if not isinstance(part, dict) or not isinstance(text := part.get("text"), str) or not set(part) <= _TEXT_ONLY:
        return None
    return artifact.get("artifactId"), text


_TEXT_ONLY = frozenset({"text", "kind"})


def fold_updates(task: dict[str, Any], updates: list[bytes]) -> dict[str, Any]:
    """The task with a running run's updates (1.0 stream responses) applied."""
    folded = Folded(copy.deepcopy(task))
    for update in updates:
        kind, value = response_kind(orjson.loads(update))
        folded.add(kind, value)
    return folded.task()


def _extend(parts: list[dict[str, Any]], more: list[dict[str, Any]]) -> None:
    """Chunks of an artifact, joined: text onto the text before it (an empty closing chunk adds nothing)."""
    for part in more:
        if "text" in part and parts and "text" in parts[-1] and set(part) <= _TEXT_ONLY:
            parts[-1] = {**parts[-1], "text": parts[-1]["text"] + part["text"]}
        else:
            parts.append(part)


def canceled(task: dict[str, Any]) -> dict[str, Any]:
    """A task that waited for its client, cancelled: its question goes to the history."""
    task = copy.deepcopy(task)
    fold(task, "status-update", {"taskId": task.get("id"), "contextId": task.get("contextId"),
                                 "status": {"state": state_for(None, "canceled"), "timestamp": now()}})
    return task


def limit_history(task: dict[str, Any], length: int | None) -> dict[str, Any]:
    """The task with at most the last `length` messages of its history (None: all of it; 0: none, and no field)."""
    history = task.get("history")
    if length is None or not isinstance(history, list) or (len(history) <= length and length > 0):
        return task
    shown = {k: v for k, v in task.items() if k != "history"}
    if length > 0:
        shown["history"] = history[-length:]
    return shown


def task_of(found: RunState) -> dict[str, Any]:
    """The task as it stands: its record, with what a running task has said since."""
    return fold_updates(found.record.document, found.updates) if found.updates else found.record.document
