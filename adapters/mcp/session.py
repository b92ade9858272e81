"""Opening a session with an MCP server before a tool call: `server/discover` says whether it speaks 2026-07-28
(no session: each request stateless, `modern_upstream.py`); if not, the handshake era's (2025-06-18 and 2025-11-25)
`initialize` and `notifications/initialized`; then `tools/list`, to learn whether the tool keeps conversations.

```
server/discover ──▶ 2026-07-28 listed ───────────────────────────────────────────────────┐
                └─▶ else: initialize ──▶ result (protocolVersion) + Mcp-Session-Id        │
                                     ──▶ notifications/initialized (202) ─────────────────┴─▶ tools/list (each page)
   ──▶ the tool's inputSchema has conversation_id? variant `threaded` (`2026-07-28+threaded` in that era)
```
Asking first is the research's "dual-era client": a server that serves both eras (mcp 2.3.0) is spoken to in the
newer, whose questions to the user (`input_required`) wait for the client's answer without holding the call open.
What it answered is remembered by the upstream's URL (`eras.py`): the next conversation's session skips the asking.
A session the gateway lets go is ended with a `DELETE` (`end_session`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from gateway.core.capabilities import Exchanged, Opened
from gateway.core.codec import UpstreamRequest
from gateway.core.errors import UpstreamError, UpstreamRefused
from gateway.core.ids import new_id
from gateway.core.turn import Turn

from .eras import CHANGED, KNOWN
from .modern_upstream import CAPABILITIES, modern_request, speaks_modern
from .request import CONVERSATION, tool_of, variant_of
from .wire import (
    ACCEPT,
    HANDSHAKE_VERSIONS,
    LATEST,
    MODERN,
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


async def open_session(send: Send, turn: Turn, upstream: str) -> Opened:
    """A session for this turn's tool call: the headers each of its requests carries, and the tool's variant. The
    era the upstream spoke last time is tried first (`eras.py`); a refusal that says it changed asks it again."""
    known = KNOWN.modern(upstream)
    modern = known if known is not None else speaks_modern(await _discovered(send))
    try:
        opened = await _open(send, turn, modern)
    except UpstreamError as exc:
        if known is None or not _changed(exc):
            raise
        KNOWN.forget(upstream)
        return await open_session(send, turn, upstream)
    KNOWN.remember(upstream, modern)
    return opened


def _changed(refusal: UpstreamError) -> bool:
    """Whether a request's refusal may say the server no longer speaks the era it was asked in: an HTTP status
    a server gives a request of another era, or a JSON-RPC refusal of it (not a timeout, nor a server that fails)."""
    if isinstance(refusal, UpstreamRefused):
        return refusal.upstream_status in CHANGED
    return type(refusal) is UpstreamError


async def _open(send: Send, turn: Turn, modern: bool) -> Opened:
    tool, _ = tool_of(turn.agent)
    if modern:
        schema = await _input_schema(lambda method, params: _ask(send, modern_request(method, params)), tool)
        return Opened({VERSION_HEADER: MODERN}, variant_of(True, _threaded(schema)))
    headers = {"content-type": "application/json", "accept": ACCEPT}
    initialize = request(new_id("rpc"), "initialize", {"protocolVersion": LATEST, "capabilities": CAPABILITIES,
                                                       "clientInfo": CLIENT_INFO})
    initialized, answered = await _ask(send, UpstreamRequest(initialize, dict(headers)))
    version = initialized.get("protocolVersion")
    if version not in HANDSHAKE_VERSIONS:
        raise UpstreamError(f"the MCP server speaks protocol version {version!r}; the gateway speaks "
                            f"{', '.join((MODERN, *HANDSHAKE_VERSIONS))}")
    headers[VERSION_HEADER] = version
    if session := answered.headers.get(SESSION_HEADER):  # none from a server that keeps no sessions
        headers[SESSION_HEADER] = session
    said = await send(UpstreamRequest(notification("notifications/initialized"), dict(headers)))
    if said.status >= 300:
        raise UpstreamRefused(said.status)
    schema = await _input_schema(
        lambda method, params: _ask(send, UpstreamRequest(request(new_id("rpc"), method, params), dict(headers))),
        tool)
    return Opened({k: v for k, v in headers.items() if k in (VERSION_HEADER, SESSION_HEADER)},
                  variant_of(False, _threaded(schema)))


def end_session(opened: Opened) -> UpstreamRequest | None:
    """The `DELETE` that ends a session the gateway lets go (the spec's "clients that no longer need a particular
    session SHOULD send" it); None for a server that gave no session id (2026-07-28's, or one that keeps none)."""
    if SESSION_HEADER not in opened.headers:
        return None
    return UpstreamRequest(b"", dict(opened.headers), streams=False, method="DELETE")


def _threaded(schema: Any) -> bool:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(properties, dict) and CONVERSATION in properties


async def _discovered(send: Send) -> dict[str, Any] | None:
    """What `server/discover` says of the server; None from one that does not serve it (a server of the handshake
    era answers a request outside a session, or of a version it does not know, with a 400)."""
    asked = modern_request("server/discover", {})
    answered = await send(asked)
    if answered.status >= 300:
        return None
    answer = answer_to(messages_in(answered.body, answered.headers.get("content-type", "")),
                       orjson.loads(asked.body)["id"])
    result = answer.get("result") if answer is not None else None
    return result if isinstance(result, dict) else None


async def _ask(send: Send, asked: UpstreamRequest) -> tuple[dict[str, Any], Exchanged]:
    """The result of one request in the session and the answer it came in, or the upstream's refusal as an
    error."""
    sent = orjson.loads(asked.body)
    answered = await send(asked)
    if answered.status >= 300:
        raise UpstreamRefused(answered.status)
    answer = answer_to(messages_in(answered.body, answered.headers.get("content-type", "")), sent["id"])
    if answer is None:
        raise UpstreamError(f"the MCP server did not answer {sent['method']}")
    error = answer.get("error")
    if error is not None or not isinstance(answer.get("result"), dict):
        message = error.get("message") if isinstance(error, dict) else None
        raise UpstreamError(f"the MCP server refused {sent['method']}: {message or error}")
    return answer["result"], answered


async def _input_schema(ask: Callable[[str, dict[str, Any]], Awaitable[tuple[dict[str, Any], Exchanged]]],
                        tool: str) -> Any:
    """The tool's input schema from `tools/list`; None when it is not listed (the call then says what the server
    makes of it: an unknown tool, as a protocol error or a result with `isError`)."""
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        listed, _ = await ask("tools/list", {"cursor": cursor} if cursor else {})
        tools = listed.get("tools")
        for found in tools if isinstance(tools, list) else ():
            if isinstance(found, dict) and found.get("name") == tool:
                return found.get("inputSchema")
        cursor = listed.get("nextCursor") if isinstance(listed.get("nextCursor"), str) else None
        if cursor is None:
            break
    return None
