"""A task that asks its user (`input_required`), continued through `tasks/result` (2025-11-25), for a session whose
client declared form elicitation: the questions go on the `tasks/result` stream, tied to the task, and the answers
continue the task's run, as a call in band goes on (`elicitation.py`).

```
tasks/result {taskId}     the route's query waits for the task to stop working; its result, the stream's last piece
  input_required          held back by the endpoint (`Answered.then`, this module's `TaskInput`):
  ─▶ elicitation/create per question, _meta related-task {taskId}; the client's answer POSTed in the session
  ─▶ a run of the route that continues the task (CONTINUES: the task's id; its _meta the answers): the task's
     record and feed go on (working again, on any replica), and on this stream:
       notifications/tasks/status working, then at its end the task's new status and the result, tied to the task
  ─▶ its result ends tasks/result (completed, failed), or it asks again (input_required)
no answer in time         the held result: the question, and how to answer it by a later call
```
A client that does not elicit gets the held result with the question, as before (the task stays `input_required`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from gateway.core.capabilities import Answered, AtEndpoint

from .elicitation import Elicitation
from .request import CONVERSATION
from .task_continued import CONTINUES, RELATED
from .wire import ANSWERS, SAID, takes_forms


async def answering(routed: Answered, asked: AtEndpoint, session: str, message: dict[str, Any]) -> Answered:
    """A `tasks/result` handed to its route, continued past the task's questions when the session's client
    elicits."""
    if message.get("method") != "tasks/result" or routed.run is None or not session:
        return routed
    kept = await asked.session(session)
    if kept is None or not takes_forms(kept.get("capabilities")):
        return routed
    return replace(routed, then=TaskInput(asked, session, kept, message, routed.run))


class TaskInput(Elicitation):
    """What comes after a `tasks/result`'s answer, and after each run that continues its task: the task's
    questions asked in band, and their answers the request of a run that continues the task."""

    __slots__ = ("_route",)

    def __init__(self, asked: AtEndpoint, session: str, kept: dict[str, Any], call: dict[str, Any],
                 route: str) -> None:
        super().__init__(asked, session, kept, call)
        self._route = route
        """The route the task runs on (its id names it)."""

    def _tied(self, params: dict[str, Any]) -> dict[str, Any]:
        meta = params["_meta"] if isinstance(params.get("_meta"), dict) else {}
        return {**params, "_meta": {**meta, RELATED: {"taskId": self._task_id()}}}

    def _going_on(self, answers: list[dict[str, Any]], conversation: Any, meta: Any, text: Any) -> bytes:
        """A call of the task's tool that continues its run with the answers (and the text said so far, for the
        result to hold it all), answered as this `tasks/result`."""
        task_id = self._task_id()
        meta = meta if isinstance(meta, dict) else {}
        call_meta: dict[str, Any] = {ANSWERS: answers}
        if isinstance(meta.get(SAID), int) and meta[SAID] > 0 and isinstance(text, str):
            call_meta[SAID] = text[:meta[SAID]]
        return orjson.dumps({
            "jsonrpc": "2.0", "id": self._call.get("id"), "method": "tools/call", CONTINUES: task_id,
            "params": {"name": self._route, "arguments": {"message": "", CONVERSATION: conversation},
                       "_meta": call_meta}})

    def _task_id(self) -> str:
        params = self._call.get("params")
        task_id = params.get("taskId") if isinstance(params, dict) else None
        return task_id if isinstance(task_id, str) else ""
