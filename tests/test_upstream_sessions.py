"""A route's sessions with an upstream that serves runs only in one (`KeptSessions`, on the process's
`SessionShelf`), against a real HTTP server on 127.0.0.1 that opens a session on each `POST` and ends one on each
`DELETE`: how many are kept, which are ended at the upstream and when, and with what headers. The MCP SDK's own
server, through the gateway, is in `tests/adapters/mcp/test_upstream.py`."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable

from scripted_http import Server, run

from gateway.core.capabilities import Exchanged, Opened, UpstreamSessions
from gateway.core.codec import UpstreamRequest
from gateway.core.turn import Turn
from gateway.server.request.upstream_sessions import KeptSession, KeptSessions, SessionShelf
from gateway.upstream.http1 import Pool, Target

OK = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
numbers = itertools.count(1)


async def _open(send: Callable[[UpstreamRequest], Awaitable[Exchanged]], turn: Turn, url: str) -> Opened:
    await send(UpstreamRequest(b"{}"))
    return Opened({"session-id": f"s{next(numbers)}"})


def _ends(opened: Opened) -> UpstreamRequest | None:
    return UpstreamRequest(b"", dict(opened.headers), streams=False, method="DELETE")


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
    writer.write(OK)
    await writer.drain()
    return True


class Upstream:
    """The server, and a route's sessions with it (on `shelf`), the route's headers `x-route-key` and the caller's
    forwarded `x-user-token`."""

    def __init__(self, server: Server, shelf: SessionShelf, ends: Callable[[Opened], UpstreamRequest | None]) -> None:
        self.server = server
        self.pool = Pool()
        self.target = Target(server.url("/mcp"), 5)
        self.sessions = KeptSessions(UpstreamSessions(_open, ends=ends), self.pool, 5, 5, False, shelf=shelf,
                                     forwarded=("x-user-token",), headers={"x-route-key": "k"})

    async def enter(self, conversation: str, token: str = "t") -> KeptSession:
        """The conversation's session, with a call in it."""
        return await self.sessions.opened(conversation, Turn(), self.target,
                                          {"x-user-token": token, "x-request-id": "r"})

    async def used(self, conversation: str) -> KeptSession:
        """The conversation's session, after a call in it."""
        session = await self.enter(conversation)
        session.leave()
        return session

    async def ended(self) -> list[str]:
        """The session ids the server was sent a DELETE for, in order, once those being ended are."""
        while self.sessions.ending:
            await asyncio.wait(set(self.sessions.ending))
        return [next(line.split(b": ")[1].decode() for line in request.split(b"\r\n")
                     if line.startswith(b"session-id"))
                for request in self.server.requests if request.startswith(b"DELETE")]


def _with_upstream(most: int, test: Callable[[Upstream], Awaitable[None]],
                   ends: Callable[[Opened], UpstreamRequest | None] = _ends) -> None:
    async def main() -> None:
        async with Server(_answer) as server:
            upstream = Upstream(server, SessionShelf(most), ends)
            try:
                await test(upstream)
            finally:
                await upstream.pool.close()

    run(main)


def _id(session: KeptSession) -> str:
    return session.opened.headers["session-id"]


def test_a_session_past_the_kept_ones_is_ended_at_the_upstream_with_the_routes_and_callers_headers() -> None:
    async def test(upstream: Upstream) -> None:
        first = await upstream.enter("a", token="alice")
        first.leave()
        for conversation in ("b", "c"):
            await upstream.used(conversation)
        assert await upstream.ended() == [_id(first)]
        assert upstream.sessions.conversations() == ["b", "c"]
        delete = next(r for r in upstream.server.requests if r.startswith(b"DELETE"))
        assert b"x-user-token: alice" in delete and b"x-route-key: k" in delete
        assert b"x-request-id" not in delete  # what belonged to the request that opened it

    _with_upstream(2, test)


def test_a_session_used_again_is_kept_over_one_opened_before_it() -> None:
    async def test(upstream: Upstream) -> None:
        a = await upstream.used("a")
        b = await upstream.used("b")
        assert await upstream.used("a") is a
        await upstream.used("c")
        assert await upstream.ended() == [_id(b)]

    _with_upstream(2, test)


def test_a_session_let_go_while_a_call_is_in_it_is_ended_when_the_call_leaves() -> None:
    async def test(upstream: Upstream) -> None:
        running = await upstream.enter("a")
        await upstream.used("b")
        assert await upstream.ended() == []  # "a" is let go, but its run is still in it
        running.leave()
        assert await upstream.ended() == [_id(running)]

    _with_upstream(1, test)


def test_a_session_the_upstream_lost_is_forgotten_and_not_ended() -> None:
    async def test(upstream: Upstream) -> None:
        lost = await upstream.enter("a")
        upstream.sessions.forget("a", lost)
        again = await upstream.used("a")
        assert again is not lost
        await upstream.sessions.close()
        assert await upstream.ended() == [_id(again)]

    _with_upstream(4, test)


def test_every_session_kept_is_ended_as_the_gateway_stops() -> None:
    async def test(upstream: Upstream) -> None:
        opened = [await upstream.enter(str(n)) for n in range(5)]
        await upstream.sessions.close()
        assert sorted(await upstream.ended()) == sorted(_id(session) for session in opened)
        assert not upstream.sessions.conversations()

    _with_upstream(8, test)


def test_the_routes_of_one_process_keep_no_more_sessions_together_than_their_shelf() -> None:
    """The routes share the store's conversations: two routes' sessions are let go as one route's would be, and the
    one that stops ends its own only."""
    async def test(first: Upstream) -> None:
        second = Upstream(first.server, first.sessions.shelf, _ends)
        try:
            a = await first.used("a")
            await second.used("a")
            await first.used("b")
            assert await first.ended() == [_id(a)]
            assert first.sessions.conversations() == ["b"] and second.sessions.conversations() == ["a"]
            await second.sessions.close()
            assert first.sessions.conversations() == ["b"] and not second.sessions.conversations()
        finally:
            await second.pool.close()

    _with_upstream(2, test)


def test_a_dialect_with_no_session_to_end_is_sent_nothing() -> None:
    async def test(upstream: Upstream) -> None:
        for conversation in ("x", "y"):
            await upstream.used(conversation)
        await upstream.sessions.close()
        assert await upstream.ended() == []

    _with_upstream(1, test, ends=lambda opened: None)
