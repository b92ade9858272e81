"""Forward proxies for upstream calls: which one the environment names for a URL, and the CONNECT tunnel.

The environment is read as httpx reads it (through urllib's rules): `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` in
either case, the lower-case name winning and an empty lower-case value switching the upper-case one off, and the
upper-case `HTTP_PROXY` ignored when `REQUEST_METHOD` is set (a CGI environment, where it may come from a client's
`Proxy:` header). `NO_PROXY` is a comma-separated list:

```
*                       no proxy for anything
example.com             example.com and every name under it (a leading `.` or `*.` means the same)
example.com:8443        ... on that port only (the URL's port, or its scheme's default)
10.1.2.3   ::1          that address, written as an address in the URL (names are not resolved)
10.0.0.0/8   fd00::/8   any address in the network
http://internal         that host for http:// URLs only
```

Where this differs from httpx 0.28 it is where httpx's matching is narrower than its own comments say, or than
curl's: `.example.com` also bypasses `example.com` itself (curl and urllib; httpx only the names under it), a
network such as `10.0.0.0/8` covers its addresses (httpx matches only `10.0.0.0`), `example.com:443` matches an
https URL that leaves the port out (httpx compares with the written port only), `*.example.com` is `.example.com`
(httpx never matches it), and `localhost` also covers the names under it, as any entry does (httpx: itself only).
Only the environment is read, never the system settings urllib falls back on under macOS and Windows, and
`localhost` and `127.0.0.1` go through the proxy unless `NO_PROXY` lists them, as with httpx.

Only `http://` proxies are supported: a plain connection to the proxy, absolute-form requests for http:// upstreams
and a CONNECT tunnel for https:// ones (`open_tunnel`), TLS end to end between the gateway and the upstream.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import os
import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar, cast
from urllib.parse import unquote, urlsplit

MAX_HEAD = 64 * 1024
"""Bytes of the proxy's answer to CONNECT read before its blank line; more is refused."""

_P = TypeVar("_P", bound=asyncio.Protocol)
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-9][0-9]{2})(?: ([^\r\n]*))?\r?")
_END_OF_HEAD = re.compile(rb"\r?\n\r?\n")


class ProxyError(OSError):
    """The proxy could not be reached, refused the tunnel, or answered with something that is not HTTP. `status` is
    the proxy's status code when it answered one (407: the proxy wants other credentials)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Proxy:
    """An `http://` proxy: where it listens, and the headers every request to it carries (`proxy-authorization`
    from the URL's user information). The headers stay out of `repr()`, which ends up in logs."""

    host: str
    port: int
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def authority(self) -> str:
        """`host:port`, an IPv6 address in brackets: for messages and for the request line."""
        return _authority(self.host, self.port)


def parse_proxy(url: str) -> Proxy:
    """Raises ValueError with one line saying what is wrong; a password in the URL is never repeated in it."""
    if "://" not in url:
        raise ValueError(f"proxy URL {_redact(url)!r} has no scheme: write http://{_redact(url)}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"proxy URL {_redact(url)!r} is not valid: {exc}") from None
    scheme = parts.scheme.lower()
    shown = f"{scheme}://{_authority(parts.hostname, port) if parts.hostname else ''}"
    if scheme in ("socks5", "socks5h", "socks4", "socks4a", "socks"):
        raise ValueError(f"proxy {shown} is a SOCKS proxy; only http:// proxies are supported")
    if scheme == "https":
        raise ValueError(f"proxy {shown} is reached over TLS (https://); only http:// proxies are supported")
    if scheme != "http":
        raise ValueError(f"proxy {shown} has scheme {scheme!r}; only http:// proxies are supported")
    if not parts.hostname:
        raise ValueError(f"proxy URL {_redact(url)!r} has no host")
    headers: tuple[tuple[str, str], ...] = ()
    if parts.username is not None or parts.password is not None:
        credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        headers = (("proxy-authorization", "Basic " + base64.b64encode(credentials.encode()).decode()),)
    return Proxy(parts.hostname, port or 80, headers)


def proxy_for(url: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy URL the environment names for `url`, or None to connect directly. A proxy written without a
    scheme (`proxy:3128`) is given `http://`, as httpx does; `parse_proxy` refuses the schemes it cannot use."""
    environ = os.environ if environ is None else environ
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    proxies = _environment_proxies(environ)
    no_proxy = proxies.get("no")
    if no_proxy and _bypassed(no_proxy, scheme, parts.hostname, port or (443 if scheme == "https" else 80)):
        return None
    proxy = proxies.get(scheme) or proxies.get("all")
    if proxy is None:
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def absolute_target(scheme: str, host_header: str, path: str) -> str:
    """The request target for a plain http:// upstream reached through a proxy: the absolute form, which tells the
    proxy where to forward (RFC 9112 section 3.2.2). Each such request also carries `Proxy.headers`."""
    return f"{scheme}://{host_header}{path}"


async def open_tunnel(
    loop: asyncio.AbstractEventLoop,
    proxy: Proxy,
    host: str,
    port: int,
    protocol_factory: Callable[[], _P],
    ssl_context: ssl.SSLContext,
    server_hostname: str | None = None,
    timeout: float | None = None,
) -> tuple[asyncio.Transport, _P]:
    """A TLS connection to `host:port` through `proxy`: CONNECT over a plain connection to the proxy, then TLS over
    the same socket, verified against `server_hostname` (default `host`). The protocol made by `protocol_factory`
    gets `connection_made` with the TLS transport, as from `loop.create_connection(..., ssl=...)`.

    Raises `ProxyError` for the proxy's part (unreachable, refused, not HTTP, a head over `MAX_HEAD`), the
    `ssl.SSLError` or `OSError` of the handshake with the upstream, and `TimeoutError` when the whole takes longer
    than `timeout` seconds. Nothing is left open after a failure."""
    transport: asyncio.Transport | None = None
    try:
        async with asyncio.timeout(timeout):
            try:
                transport, reply = await loop.create_connection(lambda: _ConnectReply(loop), proxy.host, proxy.port)
            except OSError as exc:
                if isinstance(exc, TimeoutError):
                    raise
                raise ProxyError(f"cannot connect to the proxy {proxy.authority}: {exc}") from exc
            target = _authority(host, port)
            lines = [f"CONNECT {target} HTTP/1.1", f"host: {target}"]
            lines.extend(f"{name}: {value}" for name, value in proxy.headers)
            transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            head, rest = await reply.answer
            _check_answer(head, rest, proxy, target)
            handoff = _Handoff()
            tls = await loop.start_tls(transport, handoff, ssl_context, server_hostname=server_hostname or host)
            if tls is None or handoff.lost:
                raise ProxyError(f"the tunnel through {proxy.authority} closed right after the TLS handshake")
            transport = tls
            protocol = protocol_factory()
            handoff.hand_to(protocol, tls)
            return tls, protocol
    except BaseException:
        if transport is not None:
            transport.close()
        raise


class _ConnectReply(asyncio.Protocol):
    """Reads the proxy's answer to CONNECT: its head, and whatever came with it. Stops reading there, so that the
    first bytes after it are the upstream's, read by TLS."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.answer: asyncio.Future[tuple[bytes, bytes]] = loop.create_future()
        self.buffer = bytearray()
        self.scanned = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports don't subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if self.answer.done():
            return
        self.buffer += data
        if len(self.buffer) >= 5 and not self.buffer.startswith(b"HTTP/"):
            line = bytes(self.buffer.split(b"\n", 1)[0][:80]).rstrip(b"\r")
            self._fail(ProxyError(f"the proxy's answer to CONNECT is not HTTP: {line!r}"))
            return
        end = _END_OF_HEAD.search(self.buffer, self.scanned, MAX_HEAD + 4)
        if end is None:
            if len(self.buffer) > MAX_HEAD:
                self._fail(ProxyError(f"the proxy's answer to CONNECT is longer than {MAX_HEAD} bytes"))
            self.scanned = max(0, len(self.buffer) - 3)
            return
        assert self.transport is not None
        self.transport.pause_reading()
        self.answer.set_result((bytes(self.buffer[:end.start()]), bytes(self.buffer[end.end():])))

    def eof_received(self) -> bool:
        self._fail(ProxyError("the proxy closed the connection before answering CONNECT"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        reason = "" if exc is None else f": {exc}"
        self._fail(ProxyError(f"the proxy closed the connection before answering CONNECT{reason}"))

    def _fail(self, error: ProxyError) -> None:
        if not self.answer.done():
            self.answer.set_exception(error)
        if self.transport is not None:
            self.transport.close()


class _Handoff(asyncio.Protocol):
    """Holds whatever the TLS layer delivers between the end of the handshake and the caller's protocol taking
    over, then passes it on in order."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.eof = False
        self.lost = False

    def data_received(self, data: bytes) -> None:
        self.received.append(data)

    def eof_received(self) -> bool:
        self.eof = True
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True

    def hand_to(self, protocol: asyncio.Protocol, transport: asyncio.Transport) -> None:
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        for data in self.received:
            protocol.data_received(data)
        self.received.clear()
        if self.eof and not protocol.eof_received():
            transport.close()


def _check_answer(head: bytes, rest: bytes, proxy: Proxy, target: str) -> None:
    status_line = head.split(b"\n", 1)[0]
    match = _STATUS_LINE.fullmatch(status_line)
    if match is None:
        raise ProxyError(f"the proxy's answer to CONNECT is not HTTP: {status_line[:80]!r}")
    status = int(match[1])
    if not 200 <= status < 300:
        reason = (match[2] or b"").decode("latin-1").strip()
        raise ProxyError(f"the proxy {proxy.authority} refused CONNECT {target}: {status} {reason}".rstrip(), status)
    if rest:
        raise ProxyError(f"the proxy {proxy.authority} sent bytes after its answer to CONNECT")


def _environment_proxies(environ: Mapping[str, str]) -> dict[str, str]:
    """urllib's `getproxies_environment` over any mapping: `<scheme>_proxy` in any case, lower case winning."""
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        name = name.lower()
        if value and name.endswith("_proxy"):
            proxies[name[:-6]] = value
    if "REQUEST_METHOD" in environ:
        proxies.pop("http", None)
    for name, value in environ.items():
        if name.endswith("_proxy"):
            if value:
                proxies[name[:-6]] = value
            else:
                proxies.pop(name[:-6], None)
    return proxies


def _bypassed(no_proxy: str, scheme: str, host: str, port: int) -> bool:
    host = _normalise(host)
    address = _address(host)
    for entry in no_proxy.split(","):
        entry = entry.strip().lower()
        if entry == "*":
            return True
        if not entry:
            continue
        if "://" in entry:
            entry_scheme, _, entry = entry.partition("://")
            if entry_scheme != scheme:
                continue
            entry = entry.split("/", 1)[0] if _network(entry) is None else entry
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        network = _network(name)
        if network is not None:
            if address is not None and address.version == network.version and address in network:
                return True
            continue
        name = _normalise(name.lstrip("*").lstrip("."))
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """`host:port`, `[v6]:port`, or no port; a bare IPv6 address or network is all host."""
    if entry.startswith("["):
        name, _, tail = entry[1:].partition("]")
        return name, int(tail[1:]) if tail.startswith(":") and tail[1:].isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        if port.isdigit():
            return name, int(port)
    return entry, None


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(text.strip("[]"), strict=False)
    except ValueError:
        return None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _normalise(name: str) -> str:
    """Lower case, no trailing dot, an internationalised name in its ASCII form: how both sides are compared."""
    name = name.lower().rstrip(".")
    if not name.isascii():
        try:
            return name.encode("idna").decode("ascii")
        except UnicodeError:
            return name
    return name


def _authority(host: str, port: int | None) -> str:
    name = f"[{host}]" if ":" in host else host
    return name if port is None else f"{name}:{port}"


def _redact(url: str) -> str:
    """The URL with any password replaced, for messages."""
    return re.sub(r"^((?:[^:/@]+://)?[^/@:]*):[^/@]*@", r"\1:***@", url)
