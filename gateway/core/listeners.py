"""A capability kind of its own module (see `gateway.core.capabilities`): `Listener`, a transport the gateway's HTTP
server does not speak (A2A's gRPC), served by the dialect on a port of its own, each call handed to the gateway's app
in process (`InProcess`). The server serves it in one place, `gateway/server/connections/listeners.py`, started and
stopped with the app in every worker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from gateway.core.capabilities import Capability


class Answering(Protocol):
    """The gateway's answer to a call a `Listener` handed it: what an HTTP client would have read."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Lowercase names."""
        ...

    def body(self) -> AsyncIterator[bytes]:
        """The body as the app writes it, piece by piece."""
        ...


class InProcess(Protocol):
    """The gateway's own app, for a `Listener`: a call handed to it as the HTTP request it stands for is served as
    one from an HTTP client is (keys, limits, routes, principals, replicas, draining). Leaving the `async with`
    before the answer ends is the client leaving."""

    def __call__(self, method: str, path: str, headers: Sequence[tuple[str, str]], body: bytes,
                 client: tuple[str, int] | None = None) -> AbstractAsyncContextManager[Answering]: ...


class Running(Protocol):
    """A `Listener` serving."""

    def draining(self, grace: float) -> None:
        """Take no new call; those in flight may run `grace` seconds more (the app ends its runs in band first)."""

    async def stop(self) -> None:
        """Stop now, the calls left ended."""


@dataclass(frozen=True, slots=True)
class Listener(Capability):
    """Its clients reach it over a transport the gateway's HTTP server does not speak (A2A's gRPC), on a port of
    its own, set in the dialect's `Settings`: the dialect serves that transport and hands each call to the gateway's
    app in process, as the HTTP request it stands for, so that everything that holds over HTTP holds for it. Each
    worker serves it beside the HTTP server, and stops it as it drains."""

    name: str
    """What the transport is called, as the routes' `AgentDescription.listeners` name it ("grpc")."""
    setting: str
    """The field of the dialect's `Settings` that holds the port (unset: not served)."""
    missing: Callable[[], str | None]
    """What it needs that is not installed, in a line ("grpcio is not installed: pip install ..."), or None."""
    start: Callable[[InProcess, str, int, Mapping[str, str]], Awaitable[Running]]
    """Serve on this host and port, given the app and the routes of the dialect: each route's name and the path it
    serves the dialect at, in the configuration's order."""
