"""An upstream's discovery document (A2A's agent card), read for where and how to call it, and the calls the
gateway makes to an upstream beside the run's own (cancelling a task the client walked away from).

The document names an endpoint by URL. Only its path is taken: the origin stays the configured one, so a card
written for the agent's public address still works from a sidecar, and no card can send the gateway to a host
its operator did not configure. An endpoint the dialect calls over a transport of its own (`UpstreamTransport`:
A2A's gRPC) is an address on another port: its port (and path) is taken, on the configured host. A document the
dialect's settings refuse (`Discovery.refusal`: an A2A card that no trusted key signed) fails the route's runs, with
the reason, until one is read that is not refused: the configured URL is not called instead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from gateway.config import Route, Upstream
from gateway.core import capabilities
from gateway.core.capabilities import Endpoint
from gateway.core.codec import Dialect, UpstreamRequest
from gateway.core.errors import UpstreamError
from gateway.core.transports import Unusable, UpstreamTransport
from gateway.upstream.foreign import Transport
from gateway.upstream.http1 import HTTPError, Pool, Target

log = logging.getLogger("agent_gateway.discovery")

MAX_DOCUMENT_BYTES = 256 * 1024
RETRY_SECONDS = 30.0
"""After a failed read, how long the configured URL is used before the document is asked for again."""
SIDE_CALL_SECONDS = 5.0
"""How long a side call (a cancel) may take: nobody waits for it."""


class Discovery:
    """Where one route calls its upstream: the configured URL until the upstream's document says otherwise."""

    def __init__(self, route: Route, dialect: Dialect, pool: Pool, settings: Any = None,
                 upstream: Upstream | None = None) -> None:
        self.route = route
        self.upstream = upstream or route.upstream
        """Which of the route's upstreams this is (a fallback's, or the route's own)."""
        self.dialect = dialect
        self.pool = pool
        self.settings = settings
        """The dialect's own section of the configuration, for `Discovery.refusal`."""
        self.refused: str | None = None
        """Why the last document read was refused, while it stands (what the runs fail with)."""
        self.unread = ""
        """Why that document could not be read, if so (" (HTTP 404)"): for the log and `serve --check`, not for
        clients, who are not shown the upstream's answers."""
        self.configured = self.upstream.target(route.timeouts.connect)
        """Where the document is read, over HTTP."""
        self._transport = dialect.capability(UpstreamTransport)
        self.unusable: Unusable | None = None
        """Why no run of the route can be sent: what calling the upstream as configured, or as its document says,
        needs that is not installed."""
        self.target = self._called(self.upstream.url, self.upstream.variant)
        self.variant: str | None = None
        """The variant the document showed the upstream to be."""
        self.document: object = None
        """The document as the upstream served it, once read: recordings keep it, for a replay to serve."""
        self._next_attempt = 0.0
        self._discovery = dialect.capability(capabilities.Discovery)
        self._done = self._discovery is None
        self._lock = asyncio.Lock()

    async def endpoint(self) -> tuple[Target, str | None]:
        """Where to call the upstream and the variant its document shows; raises `Unusable` when the gateway cannot
        call it as installed, and `UpstreamError` while its document is refused."""
        discovery = self._discovery
        if discovery is not None and not self._done and time.monotonic() >= self._next_attempt:
            async with self._lock:
                if not self._done and time.monotonic() >= self._next_attempt:
                    await self._discover(discovery)
        if self.refused is not None:
            raise UpstreamError(f"the upstream is not called: {self.refused}")
        if self.unusable is not None:
            raise self.unusable
        return self.target, self.variant

    def _called(self, url: str, variant: str | None) -> Target:
        """The target a variant is called at: over the dialect's own transport for a variant of its
        `UpstreamTransport` (or `unusable` set, when that is not installed), else over HTTP."""
        transport = self._transport
        if transport is None or variant not in transport.variants:
            return self.upstream.target(self.route.timeouts.connect, url)
        if (missing := transport.missing()) is not None:
            self.unusable = Unusable(f"the upstream is called over {variant} here, and {missing}")
        calls: Transport = self.pool.transport(self.dialect.name, transport.open)
        return self.upstream.target(self.route.timeouts.connect, url, transport=calls)

    async def _discover(self, discovery: capabilities.Discovery) -> None:
        path = discovery.path
        url = self.upstream.url
        try:
            async with asyncio.timeout(min(self.route.timeouts.first_event, 10.0)):
                document = await self._get(path)
            endpoint = discovery.read(document, url, self.upstream.variant)
            self.document = document
        except Unusable as exc:
            self._done = True
            self.unusable = exc
            log.warning("route %s: the upstream's %s: %s", self.route.name, path, exc.message,
                        extra={"route": self.route.name})
            return
        except (HTTPError, TimeoutError, ValueError) as exc:
            self._next_attempt = time.monotonic() + RETRY_SECONDS
            if self._refuse(discovery, None, f" ({exc})"):
                return
            log.warning("route %s: the upstream's %s could not be read (%s); calling %s as configured",
                        self.route.name, path, exc, url, extra={"route": self.route.name})
            return
        if self._refuse(discovery, document):
            self._next_attempt = time.monotonic() + RETRY_SECONDS
            return
        self._done = True
        if endpoint is None:
            log.warning("route %s: the upstream's %s names no endpoint the gateway can call; calling %s as "
                        "configured", self.route.name, path, url, extra={"route": self.route.name})
            return
        transport = self._transport
        over_transport = transport is not None and endpoint.variant in transport.variants
        self.target = self._called(_on_port(url, endpoint) if over_transport else _on_origin(url, endpoint),
                                   endpoint.variant)
        self.variant = endpoint.variant
        log.info("route %s: the upstream's %s names %s%s", self.route.name, path, self.target.url,
                 f" ({endpoint.variant})" if endpoint.variant else "", extra={"route": self.route.name})

    def _refuse(self, discovery: capabilities.Discovery, document: object, detail: str = "") -> bool:
        """Whether the dialect's settings refuse the upstream by this document (None: it could not be read, for
        the reason `detail` gives): the reason is kept for the runs that fail by it, and logged each time the
        document is read."""
        self.refused, self.unread = discovery.refusal(document, self.settings), detail
        if self.refused is not None:
            log.error("route %s: the upstream is refused: %s%s; its runs fail until it is fixed", self.route.name,
                      self.refused, detail, extra={"route": self.route.name})
        return self.refused is not None

    async def _get(self, path: str) -> object:
        headers = {"accept": "application/json", **self.upstream.headers}
        response = await self.pool.request("GET", self.configured, b"", headers, path)
        try:
            body = b""
            while chunk := await response.read():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ValueError(f"larger than {MAX_DOCUMENT_BYTES} bytes")
            if response.status != 200:
                raise ValueError(f"HTTP {response.status}")
            try:
                return orjson.loads(body)
            except orjson.JSONDecodeError:
                raise ValueError("not JSON") from None
        finally:
            response.release()


def _on_origin(configured: str, endpoint: Endpoint) -> str:
    """The endpoint's path and query on the configured URL's origin."""
    base, found = urlsplit(configured), urlsplit(endpoint.url)
    return urlunsplit((base.scheme, base.netloc, found.path or "/", found.query, ""))


def _on_port(configured: str, endpoint: Endpoint) -> str:
    """An address's port and path (`host:port/tenant`) on the configured URL's scheme and host."""
    base, found = urlsplit(configured), urlsplit("//" + endpoint.url.split("://", 1)[-1])
    host = base.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        port = found.port or base.port
    except ValueError:  # not a port: the configured one
        port = base.port
    return urlunsplit((base.scheme, f"{host}:{port}" if port else host, found.path or "/", "", ""))


async def unusable(route: Route, dialect: Dialect, pool: Pool) -> str | None:
    """Why the route's runs would be refused as the gateway is installed (its upstream's document offers only what
    needs a package that is missing), read as a run would: for `serve --check`."""
    discovery = Discovery(route, dialect, pool)
    try:
        await discovery.endpoint()
    except Unusable as exc:
        return exc.message
    return None


class SideCalls:
    """Calls to an upstream that nobody waits for, kept referenced until they end and bounded in time."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self._running: set[asyncio.Task[None]] = set()

    def send(self, target: Target, request: UpstreamRequest, headers: dict[str, str], what: str) -> None:
        task = asyncio.create_task(self._send(target, request, {**headers, **request.headers}, what))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _send(self, target: Target, request: UpstreamRequest, headers: dict[str, str], what: str) -> None:
        try:
            async with asyncio.timeout(SIDE_CALL_SECONDS):
                response = await self.pool.request(request.method, target, request.body, headers, request.path)
                try:
                    await response.drain(SIDE_CALL_SECONDS)
                finally:
                    response.release()
            log.info("%s: upstream answered HTTP %s", what, response.status)
        except (HTTPError, TimeoutError) as exc:
            log.warning("%s: not sent (%s)", what, exc)
