"""A capability kind of its own module (see `gateway.core.capabilities`): `UpstreamTransport`, variants of a dialect
whose upstreams it calls itself, over a transport the gateway's HTTP/1.1 client does not speak (A2A's gRPC). The
server serves it in one place, the pool (`gateway/upstream/http1.py`), for the targets discovery gives it
(`gateway/server/request/discovery.py`): a run's call, its re-attach and its cancel alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from gateway.core.capabilities import Capability
from gateway.core.errors import UpstreamError


class TransportAnswer(Protocol):
    """An upstream's answer to a call made over an `UpstreamTransport`, read as the HTTP client's responses are."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Lowercase names; `content-type` says how the body is read (`WireFormats`)."""
        ...

    async def read(self) -> bytes:
        """The body's next bytes as they come, b"" once it has ended; raises `ConnectionError` when the call
        broke."""
        ...

    def release(self) -> None:
        """Done with the answer: a call not read to its end is cancelled."""
        ...


class TransportCalls(Protocol):
    """The calls an `UpstreamTransport` makes, with its connections (one per upstream address, bounded), for one
    app: made when the app first needs it, closed with the app."""

    async def call(self, url: str, connect_timeout: float, method: str, path: str | None, body: bytes,
                   headers: Mapping[str, str]) -> TransportAnswer:
        """Make the call `UpstreamRequest` describes (its method, path, body and headers, with the route's) to the
        upstream at `url` (`scheme://host:port/...` as the discovery document and configuration name it); raises
        `TimeoutError` when no connection was made within `connect_timeout`, `ConnectionError` when none could
        be."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class UpstreamTransport(Capability):
    """Named variants of the dialect whose upstreams are reached over a transport the gateway's HTTP/1.1 client
    does not speak (A2A's gRPC, over HTTP/2): the dialect makes those calls itself, and its answers are read as the
    HTTP client's are, so the deadlines, cancels, limits, captures and errors of a run hold for them unchanged.
    A discovery document that names such a variant's endpoint gives its port on the configured host
    (`Endpoint.url`)."""

    variants: frozenset[str]
    missing: Callable[[], str | None]
    """What the transport needs that is not installed, in a line ("... pip install ..."), or None."""
    open: Callable[[], TransportCalls]



class Unusable(UpstreamError):
    """An upstream's discovery document names only endpoints the gateway cannot call as installed (A2A's gRPC
    without grpcio): every run of the route is refused with this (a 502) while the document says so."""
