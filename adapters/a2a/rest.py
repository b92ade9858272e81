"""The HTTP+JSON binding of A2A 1.0 on the server side: each call (`POST {path}/message:stream`,
`GET {path}/tasks/{id}`, ...) is a `Resource` read into the JSON-RPC call it stands for, marked with `BINDING`, so the
same reading, task rules and answers serve both bindings. What differs is only how it is answered: no JSON-RPC
envelope (`encode.BARE`, `queries.reply`), errors as AIP-193 bodies under their HTTP status (`errors.rest_error`).

```
POST /message:send                        SendMessage (body: SendMessageRequest)
POST /message:stream                      SendStreamingMessage
POST /tasks/{id}:cancel                   CancelTask (a body, if any, is ignored)
GET|POST /tasks/{id}:subscribe            SubscribeToTask
GET  /tasks/{id}                          GetTask (?historyLength)
GET  /tasks                               ListTasks (?contextId, status, pageSize, pageToken, historyLength,
                                          statusTimestampAfter, includeArtifacts)
POST /tasks/{id}/pushNotificationConfigs  CreateTaskPushNotificationConfig (body: TaskPushNotificationConfig)
GET  /tasks/{id}/pushNotificationConfigs  ListTaskPushNotificationConfigs
GET|DELETE /tasks/{id}/pushNotificationConfigs/{push_id}   Get-, DeleteTaskPushNotificationConfig
GET  /extendedAgentCard                   GetExtendedAgentCard
```

`:cancel` and `:subscribe` come before `/tasks/{id}`, which would match them too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gateway.core.capabilities import Resource

from .versions import ASKED_VERSION
from .wire import BINDING, REST, state, state_for

Read = Callable[[Mapping[str, str], dict[str, Any], Mapping[str, str]], dict[str, Any]]


def _call(method: str, params: Callable[[Mapping[str, str], dict[str, Any]], dict[str, Any]]) -> Read:
    """A reader of the call as JSON-RPC's `method`, its params from the path's segments and the body (for a GET,
    the query). It never refuses: the dialect checks what it reads, as for JSON-RPC."""
    def read(path: Mapping[str, str], given: dict[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": None, "method": method, "params": params(path, given), BINDING: REST}
        version = given.get("A2A-Version")
        if isinstance(version, str):
            request[ASKED_VERSION] = version
        return request
    return read


def _body(path: Mapping[str, str], given: dict[str, Any]) -> dict[str, Any]:
    return given


def _task(path: Mapping[str, str], given: dict[str, Any]) -> dict[str, Any]:
    params = {"id": path.get("id", "")}
    if "historyLength" in given:
        params["historyLength"] = given["historyLength"]
    return params


def _listing(path: Mapping[str, str], given: dict[str, Any]) -> dict[str, Any]:
    """ListTasks' query typed as its JSON-RPC params are: `includeArtifacts` a boolean, `status` a state in 1.0's
    spelling whichever the client used (`working` as the specification's example writes it, or
    `TASK_STATE_WORKING`)."""
    params = {k: v for k, v in given.items() if k != "A2A-Version"}
    if "includeArtifacts" in params:
        params["includeArtifacts"] = str(params["includeArtifacts"]).lower() == "true"
    status = params.get("status")
    if isinstance(status, str) and status and status != "TASK_STATE_UNSPECIFIED":
        params["status"] = state_for(None, state(status))
    return params


def _push(path: Mapping[str, str], given: dict[str, Any]) -> dict[str, Any]:
    """A push config call's params: the body (a new config) or the query, the task's id from the path, and the
    config's, when the path names one."""
    params = {k: v for k, v in given.items() if k != "A2A-Version"}
    params["taskId"] = path.get("id", "")
    if "push_id" in path:
        params["id"] = path["push_id"]
    return params


def _nothing(path: Mapping[str, str], given: dict[str, Any]) -> dict[str, Any]:
    return {}


PUSH = "/tasks/{id}/pushNotificationConfigs"

RESOURCES = (
    Resource("POST", "/message:send", _call("SendMessage", _body)),
    Resource("POST", "/message:stream", _call("SendStreamingMessage", _body)),
    Resource("POST", "/tasks/{id}:cancel", _call("CancelTask", _task)),
    Resource("POST", "/tasks/{id}:subscribe", _call("SubscribeToTask", _task)),
    Resource("GET", "/tasks/{id}:subscribe", _call("SubscribeToTask", _task)),
    Resource("GET", "/tasks/{id}", _call("GetTask", _task)),
    Resource("GET", "/tasks", _call("ListTasks", _listing)),
    Resource("POST", PUSH, _call("CreateTaskPushNotificationConfig", _push)),
    Resource("GET", PUSH, _call("ListTaskPushNotificationConfigs", _push)),
    Resource("GET", PUSH + "/{push_id}", _call("GetTaskPushNotificationConfig", _push)),
    Resource("DELETE", PUSH + "/{push_id}", _call("DeleteTaskPushNotificationConfig", _push)),
    Resource("GET", "/extendedAgentCard", _call("GetExtendedAgentCard", _nothing)),
)
