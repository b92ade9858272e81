"""The upstream HTTP client (gateway/http1.py) against real sockets: a scripted server on 127.0.0.1 per test.

Each server reads one request head and body at a time and answers with the bytes the test scripts, so framing,
keep-alive, closes and backpressure are what a real peer would do on the wire.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import os
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from scripted_http import STREAM_HEAD, Server, chunk, read_all, run

from gateway.upstream.connection import Connection
from gateway.upstream.http1 import (
    ConnectError,
    ConnectionBroken,
    HTTPError,
    InvalidRequestHead,
    Offer,
    Pool,
    ProtocolError,
    Target,
)


def test_a_chunked_stream_is_read_as_it_arrives_not_when_it_ends() -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(STREAM_HEAD + chunk(b"data: 1\n\n"))
        await writer.drain()
        await release.wait()
        writer.write(chunk(b"data: 2\n\n") + b"0\r\n\r\n")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {"content-type": "application/json"})
            assert (response.status, response.headers["content-type"]) == (200, "text/event-stream")
            assert await asyncio.wait_for(response.read(), 2) == b"data: 1\n\n"
            release.set()
            assert await read_all(response) == b"data: 2\n\n"
            response.release()
            await pool.close()
        request = server.requests[0]
        assert request.startswith(b"POST /run?x=1 HTTP/1.1\r\n")
        assert b"\r\ncontent-length: 2\r\n" in request and request.endswith(b"\r\n\r\n{}")
        assert b"\r\nuser-agent: agent-gateway\r\n" in request

    run(main)


def test_a_connection_read_to_the_end_is_kept_and_used_again() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool, target = Pool(), Target(server.url(), 5)
            for _ in range(3):
                response = await pool.post(target, b"{}", {})
                assert await read_all(response) == b"ok"
                response.release()
            await pool.close()
        assert (server.connections, len(server.requests)) == (1, 3)

    run(main)


def test_a_response_left_unread_closes_its_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(STREAM_HEAD + chunk(b"data: 1\n\n"))
        await writer.drain()
        await reader.read()  # until the client closes
        return False

    async def main() -> None:
        async with Server(handler) as server:
            pool, target = Pool(), Target(server.url(), 5)
            for _ in range(2):
                response = await pool.post(target, b"{}", {})
                assert await response.read() == b"data: 1\n\n"
                response.release()
            await pool.close()
        assert server.connections == 2

    run(main)


def test_a_connection_the_server_closed_is_freed_without_the_cycle_collector() -> None:
    """An upstream that closes after each reply: each of its connections goes as it closes, by its count. Counted
    among the collector's objects, not by weak reference: the compiled build's connection takes none."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok")
        return False

    def live() -> int:
        return sum(type(thing) is Connection for thing in gc.get_objects())

    async def main() -> list[int]:
        alive: list[int] = []
        async with Server(handler) as server:
            pool, target = Pool(), Target(server.url(), 5)
            for _ in range(3):
                response = await pool.post(target, b"{}", {})
                assert await read_all(response) == b"ok"
                response.release()
                del response
                await asyncio.sleep(0.05)  # the close's callback
                alive.append(live())
            await pool.close()
        return alive

    gc.collect()
    before = live()
    gc.disable()
    try:
        assert asyncio.run(main()) == [before] * 3
    finally:
        gc.enable()


def test_an_idle_connection_the_server_closed_is_not_used() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        return False  # closes without saying so (no `connection: close`), as servers do at their idle timeout

    async def main() -> None:
        async with Server(handler) as server:
            pool, target = Pool(), Target(server.url(), 5)
            for _ in range(3):
                response = await pool.post(target, b"{}", {})
                assert await read_all(response) == b"ok"
                response.release()
                await asyncio.sleep(0.05)  # the close reaches the client
            await pool.close()
        assert (server.connections, len(server.requests)) == (3, 3)

    run(main)


def test_drain_waits_for_a_late_end_of_body_and_gives_up_on_one_that_never_comes() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(STREAM_HEAD + chunk(b"data: last\n\n"))
        await writer.drain()
        if number == 0:
            await asyncio.sleep(0.05)
            writer.write(b"0\r\n\r\n")  # the end, late
            return True
        await reader.read()  # never ends the body; waits for the client to close
        return False

    async def main() -> None:
        async with Server(handler) as server:
            pool, target = Pool(), Target(server.url(), 5)
            for _ in range(3):
                response = await pool.post(target, b"{}", {})
                assert await response.read() == b"data: last\n\n"
                await response.drain(0.5)
                response.release()
            await pool.close()
        assert server.connections == 2  # the second body never ended: its connection closed, the third opened one

    run(main)


def test_idle_connections_are_closed_after_the_keepalive() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool, target = Pool(keepalive=0.1), Target(server.url(), 5)
            response = await pool.post(target, b"{}", {})
            await read_all(response)
            response.release()
            await asyncio.sleep(0.3)
            response = await pool.post(target, b"{}", {})
            await read_all(response)
            response.release()
            await pool.close()
        assert server.connections == 2

    run(main)


def test_an_interim_answer_is_passed_over_for_the_real_one() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n")
        await writer.drain()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 9\r\n\r\ndata: 1\n\n")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            assert (response.status, response.headers) == (200, {"content-type": "text/event-stream",
                                                                 "content-length": "9"})
            assert await read_all(response) == b"data: 1\n\n"
            response.release()
            await pool.close()

    run(main)


def test_a_body_without_a_length_ends_with_the_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"a\":")
        await writer.drain()
        writer.write(b" 1}")
        return False

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            assert await read_all(response) == b'{"a": 1}'
            response.release()
            await pool.close()

    run(main)


def test_a_stream_cut_mid_body_is_a_broken_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(STREAM_HEAD + chunk(b"data: 1\n\n"))
        return False

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            assert await response.read() == b"data: 1\n\n"
            with pytest.raises(ConnectionBroken, match="closed the connection"):
                await response.read()
            response.release()
            await pool.close()

    run(main)


def test_a_close_before_any_answer_fails_the_post() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        return False

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            with pytest.raises(ConnectionBroken):
                await pool.post(Target(server.url(), 5), b"{}", {})
            await pool.close()

    run(main)


def test_bytes_that_are_not_http_are_a_protocol_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.5)
        return False

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            with pytest.raises(ProtocolError, match="invalid HTTP response"):
                await pool.post(Target(server.url(), 5), b"{}", {})
            await pool.close()

    run(main)


def test_a_refused_connection_is_a_connect_error() -> None:
    async def main() -> None:
        async with Server(lambda *_: asyncio.sleep(0, False)) as server:
            url = server.url()
        pool = Pool()
        with pytest.raises(ConnectError, match=r"cannot connect to 127\.0\.0\.1"):
            await pool.post(Target(url, 5), b"{}", {})
        await pool.close()

    run(main)


def test_a_compressed_body_is_decompressed() -> None:
    body = gzip.compress(b"data: " + b"x" * 5000 + b"\n\n")

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n")
        for start in range(0, len(body), 100):
            writer.write(chunk(body[start:start + 100]))
        writer.write(b"0\r\n\r\n")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            assert await read_all(response) == b"data: " + b"x" * 5000 + b"\n\n"
            response.release()
            await pool.close()

    run(main)


def test_a_waiting_reader_is_offered_the_bytes_and_woken_only_when_it_declines() -> None:
    """`Response.offer`: body bytes go to the reader in the connection's callback while it waits in `read()`; its
    task wakes only when it declines (read() gives b"" though the body goes on) and at the body's end."""
    step = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(STREAM_HEAD)
        for piece in (b"one", b"two", b"no", b"four"):
            await writer.drain()
            await step.wait()  # the reader waits in read() (or took the piece before)
            step.clear()
            writer.write(chunk(piece))
        await step.wait()
        writer.write(b"0\r\n\r\n")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            offered: list[bytes] = []

            def offer(data: bytes) -> Offer:
                offered.append(data)
                if data == b"no":
                    return Offer.TAKEN_AND_WAKE
                step.set()
                return Offer.TAKEN

            response.offer = offer
            asyncio.get_running_loop().call_later(0.05, step.set)
            assert await asyncio.wait_for(response.read(), 2) == b""  # woken by the decline, not before
            assert offered == [b"one", b"two", b"no"] and not response.complete
            step.set()
            assert await asyncio.wait_for(response.read(), 2) == b""  # the body's end is never offered
            assert offered == [b"one", b"two", b"no", b"four"] and response.complete
            response.release()
            await pool.close()

    run(main)


def test_bytes_that_come_between_a_decline_and_the_readers_turn_are_read_and_nothing_is_lost() -> None:
    step = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(STREAM_HEAD)
        await writer.drain()
        await step.wait()
        step.clear()
        writer.write(chunk(b"no"))
        await writer.drain()
        await step.wait()
        writer.write(chunk(b"last") + b"0\r\n\r\n")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})

            def offer(data: bytes) -> Offer:
                # Bytes the connection reads before the reader's task runs (uvloop reads a socket more than once
                # a turn): scheduled now, so they land before the wake-up the decline schedules.
                asyncio.get_running_loop().call_soon(lambda: (response.on_body(b"late"), response.fed()))
                return Offer.TAKEN_AND_WAKE

            response.offer = offer
            asyncio.get_running_loop().call_later(0.05, step.set)
            assert await asyncio.wait_for(response.read(), 2) == b"late"
            response.offer = None
            asyncio.get_running_loop().call_later(0.05, step.set)
            assert await asyncio.wait_for(response.read(), 2) == b"last"  # not an early b"" left by the decline
            assert await read_all(response) == b""
            response.release()
            await pool.close()

    run(main)


def test_bytes_an_offer_leaves_wait_for_read_and_come_before_any_that_follow() -> None:
    step, more = asyncio.Event(), asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(STREAM_HEAD)
        await writer.drain()
        await step.wait()
        writer.write(chunk(b"left "))
        await writer.drain()
        await more.wait()
        writer.write(chunk(b"then more") + b"0\r\n\r\n")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            offered: list[bytes] = []

            def leave(data: bytes) -> Offer:
                offered.append(data)
                more.set()
                return Offer.DECLINED

            response.offer = leave
            asyncio.get_running_loop().call_later(0.05, step.set)
            assert await read_all(response) == b"left then more"
            assert offered[0] == b"left "
            response.release()
            await pool.close()

    run(main)


def test_a_compressed_body_is_never_offered() -> None:
    body = gzip.compress(b"data: x\n\n")

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(chunk(body) + b"0\r\n\r\n")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            response.offer = lambda data: pytest.fail("offered compressed bytes")
            assert await read_all(response) == b"data: x\n\n"
            response.release()
            await pool.close()

    run(main)


def test_a_reader_that_lags_stops_the_socket_reads_and_so_the_server() -> None:
    """Backpressure: the client holds at most its high-water mark plus the kernel's buffers, then the server's
    writes block; reading again lets the rest through."""
    sent = 0
    total = 64 * 2**20

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        nonlocal sent
        writer.write(STREAM_HEAD)
        piece = chunk(b"x" * 65536)
        while sent < total:
            writer.write(piece)
            await writer.drain()
            sent += 65536
        writer.write(b"0\r\n\r\n")
        return True

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            await asyncio.sleep(0.5)
            held = sent
            await asyncio.sleep(0.3)
            assert sent == held, "the server kept writing to a client that reads nothing"
            assert held < 16 * 2**20, f"the client took {held / 2**20:.1f} MiB without reading it"
            assert len(await read_all(response)) == total
            response.release()
            await pool.close()

    run(main)


def test_header_values_with_line_breaks_are_refused() -> None:
    async def main() -> None:
        pool = Pool()
        with pytest.raises(ValueError, match="line break"):
            await pool.post(Target("http://127.0.0.1:9/x", 5), b"{}", {"x-evil": "a\r\nhost: elsewhere"})
        await pool.close()

    run(main)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make a test certificate (apt-get install -y openssl)", pytrace=False)
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def test_https_upstreams_are_verified_against_the_trusted_certificates(certificate: tuple[Path, Path],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = certificate
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecret")
        return True

    async def main(trusted: bool) -> None:
        async with Server(handler, tls=tls) as server:
            pool = Pool()
            if trusted:
                response = await pool.post(Target(server.url(), 5), b"{}", {})
                assert await read_all(response) == b"secret"
                response.release()
            else:
                with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                    await pool.post(Target(server.url(), 5), b"{}", {})
            await pool.close()

    asyncio.run(main(trusted=False))
    monkeypatch.setenv("SSL_CERT_FILE", os.fspath(cert))
    asyncio.run(main(trusted=True))


@pytest.mark.parametrize(("headers", "match"), [
    ({"x-note": "one\r\nx-injected: two"}, "header 'x-note' has a line break or a colon in it"),
    ({"x-bad:name": "value"}, "header 'x-bad:name' has a line break or a colon in it"),
    ({"x-note": "\u2713"}, "a character outside Latin-1"),
])
def test_a_head_that_cannot_be_written_is_the_clients_own_error_and_nothing_is_sent(
        headers: dict[str, str], match: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        raise AssertionError("nothing should reach the server")

    async def main() -> None:
        async with Server(handler) as server:
            with pytest.raises(InvalidRequestHead, match=match) as raised:
                await Pool().post(Target(server.url(), 5), b"{}", headers)
            assert isinstance(raised.value, HTTPError)
            assert server.connections == 0

    run(main)
