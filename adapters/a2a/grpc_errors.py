"""A2A's errors on the gRPC binding: the JSON-RPC error a route answers, as the call's status code and message, with
a `google.rpc.Status` in the `grpc-status-details-bin` trailer (its `ErrorInfo` naming the reason and domain, as the
SDKs' clients read it; a `BadRequest` naming the fields when the request had wrong ones).

```
JSON-RPC                                   gRPC
-32001 TaskNotFound                        NOT_FOUND
-32002 TaskNotCancelable                   FAILED_PRECONDITION
-32003 PushNotificationNotSupported        UNIMPLEMENTED
-32004 UnsupportedOperation                UNIMPLEMENTED
-32005 ContentTypeNotSupported             INVALID_ARGUMENT
-32006 InvalidAgentResponse                INTERNAL
-32007 ExtendedAgentCardNotConfigured      FAILED_PRECONDITION
-32008 ExtensionSupportRequired            FAILED_PRECONDITION
-32009 VersionNotSupported                 UNIMPLEMENTED
-32600, -32602, -32700 (the request)       INVALID_ARGUMENT
-32601 (the method)                        NOT_FOUND
-32603 (the gateway: limits, upstream)     by the HTTP status it stands for (401 UNAUTHENTICATED, 429
                                           RESOURCE_EXHAUSTED, 503 UNAVAILABLE, ...)
```

The codes are spec 1.0.0's (the conformance kit's); 1.0.1 moved -32003, -32004 and -32009 to FAILED_PRECONDITION
(a2a-sdk 1.3.0 writes those). The SDKs' clients read the reason, not the code, so either is read right.
"""

from __future__ import annotations

from typing import Any

import orjson

from . import proto

_RPC = {-32001: "NOT_FOUND", -32002: "FAILED_PRECONDITION", -32003: "UNIMPLEMENTED", -32004: "UNIMPLEMENTED",
        -32005: "INVALID_ARGUMENT", -32006: "INTERNAL", -32007: "FAILED_PRECONDITION",
        -32008: "FAILED_PRECONDITION", -32009: "UNIMPLEMENTED", -32600: "INVALID_ARGUMENT", -32601: "NOT_FOUND",
        -32602: "INVALID_ARGUMENT", -32700: "INVALID_ARGUMENT"}
_HTTP = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
         405: "UNIMPLEMENTED", 408: "DEADLINE_EXCEEDED", 409: "FAILED_PRECONDITION", 413: "RESOURCE_EXHAUSTED",
         415: "INVALID_ARGUMENT", 422: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
         501: "UNIMPLEMENTED", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_STANDARD = {-32600: "INVALID_REQUEST", -32601: "METHOD_NOT_FOUND", -32602: "INVALID_PARAMS",
             -32700: "INVALID_REQUEST"}
"""The reasons a2a-sdk gives JSON-RPC's own errors (its clients raise `InvalidParamsError` by `INVALID_PARAMS`)."""
DETAILS = "grpc-status-details-bin"
_TYPES = "type.googleapis.com/"


class Refusal(Exception):
    """A call answered with an error status."""

    def __init__(self, code: str, message: str, reason: str | None = None, domain: str = proto.DOMAIN,
                 metadata: dict[str, str] | None = None, fields: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason
        self.domain = domain
        self.metadata = metadata or {}
        self.fields = fields or []

    def status(self) -> bytes:
        """The serialized `google.rpc.Status`: its code and message the call's own (the SDK's client refuses a
        trailer that says otherwise)."""
        import grpc

        schema = proto.loaded()
        status = schema.Status(code=getattr(grpc.StatusCode, self.code).value[0], message=self.message)
        if self.reason is not None:
            info = schema.ErrorInfo(reason=self.reason, domain=self.domain)
            info.metadata.update(self.metadata)
            status.details.add(type_url=_TYPES + "google.rpc.ErrorInfo", value=info.SerializeToString())
        if self.fields:
            bad = schema.BadRequest()
            for field, description in self.fields:
                bad.field_violations.add(field=field, description=description)
            status.details.add(type_url=_TYPES + "google.rpc.BadRequest", value=bad.SerializeToString())
        return bytes(status.SerializeToString())

    async def abort(self, context: Any) -> None:
        import grpc

        await context.abort(getattr(grpc.StatusCode, self.code), self.message,
                            trailing_metadata=((DETAILS, self.status()),))


def invalid_argument(message: str) -> Refusal:
    return Refusal("INVALID_ARGUMENT", message, "INVALID_REQUEST")


def from_rpc(error: dict[str, Any]) -> Refusal:
    """A JSON-RPC error (`{"code", "message", "data": [ErrorInfo]}`) as the call's status."""
    code = error.get("code")
    info = next((d for d in error.get("data") or () if isinstance(d, dict) and "reason" in d), None) \
        if isinstance(error.get("data"), list) else None
    metadata = {str(k): str(v) for k, v in (info.get("metadata") or {}).items()} if info else {}
    grpc_code = _RPC.get(code) if isinstance(code, int) else None
    if grpc_code is None:
        grpc_code = _HTTP.get(_int(metadata.get("status")), "INTERNAL")
    reason, domain = (info.get("reason"), str(info.get("domain") or proto.DOMAIN)) if info else (None, proto.DOMAIN)
    if code in _STANDARD:  # A2A's reasons for JSON-RPC's own errors, which the JSON-RPC binding has no need of
        reason, domain = _STANDARD[code], proto.DOMAIN
    return Refusal(grpc_code, str(error.get("message") or grpc_code), reason, domain, metadata,
                   _fields(metadata.get("details")))


def from_http(status: int, value: Any, body: bytes) -> Refusal:
    """The gateway's own refusal of a call before any route read it (its error body, or Starlette's)."""
    error = value.get("error") if isinstance(value, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    reason = error.get("code") if isinstance(error, dict) else None
    code = _HTTP.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return Refusal(code, str(message or body[:200].decode(errors="replace") or f"HTTP {status}"),
                   str(reason).upper() if reason else None, "agent-gateway")


def _fields(details: str | None) -> list[tuple[str, str]]:
    """A request's wrong fields, from the gateway's error details (`[{"field", "message"}]`), named within the
    request message (the JSON-RPC `params` are the message)."""
    if not details:
        return []
    try:
        found = orjson.loads(details)
    except orjson.JSONDecodeError:
        return []
    return [(str(d["field"]).removeprefix("params."), str(d.get("message", ""))) for d in found
            if isinstance(d, dict) and "field" in d] if isinstance(found, list) else []


def _int(value: str | None) -> int:
    return int(value) if value is not None and value.isdigit() else 500
