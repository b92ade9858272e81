"""A2A's JSON-RPC calls made on the HTTP+JSON binding instead, for tests written in JSON-RPC's terms that hold on both
bindings: `call` sends the method's REST call (`POST {url}/message:send`, `GET {url}/tasks/{id}`, ...) and gives back
its answer shaped as JSON-RPC's (`{"result": ...}`, or `{"error": {"code", "message", "data"}}` with the AIP-193
body's details as `data` and the JSON-RPC code its ErrorInfo reason stands for), so the same assertions read it;
`frames` streams the bare SSE responses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import orjson

CODES = {"TASK_NOT_FOUND": -32001, "TASK_NOT_CANCELABLE": -32002, "PUSH_NOTIFICATION_NOT_SUPPORTED": -32003,
         "UNSUPPORTED_OPERATION": -32004, "CONTENT_TYPE_NOT_SUPPORTED": -32005, "VERSION_NOT_SUPPORTED": -32009,
         "INVALID_REQUEST": -32600, "METHOD_NOT_FOUND": -32601, "INVALID_PARAMS": -32602}
"""The JSON-RPC code of each ErrorInfo reason; any other reason (the gateway's own codes) is -32603."""


def route(method: str, params: Any) -> tuple[str, str, dict[str, Any] | None, dict[str, Any]]:
    """The HTTP method, the path under the route's URL, the JSON body and the query of a JSON-RPC call."""
    params = dict(params or {})
    if "task_id" in params:  # ProtoJSON's other spelling: the path names the task either way
        params["taskId"] = params.pop("task_id")
    task = quote(str(params.get("taskId" if "Push" in method else "id", "")), safe="")
    push = f"/tasks/{task}/pushNotificationConfigs"
    config = quote(str(params.get("id", "")), safe="")
    query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()}
    match method:
        case "SendMessage":
            return "POST", "/message:send", params, {}
        case "SendStreamingMessage":
            return "POST", "/message:stream", params, {}
        case "GetTask":
            return "GET", f"/tasks/{task}", None, {k: v for k, v in query.items() if k != "id"}
        case "CancelTask":
            return "POST", f"/tasks/{task}:cancel", None, {}
        case "SubscribeToTask":
            return "POST", f"/tasks/{task}:subscribe", None, {}
        case "ListTasks":
            return "GET", "/tasks", None, query
        case "CreateTaskPushNotificationConfig":
            return "POST", push, {k: v for k, v in params.items() if k != "taskId"}, {}
        case "ListTaskPushNotificationConfigs":
            return "GET", push, None, {k: v for k, v in query.items() if k != "taskId"}
        case "GetTaskPushNotificationConfig":
            return "GET", f"{push}/{config}", None, {}
        case "DeleteTaskPushNotificationConfig":
            return "DELETE", f"{push}/{config}", None, {}
    raise ValueError(f"{method} has no HTTP+JSON call")


def as_rpc(response: httpx.Response) -> dict[str, Any]:
    """An HTTP+JSON answer as JSON-RPC's: a 2xx's body as the result, an AIP-193 error as a JSON-RPC error."""
    body = response.json()
    if response.status_code < 300:
        assert response.headers["content-type"] == "application/json", response.headers
        return {"result": body}
    error = body["error"]
    assert set(error) == {"code", "status", "message", "details"} and error["code"] == response.status_code, body
    reason = next((d.get("reason") for d in error["details"] if d["@type"].endswith("ErrorInfo")), None)
    return {"error": {"code": CODES.get(reason or "", -32603), "message": error["message"],
                      "data": error["details"], "status": response.status_code}}


def call(url: str, method: str, params: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    verb, path, body, query = route(method, params)
    sent = {"a2a-version": "1.0", **(headers or {})}
    if body is not None:
        sent["content-type"] = "application/json"
    response = httpx.request(verb, url.rstrip("/") + path, params=query or None, headers=sent, timeout=20,
                             content=orjson.dumps(body) if body is not None else None)
    return as_rpc(response)


def frames(url: str, method: str, params: Any, headers: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """Each response of a streamed call, as it comes: the bare `StreamResponse` of each `data:` line (there is no
    envelope to take it out of)."""
    verb, path, body, _ = route(method, params)
    sent = {"a2a-version": "1.0", "content-type": "application/json", **(headers or {})}
    with httpx.stream(verb, url.rstrip("/") + path, content=orjson.dumps(body) if body is not None else None,
                      headers=sent, timeout=20) as response:
        assert response.headers["content-type"].startswith("text/event-stream"), response.read()
        for line in response.iter_lines():
            if line.startswith("data: "):
                frame = orjson.loads(line[6:])
                assert "jsonrpc" not in frame, frame
                yield frame
