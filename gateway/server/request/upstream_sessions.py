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
The process keeps as many, over all its routes, as the store keeps conversations (`SessionShelf`, at most
`MAX_KEPT`): the routes share the store, and a session past its conversations would serve one the store has let go,
which comes back, if ever, under a new upstream id. A session let go, the least recently used first, and every
session as the gateway stops, is ended at the upstream (the dialect's `ends`: MCP's `DELETE`), which would
otherwise keep it until it restarts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from gateway.core.capabilities import Exchanged, Opened, UpstreamSessions
from gateway.core.codec import Dialect, UpstreamRequest
from gateway.core.errors import GatewayError, UpstreamError, UpstreamTimeout
from gateway.core.turn import Turn
from gateway.server.stream.upstream_errors import send_failure
from gateway.upstream.http1 import HTTPError, Pool, Target

MAX_KEPT = 4096
"""Sessions kept by the process, over all its routes, the least recently used let go first."""
MAX_ENDING = 32
"""Sessions being ended at once; past it a session let go is not ended (its upstream keeps it, as it would if the
gateway had never said)."""
END_SECONDS = 5.0
"""The longest ending one session may take, and ending them all as the gateway stops."""
MAX_ANSWER_BYTES = 1 << 22
"""The most of one answer read while opening a session (a long list of tools)."""

log = logging.getLogger("agent_gateway.proxy")


class KeptSession:
    """One conversation's session, what ending it needs (where it is, and the caller's forwarded headers: its
    credentials, which the upstream may check on the `DELETE` as on the session's other requests), and the calls
    in it: a session let go while a run or a held call is in it is ended when the last of them leaves."""

    __slots__ = ("caller", "let_go", "opened", "owner", "target", "users")

    def __init__(self, owner: KeptSessions, opened: Opened, target: Target, caller: dict[str, str] | None) -> None:
        self.owner = owner
        self.opened = opened
        self.target = target
        self.caller = caller
        self.users = 0
        self.let_go = False

    def leave(self) -> None:
        """A call in the session is over."""
        self.users -= 1
        if self.users == 0 and self.let_go:
            self.owner.end_soon(self)


class SessionShelf:
    """Every session the process keeps, over all its routes and their upstreams, least recently used first: no more
    than the conversations of the store the routes share, however many routes keep sessions."""

    def __init__(self, most: int = MAX_KEPT) -> None:
        self.most = min(most, MAX_KEPT)
        self.kept: dict[tuple[KeptSessions, str], KeptSession] = {}
        """By the route's sessions and the conversation, least recently used first."""

    def put(self, owner: KeptSessions, conversation: str, session: KeptSession) -> None:
        """The conversation's session, used now: the least recently used past `most` are let go."""
        self.kept[owner, conversation] = session
        while len(self.kept) > self.most:
            oldest = self.kept.pop(next(iter(self.kept)))
            oldest.owner.let_go(oldest)


class KeptSessions:
    """A route's open sessions with one of its upstreams, by conversation, on the process's shelf."""

    def __init__(self, sessions: UpstreamSessions, pool: Pool, connect_timeout: float, open_timeout: float,
                 debug_errors: bool, *, shelf: SessionShelf | None = None, forwarded: Sequence[str] = (),
                 headers: Mapping[str, str] | None = None) -> None:
        self.sessions = sessions
        self.pool = pool
        self.connect_timeout = connect_timeout
        self.open_timeout = open_timeout
        """Seconds opening a session may take: the route's wait for a first event, which it comes before."""
        self.debug_errors = debug_errors
        self.shelf = shelf if shelf is not None else SessionShelf()
        self.forwarded = tuple(forwarded)
        """The caller's headers the route forwards: kept with a session, for the request that ends it."""
        self.headers = dict(headers or {})
        """The route's own headers for the upstream, sent with the request that ends a session too."""
        self.ending: set[asyncio.Task[None]] = set()

    def lost(self, status: int) -> bool:
        return self.sessions.lost(status)

    async def opened(self, conversation: str, turn: Turn, target: Target, headers: Mapping[str, str]
                     ) -> KeptSession:
        """The conversation's session, opened now if it has none, with the caller in it until it `leave`s: raises a
        `GatewayError` for the client when the upstream cannot open one."""
        kept = self.shelf.kept
        session = kept.pop((self, conversation), None)
        if session is None:
            session = await self._open(turn, target, headers)
            meanwhile = kept.pop((self, conversation), None)  # another request of the conversation opened one
            if meanwhile is not None:
                self.let_go(meanwhile)
        session.users += 1
        self.shelf.put(self, conversation, session)
        return session

    def conversations(self) -> list[str]:
        """Those it keeps a session for, least recently used first."""
        return [conversation for owner, conversation in self.shelf.kept if owner is self]

    def forget(self, conversation: str, session: KeptSession) -> None:
        """The upstream lost the conversation's session: the caller leaves it, and there is nothing to end."""
        if self.shelf.kept.get((self, conversation)) is session:
            del self.shelf.kept[self, conversation]
        session.let_go = False
        session.leave()

    async def close(self) -> None:
        """Every session ended at the upstream, as the gateway stops, within `END_SECONDS` in all."""
        shelf = self.shelf.kept
        kept = [shelf.pop(key) for key in [key for key in shelf if key[0] is self]]
        limit = asyncio.Semaphore(MAX_ENDING)

        async def end(session: KeptSession) -> None:
            async with limit:
                await self._end(session)

        ends = [asyncio.ensure_future(end(session)) for session in kept] + list(self.ending)
        if ends:
            await asyncio.wait(ends, timeout=END_SECONDS)
            for task in ends:
                task.cancel()

    def end_soon(self, session: KeptSession) -> None:
        """End a session let go, unless `MAX_ENDING` are being ended already."""
        if len(self.ending) >= MAX_ENDING:
            return
        task = asyncio.ensure_future(self._end(session))
        self.ending.add(task)
        task.add_done_callback(self.ending.discard)

    async def _open(self, turn: Turn, target: Target, headers: Mapping[str, str]) -> KeptSession:
        async def send(request: UpstreamRequest) -> Exchanged:
            return await self._exchange(target, request, {**headers, **request.headers})

        try:
            async with asyncio.timeout(self.open_timeout):
                opened = await self.sessions.open(send, turn, target.url)
        except TimeoutError:
            raise UpstreamTimeout(f"the upstream did not open a session within {self.open_timeout:g}s") from None
        caller = {name: value for name in self.forwarded if (value := headers.get(name)) is not None}
        return KeptSession(self, opened, target, caller or None)

    def let_go(self, session: KeptSession) -> None:
        """One of its sessions is off the shelf: ended at the upstream once no call is in it."""
        session.let_go = True
        if session.users == 0:
            self.end_soon(session)

    async def _end(self, session: KeptSession) -> None:
        request = self.sessions.ends(session.opened)
        if request is None:
            return
        headers = {**self.headers, **(session.caller or {}), **request.headers}
        try:
            async with asyncio.timeout(END_SECONDS):
                await self._exchange(session.target, request, headers)
        except (GatewayError, TimeoutError) as exc:
            log.debug("an upstream session was not ended: %s", exc)

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


def kept_for(upstream: Dialect, pool: Pool, connect_timeout: float, open_timeout: float, debug_errors: bool, *,
             shelf: SessionShelf | None = None, forwarded: Sequence[str] = (), headers: Mapping[str, str] | None = None
             ) -> KeptSessions | None:
    """A route's sessions with one of its upstreams, when its dialect needs them, on `shelf` (the process's)."""
    sessions = upstream.capability(UpstreamSessions)
    if sessions is None:
        return None
    return KeptSessions(sessions, pool, connect_timeout, open_timeout, debug_errors, shelf=shelf,
                        forwarded=forwarded, headers=headers)
