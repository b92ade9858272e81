"""HTTP clients for upstreams: one pooled `httpx.AsyncClient` per upstream origin, made once and reused."""

from __future__ import annotations

import httpx

from gateway.config import Route


class UpstreamClients:
    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}

    def for_route(self, route: Route) -> httpx.AsyncClient:
        url = httpx.URL(route.upstream.url)
        origin = f"{url.scheme}://{url.netloc.decode()}|{route.timeouts.connect}"
        client = self._clients.get(origin)
        if client is None:
            # Reads are not timed here: the proxy times first event, idle gaps and the whole run itself.
            timeout = httpx.Timeout(connect=route.timeouts.connect, read=None, write=route.timeouts.connect,
                                    pool=route.timeouts.connect)
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=256, keepalive_expiry=30.0)
            client = httpx.AsyncClient(timeout=timeout, limits=limits, follow_redirects=False, trust_env=False)
            self._clients[origin] = client
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
