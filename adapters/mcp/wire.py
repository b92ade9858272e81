"""MCP's JSON-RPC over streamable HTTP, as both sides of the gateway write and read it: the protocol versions it
speaks, the headers, and JSON-RPC messages in an HTTP body (one JSON object, or SSE `message` events)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from gateway.core.sse import SSEDecoder

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18")
"""The handshake versions the gateway speaks, newest first: what it offers an upstream, and accepts from a client."""
LATEST = HANDSHAKE_VERSIONS[0]
HEADER_VERSIONS = (*HANDSHAKE_VERSIONS, "2025-03-26")
"""What a handshake-era request's `MCP-Protocol-Version` may say: the SDKs and the conformance suite send 2025-03-26
too. Any other value is 2026-07-28's era."""
MODERN_VERSIONS = ("2026-07-28",)
"""The stateless era's versions (`modern.py` serves it, `modern_upstream.py` speaks it to an upstream)."""
MODERN = MODERN_VERSIONS[0]
METHOD_HEADER, NAME_HEADER = "mcp-method", "mcp-name"
"""The stateless era's headers: every request's method, and the tool a `tools/call` names (checked against the
body)."""

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
ACCEPT = "application/json, text/event-stream"
"""A client MUST accept both: a server answers a request with one JSON body or an SSE stream, as it likes."""

LOG_LEVEL = "io.modelcontextprotocol/logLevel"
"""Where a request's `_meta` names the log level its log lines go at (2026-07-28's envelope; a 2025 session's
`logging/setLevel` is put there for the call)."""
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""RFC 5424's, least severe first."""

SERVER_INFO = {"name": "agent-gateway", "version": "1"}
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
"""Where a 2026-07-28 result's `_meta` names the server that gave it."""

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
"""Where a 2026-07-28 request's `_meta` envelope names its version and its client's capabilities."""

ANSWERS = "io.agent-gateway/answers"
"""Where a call's `_meta` holds answers to the interrupts its conversation waits on ([{interruptId, status,
payload}]): what a client's answers to elicitation make of the call that goes on (`elicitation.py`)."""
PROGRESS = "io.agent-gateway/progress"
"""In a call's `_meta`, the progress its token was given already (its notifications count on from it); in an
interrupted result's, the progress it was given."""
SAID = "io.agent-gateway/said"
"""In a call's `_meta`, the text its answer goes on from (the run before, which asked); in an interrupted result's,
how much of its text the agent said (the question follows)."""
INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32600, -32601, -32602
REQUEST_CANCELLED = -32800
URL_ELICITATION_REQUIRED = -32042
"""A server's error that says the call needs the links in its `data.elicitations` opened first (2025-11-25)."""
"""The error a server still sends on a call's stream after a client cancelled it."""


def request(id: str | int, method: str, params: Mapping[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return orjson.dumps(message)


def notification(method: str, params: Mapping[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return orjson.dumps(message)


def takes_forms(capabilities: Any) -> bool:
    """Whether a client's capabilities take an `elicitation/create` form (`{}` is forms only; `{"url": {}}` no
    form)."""
    declared = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
    return isinstance(declared, dict) and (not declared or "form" in declared)


def typed(result: dict[str, Any], result_type: str = "complete") -> dict[str, Any]:
    """A result as 2026-07-28 writes it: its type, and the server that gave it."""
    return {**result, "resultType": result_type, "_meta": {SERVER_INFO_KEY: SERVER_INFO}}


def messages_in(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a whole answer: one JSON body, or the `data` of each SSE event (an answer to a
    request a server chose to stream). What is not a JSON object is left out."""
    if "text/event-stream" not in content_type:
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return []
        return [value] if isinstance(value, dict) else []
    messages: list[dict[str, Any]] = []
    events = SSEDecoder(max_frame=len(body) + 1)
    for data in events.feed(body) + events.flush():
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            messages.append(value)
    return messages


def answer_to(messages: list[dict[str, Any]], id: str | int) -> dict[str, Any] | None:
    """The response to request `id` among `messages`."""
    for message in messages:
        if message.get("id") == id and ("result" in message or "error" in message):
            return message
    return None
