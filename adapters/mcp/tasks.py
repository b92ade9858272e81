"""MCP's tasks (2025-11-25's experimental utility): a `tools/call` that carries `params.task` is answered with the
task as soon as its run has begun, and the run goes on as a run its clients ask about (`gateway.core.queries`): its
record in the store, its feed on the run board, so that any replica answers for it and a cancel from any replica
stops it where it runs.

```
tools/call {task: {ttl}}         a run whose id is the task's; CreateTaskResult (working) once the upstream
                                 has accepted the run, before its first event
tasks/get|result|cancel {taskId} the endpoint hands it to the route the id names; that route's query reads the
                                 caller's run (another principal's: not found, -32602)
  get      the task: working, input_required (the run ended asking), completed, failed (isError), cancelled
  result   waits (a stream, kept alive) until the task stops working, then the call's CallToolResult with
           _meta[related-task]
  cancel   stops the run wherever it runs; a task that has ended: -32602
tasks/list {cursor}              the routes' tasks one route after the other, each route's newest first (a
                                 route that cannot tell its callers apart lists none)
```
Task ids name their route (`<random>.<route, base64url>`): the random part makes them unguessable, and the
caller's principal binds them (the records and feeds are under it).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.capabilities import AgentDescription, Answered
from gateway.core.encoding import BodyEncoder
from gateway.core.errors import ListingNeedsCaller
from gateway.core.ids import new_id
from gateway.core.queries import (
    Answer,
    CallerRuns,
    FinalFrame,
    RunQueries,
    RunQuery,
    RunRecord,
    RunState,
    StreamedAnswer,
)
from gateway.core.turn import Turn

from . import resumption, task_continued
from .encode import McpEncoder, message_event
from .task_life import ended_status, expired, granted, status_changed

TASKS_VERSION = "2025-11-25"
"""The handshake version whose sessions are offered tasks."""
CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
EXECUTION = {"taskSupport": "optional"}
RELATED = "io.modelcontextprotocol/related-task"
METHODS = frozenset({"tasks/get", "tasks/result", "tasks/cancel", "tasks/list"})
TERMINAL = frozenset({"completed", "failed", "cancelled"})
POLL_INTERVAL_MS = 1000
PAGE = 50
ROUTED = "io.agent-gateway/task-query"
"""The key the endpoint adds to a task request it hands a route: only such a request is read as a query about a
task (a body of another dialect's with the same method, A2A 0.3's `tasks/get`, is not), with the route's name and
the next route a listing goes on to."""
RESULT_WAIT_S = 3600.0
"""How long one `tasks/result` waits for a task to stop working (a route's run is bounded by its own total timeout;
past this the client is told to ask again)."""
WAIT_STEP_S = 5.0
RECHECK_S = 0.05
"""Between a wait for the run's end and the next look: never a busy loop, whatever the board says."""
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603
NOT_FOUND = "Failed to retrieve task: Task not found"
STILL_WORKING = "the task is still working: ask again"
SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no"}


def offered(version: Any) -> bool:
    """Whether a session of this protocol version is offered tasks."""
    return bool(version == TASKS_VERSION)


def new_task(route: str, ttl: int | None) -> dict[str, Any]:
    """A task for a call of `route`'s tool, as the call creates it, kept for the ttl it is granted."""
    now = _now()
    return {"taskId": f"{new_id('mcpt')}.{_b64(route)}", "status": "working", "createdAt": now,
            "lastUpdatedAt": now, "ttl": granted(ttl), "pollInterval": POLL_INTERVAL_MS}


def route_of(task_id: Any) -> str | None:
    """The route a task id names, or None for what is no task id of the gateway's."""
    if not isinstance(task_id, str):
        return None
    _, dot, named = task_id.partition(".")
    return _unb64(named) if dot else None


# The endpoint's side: which route answers a task request.

def routed(message: dict[str, Any], session: str, routes: Sequence[AgentDescription]) -> Answered:
    """A task request handed to the route its task (or its listing's cursor) names; a task of no route the caller
    may use is not found."""
    id, method = message.get("id"), message.get("method")
    params = _object(message.get("params"))
    names = [route.name for route in routes]
    if method == "tasks/list":
        route, after = _read_cursor(params.get("cursor"), names[0] if names else None)
        if route not in names:
            return _error_answer(id, "Invalid cursor: pass an earlier nextCursor")
        position = names.index(route)
        then = names[position + 1] if position + 1 < len(names) else None
        asked = {**params, "cursor": after} if after is not None else {k: v for k, v in params.items() if k != "cursor"}
        body = {**message, "params": asked, ROUTED: {"route": route, "then": then}}
    else:
        route = route_of(params.get("taskId"))
        if route not in names:
            return _error_answer(id, NOT_FOUND)
        body = {**message, ROUTED: {"route": route}}
    return Answered(run=route, run_key=f"{session}:{id}", body=orjson.dumps(body))


# The route's side: the task's run, and the queries about it.

def read_query(body: dict[str, Any]) -> RunQuery | None:
    if (resuming := resumption.read_query(body)) is not None:
        return resuming
    method = body.get("method")
    if not isinstance(body.get(ROUTED), dict) or method not in METHODS:
        return None
    params = body.get("params")
    task_id = params.get("taskId") if isinstance(params, dict) else None
    return RunQuery(method, task_id if isinstance(task_id, str) else None, body, streams=method == "tasks/result")


async def answer_query(query: RunQuery, runs: CallerRuns) -> Answer | StreamedAnswer:
    if query.name == "stream/resume":
        return await resumption.answer_query(query, runs)
    request = query.request
    rpc_id, method = request.get("id"), query.name
    params = _object(request.get("params"))
    if method == "tasks/list":
        return _reply(rpc_id, await _list(params, request[ROUTED], runs))
    task_id = query.run_id
    found = await _find(task_id, runs) if task_id else None
    if task_id is None or found is None:
        return _error(rpc_id, INVALID_PARAMS, NOT_FOUND)
    if method == "tasks/get":
        return _reply(rpc_id, shown(task_of(found)))
    if method == "tasks/cancel":
        return await _cancel(rpc_id, task_id, found, runs)
    return StreamedAnswer(_result(rpc_id, task_id, runs), SSE_HEADERS, b": ping\n\n")


async def _find(task_id: str, runs: CallerRuns) -> RunState | None:
    """The caller's task as it stands; None for no task (a call's stream is none), or one whose ttl has passed,
    which is forgotten here (its run stopped first, if it still runs)."""
    found = await runs.find(task_id)
    if found is None or "taskId" not in found.record.document:
        return None
    if not expired(found.record.document):
        return found
    if found.running:
        await runs.cancel(task_id)
    await runs.forget(task_id)
    return None


def task_of(found: RunState) -> dict[str, Any]:
    """The task as it stands: its record, with what a running task has said since; one that stopped without saying
    how it ended (its replica stopped, or the gateway failed) has failed."""
    task = dict(found.record.document)
    for update in found.updates:
        task.update(orjson.loads(update))
    if task.get("status") == "working" and not found.running:
        status = found.record.status
        task["status"] = "cancelled" if status == "cancelled" else "failed"
        if status != "cancelled":
            task["statusMessage"] = "the task's run stopped without an answer"
    return task


def shown(task: dict[str, Any]) -> dict[str, Any]:
    """A task as `tasks/get` and `tasks/list` show it: without the call's result."""
    return {key: value for key, value in task.items() if key != "result"}


async def _cancel(rpc_id: Any, task_id: str, found: RunState, runs: CallerRuns) -> Answer:
    task = task_of(found)
    if task["status"] in TERMINAL:
        return _error(rpc_id, INVALID_PARAMS, f"Cannot cancel task: already in terminal status '{task['status']}'")
    if found.running:  # stopped wherever it runs; answered once it has stopped
        task = task_of(await runs.cancel(task_id) or found)
    else:  # it waits for its client: nothing runs, the task ends here
        task = {**task, "status": "cancelled", "lastUpdatedAt": _now()}
        await runs.save(replace(found.record, status="cancelled", document=task))
    return _reply(rpc_id, shown(task))


async def _result(rpc_id: Any, task_id: str, runs: CallerRuns) -> AsyncIterator[bytes]:
    """Once the task has stopped working: what its call would have returned, tied to the task; meanwhile, each
    change of its status."""
    deadline = time.monotonic() + RESULT_WAIT_S
    seen: str | None = None
    while True:
        found = await _find(task_id, runs)
        if found is None:
            yield FinalFrame(message_event(_error_body(rpc_id, INVALID_PARAMS, NOT_FOUND)))
            return
        task = task_of(found)
        if seen is not None and task["status"] != seen:
            yield status_changed(task)
        seen = task["status"]
        if task["status"] != "working":
            break
        if time.monotonic() > deadline:
            yield FinalFrame(message_event(_error_body(rpc_id, INTERNAL_ERROR, STILL_WORKING)))
            return
        await runs.wait_end(task_id, WAIT_STEP_S)
        await asyncio.sleep(RECHECK_S)
    result = task.get("result")
    if not isinstance(result, dict):
        said = task.get("statusMessage") or f"the task ended {task['status']} without a result"
        yield FinalFrame(message_event(_error_body(rpc_id, INTERNAL_ERROR, said)))
        return
    meta = _object(result.get("_meta"))
    yield FinalFrame(message_event({"jsonrpc": "2.0", "id": rpc_id,
                                    "result": {**result, "_meta": {**meta, RELATED: {"taskId": task_id}}}}))


async def _list(params: dict[str, Any], routed_as: dict[str, Any], runs: CallerRuns) -> dict[str, Any]:
    """A page of the route's tasks, newest first; the next cursor goes on in this route, else to the next one."""
    after = params.get("cursor") if isinstance(params.get("cursor"), str) else None
    try:
        records = await runs.newest(after, PAGE + 1)
    except ListingNeedsCaller:  # a route that cannot tell its callers apart lists no one's
        records = []
    page = records[:PAGE]
    tasks = []
    for record in page:
        if "taskId" not in record.document or expired(record.document):  # a call's stream is no task
            continue
        found = await runs.find(record.run_id) if record.status == "running" else None
        tasks.append(shown(task_of(found or RunState(record))))
    listed: dict[str, Any] = {"tasks": tasks}
    route, then = routed_as.get("route"), routed_as.get("then")
    if len(records) > PAGE and page[-1].cursor:
        listed["nextCursor"] = _cursor(route, page[-1].cursor)
    elif isinstance(then, str):
        listed["nextCursor"] = _cursor(then, None)
    return listed


class TaskLog:
    """A task's run as `tasks/get` and `tasks/result` read it (`gateway.core.queries.RunLog`): the task, and once
    the run ends, how it ended and the CallToolResult its call would have returned (one update, on the run's
    feed)."""

    __slots__ = ("_encoder", "_task")

    def __init__(self, turn: Turn) -> None:
        asked = _object(turn.metadata.get("mcp"))
        quiet = {**asked, "progressToken": None, "logLevel": None}  # the result only: nobody hears the progress
        self._encoder = McpEncoder(replace(turn, metadata={**turn.metadata, "mcp": quiet}))
        task = asked.get("task")
        self._task: dict[str, Any] = dict(task) if isinstance(task, dict) else new_task("", None)

    def feed(self, events: list[canonical.Event]) -> list[bytes]:
        if not events:
            return []
        self._encoder.encode(events)
        last = events[-1]
        if type(last) is not canonical.RunFinished and type(last) is not canonical.RunError:
            return []
        result = self._encoder.outcome
        ended: dict[str, Any] = {"status": ended_status(last, result), "lastUpdatedAt": _now()}
        if isinstance(last, canonical.RunError):
            ended["statusMessage"] = last.message
        if result is not None:
            ended["result"] = result
        self._task.update(ended)
        return [orjson.dumps(ended)]

    def document(self) -> dict[str, Any]:
        return self._task


class CreatedTaskEncoder(BodyEncoder):
    """A task call's reply: the task, working, as soon as the upstream has accepted the run (`opening`), before any
    event (an upstream may say nothing for minutes, then answer in one body); the run goes on without the client
    (its `TaskLog` keeps what it does)."""

    __slots__ = ("_answered", "_rpc_id", "_task")

    def __init__(self, request: Turn) -> None:
        super().__init__()
        asked = request.metadata["mcp"]
        self._rpc_id = asked.get("id")
        self._task = asked["task"]
        self._answered = False

    def opening(self) -> bytes:
        """The task, once the upstream has accepted the run: nothing of the run is needed for it."""
        return self.encode([canonical.RunStarted()])

    def encode(self, events: list[canonical.Event]) -> bytes:
        if self._answered or not events:
            return b""
        self._answered = True
        return orjson.dumps({"jsonrpc": "2.0", "id": self._rpc_id, "result": {"task": self._task}})


def new_encoder(request: Turn | None = None) -> McpEncoder | CreatedTaskEncoder:
    """A task call is answered with its task; the run that continues a task, as the `tasks/result` that continued
    it; a session's call, with the run as it goes, resumable; any other call, with the run as it goes."""
    if request is not None and task_continued.continues(request) is not None:
        return task_continued.ContinuedTaskEncoder(request)
    if request is not None and isinstance(_object(request.metadata.get("mcp")).get("task"), dict):
        return CreatedTaskEncoder(request)
    if request is not None and resumption.asked_stream(request) is not None and request.run_id:
        return resumption.StreamedCallEncoder(request)
    return McpEncoder(request)


def new_log(turn: Turn) -> TaskLog | resumption.CallLog:
    """A task's log, or a resumable call's."""
    if resumption.asked_stream(turn) is not None and not isinstance(_object(turn.metadata.get("mcp")).get("task"),
                                                                     dict):
        return resumption.CallLog(turn)
    return TaskLog(turn)


def continues(turn: Turn) -> str | None:
    """The task a run continues, or the call a run goes on with after its client answered."""
    return task_continued.continues(turn) or resumption.continues(turn)


def continued(turn: Turn, record: RunRecord) -> Turn:
    if task_continued.continues(turn) is not None:
        return task_continued.continued(turn, record)
    return resumption.continued(turn, record)


QUERIES_OF_TASKS = RunQueries(
    read=read_query, answer=answer_query, new_log=new_log, continues=continues, continued=continued,
    resumes=lambda turn: resumption.asked_stream(turn) is not None or task_continued.continues(turn) is not None)
"""A session's call goes on when its client leaves, for it to come back to; so does the run that continues a task
(its `tasks/result` client may leave and poll)."""


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _reply(rpc_id: Any, result: dict[str, Any]) -> Answer:
    return Answer(orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result}))


def _error_body(rpc_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}}


def _error(rpc_id: Any, code: int, message: str) -> Answer:
    return Answer(orjson.dumps(_error_body(rpc_id, code, message)))


def _error_answer(rpc_id: Any, message: str) -> Answered:
    return Answered(200, orjson.dumps(_error_body(rpc_id, INVALID_PARAMS, message)),
                    {"content-type": "application/json"})


def _cursor(route: Any, after: str | None) -> str:
    return _b64(orjson.dumps([route, after]).decode())


def _read_cursor(cursor: Any, first: str | None) -> tuple[str | None, str | None]:
    """The route a listing's cursor goes on in, and where in it; no cursor: the first route, from its newest."""
    if cursor is None:
        return first, None
    try:
        route, after = orjson.loads(_unb64(cursor) or "")
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None, None
    return (route, after) if isinstance(route, str) and (after is None or isinstance(after, str)) else (None, None)


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
