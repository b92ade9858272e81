"""2026-07-28 as the gateway speaks it to an upstream: no handshake and no session, each request carrying the
envelope in its `_meta` and its method (and tool) in headers; `server/discover` says whether a server speaks it.

```
server/discover ──▶ a result listing 2026-07-28 ──▶ the modern era: each request stateless, with the envelope
                └─▶ anything else (a 400 "Missing session ID", a version refused, a method not found) ──▶ initialize
```
A server that serves both eras (mcp 2.3.0's MCPServer) is spoken to in 2026-07-28: its tools ask for input by
`input_required` results the gateway can hold across turns (`upstream_questions.py`), rather than by requests on a
call's stream that wait for the answer.
"""

from __future__ import annotations

import base64
from typing import Any

from gateway.core.codec import UpstreamRequest
from gateway.core.ids import new_id

from .wire import (
    ACCEPT,
    CLIENT_CAPABILITIES,
    METHOD_HEADER,
    MODERN,
    NAME_HEADER,
    PROTOCOL_VERSION,
    VERSION_HEADER,
    request,
)

CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
"""What the gateway can ask its client for: a form (an interrupt with a response schema) or a link to open (an
interrupt whose payload is the URL); never sampling or roots."""
CLIENT_INFO = {"name": "agent-gateway", "version": "1"}


def envelope(meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request's `_meta`: what it had, and the version, capabilities and client every 2026-07-28 request names."""
    return {**(meta or {}), PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: CAPABILITIES, CLIENT_INFO_KEY: CLIENT_INFO}


def modern_request(method: str, params: dict[str, Any], name: str | None = None) -> UpstreamRequest:
    """A 2026-07-28 request: the envelope in its params' `_meta`, and the headers the server checks it by."""
    body = request(new_id("rpc"), method, {**params, "_meta": envelope(params.get("_meta"))})
    headers = {"content-type": "application/json", "accept": ACCEPT, VERSION_HEADER: MODERN, METHOD_HEADER: method}
    if name is not None:
        headers[NAME_HEADER] = header_value(name)
    return UpstreamRequest(body, headers)


def header_value(value: str) -> str:
    """A value as a 2026-07-28 header carries it: as it is, or base64 of its UTF-8 in `=?base64?...?=` when it is
    not plain ASCII or has spaces at its ends (which a header would lose)."""
    if value.isascii() and value.isprintable() and value == value.strip():
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


def speaks_modern(discovered: dict[str, Any] | None) -> bool:
    """Whether `server/discover`'s result lists 2026-07-28 among the versions the server speaks."""
    versions = discovered.get("supportedVersions") if discovered is not None else None
    return isinstance(versions, list) and MODERN in versions
