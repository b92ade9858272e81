"""A route's upstreams as its runs call them (`Backend`: the upstream, then each of its fallbacks), and which of them
a run tries, in what order (`Backends.order`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters import registry
from gateway.config import Route
from gateway.config.route import upstream_name
from gateway.server.operations.telemetry import upstream_attributes
from gateway.server.request import held_calls, upstream_sessions
from gateway.server.request.discovery import Discovery, SideCalls
from gateway.upstream.http1 import Pool


class Backend:
    """One of a route's upstreams and what calling it keeps between runs: where it is (its `Discovery`), its
    sessions and held calls, the variant it showed itself to be."""

    def __init__(self, route: Route, index: int, pool: Pool, side_calls: SideCalls, *, debug_errors: bool,
                 traced: bool, settings_of: Callable[[str], Any], shelf: upstream_sessions.SessionShelf) -> None:
        self.config = route.upstreams[index]
        self.name = upstream_name(route, index)
        """What logs, metrics and `/readyz` call it."""
        self.heard_as = "" if index == 0 else self.name
        """What a conversation it heard records (`Conversation.upstream`): empty for the route's own upstream, so a
        conversation stored before the route had fallbacks is its."""
        self.dialect = registry.get(self.config.dialect)
        self.discovery = Discovery(route, self.dialect, pool, settings_of(self.dialect.name), self.config)
        self.sessions = upstream_sessions.kept_for(self.dialect, pool, route.timeouts.connect,
                                                   route.timeouts.first_event, debug_errors, shelf=shelf,
                                                   forwarded=route.forward_headers, headers=self.config.headers)
        """Its sessions, when its dialect serves runs only in one (MCP's), on the process's shelf."""
        self.held = held_calls.held_for(self.dialect, side_calls, route.timeouts.total, self.config.max_connections)
        """The calls held open while their clients answer what it asked in them (MCP 2025's)."""
        self.learned_variant: str | None = None
        """What its response headers showed it to be, when the route does not say."""
        named = (self.name, self.dialect.name) if route.fallbacks else None
        self.span = upstream_attributes(self.config.url, named) if traced else {}
        """The attributes every call's span to it has (which upstream it is, on a route with fallbacks)."""


def order(backends: list[Backend], heard_by: str | None) -> list[Backend]:
    """The order a run tries a route's upstreams in: the one the conversation last succeeded with (`heard_by`, a
    `Conversation.upstream`) first, then the route's order."""
    first = [backend for backend in backends if backend.heard_as == heard_by]
    return first + [backend for backend in backends if backend.heard_as != heard_by]
