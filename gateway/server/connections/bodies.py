"""The request body bytes the process holds, across every request being read."""

from __future__ import annotations

from gateway.core.errors import Overloaded


class ClientGone(Exception):
    """The client disconnected before its request was read."""


class BodyBudget:
    """Request body bytes held by the process while bodies are read: past `limit`, new bytes are refused with a
    503 rather than buffered, whatever each route allows one body."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> None:
        if self.held + size > self.limit:
            raise Overloaded("the gateway is holding as many request bodies as it may: retry shortly")
        self.held += size

    def give_back(self, size: int) -> None:
        self.held -= size
