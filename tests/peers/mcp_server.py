"""A real MCP server on the official Python SDK (`mcp` 2.3.0's MCPServer, once FastMCP) over streamable HTTP at
`/mcp`, whose tools the gateway calls as agents.

    agent(message, conversation_id?)   keeps conversations by id; streams its answer as progress (the text so far);
                                       fails (isError) when the message says "please fail"
    oneshot(message)                   keeps nothing: answers with what it was given (the gateway's history as text)
    status(message)                    progress that are status lines ("step 1/2"), then its answer
    ask(prompt)                        its message in an argument of another name
    fail(message)                      a tool error (isError)
    sleepy(message)                    progress until cancelled; `/cancelled` counts the calls cancelled
`/healthz` says it is up; `/counts` counts the calls cancelled and the sessions open; `POST /forget` forgets every
session, as a server that restarted would.
"""

from __future__ import annotations

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse

server = MCPServer("gateway-peer", instructions="agents as tools, for agent-gateway's tests")
conversations: dict[str, list[str]] = {}
cancelled = 0


@server.tool()
async def agent(message: str, ctx: Context, conversation_id: str | None = None) -> str:
    """A conversational agent: it remembers what each conversation said, and fails when asked to."""
    if "please fail" in message:
        raise ToolError("scripted upstream failure")
    said = conversations.setdefault(conversation_id or "", [])
    said.append(message)
    answer = f"turn {len(said)}: you said {message}"
    if len(said) > 1:
        answer += f" (before: {said[-2]})"
    words = answer.split(" ")
    for index in range(1, len(words) + 1):
        await ctx.report_progress(index, message=" ".join(words[:index]))
        await anyio.sleep(0.01)
    return answer


@server.tool()
async def oneshot(message: str) -> str:
    """Answers with what it was given."""
    return f"heard: {message}"


@server.tool()
async def status(message: str, ctx: Context) -> str:
    """Reports status lines, then answers."""
    for step in (1, 2):
        await ctx.report_progress(step, total=2, message=f"step {step}/2")
    return f"done: {message}"


@server.tool()
async def ask(prompt: str) -> str:
    """Answers a prompt."""
    return f"asked: {prompt}"


@server.tool()
async def fail(message: str) -> str:
    """Always fails."""
    raise ToolError(f"failed on purpose: {message}")


@server.tool()
async def sleepy(message: str, ctx: Context) -> str:
    """Runs until cancelled."""
    try:
        await ctx.report_progress(1, message="sleeping")
        await anyio.sleep(60)
        return "woke up"
    except anyio.get_cancelled_exc_class():
        global cancelled
        cancelled += 1
        raise


@server.custom_route("/healthz", methods=["GET"])
async def healthz(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


@server.custom_route("/counts", methods=["GET"])
async def counts(request: Request) -> JSONResponse:
    return JSONResponse({"cancelled": cancelled, "sessions": len(server.session_manager._server_instances)})


@server.custom_route("/forget", methods=["POST"])
async def forget(request: Request) -> JSONResponse:
    server.session_manager._server_instances.clear()
    return JSONResponse({"forgotten": True})


app = server.streamable_http_app()
