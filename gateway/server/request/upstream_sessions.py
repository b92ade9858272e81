"""The sessions a route keeps with an upstream whose dialect serves runs only inside one (`UpstreamSessions`:
MCP's `initialize` and `Mcp-Session-Id`): one per conversation, opened by the dialect with requests it sends
through the route's pool before the conversation's first run, and opened again when the upstream says it lost one.

```
Call.run ──▶ opened(conversation) ──kept?──▶ its headers and variant ──▶ the run's request
                    │ no                                 ▲
                    └──▶ the dialect's open(send) ───────┘   an answer the dialect calls lost ──▶ forget, open again
```

Sessions live in the process: a replica that has none for a conversation opens its own, which costs the upstream
a handshake, not the conversation (the gateway keeps its history; a tool that keeps conversations is named them).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping

from gateway.core.capabilities import Exchanged, Opened, UpstreamSessions
from gateway.core.codec import Dialect, UpstreamRequest
from gateway.core.errors import UpstreamError, UpstreamTimeout
from gateway.core.turn import Turn
from gateway.server.stream.upstream_errors import send_failure
from gateway.upstream.http1 import HTTPError, Pool, Target

MAX_KEPT = 4096
"""Sessions kept per route, the least recently used forgotten first."""
MAX_ANSWER_BYTES = 1 << 22
"""The most of one answer read while opening a session (a long list of tools)."""


class KeptSessions:
    """A route's open sessions with its upstream, by conversation."""

    def __init__(self, sessions: UpstreamSessions, pool: Pool, connect_timeout: float, open_timeout: float,
                 debug_errors: bool) -> None:
        self.sessions = sessions
        self.pool = pool
        self.connect_timeout = connect_timeout
        self.open_timeout = open_timeout
        """Seconds opening a session may take: the route's wait for a first event, which it comes before."""
        self.debug_errors = debug_errors
        self.kept: OrderedDict[str, Opened] = OrderedDict()

    def lost(self, status: int) -> bool:
        return self.sessions.lost(status)

    async def opened(self, conversation: str, turn: Turn, target: Target, headers: Mapping[str, str]) -> Opened:
        """The conversation's session, opened now if it has none: raises a `GatewayError` for the client when the
        upstream cannot open one."""
        opened = self.kept.get(conversation)
        if opened is not None:
            self.kept.move_to_end(conversation)
            return opened

        async def send(request: UpstreamRequest) -> Exchanged:
            return await self._exchange(target, request, {**headers, **request.headers})

        try:
            async with asyncio.timeout(self.open_timeout):
                opened = await self.sessions.open(send, turn, target.url)
        except TimeoutError:
            raise UpstreamTimeout(f"the upstream did not open a session within {self.open_timeout:g}s") from None
        self.kept[conversation] = opened
        while len(self.kept) > MAX_KEPT:
            self.kept.popitem(last=False)
        return opened

    def forget(self, conversation: str) -> None:
        self.kept.pop(conversation, None)

    async def _exchange(self, target: Target, request: UpstreamRequest, headers: dict[str, str]) -> Exchanged:
        try:
            response = await self.pool.request(request.method, target, request.body, headers, request.path)
        except HTTPError as exc:
            raise send_failure(exc, self.connect_timeout, self.debug_errors)[0] from None
        try:
            body = b""
            while (chunk := await response.read()) or not response.complete:
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise UpstreamError("the upstream's answer while opening a session is too large")
        except HTTPError as exc:
            raise send_failure(exc, self.connect_timeout, self.debug_errors)[0] from None
        finally:
            response.release()
        return Exchanged(response.status, response.headers, body)


def kept_for(upstream: Dialect, pool: Pool, connect_timeout: float, open_timeout: float, debug_errors: bool
             ) -> KeptSessions | None:
    """A route's sessions, when its upstream's dialect needs them."""
    sessions = upstream.capability(UpstreamSessions)
    if sessions is None:
        return None
    return KeptSessions(sessions, pool, connect_timeout, open_timeout, debug_errors)
