"""MCP (the Model Context Protocol) over streamable HTTP: each route a tool its clients call with a message, and an
MCP server's tool called as an agent (see docs/dialects/mcp.md)."""

from __future__ import annotations

from typing import Any

from gateway.core.capabilities import HeldCalls, NamedRoutes, OwnErrors, UpstreamSessions
from gateway.core.codec import Dialect, Likeness, Sniff

from .conformance import judge
from .decode import McpDecoder
from .endpoint import PATH, answer
from .eras import session_lost
from .errors import reply
from .request import build_request, parse_request, sample_request
from .session import end_session, open_session
from .tasks import QUERIES_OF_TASKS, new_encoder
from .upstream_questions import answers, waits


def sniff(body: dict[str, Any]) -> Likeness:
    """A JSON-RPC `tools/call` is MCP's own; A2A's JSON-RPC methods are others'."""
    if body.get("jsonrpc") != "2.0":
        return Likeness.FOREIGN
    return Likeness.OWN if body.get("method") == "tools/call" else Likeness.FOREIGN


DIALECT = Dialect(
    name="mcp",
    history="full",
    paths=("/mcp",),
    carries=frozenset({"server_tools", "data", "errors", "tool_errors", "stop_reason"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=McpDecoder,
    new_encoder=new_encoder,
    sniff=Sniff(sniff, 'an mcp request is a JSON-RPC "tools/call" with params.name and params.arguments.message'),
    sample_request=sample_request,
    judge=judge,
    capabilities=(UpstreamSessions(open_session, session_lost, end_session), HeldCalls(waits, answers),
                  OwnErrors(reply), QUERIES_OF_TASKS,
                  NamedRoutes(PATH, ("POST", "GET", "DELETE"), answer, check_origin=True)),
)
