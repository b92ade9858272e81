"""The agent card of a gateway route: A2A 1.0's, which its schema holds to the letter, listing every interface the
route serves (`INTERFACES`), the preferred first: JSON-RPC 1.0 at the route's URL, HTTP+JSON 1.0 under it, and
JSON-RPC 0.3 (the SDKs' 0.3 compatibility reads that interface). A client that asks for 0.3 (an
`A2A-Version: 0.3` header, or `?A2A-Version=0.3` for a client that can only be given a URL, such as an older
`RemoteA2aAgent`) gets the fields a 0.3 card has beside them, as a2a-sdk 1.3.0 serves with its 0.3 compatibility
on: `url`, `preferredTransport`, `protocolVersion`. Neither version's schema is broken for the other's client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.capabilities import AgentDescription

from .errors import VersionNotSupported
from .versions import HEADER, stated

MODES = ["text/plain", "application/json"]

INTERFACES = (("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3"))
"""The bindings and versions a route serves, in the order of preference: an SDK client takes the first it speaks.
Each is at the route's URL (HTTP+JSON's calls under it)."""


def agent_card(agent: AgentDescription, asked: Mapping[str, str]) -> dict[str, Any]:
    skills = [dict(skill) for skill in agent.skills] or [
        {"id": "chat", "name": agent.name, "description": agent.description or f"Talk to {agent.name}.",
         "tags": ["chat"]}]
    card: dict[str, Any] = {
        "name": agent.name,
        "description": agent.description or f"{agent.name}, through agent-gateway",
        "supportedInterfaces": [{"url": agent.url, "protocolBinding": binding, "protocolVersion": version}
                                for binding, version in INTERFACES],
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
    return card


VARIES = (HEADER,)
"""The request header the card depends on."""
