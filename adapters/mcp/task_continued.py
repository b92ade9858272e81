"""The run that continues a task which asked its user (see `task_input.py`): made by the endpoint for the
`tasks/result` that got the answers, it goes on with the task's record and feed (`RunQueries.continues`), and
answers that `tasks/result`."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from gateway.core import events as canonical
from gateway.core.queries import RunRecord
from gateway.core.turn import Turn

from .encode import McpEncoder, message_event
from .task_life import ended_status, status_changed

CONTINUES = "io.agent-gateway/continues-task"
"""The key of a `tools/call` the endpoint makes to continue a task, naming the task (only the endpoint sets it: a
client's own is dropped)."""
RELATED = "io.modelcontextprotocol/related-task"


def continues(turn: Turn) -> str | None:
    """The task a run continues, if the endpoint made it for that."""
    asked = turn.metadata.get("mcp")
    task_id = asked.get("continues") if isinstance(asked, dict) else None
    return task_id if isinstance(task_id, str) else None


def continued(turn: Turn, record: RunRecord) -> Turn:
    """The run that continues a task, given the task's record: the task working again, with no result yet."""
    asked = turn.metadata["mcp"]
    task = {key: value for key, value in record.document.items() if key not in ("result", "statusMessage")}
    task |= {"status": "working", "lastUpdatedAt": _now()}
    return replace(turn, metadata={**turn.metadata, "mcp": {**asked, "task": task}})


class ContinuedTaskEncoder(McpEncoder):
    """The run that continues a task, as the `tasks/result` that continued it answers: the task working again,
    then its new status and the call's result, tied to the task (no progress: a task's goes nowhere)."""

    __slots__ = ("_began", "_ended", "_task")

    def __init__(self, request: Turn) -> None:
        asked = request.metadata["mcp"]
        super().__init__(replace(request, metadata={**request.metadata, "mcp": {
            **asked, "progressToken": None, "logLevel": None}}))
        self._task: dict[str, Any] = dict(asked.get("task") or {})
        self._began = self._ended = False

    def tied(self, events: list[canonical.Event]) -> bytes:
        out = McpEncoder.encode(self, events)
        said = b""
        if not self._began:
            self._began = True
            said = status_changed(self._task)
        result = self.outcome
        if result is None or self._ended or not events:
            return said + out
        self._ended = True
        last = events[-1]
        ending = last if isinstance(last, canonical.RunFinished | canonical.RunError) else canonical.RunFinished()
        ended = {**self._task, "status": ended_status(ending, result), "lastUpdatedAt": _now()}
        if isinstance(last, canonical.RunError):
            ended["statusMessage"] = last.message
        meta = result["_meta"] if isinstance(result.get("_meta"), dict) else {}
        tied = {**result, "_meta": {**meta, RELATED: {"taskId": self._task.get("taskId")}}}
        return said + status_changed(ended) + message_event({"jsonrpc": "2.0", "id": self.id, "result": tied})


ContinuedTaskEncoder.encode = ContinuedTaskEncoder.tied  # type: ignore[method-assign, assignment]
"""Set after the class is made: an encoder's class gets its `encode` made from its handlers as it is defined."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
