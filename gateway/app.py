"""The gateway as an ASGI app: one handler per route, the shared upstream clients and conversation store."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from gateway import logs
from gateway.config import GatewayConfig
from gateway.conversation import ConversationMapper
from gateway.metrics import CONTENT_TYPE, Metrics
from gateway.proxy import RouteHandler
from gateway.store import ConversationStore, open_store
from gateway.upstream import UpstreamClients

CONFIG_ENV = "AGENT_GATEWAY_CONFIG_JSON"


def from_environment() -> Starlette:
    """The app factory each worker process calls under `serve --workers N`: the config travels as JSON."""
    options = orjson.loads(os.environ[CONFIG_ENV])
    logs.configure(options["log_format"], options["log_level"])
    return create_app(GatewayConfig.model_validate(options["config"]), log_bodies=options["log_bodies"])


def create_app(config: GatewayConfig, store: ConversationStore | None = None,
               extra_routes: list[BaseRoute] | None = None, *, log_bodies: bool = False) -> Starlette:
    """The gateway for `config`. `store` overrides the configured one (tests share one between two apps);
    `extra_routes` are served beside the gateway's (the demo mounts its built-in agent there)."""
    if store is None:
        settings = config.store
        store = open_store(settings.url, ttl=settings.ttl_seconds, max_entries=settings.max_conversations,
                           max_value_bytes=settings.max_conversation_bytes)
    clients = UpstreamClients()
    metrics = Metrics()
    mapper = ConversationMapper(store, max_messages=config.store.max_messages)
    routes: list[BaseRoute] = []
    for route in config.routes:
        handler: ASGIApp = RouteHandler(route, clients=clients, mapper=mapper, keepalive=config.keepalive_seconds,
                                        metrics=metrics, log_bodies=log_bodies)
        methods = ["POST"]
        if route.cors is not None:
            cors = route.cors
            handler = CORSMiddleware(handler, allow_origins=cors.allow_origins, allow_methods=["POST"],
                                     allow_headers=cors.allow_headers, allow_credentials=cors.allow_credentials,
                                     expose_headers=["x-request-id"], max_age=cors.max_age)
            methods.append("OPTIONS")  # the browser's preflight, answered by the middleware
        routes += [Route(path, handler, methods=methods) for path in route.paths]

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        ready = await store.ping()
        return JSONResponse({"status": "ready" if ready else "store unreachable"}, status_code=200 if ready else 503)

    async def metrics_endpoint(request: Request) -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    routes += [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
               Route("/metrics", metrics_endpoint, methods=["GET"])]
    routes += extra_routes or []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await clients.aclose()
            await store.close()

    return Starlette(routes=routes, lifespan=lifespan)
