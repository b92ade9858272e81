"""A route's sessions with an upstream that serves runs only in one (`KeptSessions`), against a real HTTP server on
127.0.0.1 that opens a session on each `POST` and ends one on each `DELETE`: how many are kept, which are ended at
the upstream and when, and with what headers. The MCP SDK's own server, through the gateway, is in
`tests/adapters/mcp/test_upstream.py`."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable

from scripted_http import Server, run

from gateway.core.capabilities import Exchanged, Opened, UpstreamSessions
from gateway.core.codec import UpstreamRequest
from gateway.core.turn import Turn
from gateway.server.request.upstream_sessions import KeptSession, KeptSessions
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


def _ended(server: Server) -> list[str]:
    """The session ids the server was sent a DELETE for, in order."""
    return [next(line.split(b": ")[1].decode() for line in request.split(b"\r\n") if line.startswith(b"session-id"))
            for request in server.requests if request.startswith(b"DELETE")]


async def _settled(sessions: KeptSessions) -> None:
    while sessions.ending:
        await asyncio.wait(set(sessions.ending))


def _sessions(pool: Pool, most: int, ends: Callable[[Opened], UpstreamRequest | None] = _ends) -> KeptSessions:
    return KeptSessions(UpstreamSessions(_open, ends=ends), pool, 5, 5, False, most=most,
                        forwarded=("x-user-token",), headers={"x-route-key": "k"})


async def _in(sessions: KeptSessions, target: Target, conversation: str, token: str = "t") -> KeptSession:
    return await sessions.opened(conversation, Turn(), target, {"x-user-token": token, "x-request-id": "r"})


def test_a_session_past_the_kept_ones_is_ended_at_the_upstream_with_the_routes_and_callers_headers() -> None:
    async def main() -> None:
        async with Server(_answer) as server:
            pool = Pool()
            sessions = _sessions(pool, most=2)
            target = Target(server.url("/mcp"), 5)
            first = await _in(sessions, target, "a", token="alice")
            first.leave()
            for conversation in ("b", "c"):
                (await _in(sessions, target, conversation)).leave()
            await _settled(sessions)
            assert _ended(server) == [first.opened.headers["session-id"]]
            assert list(sessions.kept) == ["b", "c"]
            delete = next(r for r in server.requests if r.startswith(b"DELETE"))
            assert b"x-user-token: alice" in delete and b"x-route-key: k" in delete
            assert b"x-request-id" not in delete  # what belonged to the request that opened it
            await pool.close()

    run(main)


def test_a_session_used_again_is_kept_over_one_opened_before_it() -> None:
    async def main() -> None:
        async with Server(_answer) as server:
            pool = Pool()
            sessions = _sessions(pool, most=2)
            target = Target(server.url("/mcp"), 5)
            a = await _in(sessions, target, "a")
            a.leave()
            b = await _in(sessions, target, "b")
            b.leave()
            assert await _in(sessions, target, "a") is a
            a.leave()
            (await _in(sessions, target, "c")).leave()
            await _settled(sessions)
            assert _ended(server) == [b.opened.headers["session-id"]]
            await pool.close()

    run(main)


def test_a_session_let_go_while_a_call_is_in_it_is_ended_when_the_call_leaves() -> None:
    async def main() -> None:
        async with Server(_answer) as server:
            pool = Pool()
            sessions = _sessions(pool, most=1)
            target = Target(server.url("/mcp"), 5)
            running = await _in(sessions, target, "a")
            (await _in(sessions, target, "b")).leave()
            await _settled(sessions)
            assert _ended(server) == []  # "a" is let go, but its run is still in it
            running.leave()
            await _settled(sessions)
            assert _ended(server) == [running.opened.headers["session-id"]]
            await pool.close()

    run(main)


def test_a_session_the_upstream_lost_is_forgotten_and_not_ended() -> None:
    async def main() -> None:
        async with Server(_answer) as server:
            pool = Pool()
            sessions = _sessions(pool, most=4)
            target = Target(server.url("/mcp"), 5)
            lost = await _in(sessions, target, "a")
            sessions.forget("a", lost)
            again = await _in(sessions, target, "a")
            assert again is not lost
            again.leave()
            await sessions.close()
            assert _ended(server) == [again.opened.headers["session-id"]]
            await pool.close()

    run(main)


def test_every_session_kept_is_ended_as_the_gateway_stops_and_none_of_a_dialect_with_nothing_to_end() -> None:
    async def main() -> None:
        async with Server(_answer) as server:
            pool = Pool()
            target = Target(server.url("/mcp"), 5)
            sessions = _sessions(pool, most=8)
            opened = [await _in(sessions, target, str(n)) for n in range(5)]
            await sessions.close()
            assert sorted(_ended(server)) == sorted(s.opened.headers["session-id"] for s in opened)
            assert not sessions.kept
            silent = _sessions(pool, most=1, ends=lambda opened: None)
            for conversation in ("x", "y"):
                (await _in(silent, target, conversation)).leave()
            await silent.close()
            assert len(_ended(server)) == 5
            await pool.close()

    run(main)
