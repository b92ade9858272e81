"""`/metrics`, and who may read it: whoever reaches it, or only a caller that sends `metrics.key` (as a route's key
is sent, compared in constant time); beside the routes, or alone on an address of its own (`metrics.listen`), out
of the clients' reach. Under `--workers N` every worker serves that address too, each reading all the workers'
counts (`PROMETHEUS_MULTIPROC_DIR`)."""

from __future__ import annotations

import hmac

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.config.settings import MetricsOptions
from gateway.core.errors import Unauthorized
from gateway.server.operations.metrics import CONTENT_TYPE, Metrics
from gateway.server.operations.refusals import error_response, log_refusal
from gateway.server.request.access import presented_key

PATH = "/metrics"


class MetricsEndpoint:
    """`/metrics` as `metrics:` configures it: who may read it, and on which address."""

    def __init__(self, metrics: Metrics, options: MetricsOptions) -> None:
        self.metrics = metrics
        self.key = options.key.encode() if options.key is not None else None
        address = options.address
        self.port = address[1] if address is not None else None
        """The port of the address `/metrics` is served on alone; None: beside the routes."""

    def readable_by(self, headers: Headers) -> bool:
        return self.key is None or hmac.compare_digest(presented_key(headers).encode(), self.key)

    async def serve(self, request: Request) -> Response:
        if not self.readable_by(request.headers):
            log_refusal(request.scope, 401, "unauthorized")
            return error_response(401, "unauthorized", f"{PATH} needs the key metrics.key names: send Authorization: "
                                  "Bearer <key> or X-API-Key: <key>", Unauthorized.headers)
        return Response(self.metrics.exposition(), media_type=CONTENT_TYPE)

    def listed_for(self, headers: Headers) -> list[str]:
        """What a 404 on the gateway's address names of the metrics: their path, when served there to this caller."""
        return [PATH] if self.port is None and self.readable_by(headers) else []

    def beside_routes(self) -> list[Route]:
        """The route of `/metrics` on the gateway's own address: none when it has an address of its own."""
        return [Route(PATH, self.serve, methods=["GET"])] if self.port is None else []

    def alone(self) -> Starlette:
        """What the metrics address serves: `/metrics`, and for anything else a 404 that says so."""

        async def not_found(request: Request, exc: Exception) -> Response:
            log_refusal(request.scope, 404, "not_found")
            return error_response(404, "not_found", f"nothing is served at {request.url.path}; this address "
                                  f"serves {PATH} only")

        async def not_allowed(request: Request, exc: Exception) -> Response:
            log_refusal(request.scope, 405, "method_not_allowed")
            allowed = getattr(exc, "headers", None) or {}
            return error_response(405, "method_not_allowed", f"{request.method} is not served at {PATH}", allowed)

        return Starlette(routes=[Route(PATH, self.serve, methods=["GET"])],
                         exception_handlers={404: not_found, 405: not_allowed})
