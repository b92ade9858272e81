"""Which names a request's `Host` may give: the gateway's defence against DNS rebinding.

A web page can have its visitor's browser call a name whose DNS the page's author points at 127.0.0.1 (or at any
address the browser reaches and the author does not); the browser then sends that name as the request's `Host`,
and the page may read the answers. Refusing names the gateway was not told it goes by closes that door. An
address as `Host`, or none (HTTP/1.0), cannot have been rebound, and is always accepted: health checks and
scrapers that call an address need no setting.

The names are those of `allowed_hosts`; unset, a connection to a loopback address takes `localhost` and
`*.localhost` only, and any other takes any name. Which rule holds is worked out once per local address (the ASGI
scope's `server`, the address the connection came in on), so a request pays a dict lookup, and on a loopback
address a header lookup and a set membership.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable

import orjson
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from gateway.core.errors import GatewayError, HostNotAllowed
from gateway.server.refusals import log_refusal
from gateway.server.request_ids import request_id_of

LOOPBACK_NAMES = ("localhost", "*.localhost")
"""What a gateway reached on a loopback address answers to when `allowed_hosts` is unset (besides addresses)."""
_KEPT = 1024
"""Hosts remembered as accepted, per rule: past it, a Host not seen yet is judged each time."""
_ADDRESSES = 64
"""Local addresses whose rule is remembered: a host has a few."""
_SHOWN = 128
"""Characters of a refused Host echoed in the refusal."""

ErrorReply = Callable[[GatewayError], tuple[int, bytes]]


class HostNames:
    """The names one rule accepts: exact ones, and those under a `*.` suffix (`*.example.com` takes
    `a.example.com`, not `example.com`). Each `Host` value accepted is remembered as it came, port and all."""

    __slots__ = ("accepted", "exact", "suffixes")

    def __init__(self, patterns: Iterable[str]) -> None:
        patterns = list(patterns)
        self.exact = frozenset(pattern for pattern in patterns if not pattern.startswith("*."))
        self.suffixes = tuple(pattern[1:] for pattern in patterns if pattern.startswith("*."))
        self.accepted: set[bytes] = set()

    def allows(self, host: bytes) -> bool:
        if host in self.accepted:
            return True
        if not self._judge(host.decode("latin-1")):
            return False
        if len(self.accepted) < _KEPT:
            self.accepted.add(host)
        return True

    def _judge(self, host: str) -> bool:
        name = _name_of(host)
        if _is_address(name):
            return True
        name = name.lower().removesuffix(".")
        return name in self.exact or name.endswith(self.suffixes)


class HostCheck:
    """Which Host each request may give, by the local address it came in on."""

    def __init__(self, allowed: list[str] | None) -> None:
        self.configured = allowed is not None
        self._listed = HostNames(allowed) if allowed is not None and "*" not in allowed else None
        self._loopback = HostNames(LOOPBACK_NAMES)
        self._rules: dict[object, HostNames | None] = {}

    def refused(self, server: object, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """The Host of a request that came in on `server` (the scope's), with `headers` (their names in lower
        case), when it may not be served; else None."""
        try:
            names = self._rules[server]
        except KeyError:
            names = self._rule_for(server)
        if names is None:
            return None
        for key, value in headers:
            if key == b"host":
                return None if value in names.accepted or names.allows(value) else value.decode("latin-1")
        return None

    def _rule_for(self, server: object) -> HostNames | None:
        if self.configured:
            names = self._listed
        else:
            local = server[0] if isinstance(server, tuple) and server and isinstance(server[0], str) else None
            names = self._loopback if local is not None and _is_loopback(local) else None
        if len(self._rules) < _ADDRESSES:
            self._rules[server] = names
        return names

    def message(self, host: str) -> str:
        shown = host if len(host) <= _SHOWN else host[:_SHOWN] + "..."
        if self.configured:
            return f"Host {shown} is not a name this gateway answers to: allowed_hosts does not list it"
        return (f"Host {shown} is not a name this gateway answers to: reached on a loopback address, it answers to "
                "localhost and addresses only, unless allowed_hosts lists more")


async def refuse(scope: Scope, receive: Receive, send: Send, message: str, reply: ErrorReply | None) -> None:
    """Answer a request whose Host is refused: a 400 in its client's dialect where the path is a route's (the
    gateway's JSON error otherwise), or, to a WebSocket handshake, a close before it is accepted (a 403). Logged
    as any refusal is."""
    error = HostNotAllowed(message)
    request_id = scope.setdefault("state", {})["request_id"] = request_id_of(Headers(scope=scope))
    if scope["type"] == "websocket":
        if (await receive())["type"] == "websocket.connect":
            await send({"type": "websocket.close", "code": 1008})
        status = 403
    else:
        status, body = reply(error) if reply is not None else (error.status, orjson.dumps(error.to_json()))
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"x-request-id", request_id.encode())]})
        await send({"type": "http.response.body", "body": body})
    log_refusal(scope, status, error.code, message)


def _name_of(host: str) -> str:
    """`Host`'s name or address, without its port: `[::1]:8080` is `::1`."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    name, colon, _ = host.rpartition(":")
    return name if colon and ":" not in name else host


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _is_loopback(address: str) -> bool:
    """Whether a local address is a loopback one (`::ffff:127.0.0.1`, IPv4 over a dual-stack socket, is)."""
    try:
        found = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return False
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        found = found.ipv4_mapped
    return found.is_loopback
