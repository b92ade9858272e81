"""The calls under a route's paths that a dialect answers itself, without a run (`PathAnswer`: Responses'
`POST /v1/responses/compact`): mounted under each path where the route reads that dialect's requests, the caller
identified and refused in the client's dialect as for a run, and the dialect handed what it may read (`Asked`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers, QueryParams
from starlette.types import Receive, Scope, Send

from adapters import registry
from gateway.core.capabilities import PathAnswer
from gateway.core.codec import Dialect
from gateway.core.errors import InvalidRequest
from gateway.core.turn import Message, Turn
from gateway.core.validation import MAX_ID, bad_id, load_json_object
from gateway.server.request.access import Caller
from gateway.server.request.entry import entered, identify
from gateway.server.request.reading import check_content_type

if TYPE_CHECKING:
    from gateway.server.endpoints.capabilities import Mounted
    from gateway.server.route import RouteHandler


def mount(handler: RouteHandler, mounted: Mounted) -> None:
    """Under each path where a dialect of the route that answers paths itself reads requests: `<path><its path>`,
    by method."""
    route = handler.route
    found: dict[str, dict[str, tuple[Dialect, PathAnswer]]] = {}
    for name in route.dialects:
        dialect = registry.get(name)
        for answer in dialect.capabilities_of(PathAnswer):
            for path in route.served_paths:
                if name in registry.path_owners(route.dialects, path):
                    found.setdefault(path.rstrip("/") + answer.path, {}).setdefault(answer.method, (dialect, answer))
    for at, by_method in found.items():
        mounted.by_method(at, {method: partial(answer_at, handler, client=dialect, answer=answer)
                               for method, (dialect, answer) in by_method.items()}, route.cors)


async def answer_at(handler: RouteHandler, scope: Scope, receive: Receive, send: Send, client: Dialect,
                    answer: PathAnswer) -> None:
    """The caller identified, then the dialect's answer written; refused in the client's dialect."""
    async with entered(handler, scope, send, client.name) as call:
        call.record.client_dialect, call.record.outcome = client.name, answer.outcome
        call.writer.error_reply = client.errors_for(None)
        asked = _Asked(handler, identify(call), scope, call.headers, receive)
        if any(bad_id(value) for value in asked.params.values()):
            raise InvalidRequest(f"an id in the path must be at most {MAX_ID} characters, without control "
                                 "characters")
        answered = await answer.answer(asked)
        await call.writer.respond(answered.status, dict(answered.headers), answered.body)


class _Asked:
    """What a `PathAnswer` may read (`gateway.core.capabilities.Asked`): the call, and the caller's conversations."""

    def __init__(self, handler: RouteHandler, caller: Caller, scope: Scope, headers: Headers,
                 receive: Receive) -> None:
        self._handler, self._caller, self._receive = handler, caller, receive
        self.params: Mapping[str, str] = scope.get("path_params", {})
        self.query: Mapping[str, str] = dict(QueryParams(scope.get("query_string", b"")))
        self.headers = headers

    async def json(self) -> dict[str, Any]:
        check_content_type(self.headers)  # as for a run: a page on another origin cannot POST one unasked
        body = await self._handler.reader.body(self._receive)
        return load_json_object(body, self._handler.route.limits.max_json_depth)

    def check(self, turn: Turn) -> None:
        self._handler.reader.check_size(turn)

    async def history(self, run_id: str) -> list[Message]:
        handler = self._handler
        return await handler.mapper.history_after(handler.route.name, self._caller.principal, run_id)
