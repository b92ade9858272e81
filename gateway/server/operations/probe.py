"""Whether what a configuration names can be reached: each route's upstream and the conversation store.

`serve --check` prints a line per probe and fails on any; a starting gateway logs a warning for each that fails,
and serves anyway (an upstream may come up after it). An upstream is reached the way requests reach it (its proxy,
its TLS options, the TLS handshake included), without sending it a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from gateway.config import GatewayConfig, Route
from gateway.conversations.store import ConversationStore, redact_url
from gateway.core.errors import GatewayError
from gateway.upstream.http1 import HTTPError, Pool

log = logging.getLogger("agent_gateway.probe")


@dataclass(frozen=True, slots=True)
class Probe:
    what: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{self.what}: {'ok' if self.ok else 'FAILED'} ({self.detail})"


async def probe(config: GatewayConfig, store: ConversationStore | None) -> list[Probe]:
    """Each upstream reached, then the store pinged (unless it is None: looked at elsewhere)."""
    pool = Pool()
    try:
        checks = [_upstream(pool, route) for route in config.routes]
        results = list(await asyncio.gather(*checks))
    finally:
        await pool.close()
    if store is None:
        return results
    started = time.monotonic()
    shared = store.shared_redis()
    reach = await shared.reach() if shared is not None else None
    ready = reach.reachable if reach is not None else await store.ping()
    took = f"{(time.monotonic() - started) * 1000:.0f} ms"
    detail = took if ready else "it does not answer"
    results.append(Probe(f"store {redact_url(config.store.url)}", ready,
                         f"{reach.line()}, {detail}" if reach is not None else detail))
    return results


async def _upstream(pool: Pool, route: Route) -> Probe:
    upstream = route.upstream
    target = upstream.target(route.timeouts.connect)
    what = f"{route.name}: upstream {upstream.url} ({upstream.dialect})"
    started = time.monotonic()
    try:
        await pool.reach(target)
    except HTTPError as exc:
        return Probe(what, ok=False, detail=str(exc))
    return Probe(what, ok=True, detail=f"connected in {(time.monotonic() - started) * 1000:.0f} ms")


async def documents(config: GatewayConfig) -> list[Probe]:
    """For each upstream whose dialect's settings would refuse it by its discovery document (A2A's card, with
    `a2a.trusted_card_keys`), the document read and judged as the route's first run would: `serve --check` says
    why a route's runs would fail before any is sent."""
    from adapters import registry
    from gateway.core.capabilities import Discovery
    from gateway.server.request.discovery import Discovery as Reading

    pool = Pool()
    found: list[Probe] = []
    try:
        for route in config.routes:
            dialect = registry.get(route.upstream.dialect)
            discovery, settings = dialect.capability(Discovery), config.settings_of(dialect.name)
            if discovery is None or discovery.refusal(None, settings) is None:
                continue  # nothing refused: a document is only a hint of where to call
            reading = Reading(route, dialect, pool, settings)
            with contextlib.suppress(GatewayError):  # the reason is kept in `refused`
                await reading.endpoint()
            what = f"{route.name}: upstream {route.upstream.url}'s {discovery.path}"
            found.append(Probe(what, reading.refused is None,
                               "accepted" if reading.refused is None else reading.refused + reading.unread))
    finally:
        await pool.close()
    return found


READINESS_SECONDS = 2.0
"""How long a look at the upstreams answers `/readyz` before it looks again: probes come every few seconds, from
several places."""


class UpstreamReadiness:
    """Whether the routes that say so (`ready_needs_upstream`) reach their upstreams, looked at once in a while."""

    def __init__(self, routes: list[Route], pool: Pool) -> None:
        self.routes = [route for route in routes if route.ready_needs_upstream]
        self.pool = pool
        self._down: list[str] = []
        self._looked_at = -READINESS_SECONDS

    async def unreachable(self) -> list[str]:
        """The names of the routes whose upstream cannot be reached."""
        if self.routes and time.monotonic() - self._looked_at >= READINESS_SECONDS:
            results = await asyncio.gather(*[_upstream(self.pool, route) for route in self.routes])
            self._down = [route.name for route, result in zip(self.routes, results, strict=True) if not result.ok]
            self._looked_at = time.monotonic()
        return self._down


async def warn_if_unreachable(config: GatewayConfig, store: ConversationStore) -> None:
    """At startup: a warning line for whatever cannot be reached, which the first request would otherwise find."""
    for result in await probe(config, store):
        if not result.ok:
            log.warning("%s cannot be reached: %s", result.what, result.detail)
