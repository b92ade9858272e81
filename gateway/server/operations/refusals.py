"""The gateway's own refusals of requests no route took (a path it does not serve, a method, a `Host`, `/metrics`
without its key): its JSON error body, and an access line for each, since a client calling the wrong way is worth
seeing."""

from __future__ import annotations

import logging

from starlette.responses import JSONResponse, Response
from starlette.types import Scope

from gateway.server.operations.logs import ACCESS
from gateway.server.operations.record import AccessRecord, RequestOutcome

log_access = logging.getLogger(ACCESS)


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def log_refusal(scope: Scope, status: int, code: str, message: str | None = None) -> None:
    """The access line of a refused request (a WebSocket handshake's method is its GET)."""
    record = AccessRecord(request_id=scope.get("state", {}).get("request_id", ""), route="-",
                          upstream_dialect="-", status=status, outcome=RequestOutcome.REJECTED, error=code,
                          error_message=message)
    record.note_request({**scope, "method": scope.get("method", "GET")}, "unknown")
    log_access.info("request", extra=record.log_fields())
