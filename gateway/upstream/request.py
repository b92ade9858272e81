"""What the client sends: where to (`Target`, a route's upstream and how to reach it) and the request's head."""

from __future__ import annotations

import ssl

from gateway.upstream import tls
from gateway.upstream.errors import InvalidRequestHead
from gateway.upstream.foreign import Transport
from gateway.upstream.proxies import Proxy, absolute_target
from gateway.upstream.url import UpstreamURL

FRAMING_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
"""Headers the client writes itself on every request, from the target and the body: any a caller passes are
dropped, so that no header can say other than the request does."""
HOP_BY_HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                                "upgrade"})
"""RFC 9110's hop-by-hop headers (with the old proxy-connection): they speak of one connection, which is the
client's to manage, not of the request."""


class Target:
    """A URL checked and normalised once per route (see `UpstreamURL`), and how to reach it: directly or through
    an HTTP proxy (a CONNECT tunnel for https), with the route's TLS context. Connections are pooled by all of
    these, so routes that differ in any never share one."""

    __slots__ = ("authorization", "connect_timeout", "host", "host_header", "key", "max_connections", "path", "port",
                 "proxy", "ssl", "tls", "transport", "url")

    def __init__(self, url: str, connect_timeout: float, max_connections: int | None = None, *,
                 proxy: Proxy | None = None, ssl_context: ssl.SSLContext | None = None,
                 transport: Transport | None = None) -> None:
        parsed = UpstreamURL.parse(url)
        self.url = url
        self.tls = parsed.tls
        self.host = parsed.host
        self.port = parsed.port
        self.host_header = parsed.host_header
        self.authorization = parsed.authorization
        self.proxy = proxy
        self.ssl = (ssl_context or tls.client_context()) if self.tls else None
        # A plain-HTTP upstream behind a proxy is asked for by its absolute URL; a tunnel carries the path alone.
        self.path = absolute_target("http", parsed.host_header, parsed.target) if proxy and not self.tls \
            else parsed.target
        self.key: tuple[object, ...] = (self.tls, self.host, self.port, proxy, self.ssl)
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.transport = transport
        """What calls this upstream instead of the pool's connections: a transport the client does not speak."""

    def under(self, path: str) -> str:
        """The request target for `path` under this target's URL (`/a2a` + `/message:stream`), its query dropped."""
        base = self.path.partition("?")[0].rstrip("/")
        return base + (path if path.startswith("/") else "/" + path)


def request_head(method: str, target: Target, body: bytes, headers: dict[str, str], path: str | None,
                 user_agent: str) -> bytes:
    """The head of a request for `body`: the framing the client writes itself, then the caller's `headers`. Raises
    `InvalidRequestHead` for a header or path that cannot be written."""
    lines = [f"{method} {target.path if path is None else target.under(path)} HTTP/1.1",
             f"host: {target.host_header}", f"content-length: {len(body)}"]
    if "user-agent" not in headers:
        lines.append(f"user-agent: {user_agent}")
    if target.authorization is not None and "authorization" not in headers:
        lines.append(f"authorization: {target.authorization}")
    if target.proxy is not None and target.ssl is None:
        lines += [f"{name}: {value}" for name, value in target.proxy.headers]
    for name, value in headers.items():
        if name in FRAMING_HEADERS:
            continue
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise InvalidRequestHead(f"header {name!r} has a line break or a colon in it")
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError as exc:
        raise InvalidRequestHead(f"the request's head has a character outside Latin-1: {exc}") from exc
