"""Requests about tasks already started: `GetTask`, `CancelTask`, `SubscribeToTask` (and 0.3's `tasks/get`,
`tasks/cancel`, `tasks/resubscribe`), `ListTasks` (`listing.py`), the push notification configs (`push.py`) and
`GetExtendedAgentCard`. A task is a run (`gateway.core.queries`): the gateway finds it on whichever replica runs
it, or in the store once it has stopped; a task is only ever its caller's.

Params are read as ProtoJSON reads them: `contextId` or `context_id`, a number or a string of digits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson

from gateway.core.errors import InvalidRequest, NotSupported, RunNotCancelable, RunNotFound
from gateway.core.queries import ENDED, Answer, CallerRuns, Followed, RunQuery, StreamedAnswer
from gateway.core.turn import Turn

from .encode import BARE
from .errors import request_id
from .fold import canceled, limit_history, task_of
from .listing import list_tasks
from .params import count, param
from .push import answer_push
from .request import check_envelope
from .wire import BINDING, QUERIES, REST, TERMINAL, V03, message_v03, part_v03, state, task_v03

STREAMING = frozenset({"SubscribeToTask", "tasks/resubscribe"})
SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no"}


def follows(query: RunQuery) -> Followed | None:
    """`SubscribeToTask` naming a conversation (the id another dialect's client gave it, its `contextId` here) rather
    than a task: its running run as a task of that id, in the subscriber's version and binding."""
    params = query.request.get("params")
    task_id = params.get("id") if query.name in STREAMING and isinstance(params, dict) else None
    if not isinstance(task_id, str) or not task_id:
        return None
    rest = query.request.get(BINDING) == REST
    asked = {"id": None if rest else request_id(query.request), "stream": True, "binding": rest}
    return Followed(task_id, Turn(conversation_id=task_id, run_id=task_id, variant=QUERIES[query.name],
                                  metadata={"a2a": asked}))


def read_query(body: dict[str, Any]) -> RunQuery | None:
    method = body.get("method")
    if body.get("jsonrpc") != "2.0" or not isinstance(method, str) or method not in QUERIES:
        return None
    check_envelope(body)
    params = body.get("params")
    task_id = None
    if isinstance(params, dict):
        found = param(params, "taskId") if "Push" in method else params.get("id")
        task_id = found if isinstance(found, str) else None
    return RunQuery(method, task_id, body, streams=method in STREAMING)


async def answer_query(query: RunQuery, runs: CallerRuns) -> Answer | StreamedAnswer:
    method, request = query.name, query.request
    params = request.get("params")
    if not isinstance(params, dict):
        raise InvalidRequest(f"{method} needs params, an object")
    if method == "ListTasks":
        return reply(request, await list_tasks(params, runs))
    if "Push" in method:
        return reply(request, await answer_push(method, params, runs))
    if method == "GetExtendedAgentCard":
        raise NotSupported("this agent has no extended card (its card says capabilities.extendedAgentCard: false)")
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidRequest(f"{method} needs params.id, the task's id")
    version = QUERIES[method]
    if method in ("GetTask", "tasks/get"):
        length = count(params, "historyLength")
        found = await runs.find(task_id)
        if found is None:
            raise RunNotFound(f"there is no task {task_id!r}")
        return reply(request, spelled(version, limit_history(task_of(found), length)))
    if method in ("CancelTask", "tasks/cancel"):
        return reply(request, spelled(version, await _cancel(task_id, runs)))
    return await _subscribe(task_id, version, request, runs)


async def _cancel(task_id: str, runs: CallerRuns) -> dict[str, Any]:
    found = await runs.find(task_id)
    if found is None:
        raise RunNotFound(f"there is no task {task_id!r}")
    if found.running:  # stopped wherever it runs; answered once it has stopped
        return task_of(await runs.cancel(task_id) or found)
    record = found.record
    if record.status != "interrupt":
        raise RunNotCancelable(f"task {task_id!r} has already ended ({state(task_of(found)['status']['state'])})")
    task = canceled(record.document)  # nothing runs: the task that waited for its client ends here
    await runs.save(replace(record, status="cancelled", document=task))
    return task


async def _subscribe(task_id: str, version: str | None, request: dict[str, Any],
                     runs: CallerRuns) -> StreamedAnswer:
    found = await runs.find(task_id)
    if found is None:
        raise RunNotFound(f"there is no task {task_id!r}")
    task = task_of(found)
    if not found.running and found.record.status in ENDED:
        raise NotSupported(f"task {task_id!r} has ended ({state(task['status']['state'])}): there is nothing to "
                           "subscribe to; GetTask reads it")
    rpc_id = BARE if request.get(BINDING) == REST else request_id(request)
    return StreamedAnswer(_frames(rpc_id, version, task, runs.follow(task_id, len(found.updates))), SSE_HEADERS,
                          b": ping\n\n")


async def _frames(rpc_id: Any, version: str | None, task: dict[str, Any],
                  updates: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The task as it stands, then each update as it comes, in the subscriber's own JSON-RPC envelope (none on
    HTTP+JSON)."""
    yield _frame(rpc_id, {"kind": "task", **task_v03(task)} if version == V03 else {"task": task})
    async for update in updates:
        result = orjson.loads(update)
        yield _frame(rpc_id, result_v03(result) if version == V03 else result)


def _frame(rpc_id: Any, result: dict[str, Any]) -> bytes:
    response = result if rpc_id is BARE else {"jsonrpc": "2.0", "id": rpc_id, "result": result}
    return b"data: " + orjson.dumps(response) + b"\n\n"


def result_v03(result: dict[str, Any]) -> dict[str, Any]:
    """A 1.0 stream response as 0.3 writes it: `kind`, lowercase states, `final` on a status update."""
    if "statusUpdate" in result:
        update = result["statusUpdate"]
        status = {**update["status"], "state": state(update["status"].get("state"))}
        if isinstance(status.get("message"), dict):
            status["message"] = message_v03(status["message"])
        return {"kind": "status-update", **update, "status": status, "final": status["state"] in TERMINAL}
    if "artifactUpdate" in result:
        update = result["artifactUpdate"]
        artifact = update["artifact"]
        parts = [part_v03(p) for p in artifact.get("parts") or ()]
        return {"kind": "artifact-update", "append": False, "lastChunk": False, **update,
                "artifact": {**artifact, "parts": parts}}
    if "task" in result:
        return {"kind": "task", **task_v03(result["task"])}
    return {"kind": "message", **message_v03(result.get("message") or {})}


def spelled(version: str | None, task: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "task", **task_v03(task)} if version == V03 else task


def reply(request: dict[str, Any], result: Any) -> Answer:
    """The result in the client's JSON-RPC response; on HTTP+JSON, as it is (`{}` for none: a deleted config)."""
    if request.get(BINDING) == REST:
        return Answer(orjson.dumps({} if result is None else result))
    return Answer(orjson.dumps({"jsonrpc": "2.0", "id": request_id(request), "result": result}))
