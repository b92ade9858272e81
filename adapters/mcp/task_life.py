"""How long a task lives, and what its client hears of it as it goes (2025-11-25's tasks, `tasks.py`).

```
tools/call {task: {ttl}}     granted: the ttl asked, within [MIN_TTL_MS, MAX_TTL_MS] (none asked: the most), and
                             said in the CreateTaskResult and every answer about the task
createdAt + ttl passed       the task is gone, on every replica (each reads its createdAt and ttl from the record
                             they share): tasks/get, result and cancel answer as for no task (-32602), tasks/list
                             leaves it out; the first replica asked deletes its record (and stops its run)
tasks/result, waiting        notifications/tasks/status (the whole task, as tasks/get shows it) each time the task
                             it waits on changes status, before what follows the change
```
The status goes on the `tasks/result` stream, the only stream of the session's that is about the task: the
gateway keeps no GET stream (see `resumption.py`), and `tasks/get` is a poll the spec asks not to upgrade.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from gateway.core import events as canonical

from .encode import message_event

MAX_TTL_MS = 24 * 3600 * 1000
"""The longest a task is kept from its creation, whatever its client asks: a day to come back for its result."""
MIN_TTL_MS = 1000
"""The shortest: a task forgotten sooner could not be asked about once (the poll interval is a second)."""
STATUS = "notifications/tasks/status"


def granted(asked: int | None) -> int:
    """The ttl a task gets, given the one its call asked for (milliseconds)."""
    return MAX_TTL_MS if asked is None else max(MIN_TTL_MS, min(asked, MAX_TTL_MS))


def expired(task: dict[str, Any], now: float | None = None) -> bool:
    """Whether the task's ttl has passed since its creation (a task without one, or without a readable creation
    time, never expires here: the store's own TTL forgets it)."""
    ttl, created = task.get("ttl"), task.get("createdAt")
    if not isinstance(ttl, int) or not isinstance(created, str):
        return False
    try:
        born = datetime.fromisoformat(created).timestamp()
    except ValueError:
        return False
    return (time.time() if now is None else now) >= born + ttl / 1000


def status_changed(task: dict[str, Any]) -> bytes:
    """The notification of a task's new status: the whole task, without the call's result (and without the
    related-task `_meta`, the task id being in it)."""
    shown = {key: value for key, value in task.items() if key != "result"}
    return message_event({"jsonrpc": "2.0", "method": STATUS, "params": shown})


def ended_status(last: canonical.RunFinished | canonical.RunError, result: dict[str, Any] | None) -> str:
    """How a run's end shows in its task: a result with `isError` failed (as 2025-11-25 has it)."""
    if isinstance(last, canonical.RunError) or (result is not None and result.get("isError") is True):
        return "failed"
    if last.outcome == "cancelled":
        return "cancelled"
    if last.outcome == "interrupt" or (result is not None and result["structuredContent"].get("interrupts")):
        return "input_required"
    return "completed"
