"""A hostile, or just unusual, upstream: the upstream client's limits, framing and pool, and what a client of the
gateway sees. Each upstream is a scripted server on 127.0.0.1 (`scripted_http.Server`) that writes exactly the
bytes a test gives it. Memory is bounded by counting bytes (what the server got to write before the gateway stopped
reading, what one read hands over), never by timing or RSS.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import socket
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson
import pytest
from e2e import Reply, request_body, user_message
from scripted_http import STREAM_HEAD, Server, chunk, read_all, run
from servers import Served

from gateway.config import ConfigError, GatewayConfig, parse_config
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from gateway.upstream.http1 import (
    HIGH_WATER,
    INFLATE_STEP,
    ConnectTimeout,
    HTTPError,
    Pool,
    ProtocolError,
    Target,
)
from gateway.upstream.url import UpstreamURL

SSE_FRAME = b'data: {"type":"text","content":"hi"}\n\n'


def endless(head: bytes, piece: bytes, counted: list[int]) -> Server:
    """A server that writes `head`, then `piece` forever, counting what it got to write before the client left."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(head)
        try:
            while counted[0] < 1 << 30:
                writer.write(piece)
                await writer.drain()
                counted[0] += len(piece)
        except ConnectionError:
            pass
        return False

    return Server(handler)


def answering(*writes: bytes) -> Server:
    """A server that answers every request with `writes`, each its own write, and keeps the connection."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        for data in writes:
            writer.write(data)
            await writer.drain()
        return True

    return Server(handler)


async def failure_of(server: Server, path: str = "/run") -> HTTPError:
    pool = Pool()
    try:
        response = await pool.post(Target(server.url(path), 5), b"{}", {})
        await read_all(response)
    except HTTPError as error:
        return error
    finally:
        await pool.close()
    raise AssertionError("the call succeeded")


# -- memory


def test_an_endless_response_head_is_refused_at_64_kib() -> None:
    written = [0]

    async def main() -> None:
        async with endless(b"HTTP/1.1 200 OK\r\n", b"x-filler: " + b"v" * 990 + b"\r\n", written) as server:
            error = await failure_of(server)
            assert isinstance(error, ProtocolError) and "head is larger than 64 KiB" in str(error)

    run(main)
    assert written[0] < 16 * 2**20, f"the client read {written[0] / 2**20:.0f} MiB of headers"


def test_a_header_line_that_never_ends_is_refused_at_16_kib() -> None:
    written = [0]

    async def main() -> None:
        async with endless(b"HTTP/1.1 200 OK\r\nx-endless: ", b"v" * 512, written) as server:
            error = await failure_of(server)
            assert isinstance(error, ProtocolError) and "line longer than 16 KiB" in str(error)

    run(main)
    assert written[0] < 16 * 2**20


def test_endless_trailers_end_the_stream_with_an_error() -> None:
    written = [0]
    head = STREAM_HEAD + chunk(SSE_FRAME) + b"0\r\n"

    async def main() -> None:
        async with endless(head, b"x-trailer: " + b"v" * 990 + b"\r\n", written) as server:
            error = await failure_of(server)
            assert isinstance(error, ProtocolError) and "trailers is larger than 64 KiB" in str(error)

    run(main)
    assert written[0] < 16 * 2**20


def test_a_gzip_bomb_is_inflated_one_step_per_read() -> None:
    inflated = 256 * 2**20
    bomb = gzip.compress(b"\0" * inflated, 9)  # about 250 KiB
    head = (b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n" % len(bomb))

    async def main() -> None:
        async with answering(head, bomb) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            await asyncio.sleep(0.2)  # the whole compressed body has arrived, unread
            assert response._size <= len(bomb) <= HIGH_WATER + len(bomb)
            total, largest = 0, 0
            while data := await response.read():
                total, largest = total + len(data), max(largest, len(data))
            assert total == inflated and largest <= INFLATE_STEP
            response.release()
            await pool.close()

    run(main)


@pytest.mark.parametrize(("coding", "body", "expected"), [
    ("gzip", b"\x1f\x8b\x08\x00garbage-not-deflate", "invalid gzip body"),
    # mtime=0: the same bytes, so the same test id, in every worker that collects it
    ("gzip", gzip.compress(SSE_FRAME * 100, mtime=0)[:-30], "gzip body ended before its end"),
    ("deflate", b"\xff\xfe\xfd\xfc not deflate at all", "invalid deflate body"),
])
def test_a_broken_compressed_body_is_a_protocol_error(coding: str, body: bytes, expected: str) -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-encoding: %s\r\ncontent-length: %d\r\n\r\n" % (coding.encode(), len(body))

    async def main() -> None:
        async with answering(head, body) as server:
            error = await failure_of(server)
            assert isinstance(error, ProtocolError) and expected in str(error), error

    run(main)


def test_raw_deflate_is_read_as_some_servers_send_deflate() -> None:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    body = compressor.compress(SSE_FRAME * 50) + compressor.flush()
    head = b"HTTP/1.1 200 OK\r\ncontent-encoding: deflate\r\ncontent-length: %d\r\n\r\n" % len(body)

    async def main() -> None:
        async with answering(head, body) as server:
            pool = Pool()
            response = await pool.post(Target(server.url(), 5), b"{}", {})
            assert await read_all(response) == SSE_FRAME * 50
            response.release()
            await pool.close()

    run(main)


# -- framing


def test_bytes_after_a_whole_response_close_its_connection_and_change_nothing() -> None:
    """A second response glued to the first (a stray one, cut mid-body) is not parsed into the first, and the
    connection, mid-parse, never goes back to the pool."""
    whole = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
    stray = b"HTTP/1.1 500 Oops\r\ncontent-length: 100\r\n\r\nhalf a bo"

    async def main() -> None:
        async with answering(whole + stray) as server:
            pool = Pool()
            first = await pool.post(Target(server.url(), 5), b"{}", {})
            assert await read_all(first) == b"ok"
            await asyncio.sleep(0.05)
            assert first.status == 200 and first.headers["content-length"] == "2"
            first.release()
            second = await pool.post(Target(server.url(), 5), b"{}", {})
            assert second.status == 200 and await read_all(second) == b"ok"
            second.release()
            assert server.connections == 2
            await pool.close()

    run(main)


@pytest.mark.parametrize(("head", "expected"), [
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n", "only chunked is supported"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: identity\r\n\r\n", "only chunked is supported"),
    (b"HTTP/1.1 042 Odd\r\ncontent-length: 0\r\n\r\n", "status 42, which HTTP does not have"),
])
def test_framing_llhttp_and_the_gateway_would_read_differently_is_refused(head: bytes, expected: str) -> None:
    async def main() -> None:
        async with answering(head + chunk(SSE_FRAME) + b"0\r\n\r\n") as server:
            error = await failure_of(server)
            assert isinstance(error, ProtocolError) and expected in str(error), error

    run(main)


# -- the pool


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    """Over a thousand open files, so the connections the test makes are numbered past 1024."""
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        yield
    finally:
        for fd in held:
            os.close(fd)


def test_keep_alive_works_for_sockets_numbered_past_1024(many_descriptors: None) -> None:
    async def main() -> None:
        async with answering(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok") as server:
            pool = Pool()
            for _ in range(30):
                response = await pool.post(Target(server.url(), 5), b"{}", {})
                assert await read_all(response) == b"ok"
                response.release()
            assert server.connections == 1
            await pool.close()

    run(main)


def test_max_connections_makes_requests_past_it_wait_their_turn() -> None:
    active = most = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        nonlocal active, most
        active += 1
        most = max(most, active)
        await asyncio.sleep(0.1)
        active -= 1
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
        return False

    async def main() -> None:
        async with Server(handler) as server:
            pool = Pool()
            target = Target(server.url(), 5, max_connections=2)

            async def one() -> bytes:
                response = await pool.post(target, b"{}", {})
                try:
                    return await read_all(response)
                finally:
                    response.release()

            assert await asyncio.gather(*(one() for _ in range(6))) == [b"ok"] * 6
            assert server.connections == 6 and most == 2
            await pool.close()

    run(main)


def test_a_connect_timeout_is_one_of_the_clients_errors() -> None:
    """A listener whose accept queue is full drops new connections' SYNs: connecting hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(listener.getsockname())
        fillers.append(filler)

    async def main() -> None:
        pool = Pool()
        port = listener.getsockname()[1]
        with pytest.raises(ConnectTimeout) as caught:
            await pool.post(Target(f"http://127.0.0.1:{port}/", 0.3), b"{}", {})
        assert isinstance(caught.value, HTTPError)
        await pool.close()

    try:
        run(main)
    finally:
        for sock in [*fillers, listener]:
            sock.close()


# -- the configuration


ROUTE = """routes:
  - upstream:
      url: {url}
      dialect: ag-kit
      headers: {headers}
"""


@pytest.mark.parametrize(("headers", "expected"), [
    ("{HOST: evil}", "header HOST is set by the gateway"),
    ("{Content-Length: '1'}", "header Content-Length is set by the gateway"),
    ("{TRANSFER-encoding: chunked}", "header TRANSFER-encoding is set by the gateway"),
    ("{Connection: close}", "header Connection is set by the gateway"),
    ("{Keep-Alive: '5'}", "header Keep-Alive is set by the gateway"),
    ("{'bad name': x}", "header name 'bad name' is not a valid HTTP header name"),
    ("{'x-a': \"a\\nb\"}", "header x-a's value has a line break"),
    ("{X-A: '1', x-a: '2'}", "header x-a is given twice"),
])
def test_upstream_headers_are_checked_at_load_with_one_line_each(headers: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(ROUTE.format(url="http://127.0.0.1:9/x", headers=headers), "gw.yaml")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("gw.yaml:") and expected in message, message


def test_an_upstream_url_is_sent_as_httpx_would_send_it() -> None:
    url = UpstreamURL.parse("https://us%40er:p%3Ass@Bücher.example:8443/a b/ü/%7Efine/100%?q=a b")
    assert url.host == "xn--bcher-kva.example" and url.host_header == "xn--bcher-kva.example:8443"
    assert url.target == "/a%20b/%C3%BC/%7Efine/100%25?q=a%20b"
    assert url.authorization == "Basic dXNAZXI6cDpzcw=="  # us@er:p:ss


@pytest.mark.parametrize("url", ["ftp://host/x", "http:///x", "http://host:99999/x", "http://exa mple.com/"])
def test_an_upstream_url_that_is_not_one_is_refused_at_load(url: str) -> None:
    with pytest.raises(ConfigError, match=r"gw.yaml:\d+: routes\[0\].upstream.url: "):
        parse_config(ROUTE.format(url=url, headers="{}"), "gw.yaml")


def test_userinfo_reaches_the_upstream_as_basic_auth_and_the_path_encoded() -> None:
    async def main() -> None:
        async with answering(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n") as server:
            port = server.url().split(":")[2].split("/")[0]
            pool = Pool()
            response = await pool.post(Target(f"http://agent:s3cret@127.0.0.1:{port}/send message", 5), b"{}", {})
            response.release()
            await pool.close()
            head = server.requests[0].split(b"\r\n\r\n")[0].split(b"\r\n")
            assert head[0] == b"POST /send%20message HTTP/1.1"
            assert b"authorization: Basic YWdlbnQ6czNjcmV0" in head

    run(main)


# -- through the whole gateway: what a client sees


def gateway_in_front_of(server: Server) -> Served:
    """An AG-UI route to the scripted server, which stands for an AG-Kit agent."""
    config = GatewayConfig.model_validate({"routes": [{"paths": ["/agui"], "client_dialects": ["ag-ui"],
                                                       "upstream": {"url": server.url("/send-message"),
                                                                    "dialect": "ag-kit"}}]})
    return Served(create_app(config, store=MemoryStore()))


@pytest.mark.parametrize(("answer", "status", "expected"), [
    (b"HTTP/1.1 200 OK\r\n" + b"x-filler: " + b"v" * 2000 + b"\r\n" * 1 + b"x: y\r\n" * 20000,
     502, "head is larger than 64 KiB"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n", 502, "only chunked is supported"),
    (STREAM_HEAD.replace(b"\r\n\r\n", b"\r\ncontent-encoding: gzip\r\n\r\n") + chunk(b"\x1f\x8b\x08\x00nonsense")
     + b"0\r\n\r\n", 200, "gzip body"),
])
def test_a_client_is_told_what_the_upstream_did_wrong(answer: bytes, status: int, expected: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(answer)
        await writer.drain()
        return False

    async def main() -> None:
        async with Server(handler) as server:
            with gateway_in_front_of(server) as gateway:
                body = request_body("ag-ui", [user_message("ag-ui", "hi")])
                async with httpx.AsyncClient(timeout=10) as client:
                    response = await client.post(gateway.url + "/agui", json=body)
        assert response.status_code == status, response.text
        reply = Reply("ag-ui", httpx.Response(response.status_code, content=response.content))
        assert reply.error is not None and expected in reply.error.message, response.text
        assert "Traceback" not in response.text and "gateway_error" not in response.text

    run(main)


def test_after_a_hostile_answer_the_gateway_serves_the_next_request() -> None:
    answers = [b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
               STREAM_HEAD + chunk(SSE_FRAME) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(answers.pop(0))
        await writer.drain()
        return False

    async def main() -> None:
        async with Server(handler) as server:
            with gateway_in_front_of(server) as gateway:
                async with httpx.AsyncClient(timeout=10) as client:
                    first = await client.post(gateway.url + "/agui",
                                              json=request_body("ag-ui", [user_message("ag-ui", "hi")], "c1"))
                    second = await client.post(gateway.url + "/agui",
                                               json=request_body("ag-ui", [user_message("ag-ui", "hi")], "c2"))
        assert first.status_code == 502
        assert second.status_code == 200 and Reply("ag-ui", httpx.Response(200, content=second.content)).text == "hi"

    run(main)


# -- what a client's dialect needs whole is bounded


@contextmanager
def serving(server: Server) -> Iterator[Server]:
    """`server` on an event loop of its own, in a thread, beside a gateway served in another."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.__aexit__(None, None, None), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


HELD = 1 << 20
"""The routes below hold at most this many characters of one piece a client needs whole."""


def _kernel_buffers() -> int:
    """Bytes the kernel may hold between the upstream's writes and the gateway's reads on one loopback connection:
    the largest receive and send buffers Linux grows a TCP socket's to, which a reader slowed by a loaded machine
    lets fill."""
    try:
        return sum(int(Path(f"/proc/sys/net/ipv4/tcp_{kind}").read_text().split()[2]) for kind in ("rmem", "wmem"))
    except (OSError, IndexError, ValueError):
        return 8 * HELD


READ_PAST_THE_BOUND = 8 * HELD + _kernel_buffers()
"""What the upstream may get to write before a gateway that stops reading soon after the bound lets it go."""
ARGS = chunk(b'data: {"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"' + b"x" * 1024 + b'"}\n\n')
"""1 KiB more of one tool call's arguments, forever."""
OPENING = chunk(b'data: {"type":"start"}\n\ndata: {"type":"tool-input-start","toolCallId":"c1","toolName":"big"}\n\n')
TEXT = chunk(b'data: {"type":"text-delta","id":"t1","delta":"' + b"y" * 1024 + b'"}\n\n')


@pytest.mark.parametrize("client", ["vercel", "a2a", "agent-respond", "ag-ui"])
def test_tool_arguments_past_the_bound_end_the_run_in_the_clients_dialect(client: str) -> None:
    """Every client builds a tool call's arguments whole (Vercel's tool-input-available, A2A's data part, the
    eval platform's one body, the AG-UI client's state): past `limits.max_held_text` the run ends with an error."""
    counted = [0]
    with serving(endless(STREAM_HEAD + OPENING, ARGS, counted)) as upstream:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": [client], "limits": {"max_held_text": HELD},
             "upstream": {"url": upstream.url("/api/chat"), "dialect": "vercel"}}]})
        with Served(create_app(config)) as gateway:
            answer = httpx.post(f"{gateway.url}/in", json=request_body(client, [user_message(client, "hi")]),
                                headers={"a2a-version": "1.0"}, timeout=30)
    reply = Reply(client, answer) if answer.status_code < 400 or client != "a2a" else None
    if client == "agent-respond":
        assert answer.status_code == 502 and "held_too_much" in answer.text
    else:
        assert reply is not None and reply.error is not None and "tool call's arguments grew past" in \
            reply.error.message
    assert counted[0] < READ_PAST_THE_BOUND  # the gateway stopped reading soon after the bound, and let it go


def test_a_one_body_reply_past_the_bound_ends_with_a_502() -> None:
    """The eval platform's reply is one JSON body, built whole: text past the bound is not held."""
    counted = [0]
    opening = chunk(b'data: {"type":"start"}\n\ndata: {"type":"text-start","id":"t1"}\n\n')
    with serving(endless(STREAM_HEAD + opening, TEXT, counted)) as upstream:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": ["agent-respond"], "limits": {"max_held_text": HELD},
             "upstream": {"url": upstream.url("/api/chat"), "dialect": "vercel"}}]})
        with Served(create_app(config)) as gateway:
            answer = httpx.post(f"{gateway.url}/in", json=request_body("agent-respond", [
                user_message("agent-respond", "hi")]), timeout=30)
    assert answer.status_code == 502 and "held_too_much" in answer.text
    assert counted[0] < READ_PAST_THE_BOUND


@pytest.mark.parametrize("client", ["agent-respond", "ag-ui", "vercel", "a2a"])
@pytest.mark.parametrize("past", ["text", "tool arguments"])
def test_a_one_body_upstreams_whole_reply_past_the_bound_is_the_clients_error(client: str, past: str) -> None:
    """A one-body upstream's reply comes as one batch that also ends the run: past the bound, the client is still
    told why, where it got a bare 500 (or a run with no error) as the batch was refused after the run had ended."""
    if past == "text":
        message = {"role": "assistant", "content": "x" * (2 * HELD)}
    else:
        arguments = '{"a": "' + "y" * (2 * HELD) + '"}'
        message = {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "big", "arguments": arguments}}]}
    body = orjson.dumps({"messages": [message]})
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
    with serving(answering(head, body)) as upstream:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": [client], "limits": {"max_held_text": HELD},
             "upstream": {"url": upstream.url("/agent/respond"), "dialect": "agent-respond"}}]})
        with Served(create_app(config)) as gateway:
            answer = httpx.post(f"{gateway.url}/in", json=request_body(client, [user_message(client, "hi")]),
                                headers={"a2a-version": "1.0"}, timeout=30)
    if client == "agent-respond":
        assert answer.status_code == 502 and "held_too_much" in answer.text
    elif past == "text":  # a stream carries text as it comes: nothing is held
        reply = Reply(client, answer)
        assert reply.error is None and reply.text.count("x") == 2 * HELD
    else:
        reply = Reply(client, answer)
        assert reply.error is not None and "tool call's arguments grew past" in reply.error.message


def test_two_hostile_streams_at_once_hold_what_the_bound_allows_and_no_more() -> None:
    """Memory by bytes counted (tracemalloc's peak, this process's gateway), not by RSS: two Vercel clients each
    fed tool arguments without end hold at most a few times the bound each."""
    import tracemalloc

    counted = [0]
    with serving(endless(STREAM_HEAD + OPENING, ARGS, counted)) as upstream:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": ["vercel"],
             "upstream": {"url": upstream.url("/api/chat"), "dialect": "vercel"}}]})  # the default bound
        with Served(create_app(config)) as gateway:
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                threads = [threading.Thread(target=httpx.post, args=(f"{gateway.url}/in",), kwargs={
                    "json": request_body("vercel", [user_message("vercel", "hi")]), "timeout": 60})
                    for _ in range(2)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(60)
                peak = tracemalloc.get_traced_memory()[1] - before
            finally:
                tracemalloc.stop()
    default = GatewayConfig.model_validate({"routes": [{"upstream": {"url": "http://a/", "dialect": "vercel"}}]}
                                           ).routes[0].limits.max_held_text
    print(f"\ntwo streams of endless tool arguments: peak {peak / 2**20:.0f} MiB traced, bound {default / 2**20:.0f}"
          " Mi characters each")
    assert counted[0] < 1 << 30, "the gateway read the upstream to its end"
    assert peak < 100 * 2**20, f"held {peak / 2**20:.0f} MiB"  # beside a process of ~60 MiB: under 200 MiB in all


# -- the idle deadline counts events, not bytes


def trickling(head: bytes, pieces: list[bytes], gap: float) -> Server:
    """A server that writes `head`, then `pieces` in turn forever, `gap` seconds apart, until the client leaves."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        if server.requests[-1].startswith(b"GET"):  # an A2A card: there is none, the URL is the endpoint
            writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            return True
        writer.write(head)
        try:
            for _ in range(int(60 / gap)):
                for piece in pieces:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(gap)
        except ConnectionError:
            pass
        return False

    server = Server(handler)
    return server


AGUI_START = chunk(b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
                   b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}\n\n')
A2A_START = chunk(b'data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1",'
                  b'"status":{"state":"TASK_STATE_WORKING"}}}}\n\n')
A2A_WORKING = chunk(b'data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c1",'
                    b'"status":{"state":"TASK_STATE_WORKING"}}}}\n\n')


@pytest.mark.parametrize(("dialect", "head", "pieces"), [
    ("ag-ui", AGUI_START, [chunk(b": ping\n\n")]),  # comments only
    ("ag-ui", AGUI_START, [chunk(b"d"), chunk(b"a"), chunk(b"t"), chunk(b"a")]),  # a frame that never ends
    ("a2a", A2A_START, [A2A_WORKING]),  # "still working", and nothing else
], ids=["comments", "a-frame-a-byte-at-a-time", "a2a-working-updates"])
def test_an_upstream_that_only_says_it_is_there_is_cut_at_the_idle_deadline(dialect: str, head: bytes,
                                                                           pieces: list[bytes]) -> None:
    import time

    with serving(trickling(STREAM_HEAD + head, pieces, 0.05)) as upstream:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": ["ag-ui"], "timeouts": {"idle": 0.5, "total": 30},
             "upstream": {"url": upstream.url("/agui"), "dialect": dialect, "variant": None}}]})
        with Served(create_app(config)) as gateway:
            started = time.monotonic()
            reply = Reply("ag-ui", httpx.post(f"{gateway.url}/in", timeout=30,
                                              json=request_body("ag-ui", [user_message("ag-ui", "hi")])))
            took = time.monotonic() - started
    assert reply.error is not None and "sent nothing for 0.5s" in reply.error.message, reply.events
    assert took < 5, f"cut after {took:.1f}s, not at the idle deadline"


# -- an A2A stream speaks of its own task only


def a2a_frame(result: dict[str, object]) -> bytes:
    import orjson

    return chunk(b"data: " + orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result}) + b"\n\n")


def a2a_text(task: str, context: str, text: str, last: bool = False) -> bytes:
    return a2a_frame({"artifactUpdate": {"taskId": task, "contextId": context, "lastChunk": last, "artifact": {
        "artifactId": f"a-{task}", "name": "response", "parts": [{"text": text}]}}})


def test_updates_about_another_task_are_left_out_of_the_run_and_counted() -> None:
    """An agent (or a proxy before it) that interleaves another task's updates into this stream must not have them
    read as this run's: another task's question would end the run as an interrupt and drop its real answer."""
    body = (A2A_START + a2a_text("t1", "c1", "Mine, ")
            + a2a_text("other-task", "OTHER-CTX", "someone else's secret")
            + a2a_frame({"statusUpdate": {"taskId": "other-task", "contextId": "OTHER-CTX", "status": {
                "state": "TASK_STATE_INPUT_REQUIRED", "message": {"messageId": "q", "role": "ROLE_AGENT",
                                                                   "parts": [{"text": "their question?"}]}}}})
            + a2a_text("t1", "c1", "all mine.", last=True)
            + a2a_frame({"statusUpdate": {"taskId": "t1", "contextId": "c1",
                                          "status": {"state": "TASK_STATE_COMPLETED"}}})
            + b"0\r\n\r\n")
    with serving(trickling(STREAM_HEAD + body, [], 0.05)) as upstream:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"name": "r", "paths": ["/in"], "client_dialects": ["ag-ui"],
             "upstream": {"url": upstream.url("/a2a"), "dialect": "a2a"}}]})
        with Served(create_app(config)) as gateway:
            reply = Reply("ag-ui", httpx.post(f"{gateway.url}/in", timeout=30,
                                              json=request_body("ag-ui", [user_message("ag-ui", "hi")])))
            metrics = httpx.get(f"{gateway.url}/metrics").text
    assert reply.text == "Mine, all mine." and reply.finished is not None and reply.finished.outcome == "success"
    assert "secret" not in reply.response.text and "their question" not in reply.response.text
    assert 'kind="upstream_other_run",upstream_dialect="a2a"} 2.0' in metrics  # the text and the question
