"""A request as the route reads it: its body within the route's size and deadlines and the process's body budget,
then its JSON as a run or a query of one of the route's dialects, checked before anything runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.datastructures import Headers
from starlette.types import Message, Receive

from adapters import registry
from gateway.config import Route
from gateway.core.capabilities import ProtocolHeaders, Resource
from gateway.core.codec import Dialect
from gateway.core.errors import InvalidRequest, RequestTimeout, RequestTooLarge, UnsupportedMediaType
from gateway.core.queries import RunQuery
from gateway.core.turn import Turn
from gateway.core.validation import MAX_ID, bad_id, check_ids, load_json_object
from gateway.server.connections.bodies import BodyBudget, ClientGone


@dataclass(frozen=True, slots=True)
class Called:
    """A request to a resource: which, under which of the route's paths, and what its path and query said."""

    dialect: str
    resource: Resource
    base: str
    method: str
    params: Mapping[str, str]
    query: Mapping[str, str]


class Quoted(Protocol):
    """Where a request's JSON is kept as soon as it is read, even when it is then refused: an error reply in the
    client's dialect may quote it (a JSON-RPC id)."""

    request_json: dict[str, Any] | None


class RequestReader:
    """Reads and checks one route's requests: what comes before a run takes a slot."""

    def __init__(self, route: Route, bodies: BodyBudget) -> None:
        self.route = route
        self.bodies = bodies

    def dialect_of_path(self, path: str) -> str:
        """The client dialect a request on `path` must be, when only one may be there: named in its access line
        even when its body cannot be read."""
        owners = registry.path_owners(self.route.dialects, path)
        return owners[0] if len(owners) == 1 else "unknown"

    async def body(self, receive: Receive) -> bytes:
        """The body, refused past the route's size, past `timeouts.request_body` seconds without a piece, or when it
        comes slower than `limits.min_body_rate` bytes a second once that long has passed."""
        limits, patience = self.route.limits, self.route.timeouts.request_body
        body = bytearray()
        started = time.monotonic()
        try:
            while True:
                deadline = started + patience + len(body) / limits.min_body_rate
                try:
                    message = await _within(receive, max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    raise RequestTimeout(f"the request body did not arrive in time: {len(body)} bytes in "
                                         f"{time.monotonic() - started:.0f}s") from None
                if message["type"] == "http.disconnect":
                    raise ClientGone
                piece = message.get("body", b"")
                self.bodies.take(len(piece))
                body += piece
                if len(body) > limits.max_body_bytes:
                    raise RequestTooLarge(f"request body is larger than {limits.max_body_bytes} bytes")
                if not message.get("more_body", False):
                    return bytes(body)
        finally:
            self.bodies.give_back(len(body))

    def parse(self, call: Quoted, headers: Headers, body: bytes, path: str, called: Called | None = None
              ) -> tuple[Dialect, Turn | RunQuery]:
        limits = self.route.limits
        candidates = self.route.dialects
        if called is None:
            check_content_type(headers)
            value = call.request_json = load_json_object(body, limits.max_json_depth)
        else:  # a call under the path (a `Resource`): read as its dialect says
            if body:  # a POST without a body (the SDKs' cancel) names only an unguessable run: no JSON to check
                check_content_type(headers)
            if any(bad_id(value) for value in called.params.values()):
                raise InvalidRequest(f"an id in the path must be at most {MAX_ID} characters, without control "
                                     "characters")
            given = load_json_object(body, limits.max_json_depth) if body else dict(called.query)
            value = call.request_json = called.resource.read(called.params, given, headers)
            candidates = [called.dialect]
        query = registry.read_query(value, candidates, path)
        if query is not None:
            _check_headers(query[0], value, headers)
            return query
        client, turn = registry.read_request(value, candidates, path)
        _check_headers(client, value, headers)
        self.check_size(turn)
        check_ids(turn, client.name)
        route = self.route
        if route.client_version is not None:
            turn.client_version = route.client_version  # the operator knows what the requests cannot show
        if not route.resumable:  # a resumable run's reply is kept, and followed, as SSE
            turn.accept = headers.get("accept")
        return client, turn

    def check_size(self, turn: Turn) -> None:
        if len(turn.messages) > self.route.limits.max_messages:
            raise RequestTooLarge(f"the request has {len(turn.messages)} messages; this route takes "
                                  f"{self.route.limits.max_messages}")


async def _within(receive: Receive, seconds: float) -> Message:
    """The next message, or `TimeoutError` after `seconds`: `asyncio.timeout`'s rule (its own cancel becomes the
    timeout, anyone else's stays a cancel) for one timer and no more, as every request's body is read with it."""
    task = asyncio.current_task()
    assert task is not None
    cancelling = task.cancelling()
    expired: list[bool] = []

    def expire() -> None:
        expired.append(True)
        task.cancel()

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        return await receive()
    except asyncio.CancelledError:
        if expired and task.uncancel() <= cancelling:
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()


def _check_headers(dialect: Dialect, request: dict[str, Any], headers: Headers) -> None:
    """Refuse a request its headers make one the dialect does not serve (`ProtocolHeaders`: A2A's version)."""
    rules = dialect.capability(ProtocolHeaders)
    if rules is not None:
        rules.check(request, headers)


def check_content_type(headers: Headers) -> None:
    """A POST must say it is JSON: a browser sends one without a content type (or text/plain, or a form)
    cross-origin with no preflight, so a page on another origin could start or stop runs in its visitor's name."""
    content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise UnsupportedMediaType(f"expected Content-Type: application/json, got {content_type or 'none'}")

