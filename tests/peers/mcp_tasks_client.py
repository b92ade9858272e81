"""MCP tasks (2025-11-25) read with the official Python SDK (`mcp` 2.3.0). It has no task client, and its session
checks a `tools/call`'s answer as a `CallToolResult` whatever the call asked (so it cannot create a task); but it
sends the typed task requests of `mcp_types` and reads each answer into their result types, so a task created by
another client of the same caller is read as the SDK reads it. Prints one JSON line each.

    .peers/mcp/bin/python tests/peers/mcp_tasks_client.py http://127.0.0.1:8000/mcp '<plan>' [--key KEY]

    {"get": ID} / {"result": ID} / {"cancel": ID}
                                            tasks/get (GetTaskResult), tasks/result (as the call's CallToolResult),
                                            tasks/cancel (CancelTaskResult)
    {"list": true}                          tasks/list (ListTasksResult)
    any step's "elicit": {action, content?} each elicitation/create during the step answered so (any step's "elicit"
                                            declares the elicitation capability); its line then has "elicited"

stdout: first {"protocolVersion"}; then each answer as the SDK's model dumps it (camelCase); a step that raised:
{"error": "<ExceptionType>: <message>"}. Exit 1 when the session could not be opened.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_client import command


async def run(url: str, plan: list[dict[str, Any]], key: str | None, timeout: float) -> None:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=timeout)
    answering: dict[str, Any] = {}
    """The step being run's "elicit", and what it was asked."""

    async def elicited(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        answering.setdefault("asked", []).append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        answer = answering.get("elicit") or {"action": "cancel"}
        return types.ElicitResult(action=answer["action"], content=answer.get("content"))

    eliciting = any("elicit" in step for step in plan)
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy",
                            read_timeout_seconds=timeout,
                            elicitation_callback=elicited if eliciting else None) as client:
        print(json.dumps({"protocolVersion": client.protocol_version}), flush=True)
        for step in plan:
            answering.clear()
            answering["elicit"] = step.get("elicit")
            try:
                answered = await _step(client.session, step)
                said = answered.model_dump(mode="json", by_alias=True, exclude_none=True)
            except Exception as exc:
                said = {"error": f"{type(exc).__name__}: {exc}"}
            if "asked" in answering:
                said["elicited"] = answering["asked"]
            print(json.dumps(said), flush=True)


async def _step(session: Any, step: dict[str, Any]) -> Any:
    if step.get("list"):
        return await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
    if "get" in step:
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=step["get"]))
        return await session.send_request(request, types.GetTaskResult)
    if "cancel" in step:
        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=step["cancel"]))
        return await session.send_request(request, types.CancelTaskResult)
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=step["result"]))
    return await session.send_request(request, types.CallToolResult)


if __name__ == "__main__":
    command(run)
