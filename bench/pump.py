"""The least a proxy written in Python on uvloop does: a pass-through that parses nothing.

    .venv/bin/python bench/pump.py --port 18503 --upstream-port 18500

Each client connection is paired with one to the upstream (127.0.0.1), and what one side sends is written to the
other as it comes: no HTTP parsed, no header added, a keep-alive client's requests on one upstream connection. It is
`bench/run.py`'s `pump` target, beside nginx: what the gateway's rows cost above it is the gateway's own work, and
what it costs above nginx is Python's and the loop's. A side that closes closes the other; a side that cannot take
more stops the reads of the other (each socket's own buffers are all that is held).
"""

from __future__ import annotations

import argparse
import asyncio

import uvloop


class Side(asyncio.Protocol):
    """One connection of a pair: what it reads goes to its peer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: Side | None = None
        self.early: list[bytes] = []
        """What a client sent before its upstream connection was open."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports don't subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if (peer := self._peer_transport()) is not None:
            peer.write(data)
        else:
            self.early.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if (peer := self._peer_transport()) is not None:
            peer.close()

    def pause_writing(self) -> None:
        if (peer := self._peer_transport()) is not None:
            peer.pause_reading()

    def resume_writing(self) -> None:
        if (peer := self._peer_transport()) is not None:
            peer.resume_reading()

    def _peer_transport(self) -> asyncio.Transport | None:
        """The other side's connection, while it is open."""
        return self.peer.transport if self.peer is not None else None


class ClientSide(Side):
    """A client's connection, which opens its upstream one as it comes."""

    def __init__(self, upstream_port: int) -> None:
        super().__init__()
        self.upstream_port = upstream_port
        self.opening: asyncio.Task[None] | None = None
        """The upstream connection's opening, held here: the loop keeps only a weak reference to a task."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.opening = asyncio.get_running_loop().create_task(self._open_upstream())

    async def _open_upstream(self) -> None:
        upstream = Side()
        upstream.peer = self
        try:
            await asyncio.get_running_loop().create_connection(lambda: upstream, "127.0.0.1", self.upstream_port)
        except OSError:
            if self.transport is not None:
                self.transport.close()
            return
        if self.transport is None:  # the client left meanwhile
            assert upstream.transport is not None
            upstream.transport.close()
            return
        self.peer = upstream
        assert upstream.transport is not None
        for data in self.early:
            upstream.transport.write(data)
        self.early = []


async def serve(port: int, upstream_port: int, ready: asyncio.Future[int] | None = None) -> None:
    """Listen on 127.0.0.1:`port` (0: any free one, told through `ready`) until cancelled."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: ClientSide(upstream_port), "127.0.0.1", port)
    if ready is not None:
        ready.set_result(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream-port", type=int, required=True)
    args = parser.parse_args(argv)
    uvloop.run(serve(args.port, args.upstream_port))


if __name__ == "__main__":
    main()
