"""A2A's errors as its clients read them: a JSON-RPC error in an HTTP 200, its `data` an array of details whose
`google.rpc.ErrorInfo` names the reason.

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

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
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


def error_reply(error: GatewayError, request: Any) -> tuple[int, bytes]:
    """A refused request as its client reads it: an A2A error (-32001 to -32009) with its ErrorInfo in the A2A
    domain; a JSON-RPC one (-32600 to -32700); or -32603 for whatever else stopped it (limits, the upstream), with
    the gateway's code as the reason. The HTTP status the gateway would have answered is in the metadata."""
    code, reason = next(((rpc, why) for kind, rpc, why in _CODES if isinstance(error, kind)), (-32603, None))
    metadata: dict[str, str] = {"status": str(error.status)}  # what the gateway would have answered in HTTP
    if error.details:
        metadata["details"] = orjson.dumps(error.details).decode()
    info = error_info(reason, metadata) if reason is not None else \
        {"@type": ERROR_INFO, "reason": error.code.upper(), "domain": "agent-gateway", "metadata": metadata}
    return 200, rpc_error(request_id(request), code, error.message, info)


def error_info(reason: str, metadata: dict[str, str] | None = None) -> dict[str, Any]:
    return {"@type": ERROR_INFO, "reason": reason, "domain": A2A_DOMAIN, "metadata": metadata or {}}


def rpc_error(rpc_id: Any, code: int, message: str, info: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message,
                                                                   "data": [info]}})


def request_id(request: Any) -> str | int | None:
    """The JSON-RPC id to answer with: the request's when it is a string or a number (not a boolean)."""
    rpc_id = request.get("id") if isinstance(request, dict) else None
    return rpc_id if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool) else None
