"""What a request meets before the gateway's routes, by the local address its connection came in on (the ASGI
scope's `server`): the names its Host may give (`gateway.server.connections.hosts`), and, on the metrics address
(`metrics.listen`), the metrics and nothing else. Worked out once per address, so that a request on an address
where neither applies pays one dict lookup."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp

from gateway.server.connections.hosts import ErrorReply, HostCheck, HostNames, HostRefusal

_REMEMBERED = 64
"""Local addresses remembered: a host has a few; past this many, the others are worked out per request."""


class Address:
    __slots__ = ("metrics", "names", "replies")

    def __init__(self, names: HostNames | None, metrics: ASGIApp | None, replies: dict[str, ErrorReply]) -> None:
        self.names = names
        self.metrics = metrics
        self.replies = replies

    def elsewhere(self, headers: Iterable[tuple[bytes, bytes]]) -> ASGIApp | None:
        """What answers a request with these `headers` (named in lower case) instead of the gateway's routes: a
        refusal of its Host, or the metrics; None: the routes."""
        if self.names is not None and (host := self.names.refused(headers)) is not None:
            return HostRefusal(self.names.message(host), self.replies)
        return self.metrics


class Addresses(dict[object, Address | None]):
    """Each local address's `Address`, or None where requests go straight to the routes."""

    def __init__(self, hosts: HostCheck, metrics: tuple[int, ASGIApp] | None = None,
                 replies: dict[str, ErrorReply] | None = None) -> None:
        super().__init__()
        self.hosts = hosts
        self.metrics = metrics
        """The port `/metrics` is served on alone, and what serves it there."""
        self.replies = replies or {}
        """How a route's path tells its clients their Host is refused, where its dialect has a way of its own."""

    def __missing__(self, server: object) -> Address | None:
        names = self.hosts.names_for(server)
        metrics = None
        if self.metrics is not None and isinstance(server, tuple) and len(server) > 1 and server[1] == self.metrics[0]:
            metrics = self.metrics[1]
        found = Address(names, metrics, self.replies) if names is not None or metrics is not None else None
        if len(self) < _REMEMBERED:
            self[server] = found
        return found
