"""A trusted proxy's forwarded client and scheme reach the request's scope as uvicorn's middleware put them there."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.server.connections.forwarded import ForwardedHeaders


def _scope(peer: str, *headers: tuple[bytes, bytes], kind: str = "http") -> dict[str, Any]:
    return {"type": kind, "client": (peer, 5000), "scheme": "http" if kind == "http" else "ws",
            "headers": list(headers)}


def test_a_trusted_proxy_names_the_client_and_the_scheme() -> None:
    scope = _scope("127.0.0.1", (b"x-forwarded-for", b"203.0.113.7"), (b"x-forwarded-proto", b"https"))
    ForwardedHeaders("127.0.0.1").apply(scope)
    assert scope["client"] == ("203.0.113.7", 0) and scope["scheme"] == "https"


def test_a_websockets_scheme_is_forwarded_as_wss() -> None:
    scope = _scope("127.0.0.1", (b"x-forwarded-proto", b"https"), kind="websocket")
    ForwardedHeaders("127.0.0.1").apply(scope)
    assert scope["scheme"] == "wss"


def test_an_untrusted_peers_forwarded_headers_are_ignored() -> None:
    scope = _scope("198.51.100.9", (b"x-forwarded-for", b"203.0.113.7"), (b"x-forwarded-proto", b"https"))
    ForwardedHeaders("127.0.0.1").apply(scope)
    assert scope["client"] == ("198.51.100.9", 5000) and scope["scheme"] == "http"


def test_the_trusted_addresses_are_uvicorns_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "198.51.100.0/24")
    scope = _scope("198.51.100.9", (b"x-forwarded-for", b"203.0.113.7"))
    ForwardedHeaders().apply(scope)
    assert scope["client"] == ("203.0.113.7", 0)
    loopback = _scope("127.0.0.1", (b"x-forwarded-for", b"203.0.113.7"))
    ForwardedHeaders().apply(loopback)
    assert loopback["client"] == ("127.0.0.1", 5000)
