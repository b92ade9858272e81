"""The gateway as an ASGI app: one handler per route, the shared upstream connection pool and conversation store."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import orjson
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters import registry
from gateway import __version__
from gateway.config import GatewayConfig
from gateway.config import Route as ConfigRoute
from gateway.conversations.mapper import ConversationMapper
from gateway.conversations.store import ConversationStore, RedisStore
from gateway.core.codec import AgentDescription, Dialect, RunPath, RunQuery
from gateway.core.errors import GatewayError, UnknownRoute
from gateway.runs.board import KeptLimits, RunBoard
from gateway.runs.redis import RedisRunBoard
from gateway.server import http_server, logs
from gateway.server.metrics import CONTENT_TYPE, Metrics
from gateway.server.probe import warn_if_unreachable
from gateway.server.proxy import BodyBudget, ConversationEndpoints, RouteHandler, request_id_of
from gateway.server.telemetry import Tracing
from gateway.server.telemetry import from_environment as tracing_from_environment
from gateway.upstream.http1 import Pool

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

CONFIG_ENV = "AGENT_GATEWAY_CONFIG_JSON"
log = logging.getLogger("agent_gateway.app")


class Gateway:
    """The ASGI app. A proxied path goes straight to its route's handler; anything else (health, metrics, the
    404s and 405s) to Starlette. Starlette's router and middleware cost more per request than a dict lookup,
    and the proxied requests are the ones that count."""

    def __init__(self, handlers: dict[str, tuple[ASGIApp, frozenset[str]]], app: Starlette) -> None:
        self.handlers = handlers
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            handler = self.handlers.get(scope["path"])
            if handler is not None and scope["method"] in handler[1]:
                await handler[0](scope, receive, send)
                return
            await self.app(scope, receive, _with_request_id(scope, send))
            return
        await self.app(scope, receive, send)


def from_environment() -> Gateway:
    """The app factory each worker process calls under `serve --workers N`: the config travels as JSON."""
    options = orjson.loads(os.environ[CONFIG_ENV])
    logs.configure(options["log_format"], options["log_level"])
    config = GatewayConfig.model_validate(options["config"])
    http_server.HEAD_SECONDS = config.header_timeout
    return create_app(config, log_bodies=options["log_bodies"])


def create_app(config: GatewayConfig, store: ConversationStore | None = None,
               extra_routes: list[BaseRoute] | None = None, *, log_bodies: bool = False,
               tracer_provider: TracerProvider | None = None) -> Gateway:
    """The gateway for `config`. `store` overrides the configured one (tests share one between two apps);
    `extra_routes` are served beside the gateway's (the demo mounts its built-in agent there); `tracer_provider`
    traces requests with a provider of the caller's (tests), instead of what the `OTEL_*` environment says."""
    if store is None:
        store = config.store.open()
    tracing = Tracing(tracer_provider) if tracer_provider is not None else tracing_from_environment()
    pool = Pool(user_agent=f"agent-gateway/{__version__}")
    metrics = Metrics()
    bodies = BodyBudget(config.max_body_bytes_in_flight)
    mapper = ConversationMapper(store, max_messages=config.store.max_messages,
                                max_bytes=config.store.max_conversation_bytes)
    routes: list[BaseRoute] = []
    handlers: dict[str, tuple[ASGIApp, frozenset[str]]] = {}
    route_handlers: list[RouteHandler] = []
    board = open_board(store, config.store.kept_limits())
    for route in config.routes:
        route_handler = RouteHandler(route, pool=pool, mapper=mapper, bodies=bodies, board=board,
                                     keepalive=config.keepalive_seconds, metrics=metrics, log_bodies=log_bodies,
                                     debug_errors=config.debug_errors, tracing=tracing)
        route_handlers.append(route_handler)
        routes += run_routes(route, route_handler)
        handler: ASGIApp = route_handler
        if route.resumable:
            routes += conversation_routes(route, ConversationEndpoints(route_handler))
        methods = ["POST"]
        if route.cors is not None:
            cors = route.cors
            handler = CORSMiddleware(handler, allow_origins=cors.allow_origins, allow_methods=["POST"],
                                     allow_headers=cors.allow_headers, allow_credentials=cors.allow_credentials,
                                     expose_headers=["x-request-id"], max_age=cors.max_age)
            methods.append("OPTIONS")  # the browser's preflight, answered by the middleware
        routes += [Route(path, handler, methods=methods) for path in route.paths]  # for their 405s
        handlers.update({path: (handler, frozenset(methods)) for path in route.paths})

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        ready = await store.ping()
        return JSONResponse({"status": "ready" if ready else "store unreachable"}, status_code=200 if ready else 503)

    async def metrics_endpoint(request: Request) -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    routes += [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
               Route("/metrics", metrics_endpoint, methods=["GET"])]
    routes += discovery_routes(config)
    routes += catalog_routes(route_handlers)
    routes += extra_routes or []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # What startup made lives as long as the process: out of the collector's sight. The thresholds stay at their
        # defaults: higher ones let per-request cycles pile up, and each collection then pauses streams for longer.
        gc.freeze()
        probing = asyncio.create_task(warn_if_unreachable(config, store))
        try:
            yield
        finally:
            probing.cancel()
            await board.close()
            await pool.close()
            await store.close()
            if tracing is not None:
                await asyncio.to_thread(tracing.shutdown)  # the spans still queued are exported

    served = sorted(handlers)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, "not_found", f"nothing is served at {request.url.path}; the gateway serves "
                      f"{', '.join(served)}, /healthz, /readyz and /metrics")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _error(405, "method_not_allowed", f"{request.method} is not served at {request.url.path}")

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: not_allowed})
    app.router.redirect_slashes = False  # its redirect would be built from the client's Host header
    return Gateway(handlers, app)


def conversation_routes(route: ConfigRoute, endpoints: ASGIApp) -> list[Route]:
    """Under each of a resumable route's paths: resume a conversation's run (`GET .../{id}/stream`) and stop it
    (`DELETE .../{id}/stream`, `POST .../{id}/stop`). The id may hold slashes (the AI SDK escapes them)."""
    if route.cors is not None:
        cors = route.cors
        endpoints = CORSMiddleware(endpoints, allow_origins=cors.allow_origins, allow_methods=["GET", "DELETE", "POST"],
                                   allow_headers=[*cors.allow_headers, "last-event-id"],
                                   allow_credentials=cors.allow_credentials, expose_headers=["x-request-id"],
                                   max_age=cors.max_age)
    found: list[Route] = []
    for path in route.paths:
        base = path.rstrip("/")
        found += [Route(base + "/{conversation:path}/stream", endpoints, methods=["GET", "DELETE", "OPTIONS"]),
                  Route(base + "/{conversation:path}/stop", endpoints, methods=["POST", "OPTIONS"])]
    return found


class RunQueries:
    """Requests about a run at a path under a route's (`Dialect.run_paths`), by method."""

    def __init__(self, handler: RouteHandler, by_method: dict[str, tuple[Dialect, RunPath]]) -> None:
        self.handler = handler
        self.by_method = by_method

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        dialect, run_path = self.by_method[scope["method"]]
        query = RunQuery(scope["path_params"]["run_id"], cancel=run_path.cancel, forget=run_path.forget)
        await self.handler.query_at(scope, receive, send, dialect, query)


def run_routes(route: ConfigRoute, handler: RouteHandler) -> list[Route]:
    """Under each path where a dialect of the route with `run_paths` reads requests: `<path>/{run_id}<suffix>`
    (Responses' `GET /v1/responses/{id}`, `POST .../cancel`)."""
    found: dict[str, dict[str, tuple[Dialect, RunPath]]] = {}
    for name in route.dialects:
        dialect = registry.get(name)
        for path in route.paths:
            if dialect.run_paths and name in registry.path_owners(route.dialects, path):
                for run_path in dialect.run_paths:
                    at = path.rstrip("/") + "/{run_id}" + run_path.suffix
                    found.setdefault(at, {}).setdefault(run_path.method, (dialect, run_path))
    out = []
    for at, by_method in found.items():
        endpoint: ASGIApp = RunQueries(handler, by_method)
        methods = list(by_method)
        if route.cors is not None:
            cors = route.cors
            endpoint = CORSMiddleware(endpoint, allow_origins=cors.allow_origins, allow_methods=methods,
                                      allow_headers=cors.allow_headers, allow_credentials=cors.allow_credentials,
                                      expose_headers=["x-request-id"], max_age=cors.max_age)
            methods.append("OPTIONS")
        out.append(Route(at, endpoint, methods=methods))
    return out


def catalog_routes(handlers: list[RouteHandler]) -> list[Route]:
    """Where clients list the routes they may use (`Dialect.catalog_path`: OpenAI's `GET /v1/models`), beside
    each route path that ends in one of the dialect's conventional paths (`/team/v1/chat/completions` lists at
    `/team/v1/models`), or at the plain catalog path for a route on paths of its own."""
    listed: dict[str, tuple[Dialect, list[RouteHandler]]] = {}
    for handler in handlers:
        for name in handler.route.dialects:
            dialect = registry.get(name)
            if dialect.catalog_path is None or dialect.catalog is None:
                continue
            prefixes = {path[: -len(own)] for path in handler.route.paths for own in dialect.paths
                        if path.endswith(own)} or {""}
            for prefix in prefixes:
                entry = listed.setdefault(prefix + dialect.catalog_path, (dialect, []))
                if handler not in entry[1]:
                    entry[1].append(handler)
    routes = []
    for at, (dialect, serving) in listed.items():
        endpoint = _catalog(dialect, serving)
        routes += [Route(at, endpoint, methods=["GET"]), Route(at + "/{model}", endpoint, methods=["GET"])]
    return routes


def _catalog(dialect: Dialect, serving: list[RouteHandler]) -> Callable[[Request], Awaitable[Response]]:
    """The routes this caller may use (an open route, or one its key opens), or the one it names."""

    async def endpoint(request: Request) -> Response:
        assert dialect.catalog is not None
        usable = []
        refused: GatewayError | None = None
        for handler in serving:
            try:
                handler.access.identify(request.headers)
            except GatewayError as error:
                refused = error
                continue
            usable.append(handler.route)
        model = request.path_params.get("model")
        if model is not None:
            usable = [route for route in usable if route.name == model]
            if not usable:
                refused = UnknownRoute(f"The model '{model}' does not exist or you do not have access to it.")
        if refused is not None and not usable and dialect.error_reply is not None:
            status, body = dialect.error_reply(refused, None)
            return Response(body, status, media_type="application/json")
        described = [AgentDescription(route.name, route.agent.description, route.agent.url or "")
                     for route in usable]
        listing = dialect.catalog(described)
        return Response(orjson.dumps(listing["data"][0] if model is not None else listing),
                        media_type="application/json")

    return endpoint


def open_board(store: ConversationStore, limits: KeptLimits) -> RunBoard:
    """Where resumable runs are known: every replica's over a Redis store, else this process's."""
    if isinstance(store, RedisStore):
        return RedisRunBoard(store, limits)
    return RunBoard(limits)


def discovery_routes(config: GatewayConfig) -> list[Route]:
    """The documents clients discover a route's agent by (A2A's agent card), at `<path><document path>` for each
    path where the route reads that dialect's requests, and at the bare document path when only one path has one."""
    found: list[tuple[str, str, ASGIApp | Callable[[Request], Awaitable[Response]]]] = []
    for route in config.routes:
        for name in route.dialects:
            dialect = registry.get(name)
            document, describe = dialect.discovery_path, dialect.describe
            if document is None or describe is None:
                continue
            for path in route.paths:
                if name not in registry.path_owners(route.dialects, path):
                    continue  # another dialect's own path: this dialect's requests are refused there
                card = _describer(route, path, describe)
                endpoint: ASGIApp | Callable[[Request], Awaitable[Response]] = card
                if route.cors is not None:  # a browser's A2A client reads the card cross-origin too
                    endpoint = CORSMiddleware(request_response(card), allow_origins=route.cors.allow_origins,
                                              allow_methods=["GET"], allow_headers=route.cors.allow_headers,
                                              max_age=route.cors.max_age)
                found.append((path.rstrip("/") + document, document, endpoint))
    routes = [Route(at, endpoint, methods=["GET", "OPTIONS"]) for at, _, endpoint in found]
    bare = {document for _, document, _ in found}
    if len(found) == 1:
        routes.append(Route(found[0][1], found[0][2], methods=["GET", "OPTIONS"]))
    elif len(bare) == 1 and found:
        log.info("%d routes publish %s under their paths; none at %s itself", len(found), *bare, *bare)
    return routes


def _describer(route: ConfigRoute, path: str, describe: Callable[[AgentDescription], dict[str, Any]]
               ) -> Callable[[Request], Awaitable[Response]]:
    info = route.agent

    async def endpoint(request: Request) -> Response:
        if request.method != "GET":
            return _error(405, "method_not_allowed", f"{request.method} is not served at {request.url.path}")
        url = info.url or f"{request.url.scheme}://{request.url.netloc}{path}"
        card = describe(AgentDescription(name=route.name, description=info.description, url=url,
                                         version=info.version, skills=tuple(s.model_dump() for s in info.skills)))
        # A cache in front must not serve one Host's card to another: the URL in it is the Host's.
        headers = {} if info.url else {"vary": "Host"}
        return Response(orjson.dumps(card), media_type="application/json", headers=headers)

    return endpoint


def _error(status: int, code: str, message: str) -> Response:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _with_request_id(scope: Scope, send: Send) -> Send:
    """Every response carries an `X-Request-Id`: the client's, when short and plain, or a new one."""
    request_id = request_id_of(Headers(scope=scope))

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and all(name != b"x-request-id"
                                                             for name, _ in message.get("headers", [])):
            message = {**message, "headers": [*message.get("headers", []), (b"x-request-id", request_id.encode())]}
        await send(message)

    return sending
