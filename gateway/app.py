"""The gateway as an ASGI app: one handler per route, the shared upstream clients and conversation store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.config import GatewayConfig
from gateway.conversation import ConversationMapper
from gateway.proxy import RouteHandler
from gateway.store import ConversationStore, open_store
from gateway.upstream import UpstreamClients


def create_app(config: GatewayConfig, store: ConversationStore | None = None,
               extra_routes: list[BaseRoute] | None = None) -> Starlette:
    """The gateway for `config`. `store` overrides the configured one (tests share one between two apps);
    `extra_routes` are served beside the gateway's (the demo mounts its built-in agent there)."""
    if store is None:
        settings = config.store
        store = open_store(settings.url, ttl=settings.ttl_seconds, max_entries=settings.max_conversations,
                           max_value_bytes=settings.max_conversation_bytes)
    clients = UpstreamClients()
    mapper = ConversationMapper(store, max_messages=config.store.max_messages)
    routes: list[BaseRoute] = []
    for route in config.routes:
        handler = RouteHandler(route, clients=clients, mapper=mapper, keepalive=config.keepalive_seconds)
        routes += [Route(path, handler, methods=["POST"]) for path in route.paths]

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        ready = await store.ping()
        return JSONResponse({"status": "ready" if ready else "store unreachable"}, status_code=200 if ready else 503)

    routes += [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
    routes += extra_routes or []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await clients.aclose()
            await store.close()

    return Starlette(routes=routes, lifespan=lifespan)
