"""The benchmark's Python pass-through (`bench/pump.py`) against real sockets on 127.0.0.1: what a client sends
reaches the upstream as it was, what the upstream answers reaches the client as it was, and a close on either side
closes the other, so that a row of it measures a proxy and nothing is left open."""

from __future__ import annotations

import asyncio
import contextlib

from bench.pump import serve

REQUEST = b"POST /ag-kit?n=1 HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 2\r\n\r\n{}"
ANSWER = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n0\r\n\r\n"


async def _pumped(upstream: asyncio.Server) -> tuple[int, asyncio.Task[None]]:
    ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(0, upstream.sockets[0].getsockname()[1], ready))
    return await asyncio.wait_for(ready, 5), task


async def _stopped(client: asyncio.StreamWriter, pump: asyncio.Task[None], upstream: asyncio.Server) -> None:
    """The client gone, then the pump and the upstream: each pair's close reaches its other side first."""
    client.close()
    await client.wait_closed()
    await asyncio.sleep(0.05)
    pump.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pump
    upstream.close()
    await upstream.wait_closed()


def test_a_keep_alive_clients_requests_and_their_answers_pass_through_unchanged_on_one_upstream_connection() -> None:
    heard: list[bytes] = []
    connections = 0

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        with contextlib.suppress(asyncio.IncompleteReadError):
            while True:
                heard.append(await reader.readexactly(len(REQUEST)))
                writer.write(ANSWER)
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(upstream, "127.0.0.1", 0)
        port, pump = await _pumped(server)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(2):
            writer.write(REQUEST)
            assert await asyncio.wait_for(reader.readexactly(len(ANSWER)), 5) == ANSWER
        await _stopped(writer, pump, server)

    asyncio.run(main())
    assert heard == [REQUEST, REQUEST] and connections == 1


def test_an_upstream_that_closes_closes_its_client_and_a_client_that_leaves_closes_its_upstream() -> None:
    upstream_saw_the_end = asyncio.Event()

    async def closing_upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(len(REQUEST))
        writer.write(ANSWER)
        writer.close()

    async def waiting_upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the pump closes its side
        upstream_saw_the_end.set()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(closing_upstream, "127.0.0.1", 0)
        port, pump = await _pumped(server)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(REQUEST)
        assert await asyncio.wait_for(reader.read(), 5) == ANSWER  # read to the end: the pump closed it
        await _stopped(writer, pump, server)

        server = await asyncio.start_server(waiting_upstream, "127.0.0.1", 0)
        port, pump = await _pumped(server)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(REQUEST)
        await asyncio.sleep(0.1)
        writer.close()
        await asyncio.wait_for(upstream_saw_the_end.wait(), 5)
        await _stopped(writer, pump, server)

    asyncio.run(main())
