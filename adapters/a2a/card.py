"""The agent card of a gateway route: A2A 1.0's, which its schema holds to the letter, listing JSON-RPC at the
route's URL in 1.0 and in 0.3 (the SDKs' 0.3 compatibility reads that interface). A client that asks for 0.3 (an
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


def agent_card(agent: AgentDescription, asked: Mapping[str, str]) -> dict[str, Any]:
    skills = [dict(skill) for skill in agent.skills] or [
        {"id": "chat", "name": agent.name, "description": agent.description or f"Talk to {agent.name}.",
         "tags": ["chat"]}]
    card: dict[str, Any] = {
        "name": agent.name,
        "description": agent.description or f"{agent.name}, through agent-gateway",
        "supportedInterfaces": [{"url": agent.url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                                {"url": agent.url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}],
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


VARIES = (HEADER,)
"""The request header the card depends on."""
