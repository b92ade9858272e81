"""The gateway's `/mcp` in front of the built-in agent (AG-UI, paced so a run can be left mid-way), served for a test
module with the routes it needs; and what an SDK client's one step printed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

HELPER: dict[str, Any] = {"name": "helper", "paths": ["/helper"], "client_dialects": ["mcp"],
                          "agent": {"description": "A helpful agent"}}
"""The route anyone may call, as the tool `helper`."""


def team(*keys: str) -> dict[str, Any]:
    """The route only the holders of `keys` may call, as the tool `team`."""
    return {"name": "team", "paths": ["/team"], "client_dialects": ["mcp"], "auth": {"keys": list(keys)}}


class Face:
    """The gateway's `/mcp`, and the agent behind it, which counts the runs its clients left."""

    def __init__(self, gateway: str, agent: str, timeout: float = 30.0) -> None:
        self.url = f"{gateway}/mcp"
        self.agent = agent
        self.http = httpx.Client(timeout=timeout)

    def disconnects(self) -> int:
        counted: int = self.http.get(f"{self.agent}/_disconnects").json()
        return counted


F = TypeVar("F", bound=Face)


@contextmanager
def served(routes: list[dict[str, Any]], face: type[F]) -> Iterator[F]:
    """The gateway serving `routes`, each with the built-in agent as its upstream, until the block ends."""
    with Served(create_agent_app("ag-ui", pace=0.01)) as agent:
        upstream = {"url": f"{agent.url}/agui", "dialect": "ag-ui"}
        config = GatewayConfig.model_validate({"routes": [{**route, "upstream": upstream} for route in routes],
                                               "keepalive_seconds": 0.5})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            opened = face(gateway.url, agent.url)
            try:
                yield opened
            finally:
                opened.http.close()


def one(steps: list[dict[str, Any]], error: str | None) -> dict[str, Any]:
    """The one step a client ran, which must have gone through."""
    assert error is None, error
    [step] = steps
    assert "error" not in step, step
    return dict(step)
