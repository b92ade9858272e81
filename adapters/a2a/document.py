"""A run's task as its watchers see it, in 1.0's spelling: kept as the run's record (`gateway.core.queries`) for
`GetTask`, `ListTasks` and `SubscribeToTask`, and each of its responses sent to the watchers as it comes."""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.turn import Turn

from .encode import TaskWriter
from .fold import Folded
from .updates import client_call
from .wire import wrap


class TaskLog:
    """A run's task as its watchers see it (`gateway.core.queries.RunLog`): each response the run's events make, as
    a 1.0 stream response, and the task they make."""

    __slots__ = ("_folded", "_writer")

    def __init__(self, turn: Turn) -> None:
        self._writer = TaskWriter(turn, defaultdict(int), spelling_of_client=False)
        earlier = client_call(turn).get("task")
        if isinstance(earlier, dict):  # the request continues a task: its history gets the new message
            task = copy.deepcopy(earlier)
            task.setdefault("history", []).extend(self._writer.updates.history())
        else:
            task = self._writer.updates.new_task()
        self._folded = Folded(task)

    def feed(self, events: list[canonical.Event]) -> list[bytes]:
        updates = []
        folded, writer = self._folded, self._writer
        for e in events:
            for kind, value in writer.event(e):
                if kind == "task":
                    continue  # the task is already what it says (see `__init__`)
                folded.add(kind, value)
                updates.append(orjson.dumps(wrap(None, kind, value)))
        return updates

    def document(self) -> dict[str, Any]:
        return self._folded.task()
