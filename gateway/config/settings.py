"""The whole configuration: its routes, the conversation store, and what holds for the gateway as a whole
(keep-alives, draining, connection limits, the names it answers to, metrics, the inspector)."""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model, field_validator

from adapters import registry
from gateway.config.model import Model
from gateway.config.route import Route, route_path
from gateway.conversations.store import KNOWN, STORE_PATIENCE, Backend, ConversationStore, backend_for, open_store
from gateway.core.capabilities import Settings
from gateway.inspector.options import InspectorOptions
from gateway.runs.board import KeptLimits


class Store(Model):
    """The conversation store: what each conversation's upstream has heard, and the runs clients ask about (A2A
    tasks, stored responses), with the bounds on what it holds."""

    url: str = "sqlite:///agent-gateway.db"
    """`memory://`, `sqlite:///path/to/file.db`, `redis://host:6379/0` or, behind Redis Sentinel,
    `redis+sentinel://host1:26379,host2:26379/mymaster/0` (the primary the sentinels name, through failovers) or a
    Redis Cluster, `redis+cluster://host1:7000,host2:7001`."""
    patience: float = Field(STORE_PATIENCE, gt=0)
    """Seconds a turn that needs its history (a client that sends only what is new, to an upstream that takes the
    whole history; an answer to an interrupt) waits for a store that does not answer, as while Redis fails over,
    before it is refused with a 503 and `Retry-After`. A turn that needs nothing stored never waits."""

    def open(self) -> ConversationStore:
        """The store these settings name (raises `StoreError` or ValueError when it cannot be opened)."""
        return open_store(self.url, ttl=self.ttl_seconds, max_entries=self.max_conversations,
                          max_value_bytes=self.max_conversation_bytes,
                          max_per_group=self.max_conversations_per_principal)

    def backend(self) -> Backend:
        """The kind of store the URL names."""
        backend = backend_for(self.url)
        assert backend is not None, "the URL was checked as it loaded"
        return backend

    @field_validator("url")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        """A URL of a backend that could open it (sqlite://relative.db names no file; a redis:// store needs the
        redis package): said as the configuration loads, not when the store opens."""
        backend = backend_for(value)
        if backend is None:
            raise ValueError(f"must be {KNOWN}")
        backend.checks(value)
        return value
    ttl_seconds: float = Field(7 * 24 * 3600, gt=0)
    """Seconds a conversation is kept after it was last written."""
    max_conversations: int = Field(100_000, gt=0)
    """Conversations the store keeps, every caller's together; past it the least recently written go first."""
    max_conversations_per_principal: int = Field(10_000, gt=0, description="conversations one caller (a key, a "
                                                 "tenant, or all anonymous callers together) may hold; its oldest go "
                                                 "first, so it cannot evict anyone else's")
    max_conversation_bytes: int = Field(1024 * 1024, gt=0)
    """The largest conversation stored: a run longer than it reaches its client whole, and is stored with its reply
    left out (one assistant note saying so), so the user's words reach the next turn."""
    max_messages: int = Field(1000, gt=0, description="history kept per conversation; the oldest go first")
    max_resume_kept_bytes: int = Field(256 * 1024 * 1024, gt=0, description="memory the ended resumable runs' "
                                       "replies one process keeps for late resumes may cost; the oldest go first")
    max_resume_kept: int = Field(10_000, gt=0, description="ended resumable runs' replies one process keeps; the "
                                 "oldest go first")
    max_resume_kept_per_principal: int = Field(1_000, gt=0, description="of those, one caller's (a key, a tenant, "
                                               "or all anonymous callers together); its oldest go first")

    def kept_limits(self) -> KeptLimits:
        return KeptLimits(self.max_resume_kept_bytes, self.max_resume_kept, self.max_resume_kept_per_principal)


_NAME = re.compile(r"(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")
"""A host name as `allowed_hosts` lists it, lower case, or `*.` and the name its subdomains are under."""


def allowed_host(entry: str) -> str:
    """An `allowed_hosts` entry as the gateway compares it: lower case, without a trailing dot, an IPv6 address
    without brackets; a `ValueError` saying what is wrong with one it cannot be."""
    name = entry.strip().lower()
    if name == "*":
        return name
    name = name.removesuffix(".")
    try:
        return str(ipaddress.ip_address(name.removeprefix("[").removesuffix("]")))
    except ValueError:
        pass
    if ":" in name:
        raise ValueError(f"{entry!r}: name the host without its port (any port is accepted)")
    if not _NAME.fullmatch(name):
        raise ValueError(f"{entry!r} is not a host name, *.name, an address or *")
    return name


class MetricsOptions(Model):
    """Who may read `/metrics`, and where it is served."""

    key: str | None = Field(None, description="a key to send as Authorization: Bearer <key> (or X-API-Key) to "
                            "read /metrics; without one, anyone who reaches its address may")
    listen: str | None = Field(None, description="host:port where /metrics is served alone (127.0.0.1:9464), "
                               "instead of beside the routes")

    @field_validator("key")
    @classmethod
    def _not_empty(cls, key: str | None) -> str | None:
        if key is not None and not key.strip():
            raise ValueError("is empty: set it, or leave metrics.key out to serve /metrics to anyone")
        return key.strip() if key is not None else None

    @field_validator("listen")
    @classmethod
    def _host_and_port(cls, listen: str | None) -> str | None:
        if listen is not None:
            _host_port(listen)
        return listen

    @property
    def address(self) -> tuple[str, int] | None:
        """Where `/metrics` is served alone, if anywhere."""
        return _host_port(self.listen) if self.listen is not None else None


def _host_port(listen: str) -> tuple[str, int]:
    host, colon, port = listen.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{listen!r} is not host:port, such as 127.0.0.1:9464")
    return host, int(port)


class GatewayConfig(Model):
    """The whole configuration: its routes, the conversation store, and what holds for the gateway as a whole."""

    routes: list[Route] = Field(min_length=1)
    """Where clients call, in which dialects, and the upstream each route sends their runs to."""
    store: Store = Store()
    """Where conversations are kept, shared by every route (and, over SQLite or Redis, by every worker)."""
    keepalive_seconds: float = Field(15.0, gt=0, description="idle SSE streams get a comment this often")
    drain_seconds: float = Field(20.0, ge=0, description="on SIGTERM or Ctrl-C, how long the streams in flight may "
                                 "run on before each is ended in band; within Kubernetes' 30 s grace period")
    header_timeout: float = Field(10.0, gt=0, description="seconds a client has to send a request's head, from "
                                  "its connection or its first byte; then the connection is closed")
    max_connections: int = Field(10_000, gt=0, description="client connections a worker keeps open at once; past "
                                 "it, new ones are answered 503")
    debug_errors: bool = False
    """Put what an upstream answered (its error body) and where it is (its address) in clients' error responses.
    Off by default: both can hold secrets. The operator's log has them either way."""
    max_body_bytes_in_flight: int = Field(256 * 1024 * 1024, gt=0, description="request body bytes a worker holds "
                                          "while bodies are read; past it, 503")
    inspector: InspectorOptions | None = None
    """The inspector's page (`gateway.inspector`); off unless set."""
    allowed_hosts: list[str] | None = None
    """The names a request's `Host` may give (`gateway.example.com`, `*.example.com`, or `*` for any); an address,
    or no Host at all, is always accepted. Unset: on a connection to a loopback address only `localhost` and
    `*.localhost`, so that a web page cannot reach the gateway through a name its DNS rebinds to 127.0.0.1; any name
    otherwise."""
    metrics: MetricsOptions = MetricsOptions()
    """Who may read `/metrics`, and where it is served; unset, beside the routes, to anyone who reaches it."""

    @field_validator("allowed_hosts")
    @classmethod
    def _host_patterns(cls, entries: list[str] | None) -> list[str] | None:
        return None if entries is None else [allowed_host(entry) for entry in entries]

    def settings_of(self, dialect: str) -> Any:
        """The dialect's own section (`Settings`) as configured, its defaults where the file has none; None for a
        dialect without one."""
        return getattr(self, dialect, None) if registry.get(dialect).capabilities_of(Settings) else None

    @field_validator("routes")
    @classmethod
    def _resolve_paths(cls, routes: list[Route]) -> list[Route]:
        seen: dict[str, tuple[str, str]] = {}
        names: set[str] = set()
        for index, route in enumerate(routes):
            route.name = route.name or f"route{index}"
            if route.name in names:
                raise ValueError(f"two routes are named {route.name}: give each a name of its own")
            names.add(route.name)
            if not route.paths:
                route.paths = sorted({p for d in route.dialects for p in registry.get(d).paths})
            for path in route.paths:
                twin = seen.get(route_path(path))
                if twin is not None and twin[1] != path:
                    raise ValueError(f"path {path} of {route.name} differs only by a trailing slash from {twin[1]} "
                                     f"of {twin[0]}: a path answers with and without one")
                if twin is not None:
                    raise ValueError(f"path {path} is served by both {twin[0]} and {route.name}")
                seen[route_path(path)] = (route.name, path)
        return routes


def _with_dialect_sections(base: type[GatewayConfig]) -> type[GatewayConfig]:
    """The configuration with a section for each dialect that brings `Settings`, named after it: the dialects are
    known only once the registry is, so the sections are added to the model here rather than declared in it."""
    sections: dict[str, Any] = {}
    for name, dialect in registry.DIALECTS.items():
        for section in dialect.capabilities_of(Settings):
            sections[name] = (section.model, Field(default_factory=section.model, description=section.description))
    return create_model("GatewayConfig", __base__=base, __doc__=base.__doc__, __module__=__name__, **sections)


if not TYPE_CHECKING:
    GatewayConfig = _with_dialect_sections(GatewayConfig)
