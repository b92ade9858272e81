"""Opening a session with an MCP server before a tool call (2025-06-18 and 2025-11-25: the handshake era):
`initialize`, `notifications/initialized`, then `tools/list` to learn whether the tool keeps conversations.

```
initialize ──▶ result (protocolVersion) + Mcp-Session-Id ──▶ notifications/initialized (202)
           ──▶ tools/list (each page) ──▶ the tool's inputSchema has conversation_id? variant `threaded`
```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from gateway.core.capabilities import Exchanged, Opened
from gateway.core.codec import UpstreamRequest
from gateway.core.errors import UpstreamError, UpstreamRefused
from gateway.core.ids import new_id
from gateway.core.turn import Turn

from .request import CONVERSATION, THREADED, tool_of
from .wire import (
    ACCEPT,
    HANDSHAKE_VERSIONS,
    LATEST,
    SESSION_HEADER,
    VERSION_HEADER,
    answer_to,
    messages_in,
    notification,
    request,
)

Send = Callable[[UpstreamRequest], Awaitable[Exchanged]]

CLIENT_INFO = {"name": "agent-gateway", "version": "1"}
MAX_PAGES = 20
"""Pages of `tools/list` read looking for the tool: a server that pages on past this is not searched further."""


async def open_session(send: Send, turn: Turn) -> Opened:
    """A session for this turn's tool call: the headers each of its requests carries, and the tool's variant."""
    headers = {"content-type": "application/json", "accept": ACCEPT}
    initialized, answered = await _ask(send, headers, "initialize", {"protocolVersion": LATEST,
                                                                     "capabilities": {}, "clientInfo": CLIENT_INFO})
    version = initialized.get("protocolVersion")
    if version not in HANDSHAKE_VERSIONS:
        raise UpstreamError(f"the MCP server speaks protocol version {version!r}; the gateway speaks "
                            f"{', '.join(HANDSHAKE_VERSIONS)}")
    headers[VERSION_HEADER] = version
    if session := answered.headers.get(SESSION_HEADER):  # none from a server that keeps no sessions
        headers[SESSION_HEADER] = session
    said = await send(UpstreamRequest(notification("notifications/initialized"), dict(headers)))
    if said.status >= 300:
        raise UpstreamRefused(said.status)
    tool, _ = tool_of(turn.agent)
    schema = await _input_schema(send, headers, tool)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    threaded = isinstance(properties, dict) and CONVERSATION in properties
    return Opened({k: v for k, v in headers.items() if k in (VERSION_HEADER, SESSION_HEADER)},
                  THREADED if threaded else None)


async def _ask(send: Send, headers: dict[str, str], method: str, params: dict[str, Any]
               ) -> tuple[dict[str, Any], Exchanged]:
    """The result of one request in the session and the answer it came in, or the upstream's refusal as an
    error."""
    id = new_id("rpc")
    answered = await send(UpstreamRequest(request(id, method, params), dict(headers)))
    if answered.status >= 300:
        raise UpstreamRefused(answered.status)
    answer = answer_to(messages_in(answered.body, answered.headers.get("content-type", "")), id)
    if answer is None:
        raise UpstreamError(f"the MCP server did not answer {method}")
    error = answer.get("error")
    if error is not None or not isinstance(answer.get("result"), dict):
        message = error.get("message") if isinstance(error, dict) else None
        raise UpstreamError(f"the MCP server refused {method}: {message or error}")
    return answer["result"], answered


async def _input_schema(send: Send, headers: dict[str, str], tool: str) -> Any:
    """The tool's input schema from `tools/list`; None when it is not listed (the call then says what the server
    makes of it: an unknown tool, as a protocol error or a result with `isError`)."""
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        listed, _ = await _ask(send, headers, "tools/list", {"cursor": cursor} if cursor else {})
        tools = listed.get("tools")
        for found in tools if isinstance(tools, list) else ():
            if isinstance(found, dict) and found.get("name") == tool:
                return found.get("inputSchema")
        cursor = listed.get("nextCursor") if isinstance(listed.get("nextCursor"), str) else None
        if cursor is None:
            break
    return None
