"""Where a route sends its runs: the upstream's URL and dialect, the headers it is sent, its proxy and TLS."""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterable, Mapping
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator, model_validator

from adapters import registry
from gateway.config.model import TOKEN, Model, known_dialect
from gateway.core.validation import listed
from gateway.upstream import tls
from gateway.upstream.foreign import Transport
from gateway.upstream.http1 import FRAMING_HEADERS, HOP_BY_HOP_HEADERS, Target
from gateway.upstream.proxies import Proxy, parse_proxy, proxy_for
from gateway.upstream.url import UpstreamURL

RESERVED_UPSTREAM_HEADERS = FRAMING_HEADERS | HOP_BY_HOP_HEADERS
"""Headers the gateway writes itself on every upstream request, or that speak of its connection: a route's
`upstream.headers` may not set them."""
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


class UpstreamTLS(Model):
    """Whom to trust for an https upstream, and what to show it (mutual TLS)."""

    ca_file: str | None = None
    """A PEM bundle to trust instead of the system's CAs (a private CA)."""
    client_cert: str | None = None
    """A PEM file with the client certificate to present (mutual TLS), and its key unless `client_key` is given."""
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


class Upstream(Model):
    """Where a route sends its runs: the upstream's URL and dialect, the headers it is sent, its proxy and TLS."""

    name: str | None = Field(None, min_length=1, max_length=64)
    """What logs, metrics and `/readyz` call this upstream on a route with `fallbacks`; default: `primary` for the
    route's `upstream`, `fallback1`, `fallback2`, ... for its fallbacks."""
    url: str
    """The agent's http:// or https:// URL: where it answers runs, or its server's base URL for A2A and LangGraph.
    `user:password@` in it goes as a Basic `Authorization` header (a configured `Authorization` wins)."""
    dialect: str
    """The dialect the upstream speaks: `ag-kit`, `a2a`, `openai-chat`, ... (`agent-gateway serve --help` lists them
    all, under `--upstream-dialect`)."""
    variant: str | None = None
    """Detected from the upstream's responses when left out; say it for a server that does not show it."""
    model: str | None = Field(None, min_length=1, description="the model or agent the upstream is asked for, where "
                              "its dialect names one (OpenAI's model); default: the client's, else the route's name")
    headers: dict[str, str] = {}
    """Added to every request to the upstream (its credentials go here, never a client's). Names and values are
    checked when the file loads, framing and hop-by-hop headers refused; a header whose value is empty is not sent."""
    max_connections: int | None = Field(None, gt=0, description="connections to the upstream at once; past it, "
                                        "requests wait their turn (default: no cap)")
    proxy: str | Literal[False] | None = None
    """An http:// proxy for this upstream, or `false` for none; by default the environment's (HTTP_PROXY,
    HTTPS_PROXY, ALL_PROXY, NO_PROXY), read as httpx reads them."""
    tls: UpstreamTLS | None = None
    """Whom to trust for an https upstream, and what to show it; unset: the system's CAs, no client certificate."""
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

    def target(self, connect_timeout: float, url: str | None = None, transport: Transport | None = None) -> Target:
        """How the upstream client reaches this upstream: its URL (or `url`, on its origin, as its discovery
        document names it), proxy, TLS context and connection cap; or the transport that calls it instead."""
        return Target(url or self.url, connect_timeout, self.max_connections, proxy=self.proxy_to_use(),
                      ssl_context=self.tls.context() if self.tls is not None else None, transport=transport)

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
            if not TOKEN.fullmatch(name):
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
        return known_dialect(name)

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


def endpoints_below(url: str, dialects: Iterable[str]) -> list[str]:
    """For a URL whose path stops where a dialect's conventional path goes on (an OpenAI base URL, `.../v1`, for
    `.../v1/chat/completions`): the endpoints it may have meant, in the order of `dialects`, each as "URL
    (dialect)". None for a URL at its server's root, where some dialects' servers are (LangGraph's, A2A's card)."""
    parts = urlsplit(url)
    base = parts.path.rstrip("/")
    found: dict[str, str] = {}
    for name in dict.fromkeys(dialects):
        for own in registry.get(name).paths:
            segments = own.split("/")
            for end in range(len(segments) - 1, 1, -1):  # the longest proper prefix the URL's path ends with
                prefix = "/".join(segments[:end])
                if base.endswith(prefix):
                    meant = urlunsplit(parts._replace(path=base + own[len(prefix):], fragment=""))
                    found.setdefault(meant, f"{meant} ({name})")
                    break
    return list(found.values())
