"""The documents clients discover a route's agent by (`Discovery`: A2A's agent card), served at
`<path><document path>` for each path where the route reads that dialect's requests, and at the bare document path
when only one path has one (`mount_discovery`); and the lists of the routes a caller may use (`Catalog`: OpenAI's
`GET /v1/models`, `mount_catalogs`; a 404's: `usable`).

A document is built per request (its URL is the one it was asked under, unless the route names one) and cached by
clients the HTTP way: a weak `ETag` of its bytes, `Last-Modified` the time the gateway loaded its configuration,
`Cache-Control: public, max-age=300`, a 304 to a conditional GET that already has it, and `Vary` naming what it
was built from (`Host`, when the URL comes from it; the headers the dialect reads, such as `A2A-Version`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from email.utils import formatdate, parsedate_to_datetime
from typing import TYPE_CHECKING, Any

import orjson
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp

from adapters import registry
from gateway.config import GatewayConfig
from gateway.config import Route as ConfigRoute
from gateway.core.capabilities import AgentDescription, Catalog, Discovery
from gateway.core.codec import Dialect
from gateway.core.errors import GatewayError, UnknownRoute

if TYPE_CHECKING:
    from gateway.server.endpoints.capabilities import Mounted
    from gateway.server.route import RouteHandler

log = logging.getLogger("agent_gateway.app")

MAX_AGE = 300
"""Seconds a client may use a document without asking again; a conditional GET after that costs a 304."""


def mount_discovery(handlers: list[RouteHandler], mounted: Mounted) -> None:
    if handlers:
        mounted.routes += _published([handler.route for handler in handlers], mounted.listening,
                                     handlers[0].settings_of)


def discovery_routes(config: GatewayConfig) -> list[Route]:
    """The documents a configuration's routes publish, as the app serves them."""
    return _published(config.routes, {}, config.settings_of)


def _published(configured: list[ConfigRoute], listening: Mapping[str, Mapping[str, int]],
               settings_of: Callable[[str], Any]) -> list[Route]:
    """`listening`: what each dialect is also served on while the app runs (`Listener`), by name, and its port;
    `settings_of`: each dialect's own section of the configuration (`Settings`)."""
    published = time.time()
    found: list[tuple[str, str, ASGIApp | Callable[[Request], Awaitable[Response]]]] = []
    publishing: set[str] = set()
    for route in configured:
        for name in route.dialects:
            discovery = registry.get(name).capability(Discovery)
            if discovery is None:
                continue
            for path in route.served_paths:
                if name not in owners(route.dialects, path):
                    continue  # another dialect's path: its clients, not this dialect's, are sent there
                publishing.add(route.name)
                card = _document_endpoint(route, path, discovery, published, name, listening, settings_of(name))
                endpoint: ASGIApp | Callable[[Request], Awaitable[Response]] = card
                if route.cors is not None:  # a browser's A2A client reads the card cross-origin too
                    endpoint = CORSMiddleware(request_response(card), allow_origins=route.cors.allow_origins,
                                              allow_methods=["GET"], allow_headers=route.cors.allow_headers,
                                              expose_headers=["etag", "last-modified"], max_age=route.cors.max_age)
                found.append((path.rstrip("/") + discovery.path, discovery.path, endpoint))
    routes = [Route(at, endpoint, methods=["GET", "HEAD", "OPTIONS"]) for at, _, endpoint in found]
    bare = {document for _, document, _ in found}
    if len(found) == 1:
        routes.append(Route(found[0][1], found[0][2], methods=["GET", "HEAD", "OPTIONS"]))
    elif len(bare) == 1 and found:
        log.info("%s publish%s %s under %d paths; none at %s itself",
                 f"{len(publishing)} routes" if len(publishing) > 1 else f"route {next(iter(publishing))}",
                 "" if len(publishing) > 1 else "es", *bare, len(found), *bare)
    return routes


def owners(dialects: list[str], path: str) -> list[str]:
    """The dialects a route's path is for: those whose conventional path it is or ends with (`/a2a`,
    `/team/v1/chat/completions`), or all of them on a path of its own."""
    return [name for name in dialects if any(path.endswith(own) for own in registry.get(name).paths)] or dialects


def _document_endpoint(route: ConfigRoute, path: str, discovery: Discovery, published: float, dialect: str,
                       listening: Mapping[str, Mapping[str, int]], settings: Any
                       ) -> Callable[[Request], Awaitable[Response]]:
    """`listening` is filled once the listeners have started, after the routes are mounted: read at each request."""
    info = route.agent
    varies = [*discovery.varies, *(() if info.url else ("host",))]
    last_modified = formatdate(int(published), usegmt=True)

    async def endpoint(request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return JSONResponse({"error": {"code": "method_not_allowed",
                                           "message": f"{request.method} is not served at {request.url.path}"}},
                                status_code=405)
        url = info.url or f"{request.url.scheme}://{request.url.netloc}{path}"
        asked = {name.lower(): value for name, value in request.query_params.items()}
        asked.update(request.headers)
        document = discovery.document(AgentDescription(name=route.name, description=info.description, url=url,
                                             version=info.version, skills=tuple(s.model_dump() for s in info.skills),
                                             webhooks=route.push is not None,
                                             listeners=dict(listening.get(dialect, {})), settings=settings), asked)
        body = orjson.dumps(document)
        headers = {"etag": f'W/"{hashlib.sha256(body).hexdigest()[:40]}"', "last-modified": last_modified,
                   "cache-control": f"public, max-age={MAX_AGE}"}
        if varies:
            headers["vary"] = ", ".join(varies)
        if _not_modified(request, headers["etag"], int(published)):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    return endpoint


def _not_modified(request: Request, etag: str, published: int) -> bool:
    """Whether a conditional GET already has this document (RFC 9110 13.1.2 and 13.1.3: `If-None-Match`, by weak
    comparison, and only without it `If-Modified-Since`)."""
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in tags or etag.removeprefix("W/") in tags
    since = request.headers.get("if-modified-since")
    if since is None:
        return False
    try:
        return published <= parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError):
        return False


def mount_catalogs(handlers: list[RouteHandler], mounted: Mounted) -> None:
    """Where clients list the routes they may use (`Catalog`: OpenAI's `GET /v1/models`), beside
    each route path that ends in one of the dialect's conventional paths (`/team/v1/chat/completions` lists at
    `/team/v1/models`), or at the plain catalog path for a route on paths of its own."""
    listed: dict[str, tuple[Dialect, Catalog, list[RouteHandler]]] = {}
    for handler in handlers:
        for name in handler.route.dialects:
            dialect = registry.get(name)
            catalog = dialect.capability(Catalog)
            if catalog is None:
                continue
            prefixes = {path[: -len(own)] for path in handler.route.served_paths for own in dialect.paths
                        if path.endswith(own)} or {""}
            for prefix in prefixes:
                entry = listed.setdefault(prefix + catalog.path, (dialect, catalog, []))
                if handler not in entry[2]:
                    entry[2].append(handler)
    for at, (dialect, catalog, serving) in listed.items():
        endpoint = _catalog(dialect, catalog, serving)
        mounted.routes += [Route(at, endpoint, methods=["GET"]), Route(at + "/{model}", endpoint, methods=["GET"])]


def usable(handlers: Iterable[RouteHandler], headers: Headers) -> tuple[list[RouteHandler], GatewayError | None]:
    """The routes a caller may use: the open ones, and those its key opens; and why the last of the others refused
    it. What a caller is shown of the gateway (a catalog, a 404) lists these only."""
    opened: list[RouteHandler] = []
    refused: GatewayError | None = None
    for handler in handlers:
        try:
            handler.access.identify(headers)
        except GatewayError as error:
            refused = error
            continue
        opened.append(handler)
    return opened, refused


def _catalog(dialect: Dialect, catalog: Catalog, serving: list[RouteHandler]
             ) -> Callable[[Request], Awaitable[Response]]:
    """The routes this caller may use (an open route, or one its key opens), or the one it names."""

    async def endpoint(request: Request) -> Response:
        opened, refused = usable(serving, request.headers)
        usable_routes = [handler.route for handler in opened]
        model = request.path_params.get("model")
        if model is not None:
            usable_routes = [route for route in usable_routes if route.name == model]
            if not usable_routes:
                refused = UnknownRoute(f"The model '{model}' does not exist or you do not have access to it.")
        reply = dialect.errors_for(None)
        if refused is not None and not usable_routes and reply is not None:
            status, body = reply(refused)
            return Response(body, status, media_type="application/json")
        described = [AgentDescription(route.name, route.agent.description, route.agent.url or "")
                     for route in usable_routes]
        listing = catalog.listing(described)
        return Response(orjson.dumps(listing["data"][0] if model is not None else listing),
                        media_type="application/json")

    return endpoint
