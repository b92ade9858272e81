"""`ListTasks`: the caller's tasks on this route (never another principal's: the server's runs are the caller's; on a
route that cannot tell its callers apart, only those of the `contextId` asked for),
most recently changed first, filtered by `contextId`, `status` and `statusTimestampAfter`, in pages of `pageSize`
(50 unless asked; at most 100) with an opaque `nextPageToken` (empty on the last page). `totalSize` counts every
task the filters take; a task's history is cut to `historyLength`, and its artifacts are left out unless
`includeArtifacts`."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Any

from gateway.core.errors import InvalidRequest
from gateway.core.queries import CallerRuns, RunRecord

from .fold import limit_history, task_of
from .params import count, param

DEFAULT_PAGE = 50
MAX_PAGE = 100
SCAN_BATCH = 500

_TOKEN = "lt1."


async def list_tasks(params: dict[str, Any], runs: CallerRuns) -> dict[str, Any]:
    wanted = _Filter(params)
    size = min(count(params, "pageSize") or DEFAULT_PAGE, MAX_PAGE)
    length = count(params, "historyLength")
    artifacts = param(params, "includeArtifacts") is True
    after = _cursor(param(params, "pageToken"))
    total = 0
    cursor: str | None = None
    while batch := await runs.newest(cursor, SCAN_BATCH, conversation=wanted.context):
        total += sum(1 for record in batch if wanted.takes(record.document))
        cursor = batch[-1].cursor
    page: list[RunRecord] = []
    more = False
    cursor = after
    while not more and (batch := await runs.newest(cursor, SCAN_BATCH, conversation=wanted.context)):
        for record in batch:
            if not wanted.takes(record.document):
                continue
            if len(page) == size:
                more = True
                break
            page.append(record)
        cursor = batch[-1].cursor
    tasks = []
    for record in page:
        task = record.document
        if record.status == "running":  # as it stands now, wherever it runs
            found = await runs.find(record.run_id)
            task = task_of(found) if found is not None else task
        task = limit_history(task, length)
        tasks.append(task if artifacts else {k: v for k, v in task.items() if k != "artifacts"})
    token = _TOKEN + base64.urlsafe_b64encode(page[-1].cursor.encode()).decode() if more and page[-1].cursor else ""
    return {"tasks": tasks, "nextPageToken": token, "pageSize": size, "totalSize": total}


def _cursor(token: Any) -> str | None:
    if token in (None, ""):
        return None
    if not isinstance(token, str) or not token.startswith(_TOKEN):
        raise InvalidRequest("params.pageToken is not a token this agent gave: pass an earlier nextPageToken")
    try:
        return base64.urlsafe_b64decode(token[len(_TOKEN):].encode()).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise InvalidRequest("params.pageToken is not a token this agent gave: pass an earlier "
                             "nextPageToken") from None


class _Filter:
    """What `ListTasks` asks a task to be."""

    def __init__(self, params: dict[str, Any]) -> None:
        context = param(params, "contextId")
        self.context = context if isinstance(context, str) and context else None
        status = param(params, "status")
        self.state = status if isinstance(status, str) and status not in ("", "TASK_STATE_UNSPECIFIED") else None
        after = param(params, "statusTimestampAfter")
        self.after = _time(after, "statusTimestampAfter") if after not in (None, "") else None

    def takes(self, task: dict[str, Any]) -> bool:
        found = task.get("status")
        status: dict[str, Any] = found if isinstance(found, dict) else {}
        if self.context is not None and task.get("contextId") != self.context:
            return False
        if self.state is not None and status.get("state") != self.state:
            return False
        if self.after is not None:
            stamp = status.get("timestamp")
            return isinstance(stamp, str) and _time(stamp, "status.timestamp") >= self.after
        return True


def _time(value: Any, name: str) -> datetime:
    try:
        found = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(f"params.{name} must be an ISO 8601 time, e.g. 2026-03-12T10:00:00Z") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)
