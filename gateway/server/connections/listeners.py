"""The transports the gateway's HTTP server does not speak, served beside it (`Listener`: A2A's gRPC): started with
the app in each process that serves it, told to take no new call when the process drains, stopped with the app.
Each call reaches the app in process (`in_process`), so everything that holds over HTTP holds for it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.types import ASGIApp

from adapters import registry
from gateway.config import GatewayConfig
from gateway.core.listeners import Listener, Running
from gateway.server.connections.in_process import InProcessApp

log = logging.getLogger("agent_gateway.app")


def configured(config: GatewayConfig) -> list[tuple[str, Listener, int]]:
    """The listeners the configuration asks for: each dialect of a route that brings one whose port its settings
    set, with that port."""
    found: list[tuple[str, Listener, int]] = []
    for name in dict.fromkeys(dialect for route in config.routes for dialect in route.dialects):
        listener = registry.get(name).capability(Listener)
        settings = config.settings_of(name)
        port = getattr(settings, listener.setting, None) if listener is not None and settings is not None else None
        if listener is not None and isinstance(port, int):
            found.append((name, listener, port))
    return found


def problems(config: GatewayConfig) -> list[str]:
    """A line for each listener asked for that cannot be served here, saying why."""
    return [f"{name}.{listener.setting} is set but {missing}" for name, listener, _ in configured(config)
            if (missing := listener.missing()) is not None]


class Listeners:
    """The listeners of one app: what serves, and on which ports (for the routes' `AgentDescription.listeners`)."""

    def __init__(self, config: GatewayConfig, host: str, paths_of: Callable[[str], dict[str, str]]) -> None:
        self.host = host
        self._asked = configured(config)
        self._paths_of = paths_of
        self._running: list[Running] = []
        self.serving: dict[str, dict[str, int]] = {}
        """Dialect -> listener name -> port, for what is serving now."""

    async def start(self, app: ASGIApp) -> None:
        """Serve each listener asked for whose dependencies are installed; one that is not is said once and left
        out (`serve --check` says so too)."""
        for name, listener, port in self._asked:
            if (missing := listener.missing()) is not None:
                log.warning("%s.%s is set but %s", name, listener.setting, missing)
                continue
            try:
                self._running.append(await listener.start(InProcessApp(app), self.host, port, self._paths_of(name)))
            except OSError as exc:  # taken since `serve` found it free: HTTP goes on, the cards leave it out
                log.error("%s over %s is not served: %s", name, listener.name, exc)
                continue
            self.serving.setdefault(name, {})[listener.name] = port
            log.info("%s over %s on %s:%d", name, listener.name, self.host, port)

    def draining(self, grace: float) -> None:
        for running in self._running:
            running.draining(grace)

    async def stop(self) -> None:
        self.serving.clear()
        for running in self._running:
            await running.stop()
        self._running.clear()
