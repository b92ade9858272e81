"""One error taxonomy for the whole gateway. Each error knows its HTTP status and its stable code.

```
GatewayError
 ├── RequestError                 the client's request is wrong (4xx); the upstream is never called
 │    ├── MalformedRequest        400  not JSON, not a JSON object, nested too deep; a malformed tenant header
 │    ├── HostNotAllowed          400  a `Host` naming a name the gateway was not told it answers to
 │    ├── Unauthorized            401  no valid API key or bearer token for a route that asks for one
 │    ├── TooManyStreams          429  the route's or the key's concurrent streams are all in use
 │    ├── UnsupportedMediaType    415  not application/json
 │    ├── RequestTooLarge         413  body over the route's limit, or more messages than the route takes
 │    ├── RequestTimeout          408  the body did not arrive in time (`timeouts.request_body`, `min_body_rate`)
 │    ├── UnknownDialect          400  no dialect of the path reads the body, or it belongs on another path
 │    ├── HistoryConflict         409  an edited history that an upstream keeping its own cannot be given
 │    ├── InterruptAnswered       409  an answer to an interrupt answered already, with nothing else new
 │    ├── ResumeUnavailable       410  the rest of a run whose reply is no longer kept
 │    ├── UnknownRoute            404  a request names a route (OpenAI's `model`) the path does not serve
 │    ├── NoRunningRun            404  a stop or resume for a conversation with no run running
 │    ├── RunNotFound             404  a request names a run (a task) this caller has none of
 │    │    └── UnknownRun              a run a request continues from (Responses' previous_response_id)
 │    ├── RunNotContinuable       409  a request continues a run that has ended, or is still running
 │    ├── RunNotCancelable        409  a cancel for a run that has already ended
 │    ├── NotSupported            400  an operation this route does not offer (a dialect's optional feature)
 │    │    └── WebhooksNotSupported     push notifications, on a route that sends none
 │    └── InvalidRequest          422  valid JSON, wrong shape: `details` name each field and what was expected
 │         └── ConversationMismatch    a request continues a run, naming another conversation than the run's
 ├── Overloaded                   503  the process holds as many request bodies as it may: retry shortly
 │    ├── ShuttingDown            503  the gateway is draining before it stops: retry, on another replica
 │    └── StoreUnavailable        503  the conversation store did not answer, and the turn needs what it holds
 └── UpstreamError                502  the upstream failed: refused, reset, non-2xx, broken stream
      ├── UpstreamRefused         502  the upstream answered a status (or a content type) the gateway cannot relay
      └── UpstreamTimeout         504  the upstream did not answer or went quiet past a timeout
```

Before the first byte of a response the proxy sends `status` with `to_json()`; after it, the client's encoder turns
the error into that dialect's in-band error event (see `gateway.core.events.RunError`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Every code the gateway itself gives, in one place: a `StrEnum`, so the wire, the logs and the metrics labels
    carry the same strings they always did."""

    GATEWAY_ERROR = "gateway_error"
    BAD_REQUEST = "bad_request"
    MALFORMED_REQUEST = "malformed_request"
    HOST_NOT_ALLOWED = "host_not_allowed"
    UNAUTHORIZED = "unauthorized"
    TOO_MANY_STREAMS = "too_many_streams"
    OVER_BUDGET = "over_budget"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    REQUEST_TOO_LARGE = "request_too_large"
    REQUEST_TIMEOUT = "request_timeout"
    UNKNOWN_DIALECT = "unknown_dialect"
    HISTORY_CONFLICT = "history_conflict"
    INTERRUPT_ANSWERED = "interrupt_answered"
    RESUME_UNAVAILABLE = "resume_unavailable"
    UNKNOWN_ROUTE = "unknown_route"
    NO_RUNNING_RUN = "no_running_run"
    RUN_NOT_FOUND = "run_not_found"
    UNKNOWN_RUN = "unknown_run"
    RUN_NOT_CONTINUABLE = "run_not_continuable"
    RUN_NOT_CANCELABLE = "run_not_cancelable"
    NOT_SUPPORTED = "not_supported"
    PUSH_NOT_SUPPORTED = "push_not_supported"
    LISTING_NEEDS_CALLER = "listing_needs_caller"
    INVALID_REQUEST = "invalid_request"
    CONVERSATION_MISMATCH = "conversation_mismatch"
    OVERLOADED = "overloaded"
    SHUTTING_DOWN = "shutting_down"
    STORE_UNAVAILABLE = "store_unavailable"
    UPSTREAM_ERROR = "upstream_error"
    UPSTREAM_TIMEOUT = "upstream_timeout"
    UPSTREAM_TRUNCATED = "upstream_truncated"
    """In-band: the upstream's body ended (or a protobuf event was cut short) before its run did."""
    UPSTREAM_REJECTED = "upstream_rejected"
    """In-band: an A2A upstream rejected the task it was given."""
    UPSTREAM_BAD_EVENT = "upstream_bad_event"
    """In-band: an upstream event the gateway cannot read (not JSON, not an object, not a valid protobuf)."""
    UPSTREAM_EVENT_TOO_LARGE = "upstream_event_too_large"
    """In-band: an upstream event or body over its limit."""
    HELD_TOO_MUCH = "held_too_much"
    """In-band: the decoder held more of a run than it may while waiting to make sense of it."""
    CLIENT_STALLED = "client_stalled"
    """Logged and counted only: the client stopped reading, so nothing reaches it."""


UPSTREAM_CODES = frozenset({ErrorCode.UPSTREAM_ERROR, ErrorCode.UPSTREAM_TIMEOUT, ErrorCode.UPSTREAM_BAD_EVENT,
                            ErrorCode.UPSTREAM_EVENT_TOO_LARGE})
"""The codes that say the upstream failed: telemetry marks the upstream's span failed with these."""


class GatewayError(Exception):
    status = 500
    code: str = ErrorCode.GATEWAY_ERROR
    """One of `ErrorCode`; typed `str` so that a dialect's own errors (A2A's) may give codes of their own."""
    headers: dict[str, str] = {}
    """Headers an HTTP answer of this error carries (a 401's challenge)."""

    def __init__(self, message: str, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}


class RequestError(GatewayError):
    status = 400
    code: str = ErrorCode.BAD_REQUEST


class MalformedRequest(RequestError):
    status = 400
    code: str = ErrorCode.MALFORMED_REQUEST


class HostNotAllowed(RequestError):
    """A request naming, as its `Host`, a name the gateway was not told it answers to (`allowed_hosts`): what a
    page whose DNS rebinds its own name to the gateway's address sends."""

    status = 400
    code: str = ErrorCode.HOST_NOT_ALLOWED


class Unauthorized(RequestError):
    status = 401
    code: str = ErrorCode.UNAUTHORIZED
    headers = {"www-authenticate": 'Bearer realm="agent-gateway"'}


class TooManyStreams(RequestError):
    status = 429
    code: str = ErrorCode.TOO_MANY_STREAMS


class OverBudget(RequestError):
    """A key past its token budget (`limits.tokens_per_key`): `Retry-After` says when its window turns."""

    status = 429
    code: str = ErrorCode.OVER_BUDGET

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.headers = {"retry-after": str(retry_after)}


class UnsupportedMediaType(RequestError):
    status = 415
    code: str = ErrorCode.UNSUPPORTED_MEDIA_TYPE


class RequestTooLarge(RequestError):
    status = 413
    code: str = ErrorCode.REQUEST_TOO_LARGE


class RequestTimeout(RequestError):
    status = 408
    code: str = ErrorCode.REQUEST_TIMEOUT


class Overloaded(GatewayError):
    status = 503
    code: str = ErrorCode.OVERLOADED
    headers = {"retry-after": "1"}


class ShuttingDown(Overloaded):
    """The process is draining: a new run is refused, and a run still going at the drain's end is ended."""

    code: str = ErrorCode.SHUTTING_DOWN

    def __init__(self) -> None:
        super().__init__("the gateway is shutting down: retry, on another replica if there is one")


class StoreUnavailable(Overloaded):
    """The turn cannot be put to the upstream without the history the store holds: answering it as a first turn
    would be a confident wrong answer, so the client is asked to retry."""

    code: str = ErrorCode.STORE_UNAVAILABLE
    headers = {"retry-after": "5"}


class UnknownDialect(RequestError):
    status = 400
    code: str = ErrorCode.UNKNOWN_DIALECT


class HistoryConflict(RequestError):
    status = 409
    code: str = ErrorCode.HISTORY_CONFLICT


class InterruptAnswered(RequestError):
    """A request whose only news is an answer to an interrupt the client answered already (a retry, a double
    click): passed on, the agent would act twice, or read the answer as something new the user said."""

    status = 409
    code: str = ErrorCode.INTERRUPT_ANSWERED


class UnknownRoute(RequestError):
    """A request names a route (OpenAI's `model`) that its path does not serve, or not to this caller."""

    status = 404
    code: str = ErrorCode.UNKNOWN_ROUTE


class ResumeUnavailable(RequestError):
    """A client asked for the rest of a run whose reply the gateway no longer keeps (or never did)."""

    status = 410
    code: str = ErrorCode.RESUME_UNAVAILABLE


class NoRunningRun(RequestError):
    """A stop or resume named a conversation with no run running."""

    status = 404
    code: str = ErrorCode.NO_RUNNING_RUN


class RunNotFound(RequestError):
    """A request named a run (to continue it, ask about it or cancel it) that this caller has none of: unknown,
    expired, or another principal's."""

    status = 404
    code: str = ErrorCode.RUN_NOT_FOUND


class UnknownRun(RunNotFound):
    """A request continues from a run by its id (Responses' `previous_response_id`) that the gateway does not keep
    for this caller: its client names the field, not the run."""

    code: str = ErrorCode.UNKNOWN_RUN


class RunNotContinuable(RequestError):
    """A request continues a run that has ended (only a run that waits for its client takes an answer), or that is
    still running."""

    status = 409
    code: str = ErrorCode.RUN_NOT_CONTINUABLE


class RunNotCancelable(RequestError):
    """A cancel for a run that has already ended."""

    status = 409
    code: str = ErrorCode.RUN_NOT_CANCELABLE


class NotSupported(RequestError):
    """An operation of the client's dialect that this route does not offer (a feature the dialect makes optional)."""

    status = 400
    code: str = ErrorCode.NOT_SUPPORTED


class WebhooksNotSupported(NotSupported):
    """Webhooks for a run's updates (push notifications), on a route that sends none."""

    code: str = ErrorCode.PUSH_NOT_SUPPORTED


class ListingNeedsCaller(NotSupported):
    """A listing of every run or conversation, on a route that cannot tell its callers apart (no keys, no tenant
    header): it would hand one caller everyone's."""

    status = 403
    code: str = ErrorCode.LISTING_NEEDS_CALLER


class InvalidRequest(RequestError):
    status = 422
    code: str = ErrorCode.INVALID_REQUEST


class ConversationMismatch(InvalidRequest):
    """A request continues a run of one conversation while naming another."""

    code: str = ErrorCode.CONVERSATION_MISMATCH


class UpstreamError(GatewayError):
    status = 502
    code: str = ErrorCode.UPSTREAM_ERROR


class UpstreamRefused(UpstreamError):
    """The upstream answered non-2xx, or 2xx in a content type its dialect does not use: the status it names is the
    client's one clue to what the upstream said, since its body may hold secrets."""

    def __init__(self, status: int, wrong: str | None = None, details: list[dict[str, Any]] | None = None) -> None:
        message = f"upstream answered HTTP {status} with {wrong}" if wrong else f"upstream answered HTTP {status}"
        super().__init__(message, details)
        self.upstream_status = status


class UpstreamTimeout(UpstreamError):
    status = 504
    code: str = ErrorCode.UPSTREAM_TIMEOUT

