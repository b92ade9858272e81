"""`GetTask` and `CancelTask` (`tasks/get`, `tasks/cancel` in 0.3): the task of a run the gateway served, as it
stands. A run still streaming is `working` (cancelling it ends its stream as `canceled` and cancels the upstream's
run); a finished one is read from the conversation store, so any replica answers."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import RunQuery, RunRecord
from gateway.core.errors import InvalidRequest
from gateway.core.ids import new_id

from .wire import V03, role_for, state_for, text_part

QUERIES = {"GetTask": (False, None), "CancelTask": (True, None), "tasks/get": (False, V03), "tasks/cancel": (True, V03)}
"""The JSON-RPC methods about a task: whether they cancel it, and the version they belong to."""

_STATES = {"running": "working", "success": "completed", "interrupt": "input-required", "cancelled": "canceled",
           "error": "failed"}


def read_query(body: dict[str, Any]) -> RunQuery | None:
    method = body.get("method")
    if body.get("jsonrpc") != "2.0" or not isinstance(method, str) or method not in QUERIES:
        return None
    params = body.get("params")
    task_id = params.get("id") if isinstance(params, dict) else None
    if not isinstance(task_id, str) or not task_id:
        raise InvalidRequest(f"{method} needs params.id, the task's id")
    return RunQuery(task_id, cancel=QUERIES[method][0])


def answer_query(query: RunQuery, run: RunRecord | None, request: dict[str, Any]) -> tuple[int, bytes]:
    version = QUERIES[request["method"]][1]  # read_query took only these
    rpc_id = request.get("id")
    if run is None:
        return _error(rpc_id, -32001, f"Task {query.run_id} not found", "TASK_NOT_FOUND")
    if query.cancel and run.status not in ("running", "interrupt"):
        return _error(rpc_id, -32002, "Task cannot be canceled", "TASK_NOT_CANCELABLE")
    status = "cancelled" if query.cancel else run.status
    task = _task(version, run, status)
    result = {"kind": "task", **task} if version == V03 else task
    return 200, orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result})


def _task(version: str | None, run: RunRecord, status: str) -> dict[str, Any]:
    context_id = run.conversation_id or ""
    state: dict[str, Any] = {"state": state_for(version, _STATES[status])}
    said = run.error if status == "error" else " ".join(run.questions) if status == "interrupt" else None
    if said:
        message = {"messageId": new_id("msg"), "contextId": context_id, "taskId": run.run_id,
                   "role": role_for(version, "agent"), "parts": [text_part(version, said)]}
        state["message"] = {"kind": "message", **message} if version == V03 else message
    task: dict[str, Any] = {"id": run.run_id, "contextId": context_id, "status": state}
    artifacts = [{"artifactId": m.id or new_id("msg"), "name": "response", "parts": [text_part(version, m.text)]}
                 for m in run.messages if m.role == "assistant" and m.text]
    if artifacts:
        task["artifacts"] = artifacts
    return task


def _error(rpc_id: Any, code: int, message: str, reason: str) -> tuple[int, bytes]:
    data = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org",
             "metadata": {}}]
    return 200, orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message,
                                                                       "data": data}})
