"""A request to a dialect's `NamedRoutes` endpoint as an agent that is no gateway serves it: the built-in agent and
a replay of recordings answer what is not a run as the dialect does, with their own agents as the routes and the
sessions in memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.core.capabilities import AgentDescription

MAX_SESSIONS = 1000
"""Sessions kept, the oldest forgotten first."""


class InMemoryEndpoint:
    """An `AtEndpoint` whose sessions live in a dict its server keeps across requests."""

    __slots__ = ("_sessions", "body", "headers", "method", "routes")

    def __init__(self, method: str, headers: Mapping[str, str], body: Any, routes: Sequence[AgentDescription],
                 sessions: dict[str, dict[str, Any]]) -> None:
        self.method = method
        self.headers = {name.lower(): value for name, value in headers.items()}
        self.body = body
        self.routes = routes
        self._sessions = sessions

    async def session(self, session_id: str) -> dict[str, Any] | None:
        return self._sessions.get(session_id)

    async def keep(self, session_id: str, kept: dict[str, Any]) -> None:
        self._sessions[session_id] = kept
        while len(self._sessions) > MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]

    async def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
