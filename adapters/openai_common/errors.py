"""OpenAI error objects, `{"message", "type", "param", "code"}` (in a body, `{"error": {...}}`), with the HTTP status
the `openai` SDKs map to their exception classes (400 `BadRequestError`, 401, 404 `NotFoundError`, 422, 429, 5xx).

Both APIs write them alike but name the `type` of a few statuses apart (`ErrorObjects`, one per dialect); both read
one the same way (`failure`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.errors import ErrorCode, GatewayError, UnknownRoute


class ErrorObjects:
    """The error objects of one API: `named` says the `type` of the statuses it names apart; any other 4xx is an
    `invalid_request_error`, and anything else a `server_error`."""

    __slots__ = ("_named",)

    def __init__(self, named: Mapping[int, str]) -> None:
        self._named = named

    def type_of(self, status: int) -> str:
        if status in self._named:
            return self._named[status]
        return "invalid_request_error" if 400 <= status < 500 else "server_error"

    def object(self, message: str, status: int, code: str | None, param: str | None = None) -> dict[str, Any]:
        return {"message": message, "type": self.type_of(status), "param": param, "code": code}

    def failed(self, e: canonical.RunError, status: int = 502) -> dict[str, Any]:
        """A failed run's error, as its reply says it (a 502, a 504 for a timeout)."""
        return self.object(e.message, status, e.code or ErrorCode.UPSTREAM_ERROR)

    def refusal(self, error: GatewayError) -> tuple[int, dict[str, Any]]:
        """A refused request's status and error object, naming the field it refused (`model` for a route its path
        does not serve, as OpenAI's `model_not_found`), with the gateway's own details (which fields, or what the
        upstream answered)."""
        route = isinstance(error, UnknownRoute)
        param = error.details[0].get("field") if error.details and isinstance(error.details[0], dict) else None
        found = self.object(error.message, error.status, "model_not_found" if route else error.code,
                            "model" if route else param)
        if error.details:
            found["details"] = error.details
        return error.status, found

    def reply(self, error: GatewayError, request: Any) -> tuple[int, bytes]:
        """A refused request as an OpenAI server answers one (`Dialect.error_reply`)."""
        status, found = self.refusal(error)
        return status, orjson.dumps({"error": found})


def failure(error: dict[str, Any]) -> canonical.RunError:
    """An upstream's error object as the run's error: its message and code, or the gateway's words for none."""
    message, code = error.get("message"), error.get("code")
    return canonical.RunError(message if isinstance(message, str) and message else "upstream error",
                              code=code if isinstance(code, str) and code else ErrorCode.UPSTREAM_ERROR)
