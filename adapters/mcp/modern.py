"""`/mcp` for 2026-07-28 clients (the stateless era), beside the handshake era `endpoint.py` serves. The era is
picked as the SDKs' servers pick it, by the `MCP-Protocol-Version` header: none or a handshake version is the
handshake era (`initialize` opens a session); any other value is this one, where each request stands alone and
carries who its client is in `params._meta`.

```
GET, DELETE                  405 (allow: POST): no session, no stream outside a request
a notification               202 at a version served (no client notification means anything here: a client
                             cancels by closing the call's stream); a JSON-RPC response: 400 -32600
every request, in order      the envelope (_meta protocolVersion and clientCapabilities): 400 -32602 naming what
                             is missing; the headers agree with the body (MCP-Protocol-Version with protocolVersion,
                             Mcp-Method with method, Mcp-Name with a tools/call's name; base64 sentinels decoded,
                             whitespace around a value ignored): 400 -32020; the version served: 400 -32022
                             {supported, requested}
server/discover              the versions both eras speak, the capabilities, serverInfo (in _meta), ttlMs, cacheScope
tools/list                   a tool per route the caller may use, ttlMs 0 and cacheScope private (the list is the
                             caller key's)
tools/call                   a run of the route it names; a retry with inputResponses answers the interrupts an
                             input_required result asked (input_required.py), checked here first: 400 -32602
anything else                404 -32601 (ping, initialize, logging/setLevel: removed in this era)
```
Every result says its `resultType` and the server in `_meta`; a run's log lines go only to a request whose envelope
names a `logLevel`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

import orjson

from gateway.core.capabilities import Answered, AtEndpoint

from .input_required import InvalidAnswer, answers
from .route_tool import described
from .wire import (
    CLIENT_CAPABILITIES,
    HANDSHAKE_VERSIONS,
    HEADER_VERSIONS,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_HEADER,
    METHOD_NOT_FOUND,
    MODERN_VERSIONS,
    NAME_HEADER,
    PROTOCOL_VERSION,
    VERSION_HEADER,
    typed,
)

SUPPORTED_VERSIONS = (*MODERN_VERSIONS, *HANDSHAKE_VERSIONS)
"""What `server/discover` and a version refused name: a client picks the newest of its own among them."""

NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose `Mcp-Name` header must say what their params name."""
HEADER_MISMATCH, UNSUPPORTED_VERSION = -32020, -32022
INSTRUCTIONS = ("Each tool is an agent: call it with a message. A result names its conversation_id: pass it to the "
                "next call to continue the conversation.")

def in_2026(headers: Mapping[str, str]) -> bool:
    """Whether a request is this era's: its version header names no handshake version, as the SDKs' servers tell."""
    version = headers.get(VERSION_HEADER)
    return version is not None and version.strip() not in HEADER_VERSIONS


async def answer_modern(asked: AtEndpoint) -> Answered:
    if asked.method != "POST":
        return Answered(405, headers={"allow": "POST"})
    message = asked.body
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or \
            ("id" in message and not isinstance(message.get("method"), str)):
        return _error(400, INVALID_REQUEST, "Body must be a single JSON-RPC request or notification object")
    if "id" not in message:
        version = asked.headers.get(VERSION_HEADER, "").strip()
        return Answered(202) if version in MODERN_VERSIONS else _unsupported(version, None)
    id, method = message["id"], message["method"]
    refused = _refused(message, asked.headers)
    if refused is not None:
        return refused
    if method == "server/discover":
        return _result(id, {"supportedVersions": list(SUPPORTED_VERSIONS),
                            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
                            "instructions": INSTRUCTIONS, "ttlMs": 0, "cacheScope": "private"})
    if method == "tools/list":
        return _result(id, {"tools": [described(route) for route in asked.routes], "ttlMs": 0,
                            "cacheScope": "private"})
    if method == "tools/call":
        return _call(asked, message)
    return _error(404, METHOD_NOT_FOUND, "Method not found", id, method)


def _refused(message: dict[str, Any], headers: Mapping[str, str]) -> Answered | None:
    """The first of what a request must be that it is not: its envelope, its headers as its body, its version."""
    id, params = message["id"], message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return _error(400, INVALID_PARAMS, f"params._meta must be an object carrying the required {PROTOCOL_VERSION} "
                                           f"and {CLIENT_CAPABILITIES} envelope keys", id)
    if missing := [key for key in (PROTOCOL_VERSION, CLIENT_CAPABILITIES) if key not in meta]:
        return _error(400, INVALID_PARAMS, f"params._meta is missing the required envelope key(s): "
                                           f"{', '.join(missing)}", id)
    version = meta[PROTOCOL_VERSION]
    if _header(headers, VERSION_HEADER) != version:
        return _error(400, HEADER_MISMATCH, f"{VERSION_HEADER} header does not match the request envelope's "
                                            "protocol version", id)
    method = message["method"]
    if _header(headers, METHOD_HEADER) != method:
        return _error(400, HEADER_MISMATCH, f"{METHOD_HEADER} header does not match the request body's method", id)
    named = NAMED.get(method)
    if named is not None and isinstance(params, dict) and params.get(named) is not None and \
            _header(headers, NAME_HEADER) != params[named]:
        return _error(400, HEADER_MISMATCH, f"{NAME_HEADER} header does not match the request body's {named!r} "
                                            "parameter", id)
    if not isinstance(version, str):
        return _error(400, INVALID_PARAMS, "the protocol-version envelope value must be a string", id)
    if version not in MODERN_VERSIONS:
        return _unsupported(version, id)
    return None


def _call(asked: AtEndpoint, message: dict[str, Any]) -> Answered:
    id, params = message["id"], message["params"]
    name = params.get("name")
    if not any(route.name == name for route in asked.routes):
        return _error(400, INVALID_PARAMS, f"Unknown tool: {name}", id)
    arguments = params.get("arguments")
    conversation = arguments.get("conversation_id") if isinstance(arguments, dict) else None
    try:
        answers(name, conversation if isinstance(conversation, str) else None, params.get("inputResponses"),
                params.get("requestState"))
    except InvalidAnswer as refused:
        return _error(400, INVALID_PARAMS, str(refused), id)
    return Answered(run=name)


SENTINEL = re.compile(r"=\?base64\?(.*)\?=")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value as its sender meant it: whitespace around it ignored, a `=?base64?...?=` value decoded
    (None for one that does not decode: it matches nothing)."""
    value = headers.get(name)
    if value is None:
        return None
    value = value.strip()
    sentinel = SENTINEL.fullmatch(value)
    if sentinel is None:
        return value
    try:
        return base64.b64decode(sentinel.group(1), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def _unsupported(requested: Any, id: Any) -> Answered:
    return _error(400, UNSUPPORTED_VERSION, "Unsupported protocol version", id,
                  {"supported": list(SUPPORTED_VERSIONS), "requested": requested})


def _result(id: Any, value: dict[str, Any]) -> Answered:
    body = orjson.dumps({"jsonrpc": "2.0", "id": id, "result": typed(value)})
    return Answered(200, body, {"content-type": "application/json"})


def _error(status: int, code: int, message: str, id: Any = None, data: Any = None) -> Answered:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = orjson.dumps({"jsonrpc": "2.0", "id": id, "error": error})
    return Answered(status, body, {"content-type": "application/json"})
