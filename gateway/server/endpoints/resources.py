"""The calls a route's client dialects make under its paths by method and path (`Resource`: LangGraph's threads and
runs), served by the route's handler as runs or queries like a POST to the path itself."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters import registry
from gateway.core.capabilities import Resource
from gateway.server.request.reading import Called

if TYPE_CHECKING:
    from gateway.server.endpoints.capabilities import Mounted
    from gateway.server.route import RouteHandler


class ResourceEndpoint:
    """One resource of one dialect under one of a route's paths: the route's handler, told which it is (the
    scope's `resource`)."""

    def __init__(self, handler: ASGIApp, dialect: str, resource: Resource, base: str) -> None:
        self.handler = handler
        self.dialect, self.resource, self.base = dialect, resource, base

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        called = Called(self.dialect, self.resource, self.base, scope["method"], scope.get("path_params", {}), query)
        await self.handler({**scope, "resource": called}, receive, send)


def mount(handler: RouteHandler, mounted: Mounted) -> None:
    """Each resource of each of the route's client dialects, under each of its paths."""
    route = handler.route
    for name in route.dialects:
        resources = registry.get(name).capabilities_of(Resource)
        if not resources:
            continue
        methods: dict[str, list[str]] = {}  # a preflight reaches the first resource at a path: it allows them all
        for resource in resources:
            methods.setdefault(resource.path, []).append(resource.method)
        for path in route.served_paths:
            base = path.rstrip("/")
            for resource in resources:
                endpoint: ASGIApp = ResourceEndpoint(handler, name, resource, base or "/")
                if route.cors is not None:
                    cors = route.cors
                    endpoint = CORSMiddleware(endpoint, allow_origins=cors.allow_origins,
                                              allow_methods=methods[resource.path], allow_headers=cors.allow_headers,
                                              allow_credentials=cors.allow_credentials,
                                              expose_headers=["x-request-id", "content-location"],
                                              max_age=cors.max_age)
                mounted.routes.append(Route(base + resource.path, endpoint, methods=[resource.method, "OPTIONS"]))
