"""OpenAI error objects: `{"error": {"message", "type", "param", "code"}}`, with the HTTP status the `openai` SDKs
map to their exception classes (400 `BadRequestError`, 401, 404 `NotFoundError`, 422, 429, 5xx)."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.errors import GatewayError, UnknownRoute

_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def error_type(status: int) -> str:
    """OpenAI's error `type` for an HTTP status."""
    if status in _TYPES:
        return _TYPES[status]
    return "invalid_request_error" if 400 <= status < 500 else "server_error"


def error_object(message: str, status: int, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type(status), "param": param, "code": code}}


def error_reply(error: GatewayError, request: Any) -> tuple[int, bytes]:
    """A refused request as an OpenAI server answers one: the status, and an error object naming the field."""
    param = error.details[0].get("field") if error.details and isinstance(error.details[0], dict) else None
    code = "model_not_found" if isinstance(error, UnknownRoute) else error.code
    found = error_object(error.message, error.status, code, "model" if isinstance(error, UnknownRoute) else param)
    if error.details:
        found["error"]["details"] = error.details  # the gateway's own: which fields, or what the upstream answered
    return error.status, orjson.dumps(found)
