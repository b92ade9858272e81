"""The server's side of the capabilities dialects bring (`gateway.core.capabilities`): for each kind that adds
endpoints, the one module that serves it, asked what it mounts under a route's paths or across the routes. The app
names none of them. A dialect that answers a call under its path itself brings a `PathAnswer`, which
`path_answers` serves whatever it is: a new endpoint of that kind needs nothing here.

```
kind         mounted by          what
PathAnswer   path_answers        <path><its path>, answered by the dialect            on a route
RunQueries   queries             <path>/{run_id}<suffix>, a query about a run          on a route
SocketMode   sockets             a WebSocket at <path>                                 on a route
Resource     resources           <path><its path>, read as a run or a query           on a route
Discovery    documents           <path><document path>, and the bare one when alone   across the routes
Catalog      documents           <prefix><catalog path>, the routes a caller may use   across the routes
NamedRoutes  named_routes        <its path>, every route, each request naming its own  across the routes
```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.config.route import Cors
from gateway.server.endpoints import documents, named_routes, path_answers, queries, resources, sockets

if TYPE_CHECKING:
    from gateway.server.route import RouteHandler

Answering = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(slots=True)
class Mounted:
    """What the gateway serves beside its routes' own POSTs: Starlette's routes, matched in order, and the WebSocket
    at a route's path."""

    routes: list[BaseRoute] = field(default_factory=list)
    sockets: dict[str, ASGIApp] = field(default_factory=dict)
    paths: dict[str, tuple[ASGIApp, frozenset[str]]] = field(default_factory=dict)
    """What an exact path serves, by method, before anything else: an endpoint across the routes takes its path
    from a route that has it too (`NamedRoutes`)."""
    listening: dict[str, dict[str, int]] = field(default_factory=dict)
    """What each dialect is also served on while the app runs (`Listener`): for the documents that say so."""

    def by_method(self, at: str, answering: Mapping[str, Answering], cors: Cors | None) -> None:
        """An endpoint at `at` that answers each of its methods its own way, behind the route's CORS policy when it
        has one (a browser's preflight answered, `x-request-id` readable)."""
        endpoint: ASGIApp = _ByMethod(answering)
        methods = list(answering)
        if cors is not None:
            endpoint = CORSMiddleware(endpoint, allow_origins=cors.allow_origins, allow_methods=methods,
                                      allow_headers=cors.allow_headers, allow_credentials=cors.allow_credentials,
                                      expose_headers=["x-request-id"], max_age=cors.max_age)
            methods = [*methods, "OPTIONS"]
        self.routes.append(Route(at, endpoint, methods=methods))


class _ByMethod:
    __slots__ = ("answering",)

    def __init__(self, answering: Mapping[str, Answering]) -> None:
        self.answering = answering

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.answering[scope["method"]](scope, receive, send)


ON_A_ROUTE: tuple[Callable[[RouteHandler, Mounted], None], ...] = (
    path_answers.mount,  # before the run queries' `{run_id}` paths, which would take `/compact`
    queries.mount,
    sockets.mount,
    resources.mount,  # before a resumable route's conversation routes, which take any path under it
)
"""Each kind's mount for one route's paths, in the order their routes are matched."""

ACROSS_ROUTES: tuple[Callable[[list[RouteHandler], Mounted], None], ...] = (
    documents.mount_discovery,
    documents.mount_catalogs,
    named_routes.mount,
)
"""Each kind's mount for what spans the routes (a document at a bare path, a list of them all)."""


def mount_route(handler: RouteHandler, mounted: Mounted) -> None:
    """What the capabilities of the route's dialects serve under its paths."""
    for mount in ON_A_ROUTE:
        mount(handler, mounted)


def mount_across(handlers: list[RouteHandler], mounted: Mounted) -> None:
    """What the capabilities of every route's dialects serve across the routes."""
    for mount in ACROSS_ROUTES:
        mount(handlers, mounted)
