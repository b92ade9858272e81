"""HTTP clients for upstreams: one pooled client per upstream origin, made once and reused.

The API is httpx's; the transport is aiohttp's (`httpx-aiohttp`). Measured on this machine (DESIGN's calibration),
httpx's own pool collapses under a hundred concurrent streams while aiohttp's holds, at a third of the CPU per event.
"""

from __future__ import annotations

from contextvars import ContextVar
from types import SimpleNamespace

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

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
            transport = AiohttpTransport(client=_session)
            client = httpx.AsyncClient(transport=transport, timeout=timeout, follow_redirects=False, trust_env=False)
            self._clients[origin] = client
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


REUSED_CONNECTION: ContextVar[bool] = ContextVar("reused_connection", default=False)
"""Set while sending a request on a kept-alive connection from the pool (read it in the same task)."""


async def _on_reuse(session: aiohttp.ClientSession, context: SimpleNamespace, params: object) -> None:
    REUSED_CONNECTION.set(True)


def _session() -> aiohttp.ClientSession:
    """Made on first use, inside the event loop that will use it. No cap on connections: the routes' own
    `max_streams` limits bound them, and aiohttp's default of 100 would queue the 101st stream silently."""
    # Idle connections are dropped after 1.5 s, before common servers drop theirs (gunicorn 2 s, uvicorn and Node
    # 5 s): a request sent on a connection the server is closing may reach it or not, and can't be sent again.
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=1.5, enable_cleanup_closed=True)
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_on_reuse)
    return aiohttp.ClientSession(connector=connector, auto_decompress=False, trust_env=False, trace_configs=[trace])
