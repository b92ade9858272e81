"""A2A (Agent2Agent) 1.0, and 0.3 where still common: JSON-RPC over HTTP, a task per run, an agent card to find
the agent by. As an upstream the gateway calls `SendStreamingMessage` (or `SendMessage`, or the HTTP+JSON binding,
as the card says); as a server it answers both methods and publishes a card of its own."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import AgentDescription, Dialect, Endpoint, Likeness
from gateway.core.errors import GatewayError, InvalidRequest, MalformedRequest, UnknownDialect

from .conformance import judge
from .decode import A2ADecoder
from .encode import new_encoder
from .request import MethodNotFound, build_request, parse_request, sample_request
from .tasks import QUERIES, answer_query, read_query
from .wire import METHODS, REST, SEND, V03

CARD_PATH = "/.well-known/agent-card.json"


def sniff(body: dict[str, Any]) -> Likeness:
    """A2A's clients send JSON-RPC 2.0; no other dialect does."""
    if body.get("jsonrpc") != "2.0":
        return Likeness.FOREIGN
    method = body.get("method")
    return Likeness.OWN if isinstance(method, str) and (method in METHODS or method in QUERIES) else \
        Likeness.PLAUSIBLE


def read_discovery(card: Any, url: str) -> Endpoint | None:
    """The interface to call, best first: JSON-RPC 1.0 (`SendMessage` if the agent does not stream), HTTP+JSON
    1.0, JSON-RPC 0.3. A card without `supportedInterfaces` is 0.3's: its `url` and `preferredTransport`."""
    if not isinstance(card, dict):
        return None
    capabilities = card.get("capabilities")
    streaming = not (isinstance(capabilities, dict) and capabilities.get("streaming") is False)
    offered: dict[tuple[str, str], str] = {}
    for interface in card.get("supportedInterfaces") or ():
        if isinstance(interface, dict) and isinstance(interface.get("url"), str):
            key = (str(interface.get("protocolBinding", "")).upper(), str(interface.get("protocolVersion", "")))
            offered.setdefault(key, interface["url"])
    if isinstance(card.get("url"), str):
        version = str(card.get("protocolVersion") or "0.3")
        offered.setdefault((str(card.get("preferredTransport") or "JSONRPC").upper(), version), card["url"])
    for key, variant in ((("JSONRPC", "1.0"), None if streaming else SEND), (("HTTP+JSON", "1.0"), REST),
                         (("JSONRPC", "0.3"), V03)):
        if key in offered:
            return Endpoint(offered[key], variant)
    return None


def describe(agent: AgentDescription) -> dict[str, Any]:
    """The card of a gateway route: JSON-RPC 1.0 at the route's URL, and the fields a 0.3 client reads."""
    skills = [dict(skill) for skill in agent.skills] or [
        {"id": "chat", "name": agent.name, "description": agent.description or f"Talk to {agent.name}.",
         "tags": ["chat"]}]
    return {
        "name": agent.name,
        "description": agent.description or f"{agent.name}, through agent-gateway",
        "supportedInterfaces": [{"url": agent.url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                                {"url": agent.url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}],
        "version": agent.version,
        "capabilities": {"streaming": agent.streaming, "pushNotifications": False},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
        "url": agent.url, "preferredTransport": "JSONRPC", "protocolVersion": "0.3",
    }


_RPC_CODES: list[tuple[type[GatewayError], int]] = [
    (MethodNotFound, -32601), (MalformedRequest, -32700), (InvalidRequest, -32602), (UnknownDialect, -32600),
]


def error_reply(error: GatewayError, request: Any) -> tuple[int, bytes]:
    """A JSON-RPC error in an HTTP 200, as A2A servers answer: parse errors -32700, unknown methods -32601, invalid
    params -32602; whatever else stopped the request (limits, the upstream) -32603, with the gateway's code as the
    reason."""
    code = next((rpc for kind, rpc in _RPC_CODES if isinstance(error, kind)), -32603)
    rpc_id = request.get("id") if isinstance(request, dict) else None
    data: dict[str, Any] = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": error.code.upper(),
                            "domain": "agent-gateway", "metadata": {"status": str(error.status)}}
    if error.details:
        data["metadata"]["details"] = orjson.dumps(error.details).decode()
    return 200, orjson.dumps({"jsonrpc": "2.0", "id": rpc_id if isinstance(rpc_id, str | int) else None,
                              "error": {"code": code, "message": error.message, "data": [data]}})


DIALECT = Dialect(
    name="a2a",
    history="delta",
    paths=("/a2a",),
    carries=frozenset({"server_tools", "interrupts", "data", "errors", "cancel"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=A2ADecoder,
    new_encoder=new_encoder,
    sniff=sniff,
    sample_request=sample_request,
    judge=judge,
    variants={V03: "delta", REST: "delta", SEND: "delta"},
    expects="an A2A request is JSON-RPC 2.0 calling SendStreamingMessage or SendMessage with params.message",
    discovery_path=CARD_PATH,
    read_discovery=read_discovery,
    describe=describe,
    error_reply=error_reply,
    read_query=read_query,
    answer_query=answer_query,
)
