"""The gateway as an ASGI app: one handler per route, the shared upstream connection pool and conversation store."""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, ExceptionHandler, Message, Receive, Scope, Send

from adapters import registry
from gateway import __version__
from gateway.config import GatewayConfig, route_path
from gateway.config import Route as ConfigRoute
from gateway.conversations.mapper import ConversationMapper
from gateway.conversations.store import ConversationStore
from gateway.inspector.app import InspectorApp
from gateway.inspector.ring import RunRing
from gateway.recordings.files import RecordingFiles
from gateway.runs.boards import open_board
from gateway.server.connections import http_server
from gateway.server.connections.addresses import Addresses
from gateway.server.connections.bodies import BodyBudget
from gateway.server.connections.drain import Drain
from gateway.server.connections.forwarded import ForwardedHeaders
from gateway.server.connections.hosts import ErrorReply, HostCheck
from gateway.server.connections.listeners import Listeners
from gateway.server.endpoints.capabilities import Mounted, mount_across, mount_route
from gateway.server.endpoints.conversations import ConversationEndpoints
from gateway.server.endpoints.documents import owners, usable
from gateway.server.endpoints.push import Pusher
from gateway.server.endpoints.scrape import MetricsEndpoint
from gateway.server.operations import logs
from gateway.server.operations.judging import Judging
from gateway.server.operations.metrics import Metrics
from gateway.server.operations.observed import Observer, recording_of
from gateway.server.operations.probe import UpstreamReadiness, warn_if_unreachable
from gateway.server.operations.refusals import error_response, log_refusal
from gateway.server.operations.telemetry import Tracing
from gateway.server.operations.telemetry import from_environment as tracing_from_environment
from gateway.server.request.request_ids import request_id_of
from gateway.server.request.upstream_sessions import SessionShelf
from gateway.server.route import RouteHandler
from gateway.upstream.http1 import Pool

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

CONFIG_ENV = "AGENT_GATEWAY_CONFIG_JSON"
log = logging.getLogger("agent_gateway.app")


class Gateway:
    """The ASGI app. A request whose Host the gateway does not answer to is refused first (`connections.hosts`),
    and one on the metrics address (`metrics.listen`) can only read the metrics. A proxied path goes straight to its
    route's handler; anything else (health, metrics, the 404s and 405s) to Starlette. Starlette's router and
    middleware cost more per request than a dict lookup, and the proxied requests are the ones that count."""

    def __init__(self, handlers: dict[str, tuple[ASGIApp, frozenset[str]]], app: Starlette,
                 sockets: dict[str, ASGIApp] | None = None, addresses: Addresses | None = None) -> None:
        self.handlers = handlers
        self.app = app
        self.sockets = sockets or {}
        """The WebSocket at a route's path, for a client dialect that has one (`gateway.server.endpoints.sockets`)."""
        self.addresses = addresses if addresses is not None else Addresses(HostCheck(None))
        """What a request meets before the routes, by the address it came in on: a Host check, the metrics."""
        self.forwarded = ForwardedHeaders()
        """The client and scheme a trusted proxy forwards (uvicorn's rules; its own middleware is off)."""

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The request's own coroutine, for the server to await: no frame of the app's stays suspended above it for as
        long as the request runs (every open stream's). Marked a coroutine function below, as servers tell an ASGI 3
        app by that."""
        if scope["type"] == "http":
            self.forwarded.apply(scope)
            address = self.addresses[scope.get("server")]
            if address is not None and (elsewhere := address.elsewhere(scope["headers"])) is not None:
                return elsewhere(scope, receive, _with_request_id(scope, send))
            path = route_path(scope["path"])
            if path != scope["path"]:  # every path answers with and without a trailing slash, never a redirect
                scope = {**scope, "path": path}
            handler = self.handlers.get(path)
            if handler is not None and scope["method"] in handler[1]:
                return handler[0](scope, receive, send)
            return self.app(scope, receive, _with_request_id(scope, send))
        if scope["type"] == "websocket":
            self.forwarded.apply(scope)
            address = self.addresses[scope.get("server")]
            if address is not None and (elsewhere := address.elsewhere(
                    [(name.lower(), value) for name, value in scope["headers"]])) is not None:  # as the client wrote
                return elsewhere(scope, receive, _with_request_id(scope, send))
            if (socket := self.sockets.get(route_path(scope["path"]))) is not None:
                return socket(scope, receive, send)
        return self.app(scope, receive, send)


def _marked_as_coroutine_function(function: Callable[..., Any]) -> None:
    """`inspect.markcoroutinefunction` (Python 3.12), or on 3.11 the mark `asyncio.iscoroutinefunction` looks for:
    a function that returns a coroutine is then told apart from an ASGI 2 app as a coroutine function is."""
    mark = getattr(inspect, "markcoroutinefunction", None)
    if mark is not None:
        mark(function)
    else:
        function._is_coroutine = asyncio.coroutines._is_coroutine  # type: ignore[attr-defined]


_marked_as_coroutine_function(Gateway.__call__)


def from_environment() -> Gateway:
    """The app factory each worker process calls under `serve --workers N`: the config travels as JSON."""
    options = orjson.loads(os.environ[CONFIG_ENV])
    logs.configure(options["log_format"], options["log_level"], worker=os.getpid())
    config = GatewayConfig.model_validate(options["config"])
    http_server.HEAD_SECONDS = config.header_timeout
    return create_app(config, log_bodies=options["log_bodies"], listen_host=options.get("host", "127.0.0.1"))


def create_app(config: GatewayConfig, store: ConversationStore | None = None,
               extra_routes: list[BaseRoute] | None = None, *, log_bodies: bool = False,
               tracer_provider: TracerProvider | None = None, listen_host: str = "127.0.0.1") -> Gateway:
    """The gateway for `config`. `store` overrides the configured one (tests share one between two apps);
    `extra_routes` are served beside the gateway's (the demo mounts its built-in agent there); `tracer_provider`
    traces requests with a provider of the caller's (tests), instead of what the `OTEL_*` environment says;
    `listen_host` is where the transports other than HTTP (`Listener`) listen, as the HTTP server does."""
    if store is None:
        store = config.store.open()
    tracing = Tracing(tracer_provider) if tracer_provider is not None else tracing_from_environment()
    pool = Pool(user_agent=f"agent-gateway/{__version__}")
    metrics = Metrics()
    board = open_board(store, config.store.kept_limits())
    drain = Drain(config.drain_seconds)
    pusher = Pusher(pool)
    new_handler = partial(RouteHandler, pool=pool, bodies=BodyBudget(config.max_body_bytes_in_flight), board=board,
                          mapper=ConversationMapper(store, max_messages=config.store.max_messages,
                                                    max_bytes=config.store.max_conversation_bytes,
                                                    patience=config.store.patience),
                          drain=drain, keepalive=config.keepalive_seconds, metrics=metrics, log_bodies=log_bodies,
                          debug_errors=config.debug_errors, tracing=tracing, pusher=pusher,
                          settings_of=config.settings_of, shelf=SessionShelf(store.max_entries))
    ring, inspector_routes = _inspector(config)
    mounted = Mounted(inspector_routes)
    listeners = Listeners(config, listen_host, partial(_served_at, config))
    mounted.listening = listeners.serving
    drain.on_begin.append(listeners.draining)
    handlers: dict[str, tuple[ASGIApp, frozenset[str]]] = {}
    route_handlers: list[RouteHandler] = []
    host_replies: dict[str, ErrorReply] = {}
    recordings: list[RecordingFiles] = []
    for route in config.routes:
        files = RecordingFiles(route.record, route.name) if route.record is not None else None
        recordings += [files] if files is not None else []
        judging = Judging(route.name, route.judge, metrics) if route.judge is not None and route.judge.sample else None
        route_handler = new_handler(route, observer=Observer(route, ring, files, judging)
                                    if ring is not None or files is not None or judging is not None else None)
        route_handlers.append(route_handler)
        handlers.update(_mount(route_handler, mounted))
        host_replies.update({path: reply for path in route.served_paths
                             if (reply := registry.error_reply(None, route.dialects, path)) is not None})
    scrape = MetricsEndpoint(metrics, config.metrics)
    mounted.routes += _operations(config, drain, store, pool, scrape, route_handlers)
    mount_across(route_handlers, mounted)
    handlers.update(mounted.paths)
    mounted.routes += extra_routes or []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # What startup made lives as long as the process: out of the collector's sight. The thresholds stay at their
        # defaults: higher ones let per-request cycles pile up, and each collection then pauses streams for longer.
        gc.freeze()
        probing = asyncio.create_task(warn_if_unreachable(config, store))
        drain.install()
        await listeners.start(gateway)
        try:
            yield
        finally:
            await listeners.stop()
            drain.uninstall()
            probing.cancel()
            await pusher.close()
            for files in recordings:
                await asyncio.to_thread(files.close)  # what is queued is written
            await board.close()
            await asyncio.gather(*(backend.sessions.close() for handler in route_handlers
                                   for backend in handler.backends if backend.sessions is not None))
            await pool.close()
            await store.close()
            if tracing is not None:
                await asyncio.to_thread(tracing.shutdown)  # the spans still queued are exported

    app = Starlette(routes=mounted.routes, lifespan=lifespan, exception_handlers=_refusals(route_handlers, scrape))
    app.router.redirect_slashes = False  # its redirect would be built from the client's Host header
    alone = (scrape.port, scrape.alone()) if scrape.port is not None else None
    gateway = Gateway(handlers, app, mounted.sockets, Addresses(HostCheck(config.allowed_hosts), alone, host_replies))
    return gateway


def _served_at(config: GatewayConfig, dialect: str) -> dict[str, str]:
    """The routes that serve `dialect`, by name, and the path each serves it at (for a `Listener`)."""
    found: dict[str, str] = {}
    for route in config.routes:
        path = next((p for p in route.served_paths if dialect in owners(route.dialects, p)), None)
        if dialect in route.dialects and path is not None:
            found[route.name] = path
    return found


def _inspector(config: GatewayConfig) -> tuple[RunRing | None, list[BaseRoute]]:
    """The inspector's ring of runs and its page's routes, when it is on."""
    inspector = config.inspector
    if inspector is None:
        return None, []
    if not inspector.key:
        raise ValueError("the inspector needs its key (InspectorOptions.key_for makes one)")
    ring = RunRing(inspector.max_runs, inspector.max_bytes, always=inspector.capture == "always")
    return ring, list(InspectorApp(ring, inspector.key, inspector.path, recording_of).routes())


def _mount(handler: RouteHandler, mounted: Mounted) -> dict[str, tuple[ASGIApp, frozenset[str]]]:
    """What a route serves: its dialects' capabilities, a resumable route's conversations, and its own POST (also as
    Starlette routes, for their 405s), which the app takes straight to the handler."""
    route = handler.route
    mount_route(handler, mounted)
    if route.resumable:
        mounted.routes += conversation_routes(route, ConversationEndpoints(handler))
    methods = ["POST", "OPTIONS"]  # OPTIONS: a CORS preflight (the middleware's) or 204 with Allow, never a run
    served: ASGIApp = handler
    if route.cors is not None:
        cors = route.cors
        served = CORSMiddleware(handler, allow_origins=cors.allow_origins, allow_methods=["POST"],
                                allow_headers=cors.allow_headers, allow_credentials=cors.allow_credentials,
                                expose_headers=["x-request-id"], max_age=cors.max_age)
    mounted.routes += [Route(path, served, methods=methods) for path in route.served_paths]
    return {path: (served, frozenset(methods)) for path in route.served_paths}


def _operations(config: GatewayConfig, drain: Drain, store: ConversationStore, pool: Pool,
                scrape: MetricsEndpoint, handlers: list[RouteHandler]) -> list[BaseRoute]:
    """Health, readiness and the metrics beside the routes."""

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    upstreams = UpstreamReadiness(config.routes, pool)
    handlers_by_name = {handler.route.name: handler for handler in handlers}

    async def readyz(request: Request) -> Response:
        if drain.draining:
            return JSONResponse({"status": "draining"}, status_code=503)
        # A shared Redis says which kind it is and where its primary is: behind sentinels, that moves.
        redis = (await shared.reach()).as_json() if (shared := store.shared_redis()) is not None else None
        said = {"redis": redis} if redis is not None else {}
        if not (redis["reachable"] if redis is not None else await store.ping()):
            return JSONResponse({"status": "store unreachable", **said}, status_code=503)
        if down := await upstreams.unreachable():
            return JSONResponse({"status": "upstream unreachable", "routes": down}, status_code=503)
        ejected = {handler.route.name: out for handler in handlers
                   if handler.ejection is not None and (out := handler.ejection.ejected())}
        if every := [name for name, out in ejected.items() if len(out) == len(handlers_by_name[name].backends)]:
            return JSONResponse({"status": "every upstream ejected", "routes": every, "ejected": ejected},
                                status_code=503)
        return JSONResponse({"status": "ready", **({"ejected": ejected} if ejected else {}), **said})

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
            *scrape.beside_routes()]


def _refusals(handlers: list[RouteHandler], scrape: MetricsEndpoint) -> dict[Any, ExceptionHandler]:
    """The 404 and the 405, in the gateway's error body."""

    async def not_found(request: Request, exc: Exception) -> Response:
        """Names the paths this caller may use: a route its key does not open stays unnamed, as in a catalog."""
        log_refusal(request.scope, 404, "not_found")
        opened = sorted(path for handler in usable(handlers, request.headers)[0]
                        for path in handler.route.served_paths)
        opened += ["/healthz", "/readyz", *scrape.listed_for(request.headers)]
        return error_response(404, "not_found", f"nothing is served at {request.url.path}; you may use "
                              f"{', '.join(opened[:-1])} and {opened[-1]}")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        log_refusal(request.scope, 405, "method_not_allowed")
        allowed = getattr(exc, "headers", None) or {}
        return error_response(405, "method_not_allowed", f"{request.method} is not served at {request.url.path}",
                      {k: v for k, v in allowed.items() if k.lower() == "allow"})

    return {404: not_found, 405: not_allowed}


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
    for path in route.served_paths:
        base = path.rstrip("/")
        found += [Route(base + "/{conversation:path}/stream", endpoints, methods=["GET", "DELETE", "OPTIONS"]),
                  Route(base + "/{conversation:path}/stop", endpoints, methods=["POST", "OPTIONS"])]
    return found


def _with_request_id(scope: Scope, send: Send) -> Send:
    """Every response carries an `X-Request-Id`: the client's, when short and plain, or a new one (kept in the
    scope's state, for the access line)."""
    request_id = request_id_of(Headers(scope=scope))
    scope.setdefault("state", {})["request_id"] = request_id

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and all(name != b"x-request-id"
                                                             for name, _ in message.get("headers", [])):
            message = {**message, "headers": [*message.get("headers", []), (b"x-request-id", request_id.encode())]}
        await send(message)

    return sending
