"""A2A's errors as its clients read them: on JSON-RPC, an error in an HTTP 200, its `data` an array of details whose
`google.rpc.ErrorInfo` names the reason; on HTTP+JSON, an AIP-193 body (`{"error": {code, status, message,
details}}`) with the same ErrorInfo, under the HTTP status of specification 1.0.0's table (`REST_STATUS`).

```
JSON-RPC                     A2A                                 the gateway's error
-32700 parse error           -                                   MalformedRequest (not JSON)
-32600 invalid request       -                                   InvalidRpcRequest (no jsonrpc 2.0, no method),
                                                                 UnknownDialect
-32601 method not found      -                                   MethodNotFound
-32602 invalid params        -                                   InvalidRequest, ConversationMismatch
-32603 internal error        -                                   anything else (limits, the upstream), the
                                                                 gateway's code as the reason
-32001                       TaskNotFoundError                   RunNotFound
-32002                       TaskNotCancelableError              RunNotCancelable
-32003                       PushNotificationNotSupportedError   WebhooksNotSupported
-32004                       UnsupportedOperationError           NotSupported, RunNotContinuable
-32005                       ContentTypeNotSupportedError        UnsupportedMediaType
-32009                       VersionNotSupportedError            VersionNotSupported
```
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.errors import (
    ConversationMismatch,
    ErrorCode,
    GatewayError,
    InvalidRequest,
    MalformedRequest,
    NotSupported,
    RequestError,
    RunNotCancelable,
    RunNotContinuable,
    RunNotFound,
    UnknownDialect,
    UnsupportedMediaType,
    WebhooksNotSupported,
)

from .wire import BINDING, REST

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
A2A_DOMAIN = "a2a-protocol.org"


class InvalidRpcRequest(MalformedRequest):
    """Not a JSON-RPC 2.0 request: no `"jsonrpc": "2.0"`, no method, an id that is neither a string nor a number."""

    code = "invalid_jsonrpc_request"


class MethodNotFound(InvalidRequest):
    """A JSON-RPC method the gateway does not serve."""

    code = "method_not_found"


class VersionNotSupported(RequestError):
    """An `A2A-Version` the gateway does not speak."""

    code = "version_not_supported"


_CODES: list[tuple[type[GatewayError], int, str | None]] = [
    (RunNotFound, -32001, "TASK_NOT_FOUND"),
    (RunNotCancelable, -32002, "TASK_NOT_CANCELABLE"),
    (WebhooksNotSupported, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    (NotSupported, -32004, "UNSUPPORTED_OPERATION"),
    (RunNotContinuable, -32004, "UNSUPPORTED_OPERATION"),
    (UnsupportedMediaType, -32005, "CONTENT_TYPE_NOT_SUPPORTED"),
    (VersionNotSupported, -32009, "VERSION_NOT_SUPPORTED"),
    (InvalidRpcRequest, -32600, None),
    (MethodNotFound, -32601, None),
    (MalformedRequest, -32700, None),
    (ConversationMismatch, -32602, None),
    (InvalidRequest, -32602, None),
    (UnknownDialect, -32600, None),
]
"""First match wins: subclasses before their bases."""

REST_STATUS: dict[int, tuple[int, str, str]] = {
    -32001: (404, "NOT_FOUND", "TASK_NOT_FOUND"),
    -32002: (409, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
    -32003: (400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    -32004: (400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
    -32005: (415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"),
    -32006: (502, "INTERNAL", "INVALID_AGENT_RESPONSE"),
    -32009: (400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
    -32600: (400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
    -32601: (404, "NOT_FOUND", "METHOD_NOT_FOUND"),
    -32602: (400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
    -32700: (400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
}
"""HTTP+JSON's status, `google.rpc.Code` name and reason for each A2A and JSON-RPC error: specification 1.0.0's
(which the conformance kit tests). 1.0.1 answers 400 for TaskNotCancelable and ContentTypeNotSupported and 500 for
InvalidAgentResponse, as a2a-sdk 1.3.0 does; its clients read only the reason, so either reads the same to them."""

_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 408: "DEADLINE_EXCEEDED", 409: "ABORTED", 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT",
                 429: "RESOURCE_EXHAUSTED", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
"""The `google.rpc.Code` name of the gateway's own statuses (limits, the upstream), for an error with no A2A code."""


def error_reply(error: GatewayError, request: Any) -> tuple[int, bytes]:
    """A refused request as its client reads it: an A2A error (-32001 to -32009) with its ErrorInfo in the A2A
    domain; a JSON-RPC one (-32600 to -32700); or -32603 for whatever else stopped it (limits, the upstream), with
    the gateway's code as the reason. The HTTP status the gateway would have answered is in the metadata."""
    code, reason = next(((rpc, why) for kind, rpc, why in _CODES if isinstance(error, kind)), (-32603, None))
    if isinstance(request, dict) and request.get(BINDING) == REST:
        return rest_error(error, code)
    metadata: dict[str, str] = {"status": str(error.status)}  # what the gateway would have answered in HTTP
    if error.details:
        metadata["details"] = orjson.dumps(error.details).decode()
    info = error_info(reason, metadata) if reason is not None else \
        {"@type": ERROR_INFO, "reason": error.code.upper(), "domain": "agent-gateway", "metadata": metadata}
    return 200, rpc_error(request_id(request), code, error.message, info)


def rest_error(error: GatewayError, code: int) -> tuple[int, bytes]:
    """The error as HTTP+JSON tells it: AIP-193, under the status of `REST_STATUS`; an error with no A2A code
    (limits, the upstream) under its own HTTP status as `INTERNAL_ERROR`, which SDK clients raise with its message,
    the gateway's code in the metadata; an invalid param's fields as `google.rpc.BadRequest`."""
    status, name, reason = REST_STATUS.get(code) or (error.status, _STATUS_NAMES.get(error.status, "INTERNAL"), "")
    info = error_info(reason) if reason else error_info("INTERNAL_ERROR", {"code": error.code})
    details: list[dict[str, Any]] = [info]
    fields = [d for d in error.details if isinstance(d, dict) and isinstance(d.get("field"), str)]
    if fields:
        violations = [{"field": d["field"].removeprefix("params."), "description": str(d.get("message", ""))}
                      for d in fields]
        info["metadata"] = {"errors": orjson.dumps([{"field": v["field"], "message": v["description"]}
                                                    for v in violations]).decode()}
        details.append({"@type": BAD_REQUEST, "fieldViolations": violations})
    return status, aip193(status, name, error.message, details)


_CUT_STATUS: dict[str, int] = {ErrorCode.UPSTREAM_TIMEOUT: 504, ErrorCode.SHUTTING_DOWN: 503,
                               ErrorCode.OVERLOADED: 503, ErrorCode.STORE_UNAVAILABLE: 503,
                               ErrorCode.GATEWAY_ERROR: 500}
STREAM_CUT = frozenset(ErrorCode) - {ErrorCode.UPSTREAM_ERROR, ErrorCode.UPSTREAM_REJECTED}
"""The codes of a run's error that say the gateway could not carry the stream to its end (a deadline, an upstream
that broke off or sent what cannot be read, the process stopping), not that the agent failed its task."""


def stream_error(message: str, code: str) -> bytes:
    """HTTP+JSON's error mid-stream, as a2a-sdk's server writes one: `event: error` with an AIP-193 body, the
    status the gateway would have answered before the stream (502 for the upstream's failures)."""
    status = _CUT_STATUS.get(code, 502)
    name = {500: "INTERNAL", 502: "INTERNAL"}.get(status) or _STATUS_NAMES[status]
    body = aip193(status, name, message, [error_info("INTERNAL_ERROR", {"code": code})])
    return b"event: error\ndata: " + body + b"\n\n"


def aip193(status: int, name: str, message: str, details: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"error": {"code": status, "status": name, "message": message, "details": details}})


def error_info(reason: str, metadata: dict[str, str] | None = None) -> dict[str, Any]:
    return {"@type": ERROR_INFO, "reason": reason, "domain": A2A_DOMAIN, "metadata": metadata or {}}


def rpc_error(rpc_id: Any, code: int, message: str, info: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message,
                                                                   "data": [info]}})


def request_id(request: Any) -> str | int | None:
    """The JSON-RPC id to answer with: the request's when it is a string or a number (not a boolean)."""
    rpc_id = request.get("id") if isinstance(request, dict) else None
    return rpc_id if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool) else None
