"""A route: where clients call and in which dialects, the upstream it sends their runs to, and how the gateway
treats them on the way (timeouts, limits, keys, CORS, push notifications, the agent's card, resuming, recording,
judging)."""

from __future__ import annotations

import hashlib
import ipaddress
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from adapters import registry
from gateway.config.model import TOKEN, Model, known_dialect
from gateway.config.upstream import RESERVED_UPSTREAM_HEADERS, Upstream
from gateway.config.usage import Pricing, TokenBudget
from gateway.core.addresses import ip_address
from gateway.recordings.options import JudgeOptions, RecordOptions

NEVER_FORWARDED = (RESERVED_UPSTREAM_HEADERS - {"proxy-connection"}) | {"content-type", "accept", "accept-encoding"}
"""Headers a route's `forward_headers` may not name: the framing and hop-by-hop ones, and those the dialect sets
for its own body. proxy-connection is left out as it always was: refusing it now would break a config that
forwards it."""


class Timeouts(Model):
    """How long each step of a run may take, in seconds."""

    connect: float = Field(5.0, gt=0, description="seconds to connect to the upstream")
    first_event: float = Field(60.0, gt=0, description="seconds from the request to the upstream's first event")
    idle: float = Field(120.0, gt=0, description="seconds the upstream may stay silent between events")
    total: float = Field(900.0, gt=0, description="seconds a whole run may take")
    request_body: float = Field(10.0, gt=0, description="seconds a client may take to send its body (then it must "
                                "keep up limits.min_body_rate), and may leave between two pieces of it")
    resume_keep: float = Field(300.0, ge=0, description="seconds a resumable run's reply is kept after the run "
                               "ends, for a client that reconnects late (Last-Event-ID)")



class Limits(Model):
    """What one request, and the route's requests together, may hold. Over a limit a request is refused (400, 408,
    413 or 429), or its run ends with the dialect's error."""

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
    max_sockets: int = Field(1000, gt=0, description="WebSockets open at once on this route (a dialect's WebSocket "
                             "mode: each runs one request at a time, and its requests take stream slots too)")
    max_sockets_per_key: int = Field(100, gt=0, description="WebSockets open at once per API key (with auth)")
    max_resume_events: int = Field(100_000, gt=0, description="pieces of a resumable run's reply kept for resuming; "
                                   "past it the run goes on, no longer resumable")
    max_resume_bytes: int = Field(16 * 1024 * 1024, gt=0, description="bytes of a resumable run's reply kept for "
                                  "resuming; past it the run goes on, no longer resumable")
    tokens_per_key: TokenBudget | None = None
    """Tokens each API key (each tenant, on a `tenant_header` route; the route's callers together, on an open
    route) may use per minute, hour or day, counted in the store: the workers on one SQLite file, or the replicas on
    one Redis, share one budget (a memory store's is the process's)."""


class Auth(Model):
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


class Cors(Model):
    """Browser clients (AG-UI and Vercel frontends) calling from another origin."""

    allow_origins: list[str] = Field(min_length=1)
    """The origins whose pages may call the route (`https://app.example.com`), or `*` for any."""
    allow_headers: list[str] = ["content-type", "authorization", "x-api-key", "x-request-id"]
    """The request headers such a page may send (a resumable route's resume endpoints add `last-event-id`)."""
    allow_credentials: bool = False
    """Pages may send the user's cookies; refused with `allow_origins: ['*']`."""
    max_age: int = 600
    """Seconds a browser may keep the answer to a preflight."""

    @model_validator(mode="after")
    def _no_credentials_for_everyone(self) -> Cors:
        if self.allow_credentials and "*" in self.allow_origins:
            raise ValueError("allow_origins '*' with allow_credentials would let every site call with the user's "
                             "cookies: list the origins")
        return self


class Push(Model):
    """Push notifications (A2A's): a run's updates POSTed to the webhooks its clients register. Off unless set; only
    the hosts listed are ever called, and each principal has its own share of what a process delivers."""

    allow_hosts: list[str] = Field(min_length=1)
    """Hosts a webhook may be on: a name or an address (any port), or `host:port` / `[v6]:port` for that port only;
    `*.example.com` (and `*.example.com:8443`) takes its subdomains."""
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
    """Notifications one process holds waiting to be delivered, every principal's together; past it new ones are
    dropped (logged)."""
    max_pending_per_principal: int | None = Field(None, gt=0)
    """Notifications one principal (a key, a tenant, or every anonymous caller) may have waiting in one process;
    past it its new ones are dropped (logged) while others' are still queued. Unset, half of `max_pending`: the
    most one principal may hold and still leave the rest as much (one whose webhooks hang cannot starve the others,
    and a burst of updates to a quick webhook still fits), and a config that only sets `max_pending` gets shares
    too."""
    max_deliveries_per_principal: int = Field(10, gt=0)
    """Deliveries of one principal's in flight in one process at once (each an open connection, held up to
    `delivery_timeout` by a webhook that hangs); the rest wait their turn."""
    cool_off: float = Field(60.0, ge=0)
    """Seconds a webhook's origin (scheme, host and port) whose deliveries timed out twice in a row is left alone:
    notifications for it meanwhile are dropped, not retried. Each process finds out for itself."""

    @field_validator("allow_hosts")
    @classmethod
    def _plain_hosts(cls, hosts: list[str]) -> list[str]:
        return [_written(*_host_rule(host)) for host in hosts]

    @property
    def pending_share(self) -> int:
        """What one principal may have waiting in one process."""
        if self.max_pending_per_principal is not None:
            return self.max_pending_per_principal
        return max(1, self.max_pending // 2)

    def allows(self, host: str, port: int) -> bool:
        """Whether a webhook may be on `host` at `port`."""
        host = host.lower().strip("[]")
        for allowed in self.allow_hosts:
            name, allowed_port = _host_rule(allowed)
            if (allowed_port is None or allowed_port == port) and \
                    (host == name or (name.startswith("*.") and host.endswith(name[1:]))):
                return True
        return False


def _host_rule(entry: str) -> tuple[str, int | None]:
    """An `allow_hosts` entry as its host (lower case, an IPv6 address without brackets) and its port (None: any):
    `name`, `*.name`, an address, `[v6]`, each with `:port` or without (raises `ValueError`)."""
    text = entry.strip().lower()
    port: str | None = None
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        if not closed or not _is_ipv6(host) or (rest and not rest.startswith(":")):
            raise ValueError(f"{entry!r} is not a host: an IPv6 address in brackets, then :port or nothing")
        port = rest[1:] if rest else None
    elif text.count(":") > 1:  # an IPv6 address, without brackets as before ports could be named
        host = text
        if not _is_ipv6(host):
            raise ValueError(f"{entry!r} is not a host: write an IPv6 address with a port as [address]:port")
    else:
        host, colon, after = text.partition(":")
        port = after if colon else None
    name = host.removeprefix("*.")
    if not name or any(c in name for c in "/@*[] "):
        raise ValueError(f"{entry!r} is not a host (a name, an address, or *.name for its subdomains; :port for "
                         "one port)")
    if port is None:
        return host, None
    if not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{entry!r} names no port: after the host's colon, a number from 1 to 65535")
    return host, int(port)


def _written(host: str, port: int | None) -> str:
    """An `allow_hosts` entry as it is kept: `host`, `host:port`, `[v6]:port`."""
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_ipv6(text: str) -> bool:
    return isinstance(ip_address(text), ipaddress.IPv6Address)


class Skill(Model):
    """One thing the agent does, as its card lists it (A2A's `AgentSkill`)."""

    id: str
    """The skill's id on the card."""
    name: str
    """The skill's name, for people."""
    description: str = ""
    """What the skill does."""
    tags: list[str] = []
    """Words the skill is found by."""
    examples: list[str] = []
    """Requests a client might send for it."""


class AgentInfo(Model):
    """The route's agent as clients that discover agents see it (A2A's agent card at
    `<path>/.well-known/agent-card.json`); the name is the route's."""

    description: str = ""
    """What the agent does; empty: "<route name>, through agent-gateway"."""
    version: str = "1.0.0"
    """The agent's version, as the card gives it."""
    skills: list[Skill] = []
    """What the agent does, skill by skill; none: one skill, `chat`, named after the route."""
    url: str | None = None
    """Where clients reach the route, when the gateway is behind a proxy that changes it; else the URL the card
    was asked for, less the card's own path."""


class Route(Model):
    """Where clients call and in which dialects, the upstream their runs go to, and how the gateway treats them on
    the way."""

    name: str = ""
    """What logs, metrics and the inspector call the route, and its name to clients that name agents (OpenAI's
    model, LangGraph's graph, A2A's card); empty: `route0`, `route1`, ... by its place in the file."""
    paths: list[str] = []
    """Where clients call; empty means the conventional paths of the client dialects."""
    client_dialects: list[str] | Literal["auto"] = "auto"
    """The dialects clients may speak here; `auto` is every dialect the gateway knows."""
    upstream: Upstream
    """The agent the route's runs go to."""
    fallbacks: list[Upstream] = []
    """Upstreams of any dialect a run goes to, in order, when the one before failed it before its reply began
    (refused, a non-2xx answer, the connect or first-event deadline before it answered, ejected), the conversation
    written for each: a run whose reply has begun never moves. A conversation's next turns go where it last
    succeeded."""
    eject_after: int = Field(3, gt=0, description="runs in a row an upstream of a route with fallbacks may fail "
                             "before it is skipped (ejected) for `eject_for` seconds")
    eject_for: float = Field(30.0, gt=0, description="seconds an ejected upstream is skipped; then one run tries it "
                             "again")
    forward_headers: list[str] = []
    """Inbound headers passed to the upstream. `Authorization` and cookies only if listed here."""
    timeouts: Timeouts = Timeouts()
    """How long each step of a run may take."""
    limits: Limits = Limits()
    """What one request, and the route's requests together, may hold."""
    pricing: Pricing | None = None
    """What the route's runs cost per million tokens, by model: counted per key in `agent_gateway_cost_total`."""
    auth: Auth | None = None
    """API keys: a request without a valid one is a 401, and the key never goes upstream. Unset: an open route."""
    tenant_header: str | None = None
    """On a route without keys: a header that names whose conversations a request reaches (a trusted front end
    sets it). Without it, every caller of an open route is one principal, "anonymous"."""
    cors: Cors | None = None
    """Browser clients on other origins, with preflight; unset: none."""
    agent: AgentInfo = AgentInfo()
    """The route's agent as clients that discover agents see it (A2A's card)."""
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
    judge: JudgeOptions | None = None
    """A share of the runs judged live by the dialects' rules (`agent-gateway check`'s), on both sides: each rule
    broken counted in `agent_gateway_conformance_violations_total` and logged. Unset: no run is judged, at no cost."""
    inspector_bodies: bool = False
    """The inspector shows what this route's runs said (request bodies, frames, event fields); otherwise their
    shape only."""

    @field_validator("tenant_header")
    @classmethod
    def _header_name(cls, value: str | None) -> str | None:
        if value is not None and not TOKEN.fullmatch(value):
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

    @model_validator(mode="after")
    def _upstreams_named_once(self) -> Route:
        names = [upstream_name(self, index) for index in range(1 + len(self.fallbacks))]
        if twice := sorted({name for name in names if names.count(name) > 1}):
            raise ValueError(f"fallbacks: the upstream name {twice[0]!r} is given twice")
        return self

    @property
    def upstreams(self) -> list[Upstream]:
        """The upstream, then its fallbacks, in the order runs try them."""
        return [self.upstream, *self.fallbacks]

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
        return names if names == "auto" else [known_dialect(name) for name in names]

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


def upstream_name(route: Route, index: int) -> str:
    """What logs, metrics and `/readyz` call a route's upstream `index` (0: `upstream`, then its fallbacks): its
    `name`, else `primary`, `fallback1`, `fallback2`, ..."""
    upstream = route.upstreams[index]
    return upstream.name or ("primary" if index == 0 else f"fallback{index}")


def route_path(path: str) -> str:
    """A path as routes are matched: without its trailing slash (`/a2a/` is `/a2a`; `/` stays). Clients add one
    to a URL they were given (A2A's TCK posts to the card's URL plus `/`), and a redirect would lose a POST's body."""
    return path.rstrip("/") or "/"
