"""Gateway configuration: routes from a YAML file, validated, with `${VAR}` taken from the environment.

Any string value may name environment variables: `${AGENT_URL}` (an error if unset) or `${AGENT_URL:-default}`;
that is how secrets and URLs stay out of the file. A mistake is reported once, with the file, the line and the
key: `gateway.yaml:12: routes[0].upstream.dialect: Input should be 'ag-ui', 'ag-kit', 'vercel', 'agent-respond' or
'a2a'`.
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import os
import re
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from adapters import registry
from gateway.conversations.store import ConversationStore, StoreError, open_store, redis_exceptions, sqlite_path
from gateway.core.validation import error_message, field_path, listed
from gateway.inspector.options import InspectorOptions
from gateway.recordings.options import RecordOptions
from gateway.runs.board import KeptLimits
from gateway.upstream import tls
from gateway.upstream.http1 import FRAMING_HEADERS, HOP_BY_HOP_HEADERS, Target
from gateway.upstream.proxies import Proxy, parse_proxy, proxy_for
from gateway.upstream.url import UpstreamURL

RESERVED_UPSTREAM_HEADERS = FRAMING_HEADERS | HOP_BY_HOP_HEADERS
"""Headers the gateway writes itself on every upstream request, or that speak of its connection: a route's
`upstream.headers` may not set them."""
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
NEVER_FORWARDED = (RESERVED_UPSTREAM_HEADERS - {"proxy-connection"}) | {"content-type", "accept", "accept-encoding"}
"""Headers a route's `forward_headers` may not name: the framing and hop-by-hop ones, and those the dialect sets
for its own body. proxy-connection is left out as it always was: refusing it now would break a config that
forwards it."""


class ConfigError(ValueError):
    """The configuration is wrong; the message says where and how."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Timeouts(_Model):
    connect: float = Field(5.0, gt=0, description="seconds to connect to the upstream")
    first_event: float = Field(60.0, gt=0, description="seconds from the request to the upstream's first event")
    idle: float = Field(120.0, gt=0, description="seconds the upstream may stay silent between events")
    total: float = Field(900.0, gt=0, description="seconds a whole run may take")
    request_body: float = Field(10.0, gt=0, description="seconds a client may take to send its body (then it must "
                                "keep up limits.min_body_rate), and may leave between two pieces of it")
    resume_keep: float = Field(300.0, ge=0, description="seconds a resumable run's reply is kept after the run "
                               "ends, for a client that reconnects late (Last-Event-ID)")


class Limits(_Model):
    max_body_bytes: int = Field(4 * 1024 * 1024, gt=0, description="largest request body accepted")
    max_event_bytes: int = Field(16 * 1024 * 1024, gt=0, description="largest single upstream event")
    max_held_text: int = Field(4 * 1024 * 1024, gt=0, description="characters of one piece a client needs whole "
                               "that the gateway may hold (one tool call's arguments; the whole reply of a one-body "
                               "client: agent-respond, A2A's SendMessage); past it the run ends with an error")
    min_body_rate: int = Field(4096, gt=0, description="bytes a second a request body must average once "
                               "timeouts.request_body has passed")
    max_json_depth: int = Field(64, gt=0, le=200, description="deepest nesting accepted in a request body "
                                "(at most 200: orjson writes no deeper than 254 levels, and bodies are re-encoded)")
    max_messages: int = Field(2000, gt=0, description="most messages accepted in one request")
    max_streams: int = Field(10_000, gt=0, description="concurrent requests on this route")
    max_streams_per_key: int = Field(100, gt=0, description="concurrent requests per API key (with auth)")
    max_resume_events: int = Field(100_000, gt=0, description="pieces of a resumable run's reply kept for resuming; "
                                   "past it the run goes on, no longer resumable")
    max_resume_bytes: int = Field(16 * 1024 * 1024, gt=0, description="bytes of a resumable run's reply kept for "
                                  "resuming; past it the run goes on, no longer resumable")


class Auth(_Model):
    """Who may call a route: an API key, sent as `Authorization: Bearer <key>` or `X-API-Key: <key>`."""

    keys: list[str] = []
    """Keys, usually `${VAR}` from the environment; empty values are ignored."""
    keys_file: str | None = None
    """A file with one key per line (a mounted secret); `#` starts a comment. Re-read when it changes."""
    tenants: dict[str, list[str]] = {}
    """Keys that share their conversations, by tenant name. Any other key sees only its own."""

    def principals(self) -> dict[str, str]:
        """Each key, and whose conversations it reaches: its tenant's, or its own (by its id, never itself)."""
        owners = {key: f"key:{key_id(key)}" for key in self.load_keys()}
        for tenant, keys in self.tenants.items():
            owners.update({key.strip(): f"tenant:{tenant}" for key in keys if key.strip()})
        return owners

    def load_keys(self) -> list[str]:
        keys = [k.strip() for k in self.keys if k.strip()]
        if self.keys_file:
            try:
                lines = Path(self.keys_file).read_text().splitlines()
            except OSError as exc:
                raise ValueError(f"cannot read keys_file {self.keys_file}: {exc.strerror}") from None
            keys += [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]
        if not keys and not any(k.strip() for ks in self.tenants.values() for k in ks):
            raise ValueError("auth needs at least one key (keys, keys_file or tenants)")
        return keys


def key_id(key: str) -> str:
    """What logs, metrics and conversation scopes call a key: a hash, never the key."""
    return hashlib.sha256(key.encode()).hexdigest()[:12]


class Cors(_Model):
    """Browser clients (AG-UI and Vercel frontends) calling from another origin."""

    allow_origins: list[str] = Field(min_length=1)
    allow_headers: list[str] = ["content-type", "authorization", "x-api-key", "x-request-id"]
    allow_credentials: bool = False
    max_age: int = 600

    @model_validator(mode="after")
    def _no_credentials_for_everyone(self) -> Cors:
        if self.allow_credentials and "*" in self.allow_origins:
            raise ValueError("allow_origins '*' with allow_credentials would let every site call with the user's "
                             "cookies: list the origins")
        return self


class Push(_Model):
    """Push notifications (A2A's): a run's updates POSTed to the webhooks its clients register. Off unless set; only
    the hosts listed are ever called."""

    allow_hosts: list[str] = Field(min_length=1)
    """Host names or addresses a webhook may name (any port); `*.example.com` takes its subdomains."""
    delivery_timeout: float = Field(10.0, gt=0)
    """Seconds one delivery may take."""
    retries: int = Field(3, ge=0)
    """Further attempts after a delivery fails (a connection error, a 5xx, a 429), after 0.5 s, 1 s, 2 s, ..."""
    max_webhooks: int = Field(10, gt=0)
    """Webhooks one run may have."""
    max_notifications: int = Field(1000, gt=0)
    """Deliveries one webhook gets of one run; past it the rest of the run is not sent."""
    max_bytes: int = Field(1024 * 1024, gt=0)
    """The largest notification sent; a larger update is left out."""
    max_pending: int = Field(10_000, gt=0)
    """Notifications one process holds waiting to be delivered; past it new ones are dropped (logged)."""

    @field_validator("allow_hosts")
    @classmethod
    def _plain_hosts(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            bare = host.strip("[]")
            name = bare.removeprefix("*.")
            if not name or any(c in name for c in "/@* ") or (":" in bare and not _is_ipv6(bare)):
                raise ValueError(f"{host!r} is not a host (a name, an address, or *.name for its subdomains; "
                                 "no port)")
        return [host.lower().strip("[]") for host in hosts]

    def allows(self, host: str) -> bool:
        """Whether a webhook may be on `host`."""
        host = host.lower().strip("[]")
        return any(host == allowed or (allowed.startswith("*.") and host.endswith(allowed[1:]))
                   for allowed in self.allow_hosts)


class UpstreamTLS(_Model):
    """Whom to trust for an https upstream, and what to show it (mutual TLS)."""

    ca_file: str | None = None
    """A PEM bundle to trust instead of the system's CAs (a private CA)."""
    client_cert: str | None = None
    client_key: str | None = None
    """The client certificate's key, unless it is in `client_cert`'s file."""
    system_trust_store: bool = False
    """Verify with the operating system's trust store (the `truststore` extra), as browsers do."""

    @model_validator(mode="after")
    def _loadable(self) -> UpstreamTLS:
        self.context()  # a ValueError of one line naming the file and what is wrong with it
        return self

    def context(self) -> ssl.SSLContext:
        return tls.client_context(ca_file=self.ca_file, client_cert=self.client_cert, client_key=self.client_key,
                                  system_trust_store=self.system_trust_store)


class Upstream(_Model):
    url: str
    dialect: str
    variant: str | None = None
    """Detected from the upstream's responses when left out; say it for a server that does not show it."""
    model: str | None = Field(None, min_length=1, description="the model or agent the upstream is asked for, where "
                              "its dialect names one (OpenAI's model); default: the client's, else the route's name")
    headers: dict[str, str] = {}
    max_connections: int | None = Field(None, gt=0, description="connections to the upstream at once; past it, "
                                        "requests wait their turn (default: no cap)")
    proxy: str | Literal[False] | None = None
    """An http:// proxy for this upstream, or `false` for none; by default the environment's (HTTP_PROXY,
    HTTPS_PROXY, ALL_PROXY, NO_PROXY), read as httpx reads them."""
    tls: UpstreamTLS | None = None
    agent: str | None = Field(None, min_length=1, max_length=256)
    """Which of the agents the upstream's server hosts this route runs (a LangGraph assistant or graph id); unset,
    the client's own choice, else the dialect's default. Dialects whose URL is one agent ignore it."""
    ids: Literal["scoped", "transparent"] = "scoped"
    """The conversation ids the upstream is sent. `scoped`: derived from the route, the caller's principal and the
    client's id, so two callers naming the same id never share the upstream's conversation. `transparent`: the
    client's own, for an upstream shared on purpose or that scopes conversations by itself."""

    @field_validator("proxy")
    @classmethod
    def _proxy_url(cls, value: str | Literal[False] | None) -> str | Literal[False] | None:
        if isinstance(value, str):
            parse_proxy(value)  # a ValueError of one line, without the password
        return value

    @model_validator(mode="after")
    def _proxy_usable(self) -> Upstream:
        try:
            self.proxy_to_use()
        except ValueError as exc:
            raise ValueError(f"the environment's proxy for this upstream cannot be used: {exc}") from None
        return self

    def target(self, connect_timeout: float, url: str | None = None) -> Target:
        """How the upstream client reaches this upstream: its URL (or `url`, on its origin, as its discovery
        document names it), proxy, TLS context and connection cap."""
        return Target(url or self.url, connect_timeout, self.max_connections, proxy=self.proxy_to_use(),
                      ssl_context=self.tls.context() if self.tls is not None else None)

    def proxy_to_use(self, environ: Mapping[str, str] | None = None) -> Proxy | None:
        """The route's proxy, or the environment's for this URL, or none."""
        url = proxy_for(self.url, environ) if self.proxy is None else self.proxy or None
        return parse_proxy(url) if url else None

    @field_validator("headers")
    @classmethod
    def _set_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        """Names are tokens and values field values (RFC 9110), checked now rather than failing every request.
        The gateway frames each request itself, so framing and hop-by-hop headers are refused in any case. A header
        whose value came out empty (an unset `${VAR:-}`) is not sent: `Authorization: Bearer ` with no token is
        refused by servers and clients alike."""
        checked: dict[str, str] = {}
        for name, value in headers.items():
            lowered = name.lower()
            if not _TOKEN.fullmatch(name):
                raise ValueError(f"header name {name!r} is not a valid HTTP header name")
            if lowered in RESERVED_UPSTREAM_HEADERS:
                raise ValueError(f"header {name} is set by the gateway for each request and cannot be configured")
            if lowered in checked:
                raise ValueError(f"header {name} is given twice")
            value = value.strip()
            if not _FIELD_VALUE.fullmatch(value):
                raise ValueError(f"header {name}'s value has a line break or another character HTTP does not allow")
            if value:
                checked[lowered] = value
        return checked

    @field_validator("dialect")
    @classmethod
    def _known_dialect(cls, name: str) -> str:
        return _dialect(name)

    @field_validator("variant")
    @classmethod
    def _known_variant(cls, variant: str | None) -> str | None:
        if variant is not None and variant not in registry.variants():
            raise ValueError(f"Input should be {listed([repr(v) for v in registry.variants()])}")
        return variant

    @model_validator(mode="after")
    def _variant_of_the_dialect(self) -> Upstream:
        if mismatch := registry.variant_mismatch(self.variant, self.dialect):
            raise ValueError(mismatch)
        return self

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        UpstreamURL.parse(value)  # a ValueError saying what is wrong
        return value


class Skill(_Model):
    id: str
    name: str
    description: str = ""
    tags: list[str] = []
    examples: list[str] = []


class AgentInfo(_Model):
    """The route's agent as clients that discover agents see it (A2A's agent card at
    `<path>/.well-known/agent-card.json`); the name is the route's."""

    description: str = ""
    version: str = "1.0.0"
    skills: list[Skill] = []
    url: str | None = None
    """Where clients reach the route, when the gateway is behind a proxy that changes it; else the URL the card
    was asked for, less the card's own path."""


class Route(_Model):
    name: str = ""
    paths: list[str] = []
    """Where clients call; empty means the conventional paths of the client dialects."""
    client_dialects: list[str] | Literal["auto"] = "auto"
    """The dialects clients may speak here; `auto` is every dialect the gateway knows."""
    upstream: Upstream
    forward_headers: list[str] = []
    """Inbound headers passed to the upstream. `Authorization` and cookies only if listed here."""
    timeouts: Timeouts = Timeouts()
    limits: Limits = Limits()
    auth: Auth | None = None
    tenant_header: str | None = None
    """On a route without keys: a header that names whose conversations a request reaches (a trusted front end
    sets it). Without it, every caller of an open route is one principal, "anonymous"."""
    cors: Cors | None = None
    agent: AgentInfo = AgentInfo()
    push: Push | None = None
    """Push notifications to the webhooks clients register (A2A); off unless set."""
    resumable: bool = False
    """Runs outlive their client's connection (up to `timeouts.total`): a client that reconnects is sent the rest,
    a retry of the same request attaches to the run, and only an explicit stop ends it early."""
    client_version: str | None = None
    """The protocol version this route's clients speak, where their requests do not show it: `5`, `6` or `7` (or
    a release, `7.0.173`) for AI SDK clients, which send no version (an AI SDK 5 client's route must say so);
    `1.0` or `0` for AG-UI clients. Replies hold only what that version reads."""

    @field_validator("client_version", mode="before")
    @classmethod
    def _version(cls, value: object) -> str | None:
        if value is None:
            return None
        text = str(value)
        if not re.fullmatch(r"\d+(\.\d+){0,2}", text):
            raise ValueError(f"{text!r} is not a version: a major (5), or major.minor.patch (7.0.173)")
        return text

    ready_needs_upstream: bool = False
    """`/readyz` answers 503 while this route's upstream cannot be reached: a balancer then sends a replica nothing
    while its own agent (a sidecar's) is down. Leave it off for an agent every replica shares, or they all go
    unready together."""
    record: RecordOptions | None = None
    """Each exchange written to a file (`gateway.recordings`): for replaying the agent, judging and translating."""
    inspector_bodies: bool = False
    """The inspector shows what this route's runs said (request bodies, frames, event fields); otherwise their
    shape only."""

    @field_validator("tenant_header")
    @classmethod
    def _header_name(cls, value: str | None) -> str | None:
        if value is not None and not _TOKEN.fullmatch(value):
            raise ValueError(f"{value!r} is not a valid HTTP header name")
        return value.lower() if value else None

    @model_validator(mode="after")
    def _one_way_to_name_the_caller(self) -> Route:
        if self.tenant_header and self.auth is not None:
            raise ValueError("tenant_header is for routes without auth: with auth, the key says who the caller is "
                             "(group keys with auth.tenants)")
        if self.auth is not None:
            leaked = [h for h in self.forward_headers if h in ("authorization", "x-api-key")]
            if leaked:
                raise ValueError(f"forward_headers: {', '.join(leaked)} carries the gateway's own API key on this "
                                 "route; it is never sent upstream (set the upstream's credentials in "
                                 "upstream.headers)")
        return self

    @field_validator("auth")
    @classmethod
    def _keys_readable(cls, auth: Auth | None) -> Auth | None:
        if auth is not None:
            auth.load_keys()
        return auth

    @field_validator("paths")
    @classmethod
    def _absolute(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if not path.startswith("/"):
                raise ValueError(f"path {path!r} must start with /")
        return paths

    @property
    def served_paths(self) -> list[str]:
        """The route's paths as requests are matched to them (see `route_path`)."""
        return [route_path(path) for path in self.paths]

    @field_validator("client_dialects")
    @classmethod
    def _known_dialects(cls, names: list[str] | Literal["auto"]) -> list[str] | Literal["auto"]:
        return names if names == "auto" else [_dialect(name) for name in names]

    @field_validator("forward_headers")
    @classmethod
    def _forwardable(cls, headers: list[str]) -> list[str]:
        lowered = [h.lower() for h in headers]
        bad = [h for h in lowered if h in NEVER_FORWARDED]
        if bad:
            raise ValueError(f"{', '.join(bad)} cannot be forwarded: the gateway sets them for each hop")
        return lowered

    @property
    def dialects(self) -> list[str]:
        return list(registry.DIALECTS) if self.client_dialects == "auto" else list(self.client_dialects)


class Store(_Model):
    url: str = "sqlite:///agent-gateway.db"
    """`memory://`, `sqlite:///path/to/file.db` or `redis://host:6379/0`."""

    def open(self) -> ConversationStore:
        """The store these settings name (raises `StoreError` or ValueError when it cannot be opened)."""
        return open_store(self.url, ttl=self.ttl_seconds, max_entries=self.max_conversations,
                          max_value_bytes=self.max_conversation_bytes,
                          max_per_group=self.max_conversations_per_principal)

    @field_validator("url")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        scheme = value.partition("://")[0].lower() if "://" in value else ""
        if scheme not in ("memory", "sqlite", "redis", "rediss"):
            raise ValueError("must be memory://, sqlite:///<path>, redis://host:port/db or rediss://...")
        if scheme == "sqlite":
            sqlite_path(value)  # sqlite://relative.db names no file: said now, not when the store opens
        if scheme in ("redis", "rediss"):
            try:
                redis_exceptions()
            except StoreError as exc:  # said while the configuration loads, not at the first request
                raise ValueError(str(exc)) from None
        return value
    ttl_seconds: float = Field(7 * 24 * 3600, gt=0)
    max_conversations: int = Field(100_000, gt=0)
    max_conversations_per_principal: int = Field(10_000, gt=0, description="conversations one caller (a key, a "
                                                 "tenant, or all anonymous callers together) may hold; its oldest go "
                                                 "first, so it cannot evict anyone else's")
    max_conversation_bytes: int = Field(1024 * 1024, gt=0)
    max_messages: int = Field(1000, gt=0, description="history kept per conversation; the oldest go first")
    max_resume_kept_bytes: int = Field(256 * 1024 * 1024, gt=0, description="memory the ended resumable runs' "
                                       "replies one process keeps for late resumes may cost; the oldest go first")
    max_resume_kept: int = Field(10_000, gt=0, description="ended resumable runs' replies one process keeps; the "
                                 "oldest go first")
    max_resume_kept_per_principal: int = Field(1_000, gt=0, description="of those, one caller's (a key, a tenant, "
                                               "or all anonymous callers together); its oldest go first")

    def kept_limits(self) -> KeptLimits:
        return KeptLimits(self.max_resume_kept_bytes, self.max_resume_kept, self.max_resume_kept_per_principal)


class GatewayConfig(_Model):
    routes: list[Route] = Field(min_length=1)
    store: Store = Store()
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

    @field_validator("routes")
    @classmethod
    def _resolve_paths(cls, routes: list[Route]) -> list[Route]:
        from adapters import registry

        seen: dict[str, tuple[str, str]] = {}
        for index, route in enumerate(routes):
            route.name = route.name or f"route{index}"
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


_KEYS = sorted({name for model in (Timeouts, Limits, Auth, Cors, Push, UpstreamTLS, Upstream, Route, Store,
                                   GatewayConfig, InspectorOptions, RecordOptions)
                for name in model.model_fields})
"""Every key a configuration may hold, for "did you mean"."""


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def route_path(path: str) -> str:
    """A path as routes are matched: without its trailing slash (`/a2a/` is `/a2a`; `/` stays). Clients add one
    to a URL they were given (A2A's TCK posts to the card's URL plus `/`), and a redirect would lose a POST's body."""
    return path.rstrip("/") or "/"


def _dialect(name: str) -> str:
    if name not in registry.DIALECTS:
        raise ValueError(f"Input should be {listed([repr(name) for name in registry.DIALECTS])}")
    return name


def load_config(path: str | Path, environ: dict[str, str] | None = None) -> GatewayConfig:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc.strerror}") from None
    return parse_config(text, str(path), environ)


def parse_config(text: str, source: str = "<config>", environ: dict[str, str] | None = None) -> GatewayConfig:
    environ = dict(os.environ) if environ is None else environ
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    lines_of: dict[tuple[int | str, ...], int] = {}
    if node is not None:
        _index_lines(node, (), lines_of)
    data = _interpolate(data, (), environ, source, lines_of)
    try:
        return GatewayConfig.model_validate(data if data is not None else {})
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            line = _line_for(loc, lines_of)
            where = f"{source}:{line}" if line else source
            message = error_message(error)
            if message == "unknown key" and isinstance(loc[-1], str):
                close = difflib.get_close_matches(loc[-1], _KEYS, n=1)
                message = f"unknown key{f'; did you mean {close[0]}?' if close else ''}"
            entry = f"{where}: {field_path(loc) if loc else 'the file'}: {message}"
            if entry not in lines:
                lines.append(entry)
        raise ConfigError("\n".join(lines)) from None


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _interpolate(value: Any, loc: tuple[int | str, ...], environ: dict[str, str], source: str,
                 lines: dict[tuple[int | str, ...], int]) -> Any:
    if isinstance(value, str):
        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            line = _line_for(loc, lines)
            where = f"{source}:{line}" if line else source
            raise ConfigError(f"{where}: {field_path(loc)}: environment variable {name} is not set")
        return _VAR.sub(replace, value)
    if isinstance(value, dict):
        return {k: _interpolate(v, (*loc, k), environ, source, lines) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, (*loc, i), environ, source, lines) for i, v in enumerate(value)]
    return value


def _index_lines(node: yaml.Node, loc: tuple[int | str, ...], lines: dict[tuple[int | str, ...], int]) -> None:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, child in node.value:
            lines[(*loc, key.value)] = key.start_mark.line + 1
            _index_lines(child, (*loc, key.value), lines)
            lines[(*loc, key.value)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, child in enumerate(node.value):
            _index_lines(child, (*loc, index), lines)


def _line_for(loc: tuple[int | str, ...], lines: dict[tuple[int | str, ...], int]) -> int | None:
    """The line of the deepest part of `loc` the file has (a missing key is reported where its parent is)."""
    for end in range(len(loc), -1, -1):
        clean = tuple(part for part in loc[:end] if not (isinstance(part, str) and part.startswith("function-")))
        if clean in lines:
            return lines[clean]
    return None
