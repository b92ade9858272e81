"""The access record: what one request's access log line, metrics and span say of it, filled in as it goes."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, fields
from enum import StrEnum
from operator import attrgetter
from typing import Any


class RequestOutcome(StrEnum):
    """How a request ended, as its access log line, its metrics and its span say it: a run's own outcome
    (`RunFinished.outcome`), or what else became of the request."""

    SUCCESS = "success"
    INTERRUPT = "interrupt"
    CANCELLED = "cancelled"
    ERROR = "error"
    REJECTED = "rejected"
    """The client's mistake: a 4xx."""
    CLIENT_GONE = "client_gone"
    RESUMED = "resumed"
    """A client was sent a run's kept reply."""
    STOPPED = "stopped"
    NO_RUN = "no_run"
    """A resume or a stop with no run to act on."""
    QUERY = "query"
    """A question about a run."""


@dataclass(slots=True, kw_only=True)
class AccessRecord:
    """One request as its access log line tells it; a field still None at the end is left out of the line."""

    request_id: str
    route: str
    method: str | None = None
    path: str | None = None
    client: str | None = None
    """The client's address, as the server saw it (a proxy's, behind one)."""
    client_dialect: str = "unknown"
    """Left as "unknown" until the request's body is read as a dialect's."""
    upstream_dialect: str
    upstream: str | None = None
    """On a route with fallbacks: which of its upstreams the run went to last (the one that answered, if any)."""
    failovers: str | None = None
    """On a route with fallbacks: each upstream that failed the run before its reply, and why."""
    status: int | None = None
    """The HTTP status the client was sent; None if the client left before the response started."""
    outcome: RequestOutcome | str | None = None
    """How the request ended: one of the gateway's outcomes, or the word a dialect's own endpoint names its answers
    by (`PathAnswer.outcome`)."""
    events: int = 0
    """Canonical events the upstream's run brought."""
    trace_id: str | None = None
    """The trace the request's spans are in, when tracing is on and they are recorded."""
    key_id: str | None = None
    """Which API key the caller presented (its id, never the key)."""
    tokens: dict[str, int] | None = None
    """The tokens the upstream said the run used, by kind (input, output, reasoning, cached)."""
    cost: float | None = None
    """What those tokens cost, in the route's `pricing` currency."""
    request_body: str | None = None
    """The body's first 4 KiB, only with `--log-bodies`."""
    conversation_id: str | None = None
    run_id: str | None = None
    upstream_ms: float | None = None
    """From sending the upstream its request to its response's head."""
    ttfe_ms: float | None = None
    """Time to first event: from the request's arrival to the first of the upstream's events."""
    error: str | None = None
    """The error's code: one of the gateway's own, or one an upstream's run error named."""
    error_message: str | None = None
    """What the client was told, for an error before the response started."""
    error_detail: str | None = None
    """Why the upstream could not be reached, for the operator: it may name internal addresses."""
    ignored: int | None = None
    """Frames the upstream sent about another run than this one (another A2A task), left out."""
    upstream_cancelled: bool | None = None
    """True when the gateway asked the upstream to stop a run it abandoned (an A2A `CancelTask`)."""
    upstream_reattached: bool | None = None
    """True when the upstream's stream broke off mid-run and the gateway asked it for the rest (an A2A
    `SubscribeToTask`)."""
    history: str | None = None
    """Says "unavailable" when the turn went on without the conversation store, "reply_left_out" when its reply
    was longer than the store keeps and is stored as a note saying so."""
    duration_ms: float | None = None
    """From the request's arrival to its last byte (or the client leaving)."""

    def note_request(self, scope: MutableMapping[str, Any], client_dialect: str) -> None:
        """What the request line said, who sent it, and the client dialect when its path says which."""
        self.method, self.path, self.client_dialect = scope["method"], scope["path"], client_dialect
        client = scope.get("client")
        if client:
            self.client = f"{client[0]}:{client[1]}"

    def failed(self, code: str) -> None:
        """The request ended in an error (`code` says which): the client was told, or could not be."""
        self.outcome = RequestOutcome.ERROR
        self.error = code

    def log_fields(self) -> dict[str, Any]:
        """The access log line's fields: those that are not None."""
        return {name: value for name, value in zip(_NAMES, _VALUES(self), strict=True) if value is not None}


_NAMES = tuple(field.name for field in fields(AccessRecord))
_VALUES = attrgetter(*_NAMES)
"""All fields' values at once, in order: one C call instead of a `getattr` per field."""
