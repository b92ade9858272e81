"""Which names a request's `Host` may give: the gateway's defence against DNS rebinding.

A web page can have its visitor's browser call a name whose DNS the page's author points at 127.0.0.1 (or at any
address the browser reaches and the author does not); the browser then sends that name as the request's `Host`,
and the page may read the answers. Refusing names the gateway was not told it goes by closes that door. An
address as `Host`, or none (HTTP/1.0), cannot have been rebound, and is always accepted: health checks and
scrapers that call an address need no setting.

The names are those of `allowed_hosts`; unset, a connection to a loopback address takes `localhost` and
`*.localhost` only, and any other takes any name. Which rule holds is worked out once per local address (the ASGI
scope's `server`, the address the connection came in on: `gateway.server.connections.addresses`), and each Host
value a rule accepted is remembered: a request pays a dict lookup, and where a rule holds a header lookup and a set
membership.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable

import orjson
from starlette.types import Receive, Scope, Send

from gateway.config import route_path
from gateway.core.addresses import ip_address
from gateway.core.errors import GatewayError, HostNotAllowed
from gateway.server.operations.refusals import log_refusal

LOOPBACK_NAMES = ("localhost", "*.localhost")
"""What a gateway reached on a loopback address answers to when `allowed_hosts` is unset (besides addresses)."""
_KEPT = 1024
"""Hosts remembered as accepted, per rule: past it, a Host not seen yet is judged each time."""
_SHOWN = 128
"""Characters of a refused Host echoed in the refusal."""

ErrorReply = Callable[[GatewayError], tuple[int, bytes]]


class HostNames:
    """The names one rule accepts: exact ones, and those under a `*.` suffix (`*.example.com` takes
    `a.example.com`, not `example.com`), and any address. Each `Host` value accepted is remembered as it came, port
    and all."""

    __slots__ = ("accepted", "exact", "suffixes", "why")

    def __init__(self, patterns: Iterable[str], why: str) -> None:
        patterns = list(patterns)
        self.exact = frozenset(pattern for pattern in patterns if not pattern.startswith("*."))
        self.suffixes = tuple(pattern[1:] for pattern in patterns if pattern.startswith("*."))
        self.accepted: set[bytes] = set()
        self.why = why
        """What a refusal says of the rule."""

    def refused(self, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """The request's Host when this rule refuses it (`headers` named in lower case); None for a Host it
        accepts, or none at all."""
        for key, value in headers:
            if key == b"host":
                return None if value in self.accepted or self._allows(value) else value.decode("latin-1")
        return None

    def message(self, host: str) -> str:
        shown = host if len(host) <= _SHOWN else host[:_SHOWN] + "..."
        return f"Host {shown} is not a name this gateway answers to: {self.why}"

    def _allows(self, host: bytes) -> bool:
        if not self._judge(host.decode("latin-1")):
            return False
        if len(self.accepted) < _KEPT:
            self.accepted.add(host)
        return True

    def _judge(self, host: str) -> bool:
        name = _name_of(host)
        if ip_address(name) is not None:
            return True
        name = name.lower().removesuffix(".")
        return name in self.exact or name.endswith(self.suffixes)


class HostCheck:
    """Which rule holds for requests that come in on a local address: `allowed_hosts`' names on every address when
    set; unset, loopback names on a loopback address, and none (any name) on any other."""

    def __init__(self, allowed: list[str] | None) -> None:
        self.configured = allowed is not None
        self._listed = HostNames(allowed, "allowed_hosts does not list it") \
            if allowed is not None and "*" not in allowed else None
        self._loopback = HostNames(LOOPBACK_NAMES, "reached on a loopback address, it answers to localhost and "
                                   "addresses only, unless allowed_hosts lists more")

    def names_for(self, server: object) -> HostNames | None:
        """The rule for requests that came in on `server` (the ASGI scope's); None: any Host."""
        if self.configured:
            return self._listed
        local = server[0] if isinstance(server, tuple) and server and isinstance(server[0], str) else None
        return self._loopback if local is not None and _is_loopback(local) else None


class HostRefusal:
    """Answers a request whose Host is refused: a 400 in its client's dialect where the path is a route's (the
    gateway's JSON error otherwise), or, to a WebSocket handshake, a close before it is accepted (a 403). Logged
    as any refusal is."""

    def __init__(self, message: str, replies: dict[str, ErrorReply]) -> None:
        self.message = message
        self.replies = replies
        """How a route's path tells its clients, where its dialect has a way of its own."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = HostNotAllowed(self.message)
        if scope["type"] == "websocket":
            if (await receive())["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": 1008})
            status = 403
        else:
            reply = self.replies.get(route_path(scope["path"]))
            status, body = reply(error) if reply is not None else (error.status, orjson.dumps(error.to_json()))
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
        log_refusal(scope, status, error.code, self.message)


def _name_of(host: str) -> str:
    """`Host`'s name or address, without its port: `[::1]:8080` is `::1`. Anything after it but a port leaves
    the whole value, which no rule accepts."""
    if host.startswith("["):
        address, bracket, rest = host[1:].partition("]")
        return address if bracket and _a_port(rest) else host
    name, colon, port = host.rpartition(":")
    return name if colon and ":" not in name and port.isdigit() else host


def _a_port(rest: str) -> bool:
    return rest == "" or (rest[:1] == ":" and rest[1:].isdigit())


def _is_loopback(address: str) -> bool:
    """Whether a local address is a loopback one (`::ffff:127.0.0.1`, IPv4 over a dual-stack socket, is)."""
    found = ip_address(address.partition("%")[0])
    if found is None:
        return False
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        found = found.ipv4_mapped
    return found.is_loopback
