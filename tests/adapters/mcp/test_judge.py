"""MCP's judge (`adapters/mcp/conformance.py`, what `agent-gateway check` holds an MCP answer to) against the
official clients: a server answers a `tools/call` with each answer of a corpus, valid and broken, and
`@modelcontextprotocol/sdk` 1.32.2's TypeScript `Client` and `mcp` 2.3.0's Python `Client` call it. The judge finds
a violation exactly where a client fails on the answer (either: the two differ), and what the spec asks and no client
enforces is a note.
Install first: `.venv/bin/python tests/peers_env.py` and `npm ci --prefix tests/clients`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from node_clients import run_mcp
from peers_env import run_mcp_client
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.mcp.conformance import judge
from gateway.core.conformance import Answer

SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}
Said = Callable[[Any, Any], list[dict[str, Any] | str]]
"""A case's messages on the call's stream, given the call's id and progress token (a str: a frame as it is)."""


def progress(token: Any, at: float, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": at, "message": message}}


def result(id: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": value}


TEXT = {"content": [{"type": "text", "text": "hello"}], "isError": False}

CASES: dict[str, tuple[dict[str, str], Said, list[str]]] = {
    "streamed": (SSE, lambda id, token: [progress(token, 1, "he"), progress(token, 2, "hello"), result(id, TEXT)],
                 []),
    "one-body": (JSON, lambda id, token: [result(id, TEXT)], []),
    "an-error-response": (SSE, lambda id, token: [{"jsonrpc": "2.0", "id": id,
                                                   "error": {"code": -32602, "message": "Unknown tool"}}], []),
    "a-tool-error": (SSE, lambda id, token: [result(id, {**TEXT, "isError": True})], []),
    "content-not-a-list": (SSE, lambda id, token: [result(id, {"content": "hello"})], ["result-content"]),
    "no-content": (SSE, lambda id, token: [result(id, {"isError": False})], ["result-content"]),
    "a-block-without-a-type": (SSE, lambda id, token: [result(id, {"content": [{"text": "hello"}]})],
                               ["content-block"]),
    "a-text-block-whose-text-is-a-number": (SSE, lambda id, token: [result(id, {"content": [{"type": "text",
                                                                                             "text": 5}]})],
                                            ["text-block"]),
    "is-error-a-string": (SSE, lambda id, token: [result(id, {**TEXT, "isError": "yes"})], ["is-error"]),
    "result-and-error": (SSE, lambda id, token: [{"jsonrpc": "2.0", "id": id, "result": TEXT,
                                                  "error": {"code": 1, "message": "x"}}], ["response-shape"]),
    "no-response": (SSE, lambda id, token: [progress(token, 1, "he")], ["no-response"]),
    "a-body-that-is-not-json": (JSON, lambda id, token: ["{not json"], ["not-json"]),
    "progress-going-back": (SSE, lambda id, token: [progress(token, 2, "hello"), progress(token, 1, "he"),
                                                    result(id, TEXT)], []),
    "progress-not-a-number": (SSE, lambda id, token: [progress(token, "half", "he"), result(id, TEXT)], []),
    "a-frame-that-is-not-json-rpc": (SSE, lambda id, token: [{"hello": 1}, result(id, TEXT)], ["not-json-rpc"]),
    "a-message-after-the-response": (SSE, lambda id, token: [result(id, TEXT), progress(token, 3, "late")], []),
}
"""Each answer, a tool of its name: its content type, its messages, the rules the judge finds broken in it (progress
going back or not a number, and a message after the response, are notes: the spec asks, no client enforces)."""


def body_of(headers: dict[str, str], said: list[dict[str, Any] | str]) -> bytes:
    frames = [item.encode() if isinstance(item, str) else orjson.dumps(item) for item in said]
    if headers is JSON:
        return frames[0]
    return b"".join(b"event: message\ndata: " + frame + b"\n\n" for frame in frames)


def corpus_server() -> Starlette:
    """`/mcp`: a session, a tool per case, and the case's answer to a call of it."""

    async def mcp(request: Request) -> Response:
        if request.method == "DELETE":
            return Response(status_code=200)
        if request.method != "POST":
            return Response(status_code=405)
        message = orjson.loads(await request.body())
        id, method = message.get("id"), message.get("method")
        if id is None:
            return Response(status_code=202)
        if method == "initialize":
            answer = result(id, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                                 "serverInfo": {"name": "corpus", "version": "1"}})
            return Response(orjson.dumps(answer), headers={**JSON, "mcp-session-id": "corpus-session"})
        if method == "tools/list":
            tools = [{"name": case, "description": "a case", "inputSchema": {"type": "object"}} for case in CASES]
            return Response(orjson.dumps(result(id, {"tools": tools})), headers=JSON)
        headers, said, _ = CASES[message["params"]["name"]]
        token = (message["params"].get("_meta") or {}).get("progressToken")
        return Response(body_of(headers, said(id, token)), headers=headers)

    return Starlette(routes=[Route("/mcp", mcp, methods=["POST", "GET", "DELETE"])])


PLAN = [{"call": case, "arguments": {"message": "hi"}} for case in CASES]


@pytest.fixture(scope="module")
def errors() -> Iterator[dict[str, dict[str, str | None]]]:
    """What each client said of each case's answer, a call each in one session: the error it raised, or None."""
    with Served(corpus_server()) as served:
        typescript = run_mcp(f"{served.url}/mcp", PLAN, timeout_s=3)
        assert typescript["error"] is None, typescript["error"]
        python = run_mcp_client(f"{served.url}/mcp", PLAN, timeout=3)
        assert python.error is None, python.error
    yield {client: {case: step.get("error") for case, step in zip(CASES, steps, strict=True)}
           for client, steps in (("typescript", typescript["steps"]), ("python", python.steps))}


def failed(error: str | None) -> bool:
    """Whether a client failed on the answer: a JSON-RPC error it read as the server's is an answer it took."""
    return error is not None and "Unknown tool" not in error


@pytest.mark.parametrize("case", list(CASES))
def test_the_judge_finds_a_violation_where_a_client_fails_on_the_answer(errors: dict[str, dict[str, str | None]],
                                                                        case: str) -> None:
    headers, said, rules = CASES[case]
    found = judge(Answer(200, headers, body_of(headers, said(1, "token"))))
    assert [v.rule for v in found if not v.convention] == rules
    clients = {client: said[case] for client, said in errors.items()}
    assert any(failed(error) for error in clients.values()) == bool(rules), clients
