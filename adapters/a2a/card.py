"""The agent card of a gateway route: A2A 1.0's, which its schema holds to the letter, listing every interface the
route serves, the preferred first (an SDK client takes the first it speaks): JSON-RPC 1.0 at the route's URL,
HTTP+JSON 1.0 under it, gRPC 1.0 while the gateway serves it, and JSON-RPC 0.3 (the SDKs' 0.3 compatibility reads
that interface). A client that asks for 0.3 (an
`A2A-Version: 0.3` header, or `?A2A-Version=0.3` for a client that can only be given a URL, such as an older
`RemoteA2aAgent`) gets the fields a 0.3 card has beside them, as a2a-sdk 1.3.0 serves with its 0.3 compatibility
on: `url`, `preferredTransport`, `protocolVersion`. Neither version's schema is broken for the other's client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from gateway.core.capabilities import AgentDescription

from .errors import VersionNotSupported
from .versions import HEADER, stated

MODES = ["text/plain", "application/json"]

def agent_card(agent: AgentDescription, asked: Mapping[str, str]) -> dict[str, Any]:
    skills = [dict(skill) for skill in agent.skills] or [
        {"id": "chat", "name": agent.name, "description": agent.description or f"Talk to {agent.name}.",
         "tags": ["chat"]}]
    card: dict[str, Any] = {
        "name": agent.name,
        "description": agent.description or f"{agent.name}, through agent-gateway",
        "supportedInterfaces": [_at_route(agent, "JSONRPC", "1.0"), _at_route(agent, "HTTP+JSON", "1.0"),
                                *_grpc(agent), _at_route(agent, "JSONRPC", "0.3")],
        "version": agent.version,
        "capabilities": {"streaming": agent.streaming, "pushNotifications": agent.webhooks},
        "defaultInputModes": MODES,
        "defaultOutputModes": MODES,
        "skills": skills,
    }
    try:
        version = stated(asked)
    except VersionNotSupported:
        version = None  # the 1.0 card lists what is spoken
    if version == "0.3":
        card.update({"url": agent.url, "preferredTransport": "JSONRPC", "protocolVersion": "0.3"})
    return card if agent.settings is None else agent.settings.signed(card)  # last: it signs the card as served


def _at_route(agent: AgentDescription, binding: str, version: str) -> dict[str, Any]:
    return {"url": agent.url, "protocolBinding": binding, "protocolVersion": version}


def _grpc(agent: AgentDescription) -> list[dict[str, Any]]:
    """The gRPC interface, while the gateway serves it (`grpc_server`): a gRPC target, `host:port` with no scheme,
    the host the card's URL names; naming the route in `tenant` (each request's), which a client sends back."""
    port = agent.listeners.get("grpc")
    host = urlsplit(agent.url).hostname if port is not None else None
    if host is None:
        return []
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [{"url": target, "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": agent.name}]


VARIES = (HEADER,)
"""The request header the card depends on."""
