"""The gateway's HTTP protocol: a response's head goes out with its first body piece, in one write; a streamed
body's pieces can be written without a coroutine each, when the client is reading."""

from __future__ import annotations

import asyncio
import collections
import gc
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from servers import Served
from starlette.types import Message, Receive, Scope, Send

from gateway.server.connections.http_server import QuietEvent, direct_body, on_client_gone


class Writes:
    """An ASGI app that answers with a head and `pieces`, each sent `pause` seconds after the one before."""

    def __init__(self, pieces: list[bytes], pause: float = 0.0) -> None:
        self.pieces, self.pause = pieces, pause

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        import asyncio
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for i, piece in enumerate(self.pieces):
            await asyncio.sleep(self.pause)
            await send({"type": "http.response.body", "body": piece, "more_body": i < len(self.pieces) - 1})


def _first_read(port: int, request: bytes) -> tuple[bytes, bytes]:
    """What the first read of the answer brings, and the whole answer."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(5)
        sock.sendall(request)
        first = sock.recv(65536)
        whole = first
        while not whole.endswith(b"0\r\n\r\n"):
            whole += sock.recv(65536)
        return first, whole


REQUEST = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhi"


def test_the_head_and_the_first_body_piece_arrive_in_one_write() -> None:
    with Served(Writes([b"data: one\n\n", b"data: two\n\n"], pause=0.0)) as server:
        first, whole = _first_read(server.port, REQUEST)
    assert first.startswith(b"HTTP/1.1 200") and b"data: one" in first
    assert whole.endswith(b"data: two\n\n\r\n0\r\n\r\n")


def test_a_head_with_no_body_piece_ready_goes_out_at_once() -> None:
    with Served(Writes([b"late"], pause=1.0)) as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(5)
        sent = time.monotonic()
        sock.sendall(REQUEST)
        head = sock.recv(65536)
        assert head.startswith(b"HTTP/1.1 200") and b"late" not in head
        assert time.monotonic() - sent < 0.5  # not held until the body came


def test_expect_100_continue_is_answered_before_the_body_is_sent() -> None:
    with Served(Writes([b"ok"])) as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(5)
        sock.sendall(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nexpect: 100-continue\r\n\r\n")
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"hi")
        answer = b""
        while not answer.endswith(b"0\r\n\r\n"):
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200") and b"ok" in answer


class WritesDirectly:
    """An ASGI app that sends b"first|" through `send`, then writes `piece` again and again directly while the
    client takes it without a wait, at most `most` bytes, and ends the body through `send`."""

    def __init__(self, piece: bytes, most: int) -> None:
        self.piece, self.most = piece, most
        self.written = 0
        self.stopped_by_the_client = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"first|", "more_body": True})
        direct = direct_body(send)
        assert direct is not None
        while self.written < self.most:
            if not direct.ready():
                self.stopped_by_the_client = True
                break
            direct.write(self.piece)
            self.written += len(self.piece)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def test_pieces_written_directly_are_chunks_as_send_writes_them() -> None:
    app = WritesDirectly(b"data: one\n\n", most=22)
    with Served(app) as server:
        _, whole = _first_read(server.port, REQUEST)
    assert whole.endswith(b"\r\n\r\n6\r\nfirst|\r\nb\r\ndata: one\n\n\r\nb\r\ndata: one\n\n\r\n0\r\n\r\n")


def test_a_client_that_stops_reading_stops_direct_writes() -> None:
    """Direct writes heed the connection's flow control as `send` does: a client that reads nothing holds at most
    the transport's high-water mark and the kernel's buffers."""
    app = WritesDirectly(b"x" * 65536, most=256 * 2**20)
    with Served(app) as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(REQUEST)
        deadline = time.monotonic() + 5
        while not app.stopped_by_the_client and time.monotonic() < deadline:
            time.sleep(0.01)
        assert app.stopped_by_the_client and app.written < 16 * 2**20


def test_a_send_that_is_not_uvicorns_has_no_direct_writes() -> None:
    async def wrapped(message: Message) -> None:
        pass

    assert direct_body(wrapped) is None


class Watches:
    """An ASGI app that streams until its client leaves, and says whether `on_client_gone` called back (and when
    not, after the response's end)."""

    def __init__(self, end: bool = False) -> None:
        self.end = end
        self.gone = threading.Event()
        self.registered = threading.Event()
        self.watching = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        stop = on_client_gone(send, self.gone.set)
        self.watching = stop is not None
        self.registered.set()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"one", "more_body": not self.end})
        for _ in range(200):
            if self.end or self.gone.is_set():
                break
            await asyncio.sleep(0.01)
        if stop is not None:
            stop()


def test_a_client_that_leaves_mid_response_is_told_by_a_callback_not_a_task() -> None:
    app = Watches()
    with Served(app) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(REQUEST)
            assert app.registered.wait(5)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        assert app.gone.wait(5) and app.watching


def test_a_client_that_leaves_after_the_response_is_not_gone() -> None:
    app = Watches(end=True)
    with Served(app) as server:
        _first_read(server.port, REQUEST)
        time.sleep(0.1)
    assert app.watching and not app.gone.is_set()


def test_another_servers_send_cannot_be_watched_by_a_callback() -> None:
    async def send(message: Message) -> None:
        pass

    assert on_client_gone(send, lambda: None) is None


def test_the_quiet_event_wakes_its_waiters_as_asyncios_does() -> None:
    async def main() -> list[str]:
        event, said = QuietEvent(), []

        async def waits(name: str) -> None:
            await event.wait()
            said.append(name)

        waiting = [asyncio.create_task(waits(name)) for name in ("a", "b")]
        await asyncio.sleep(0)
        assert not said and not event.is_set()
        event.set()
        await asyncio.gather(*waiting)
        event.clear()
        late = asyncio.create_task(waits("late"))
        await asyncio.sleep(0)
        late.cancel()  # a waiter cancelled goes, and the next set finds none
        await asyncio.gather(late, return_exceptions=True)
        event.set()
        assert await event.wait() is True
        return said

    assert asyncio.run(main()) == ["a", "b"]


@contextmanager
def _open_streaming_connection() -> Iterator[Any]:
    """The gateway's protocol of a connection whose response is streaming, until the client leaves."""
    app = Watches()
    with Served(app) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(REQUEST)
            assert app.registered.wait(5)
            yield next(o for o in gc.get_objects() if type(o).__name__ == "HeadDeadlineProtocol")
        assert app.gone.wait(5)


def test_an_open_streaming_connection_holds_no_empty_deque() -> None:
    """uvicorn makes a flow control event, a request's body event and a pipeline deque per connection, each an
    empty deque of some 760 bytes: the gateway's protocol holds none."""
    with _open_streaming_connection() as protocol:
        held = [protocol.pipeline, protocol.flow._is_writable_event, protocol.cycle.message_event]
        assert not any(isinstance(o, collections.deque | asyncio.Event) for o in held)


def test_an_open_streaming_connections_attributes_keep_their_shared_keys() -> None:
    """uvicorn's protocol sets 28 attributes; one more of the gateway's in the instance dict makes it a combined
    dict of some 1,600 bytes for every connection, where the shared keys' values take under 300."""
    with _open_streaming_connection() as protocol:
        assert protocol.client_gone is not None
        assert sys.getsizeof(protocol.__dict__) < 600
