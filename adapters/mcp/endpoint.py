"""`/mcp` as the gateway's MCP server (2025-06-18 and 2025-11-25, the handshake era): what is not a run, answered
here; a `tools/call`, handed to the route it names.

```
initialize                 the version agreed (the client's if spoken, else the latest), a new Mcp-Session-Id
notifications/*, responses 202 (notifications/cancelled: and the call it names is stopped; an answer to an
                           elicitation: kept for the call that waits for it)
ping                       {}
logging/setLevel           {}, the level kept in the session: its calls get log lines at it (tool calls, reasoning)
tools/list                 one tool per route the caller may use: {message, conversation_id?}
tools/call                 a run of the route it names (an unknown one: -32602); with params.task, a task; in a
                           session whose client elicits, one that goes on past an interrupt once the client answered
                           (stream_questions.py); in a session, resumable by Last-Event-ID
tasks/*                    handed to the route the task runs on (tasks.py); tasks/result in a session whose client
                           elicits, continued past the task's questions (task_input.py)
DELETE                     the session forgotten
GET + Last-Event-ID        the rest of a call's stream, from any replica (resumption.py)
GET                        405: no stream for messages outside a call (the gateway has none to send)
```
A request names the session `initialize` opened (404 for one not found: another caller's, or forgotten); a POST
that names none is served without one, as by a server that keeps no sessions (a DELETE or GET must name one: 400).
A request whose protocol version header names no handshake version is 2026-07-28's, handed to `modern.py`.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.capabilities import Answered, AtEndpoint
from gateway.core.ids import new_id

from . import modern, resumption, stream_questions, task_input, tasks
from .elicitation import keep_answer
from .route_tool import described
from .stream_questions import StreamedElicitation
from .task_continued import CONTINUES
from .url_elicitation import takes_urls
from .wire import (
    HANDSHAKE_VERSIONS,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST,
    LEVELS,
    LOG_LEVEL,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    SERVER_INFO,
    SESSION_HEADER,
    VERSION_HEADER,
    takes_forms,
)

PATH = "/mcp"
ENDPOINTS_OWN = frozenset({resumption.STREAM, CONTINUES})
"""Keys of a call that only the endpoint sets (a client's own are dropped)."""


def error(status: int, code: int, message: str, id: Any = None) -> Answered:
    body = {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}
    return Answered(status, orjson.dumps(body), {"content-type": "application/json"})


def result(id: Any, value: dict[str, Any], headers: dict[str, str] | None = None) -> Answered:
    body = orjson.dumps({"jsonrpc": "2.0", "id": id, "result": value})
    return Answered(200, body, {"content-type": "application/json", **(headers or {})})


async def answer(asked: AtEndpoint) -> Answered:
    if modern.in_2026(asked.headers):
        return await modern.answer_modern(asked)
    message = asked.body
    if asked.method == "POST" and isinstance(message, dict) and message.get("method") == "initialize":
        return await _initialize(asked, message)
    session = asked.headers.get(SESSION_HEADER)
    if session is not None and await asked.session(session) is None:  # a cancel still stops the caller's call
        gone = error(404, INVALID_REQUEST, "Session not found")  # (the SDKs' may come after the session's DELETE)
        stop = _cancelled(session, message) if asked.method == "POST" and isinstance(message, dict) else None
        return Answered(gone.status, gone.body, gone.headers, stop=stop)
    if session is None and asked.method != "POST":
        return error(400, INVALID_REQUEST, "Bad Request: Missing session ID")
    session = session or ""
    if asked.method == "DELETE":
        await asked.forget(session)
        return Answered(200)
    if asked.method == "GET" and asked.headers.get("last-event-id"):
        return resumption.resumed(asked.headers["last-event-id"], session, asked.routes)
    if asked.method != "POST":
        return Answered(405, headers={"allow": "POST, DELETE"})
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return error(400, INVALID_REQUEST, "Invalid Request: one JSON-RPC 2.0 message")
    method, id = message.get("method"), message.get("id")
    if method is None or id is None:  # a response to the server, or a notification
        if method is None:
            await keep_answer(asked, session, message)
        return Answered(202, stop=_cancelled(session, message))
    if method == "ping":
        return result(id, {})
    if method == "tools/list":
        kept = await asked.session(session) if session else None
        version = kept.get("version") if kept is not None else asked.headers.get(VERSION_HEADER)
        return result(id, {"tools": [described(route, version) for route in asked.routes]})
    if method == "logging/setLevel":
        params = message.get("params")
        level = params.get("level") if isinstance(params, dict) else None
        if level not in LEVELS:
            return error(200, INVALID_PARAMS, f"level must be one of {', '.join(LEVELS)}", id)
        kept = await asked.session(session) if session else None
        if kept is not None:
            await asked.keep(session, {**kept, "logLevel": level})
        return result(id, {})
    if method == "tools/call":
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if not any(route.name == name for route in asked.routes):
            return error(200, INVALID_PARAMS, f"Unknown tool: {name}", id)
        kept = await asked.session(session) if session else None
        level = kept.get("logLevel") if kept is not None else None
        message = {k: v for k, v in message.items() if k not in ENDPOINTS_OWN}  # only the endpoint sets them
        body = _with_log_level(message, level)
        then = None
        if kept is not None and isinstance(name, str):  # a session's: its stream may be resumed, across questions
            forms = takes_forms(kept.get("capabilities"))
            call = orjson.loads(body) if body else message
            call = resumption.streamed(call, session, name, stream_questions.asks(kept) if forms else None,
                                       links=takes_urls(kept.get("capabilities"), kept.get("version")))
            body = orjson.dumps(call)
            then = StreamedElicitation(asked, session, kept, call) if forms else None
        return Answered(run=name, run_key=f"{session}:{id}", body=body or orjson.dumps(message), then=then,
                        outlives=then is not None, stopped=orjson.dumps(
                            {"jsonrpc": "2.0", "id": id, "error": {"code": REQUEST_CANCELLED,
                                                                   "message": "Request cancelled"}}))
    if method in tasks.METHODS:
        return await task_input.answering(tasks.routed(message, session, asked.routes), asked, session, message)
    return error(200, METHOD_NOT_FOUND, "Method not found", id)


async def _initialize(asked: AtEndpoint, message: dict[str, Any]) -> Answered:
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    asked_for = params.get("protocolVersion")
    version = asked_for if asked_for in HANDSHAKE_VERSIONS else LATEST
    session = new_id("mcps")
    capabilities = params.get("capabilities")
    await asked.keep(session, {"version": version,
                               "capabilities": capabilities if isinstance(capabilities, dict) else {}})
    offered: dict[str, Any] = {"tools": {"listChanged": False}, "logging": {}}
    if tasks.offered(version):
        offered["tasks"] = tasks.CAPABILITY
    return result(message.get("id"), {"protocolVersion": version, "capabilities": offered, "serverInfo": SERVER_INFO},
                  {SESSION_HEADER: session})


def _with_log_level(message: dict[str, Any], level: Any) -> bytes:
    """The call as the route reads it, with the session's log level in its `_meta` where the 2026 envelope puts
    it; empty (the call as it came) when the session set none or the call names its own."""
    if not isinstance(level, str):
        return b""
    params = message["params"]
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    if LOG_LEVEL in meta:
        return b""
    return orjson.dumps({**message, "params": {**params, "_meta": {**meta, LOG_LEVEL: level}}})


def _cancelled(session: str, message: dict[str, Any]) -> str | None:
    """The run a `notifications/cancelled` stops, by the key its call was given."""
    if message.get("method") != "notifications/cancelled":
        return None
    params = message.get("params")
    request_id = params.get("requestId") if isinstance(params, dict) else None
    return f"{session}:{request_id}" if request_id is not None else None
