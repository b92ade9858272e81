"""The HTTP client for upstreams: one aiohttp session per process, its connection pool shared by every route.

aiohttp directly, with nothing over it. Measured with `bench/run.py` on this machine: httpx's own pool collapses
under a hundred concurrent streams, and httpx over aiohttp's transport (httpx-aiohttp) still cost about a
millisecond of CPU per request and several microseconds per chunk in its wrappers and anyio's task groups.
"""

from __future__ import annotations

import errno
from contextvars import ContextVar
from types import SimpleNamespace

import aiohttp
from yarl import URL

from gateway import __version__
from gateway.config import Route

USER_AGENT = f"agent-gateway/{__version__}"


class UpstreamClients:
    """Made when the app starts; the session itself on first use, inside the event loop that will use it."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = _session()
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class UpstreamTarget:
    """What one route's requests need, worked out once: the parsed URL and the connect timeout. Reads are not
    timed by aiohttp: the proxy times the first event, idle gaps and the whole run itself."""

    def __init__(self, route: Route) -> None:
        self.url = URL(route.upstream.url)
        self.timeout = aiohttp.ClientTimeout(total=None, connect=route.timeouts.connect)


REUSED_CONNECTION: ContextVar[bool] = ContextVar("reused_connection", default=False)
"""Set while sending a request on a kept-alive connection from the pool (read it in the same task)."""


async def _on_reuse(session: aiohttp.ClientSession, context: SimpleNamespace, params: object) -> None:
    REUSED_CONNECTION.set(True)


def _session() -> aiohttp.ClientSession:
    """No cap on connections: the routes' own `max_streams` limits bound them, and aiohttp's default of 100 would
    queue the 101st stream silently."""
    # Idle connections are dropped after 1.5 s, before common servers drop theirs (gunicorn 2 s, uvicorn and Node
    # 5 s): a request sent on a connection the server is closing may reach it or not, and can't be sent again.
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=1.5, enable_cleanup_closed=True)
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_on_reuse)
    return aiohttp.ClientSession(connector=connector, trust_env=False, trace_configs=[trace],
                                 headers={"user-agent": USER_AGENT})


def is_stale_connection(exc: BaseException) -> bool:
    """The request could not be written: the server had closed the (kept-alive) connection. As Go's HTTP client
    does for a POST, resend only then: once written, a reset may come after the agent has the request."""
    return isinstance(exc, aiohttp.ClientOSError) and (
        exc.errno == errno.EPIPE or "Can not write request body" in str(exc))
