"""A request refused before its reply, as an MCP client reads it: a protocol error (a body that is not a tool call,
a key missing, a body too large) is a JSON-RPC error with the request's id and the HTTP status; arguments the tool
cannot run with (`route_tool.py`), and an agent that could not be reached or failed before answering, are a tool
result with `isError: true`, as a failure during the run is, since the call itself was sound (the gateway's error,
code and status, in its `structuredContent`; typed for a 2026-07-28 call)."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.errors import GatewayError

from .route_tool import InvalidArguments
from .wire import MODERN_VERSIONS, PROTOCOL_VERSION, typed

INVALID_REQUEST, INTERNAL_ERROR = -32600, -32603


def reply(error: GatewayError, request: Any) -> tuple[int, bytes]:
    id = request.get("id") if isinstance(request, dict) else None
    if (error.status >= 500 or isinstance(error, InvalidArguments)) and isinstance(request, dict) \
            and request.get("method") == "tools/call" \
            and not _is_task(request):  # a task call that failed before its task existed: no task to tell it in
        result = {"content": [{"type": "text", "text": error.message}], "isError": True,
                  "structuredContent": {"error": {**error.to_json()["error"], "status": error.status}}}
        params = request.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and meta.get(PROTOCOL_VERSION) in MODERN_VERSIONS:
            result = typed(result)
        return 200, orjson.dumps({"jsonrpc": "2.0", "id": id, "result": result})
    code = INVALID_REQUEST if error.status < 500 else INTERNAL_ERROR
    body = {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": error.message,
                                                  "data": {"code": str(error.code)}}}
    return error.status, orjson.dumps(body)


def _is_task(request: dict[str, Any]) -> bool:
    params = request.get("params")
    return isinstance(params, dict) and params.get("task") is not None
