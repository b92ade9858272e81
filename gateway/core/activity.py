"""Activity messages and subagents for a client whose dialect has neither: each as named data, whole.

AG-UI streams an activity (a plan, a search's progress) as a snapshot moved on by JSON Patches, and a subagent as
started, finished or failed. A dialect that carries named data (Vercel `data-*` parts, A2A data artifacts) shows
each as one data part with a fixed id that the client replaces in place: the activity's whole content after every
change, the subagent's status after every step of its life.
"""

from __future__ import annotations

from typing import Any

from gateway.core.codec import drop_none
from gateway.core.events import (
    ActivityDelta,
    ActivitySnapshot,
    Data,
    SubagentError,
    SubagentFinished,
    SubagentStarted,
)
from gateway.core.state import StateTracker

ACTIVITY = "activity"
SUBAGENT = "subagent"
"""The names of the data parts: `data-activity` (id: the activity's message id) and `data-subagent` (id: the
subagent's run id)."""


class Shown:
    """The activities and subagents of one run, each as the client would hold it. An encoder makes one for the first
    of them it meets: most runs have none."""

    __slots__ = ("_activities", "_started")

    def __init__(self) -> None:
        self._activities: dict[str, tuple[str, StateTracker]] = {}
        self._started: dict[str, dict[str, Any]] = {}

    def activity(self, e: ActivitySnapshot | ActivityDelta) -> Data | None:
        """The activity as a data part after this event; None for a patch of one this run never showed whole, or one
        that does not apply (an AG-UI client warns and keeps what it had: so does the data part)."""
        held = self._activities.get(e.message_id)
        if isinstance(e, ActivityDelta):
            if held is None or not held[1].apply(e.patch):
                return None
            return _activity(e.message_id, e.activity_type, held[1].value, e.subagent_run_id)
        if held is None or e.replace or not isinstance(held[1].value, dict):
            tracker = StateTracker(e.content)
        else:
            tracker = StateTracker({**held[1].value, **e.content})
        self._activities[e.message_id] = (e.activity_type, tracker)
        return _activity(e.message_id, e.activity_type, tracker.value, e.subagent_run_id)

    def subagent(self, e: SubagentStarted | SubagentFinished | SubagentError) -> Data:
        """A subagent's status as a data part, replaced whole as it starts, finishes or fails (what it was started
        as is kept)."""
        if isinstance(e, SubagentStarted):
            started = self._started[e.subagent_run_id] = drop_none({
                "subagentRunId": e.subagent_run_id, "name": e.name, "description": e.description,
                "parentSubagentRunId": e.parent_subagent_run_id, "parentToolCallId": e.parent_tool_call_id,
                "parentMessageId": e.parent_message_id})
            return Data(SUBAGENT, {**started, "status": "running"}, id=e.subagent_run_id)
        started = self._started.pop(e.subagent_run_id, {"subagentRunId": e.subagent_run_id})
        if isinstance(e, SubagentFinished):
            status = drop_none({"status": e.outcome or "success", "result": e.result, "interruptIds": e.interrupt_ids})
        else:
            status = drop_none({"status": "error", "message": e.message, "code": e.code})
        return Data(SUBAGENT, {**started, **status}, id=e.subagent_run_id)


def _activity(message_id: str, activity_type: str, content: Any, subagent_run_id: str | None) -> Data:
    value = drop_none({"activityType": activity_type, "content": content, "subagentRunId": subagent_run_id})
    return Data(ACTIVITY, value, id=message_id)
