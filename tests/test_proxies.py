"""Forward proxies (gateway/proxies.py): the environment read as httpx reads it, and CONNECT tunnels through a real
proxy on 127.0.0.1 to a real TLS server on 127.0.0.1, under asyncio's own loop and under uvloop.

The proxy here is a few lines of asyncio: it reads one CONNECT, checks the credentials when told to, answers, and
relays bytes both ways; or it answers what a test scripts (nothing, garbage, an endless head) and then waits to see
the client close its side.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import cast

import pytest
from test_http1 import certificate as http1_certificate  # noqa: F401 (a fixture, used below by its name)

from gateway.upstream.proxies import MAX_HEAD, Proxy, ProxyError, absolute_target, open_tunnel, parse_proxy, proxy_for

Run = Callable[[Callable[[], Awaitable[None]]], None]

# -- the environment -------------------------------------------------------------------------------------------------

ENV = {"HTTP_PROXY": "http://web:3128", "HTTPS_PROXY": "http://secure:3128"}
WEB, SECURE = "http://web:3128", "http://secure:3128"

# (url, variables over ENV, the proxy expected, whether httpx 0.28 answers the same)
ENVIRONMENT_CASES: list[tuple[str, dict[str, str], str | None, bool]] = [
    ("http://api.example.com/run", {}, WEB, True),
    ("https://api.example.com/run", {}, SECURE, True),
    ("https://api.example.com/run", {"https_proxy": "http://lower:1"}, "http://lower:1", True),
    ("https://api.example.com/run", {"https_proxy": ""}, None, True),
    ("https://api.example.com/run", {"https_proxy": "", "ALL_PROXY": "http://all:1"}, "http://all:1", True),
    ("https://api.example.com/run", {"all_proxy": "http://all:1"}, SECURE, True),
    ("ftp://api.example.com/", {"all_proxy": "http://all:1"}, None, False),
    ("https://api.example.com/run", {"HTTPS_PROXY": "secure:3128"}, SECURE, True),
    ("http://api.example.com/run", {"REQUEST_METHOD": "POST"}, None, True),
    ("http://api.example.com/run", {"REQUEST_METHOD": "POST", "http_proxy": WEB}, WEB, True),
    ("https://localhost:8000/run", {}, SECURE, True),
    ("https://127.0.0.1:8000/run", {}, SECURE, True),
    ("https://api.example.com/run", {"NO_PROXY": "*"}, None, True),
    ("https://api.example.com/run", {"NO_PROXY": "other.org, *"}, None, True),
    ("https://api.example.com/run", {"NO_PROXY": "api.example.com"}, None, True),
    ("https://API.Example.com/run", {"NO_PROXY": "api.EXAMPLE.com"}, None, True),
    ("https://api.example.com/run", {"NO_PROXY": "example.com"}, None, True),
    ("https://example.com/run", {"NO_PROXY": "example.com"}, None, True),
    ("https://badexample.com/run", {"NO_PROXY": "example.com"}, SECURE, True),
    ("https://api.example.com/run", {"NO_PROXY": ".example.com"}, None, True),
    ("https://example.com/run", {"NO_PROXY": ".example.com"}, None, False),
    ("https://api.example.com/run", {"NO_PROXY": "*.example.com"}, None, False),
    ("https://api.example.com/run", {"NO_PROXY": " other.org ,  example.com "}, None, True),
    ("https://api.example.com./run", {"NO_PROXY": "example.com"}, None, False),
    ("https://api.example.com/run", {"NO_PROXY": "example.com", "no_proxy": "other.org"}, SECURE, True),
    ("https://example.com:8443/run", {"NO_PROXY": "example.com:8443"}, None, True),
    ("https://example.com/run", {"NO_PROXY": "example.com:8443"}, SECURE, True),
    ("https://example.com/run", {"NO_PROXY": "example.com:443"}, None, False),
    ("https://localhost:8000/run", {"NO_PROXY": "localhost"}, None, True),
    ("https://127.0.0.1:8000/run", {"NO_PROXY": "127.0.0.1"}, None, True),
    ("https://10.1.2.3/run", {"NO_PROXY": "10.1.2.3"}, None, True),
    ("https://10.1.2.3/run", {"NO_PROXY": "10.0.0.0/8"}, None, False),
    ("https://11.1.2.3/run", {"NO_PROXY": "10.0.0.0/8"}, SECURE, True),
    ("https://10.1.2.3:8443/run", {"NO_PROXY": "10.1.2.3:8443"}, None, True),
    ("https://10.1.2.3/run", {"NO_PROXY": "10.1.2.3:8443"}, SECURE, True),
    ("https://[::1]:8000/run", {"NO_PROXY": "::1"}, None, True),
    ("https://[::1]:8000/run", {"NO_PROXY": "[::1]:8000"}, None, False),
    ("https://[fd00::5]/run", {"NO_PROXY": "fd00::/8"}, None, False),
    ("http://internal/run", {"NO_PROXY": "http://internal"}, None, True),
    ("https://internal/run", {"NO_PROXY": "http://internal"}, SECURE, True),
]


@pytest.mark.parametrize(("url", "variables", "expected", "as_httpx"), ENVIRONMENT_CASES)
def test_the_environment_names_a_proxy_as_httpx_reads_it(url: str, variables: dict[str, str], expected: str | None,
                                                           as_httpx: bool) -> None:
    assert proxy_for(url, {**ENV, **variables}) == expected


def httpx_proxy_for(url: str) -> str | None:
    import httpx
    from httpx._utils import URLPattern, get_environment_proxies

    try:
        mounts = sorted((URLPattern(key), value) for key, value in get_environment_proxies().items())
    except httpx.InvalidURL as exc:  # `[::1]:8000` in NO_PROXY: httpx cannot make a client at all
        return f"httpx raises: {exc}"
    return next((value for pattern, value in mounts if pattern.matches(httpx.URL(url))), None)


@pytest.fixture
def environ_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict[str, str]], None]]:
    """Sets the process's proxy variables to exactly these, for httpx to read."""
    def use(variables: dict[str, str]) -> None:
        for name in list(os.environ):
            if name.lower().endswith("_proxy") or name == "REQUEST_METHOD":
                monkeypatch.delenv(name)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
    yield use


@pytest.mark.parametrize(("url", "variables", "expected", "as_httpx"), ENVIRONMENT_CASES)
def test_the_cases_said_to_agree_with_httpx_do(url: str, variables: dict[str, str], expected: str | None,
                                               as_httpx: bool, environ_only: Callable[[dict[str, str]], None]) -> None:
    """The table's last column, checked against the httpx the tests install: where it says False, the docstring of
    gateway/proxies.py says why."""
    pytest.importorskip("httpx")
    environ_only({**ENV, **variables})
    assert (httpx_proxy_for(url) == expected) is as_httpx


def test_the_process_environment_is_read_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://from-env:8080")
    monkeypatch.setenv("no_proxy", "")
    assert proxy_for("https://api.example.com/") == "http://from-env:8080"


@pytest.mark.parametrize(("url", "proxy"), [
    ("http://proxy:3128", Proxy("proxy", 3128)),
    ("http://Proxy.Example:3128/", Proxy("proxy.example", 3128)),
    ("http://proxy", Proxy("proxy", 80)),
    ("http://[::1]:3128", Proxy("::1", 3128)),
    ("http://jo:secret@proxy:3128", Proxy("proxy", 3128, (("proxy-authorization", "Basic am86c2VjcmV0"),))),
    ("http://jo%40x:p%3Ass%20w@proxy:3128",
     Proxy("proxy", 3128, (("proxy-authorization", "Basic " + base64.b64encode(b"jo@x:p:ss w").decode()),))),
    ("http://jo@proxy:3128", Proxy("proxy", 3128, (("proxy-authorization", "Basic am86"),))),
])
def test_a_proxy_url_is_parsed_with_its_credentials_decoded(url: str, proxy: Proxy) -> None:
    assert parse_proxy(url) == proxy


@pytest.mark.parametrize(("url", "message"), [
    ("https://jo:secret@proxy:3128", r"^proxy https://proxy:3128 is reached over TLS \(https://\); only http://"),
    ("socks5://jo:secret@proxy:1080", r"^proxy socks5://proxy:1080 is a SOCKS proxy; only http://"),
    ("socks5h://proxy:1080", r"SOCKS"),
    ("ftp://proxy:21", r"scheme 'ftp'"),
    ("jo:secret@proxy:3128", r"^proxy URL 'jo:\*\*\*@proxy:3128' has no scheme: write http://jo:\*\*\*@proxy:3128$"),
    ("http://jo:secret@proxy:99999", r"^proxy URL 'http://jo:\*\*\*@proxy:99999' is not valid: Port out of range"),
    ("http://", r"has no host"),
])
def test_a_proxy_url_that_cannot_be_used_is_one_line_that_keeps_the_password_out(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        parse_proxy(url)
    assert "secret" not in str(raised.value) and "\n" not in str(raised.value)


def test_a_proxy_keeps_its_credentials_out_of_its_repr() -> None:
    proxy = parse_proxy("http://jo:secret@proxy:3128")
    assert repr(proxy) == "Proxy(host='proxy', port=3128)"
    assert parse_proxy("http://[::1]:3128").authority == "[::1]:3128"


def test_a_plain_http_upstream_is_asked_for_in_absolute_form() -> None:
    assert absolute_target("http", "api.example.com:8080", "/run?x=1") == "http://api.example.com:8080/run?x=1"


# -- the tunnel ------------------------------------------------------------------------------------------------------

@pytest.fixture
def certificate(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """The origin's: test_http1's self-signed certificate for 127.0.0.1, made with openssl once per module."""
    return cast(tuple[Path, Path], request.getfixturevalue("http1_certificate"))


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Run:
    if request.param == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        return lambda main: uvloop.run(main())
    return lambda main: asyncio.run(main())


class Origin:
    """The TLS server behind the proxy: answers any request with `secret` and closes."""

    def __init__(self, certificate: tuple[Path, Path]) -> None:
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(*certificate)
        self.server: asyncio.Server | None = None
        self.port = 0
        self.requests: list[bytes] = []

    async def __aenter__(self) -> Origin:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            self.requests.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nsecret")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()


class ConnectProxy:
    """A CONNECT proxy that relays bytes, asking for `credentials` when given (407 otherwise). With `answer`, it
    writes that instead of relaying (b"": it closes at once) and waits for the client to close."""

    def __init__(self, credentials: str | None = None, answer: bytes | None = None, padding: int = 0) -> None:
        self.credentials = credentials
        self.answer = answer
        self.padding = padding
        self.heads: list[bytes] = []
        self.client_closed = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.port = 0
        self.tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> ConnectProxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        if self.tasks:  # relays end when both sides have closed; any left are ended here
            await asyncio.wait(self.tasks, timeout=1)
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.server.wait_closed()

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo}127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            self.heads.append(head)
            if self.answer is not None:
                if self.answer:
                    writer.write(self.answer)
                    await reader.read()
                    self.client_closed.set()
                return
            lines = head.decode("latin-1").split("\r\n")
            headers = dict(line.lower().split(": ", 1) for line in lines[1:] if line)
            if self.credentials is not None:
                expected = "basic " + base64.b64encode(self.credentials.encode()).decode().lower()
                if headers.get("proxy-authorization") != expected:
                    writer.write(b'HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm="t"'
                                 b"\r\ncontent-length: 12\r\n\r\nnot allowed\n")
                    await reader.read()
                    self.client_closed.set()
                    return
            host, port = lines[0].split(" ")[1].rsplit(":", 1)
            upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
            padding = b"x-padding: " + b"a" * self.padding + b"\r\n" if self.padding else b""
            writer.write(b"HTTP/1.1 200 Connection established\r\n" + padding + b"\r\n")
            await asyncio.gather(relay(reader, upstream_writer), relay(upstream_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:  # Python 3.11's start_server logs a handler task that ends cancelled
            pass
        finally:
            writer.close()


async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


class Client(asyncio.Protocol):
    """The caller's protocol: what it was handed, and everything it read."""

    def __init__(self) -> None:
        self.transport: asyncio.BaseTransport | None = None
        self.data = b""
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.data += data

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def trusting(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=certificate[0])


async def get(proxy: str, origin: Origin, context: ssl.SSLContext, timeout: float = 5) -> bytes:
    loop = asyncio.get_running_loop()
    transport, client = await open_tunnel(loop, parse_proxy(proxy), "127.0.0.1", origin.port, Client, context,
                                          timeout=timeout)
    try:
        assert client.transport is transport
        assert transport.get_extra_info("ssl_object") is not None  # TLS to the origin, not the proxy's plain socket
        transport.write(b"GET /run HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        await asyncio.wait_for(client.closed, 5)
    finally:
        transport.close()
    return client.data


def test_a_request_through_the_tunnel_gets_the_tls_servers_answer(run: Run, certificate: tuple[Path, Path]) -> None:
    async def main() -> None:
        async with Origin(certificate) as origin, ConnectProxy() as proxy:
            answer = await get(proxy.url(), origin, trusting(certificate))
        assert answer.endswith(b"\r\n\r\nsecret")
        assert proxy.heads == [f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\nhost: 127.0.0.1:{origin.port}\r\n\r\n"
                               .encode()]
        assert origin.requests == [b"GET /run HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"]

    run(main)


def test_the_proxy_is_given_the_credentials_of_its_url(run: Run, certificate: tuple[Path, Path]) -> None:
    async def main() -> None:
        async with Origin(certificate) as origin, ConnectProxy(credentials="jo@x:p:ss w") as proxy:
            assert (await get(proxy.url("jo%40x:p%3Ass%20w@"), origin, trusting(certificate))).endswith(b"secret")
        assert b"\r\nproxy-authorization: Basic am9AeDpwOnNzIHc=\r\n" in proxy.heads[0]

    run(main)


@pytest.mark.parametrize("userinfo", ["", "jo:wrong@"])
def test_credentials_the_proxy_refuses_are_an_error_naming_407(run: Run, certificate: tuple[Path, Path],
                                                               userinfo: str) -> None:
    async def main() -> None:
        async with Origin(certificate) as origin, ConnectProxy(credentials="jo:right") as proxy:
            with pytest.raises(ProxyError, match=r"refused CONNECT 127\.0\.0\.1:\d+: 407 Proxy Authentication "
                                                 r"Required$") as raised:
                await get(proxy.url(userinfo), origin, trusting(certificate))
            assert raised.value.status == 407
            await asyncio.wait_for(proxy.client_closed.wait(), 2)

    run(main)


@pytest.mark.parametrize(("answer", "message"), [
    (b"", r"^the proxy closed the connection before answering CONNECT"),
    (b"SSH-2.0-OpenSSH_9.6\r\n", r"^the proxy's answer to CONNECT is not HTTP: b'SSH-2.0-OpenSSH_9.6'$"),
    (b"HTTP/1.1 200 OK\r\n" + b"x-padding: " + b"a" * MAX_HEAD, r"longer than 65536 bytes"),
    (b"HTTP/1.1 2000 OK\r\n\r\n", r"^the proxy's answer to CONNECT is not HTTP: b'HTTP/1.1 2000 OK'$"),
    (b"HTTP/1.1 200 Connection established\r\n\r\nearly", r"sent bytes after its answer to CONNECT$"),
    (b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n", r"refused CONNECT 127\.0\.0\.1:\d+: 502 Bad Gateway$"),
])
def test_a_proxy_that_closes_or_answers_garbage_fails_cleanly(run: Run, certificate: tuple[Path, Path], answer: bytes,
                                                              message: str) -> None:
    async def main() -> None:
        async with Origin(certificate) as origin, ConnectProxy(answer=answer) as proxy:
            with pytest.raises(ProxyError, match=message):
                await get(proxy.url(), origin, trusting(certificate))
            if answer:  # the proxy sees the gateway close its side: nothing is left open
                await asyncio.wait_for(proxy.client_closed.wait(), 2)
            assert origin.requests == []

    run(main)


def test_a_long_head_under_the_limit_is_read(run: Run, certificate: tuple[Path, Path]) -> None:
    async def main() -> None:
        async with Origin(certificate) as origin, ConnectProxy(padding=MAX_HEAD - 100) as proxy:
            assert (await get(proxy.url(), origin, trusting(certificate))).endswith(b"secret")

    run(main)


def test_a_proxy_that_never_answers_times_out_and_is_let_go(run: Run, certificate: tuple[Path, Path]) -> None:
    async def main() -> None:
        async with Origin(certificate) as origin, ConnectProxy(answer=b"HTTP/1.1 200 OK\r\n") as proxy:
            with pytest.raises(TimeoutError):
                await get(proxy.url(), origin, trusting(certificate), timeout=0.2)
            await asyncio.wait_for(proxy.client_closed.wait(), 2)

    run(main)


def test_a_proxy_that_cannot_be_reached_is_named(run: Run, certificate: tuple[Path, Path]) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]

    async def main() -> None:
        async with Origin(certificate) as origin:
            with pytest.raises(ProxyError, match=rf"^cannot connect to the proxy 127\.0\.0\.1:{port}: "):
                await get(f"http://127.0.0.1:{port}", origin, trusting(certificate))

    run(main)


def test_the_upstreams_certificate_is_verified_through_the_tunnel(run: Run, certificate: tuple[Path, Path]) -> None:
    async def main() -> None:
        async with Origin(certificate) as origin, ConnectProxy() as proxy:
            with pytest.raises(ssl.SSLCertVerificationError, match="CERTIFICATE_VERIFY_FAILED"):
                await get(proxy.url(), origin, ssl.create_default_context())
            with pytest.raises(ssl.SSLCertVerificationError, match=r"IP address mismatch|Hostname mismatch"):
                loop = asyncio.get_running_loop()
                await open_tunnel(loop, parse_proxy(proxy.url()), "127.0.0.1", origin.port, Client,
                                  trusting(certificate), server_hostname="api.example.com", timeout=5)

    run(main)
