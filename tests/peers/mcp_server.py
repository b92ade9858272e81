"""A real MCP server on the official Python SDK (`mcp` 2.3.0's MCPServer, once FastMCP) over streamable HTTP at
`/mcp`, whose tools the gateway calls as agents.

    agent(message, conversation_id?)   keeps conversations by id; streams its answer as progress (the text so far);
                                       fails (isError) when the message says "please fail"; asks to approve (an
                                       input_required form, 2026-07-28) when it says "please approve"
    oneshot(message)                   keeps nothing: answers with what it was given (the gateway's history as text)
    status(message)                    progress that are status lines ("step 1/2"), then its answer
    ask(prompt)                        its message in an argument of another name
    fail(message)                      a tool error (isError)
    sleepy(message)                    progress until cancelled; `/cancelled` counts the calls cancelled
    confirm(message)                   asks the user to confirm by elicitation (a resolver: `input_required` on
                                       2026-07-28, an `elicitation/create` on the call's stream on 2025), then
                                       says what they answered
    greet(message)                     asks the user's name (a form of one field, by a resolver), then greets them
    open_link(message)                 asks the user to open a link by an `input_required` result in URL mode
                                       (2026-07-28), then says the action they answered
    pay(message)                       needs a link opened first: the -32042 error (URL elicitation required) the
                                       first time for a message, then "MESSAGE: paid"
    sign_in(message)                   asks the user to open a link by URL-mode elicitation (2025: on the call's
                                       stream; `notifications/elicitation/complete` once accepted), then says what
                                       they answered
Under `/legacy` the same server as one of the 2025 protocol only (mcp 1.x, say) answers a 2026-07-28 request: a 400.
`/healthz` says it is up; `/counts` counts the calls cancelled and the sessions open; `POST /forget` forgets every
session, as a server that restarted would.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from mcp import UrlElicitationRequiredError
from mcp.server import MCPServer
from mcp.server.elicitation import AcceptedUrlElicitation
from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitRequestURLParams, InputRequiredResult
from pydantic import BaseModel, Field
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import Receive, Scope, Send

server = MCPServer("gateway-peer", instructions="agents as tools, for agent-gateway's tests")
conversations: dict[str, list[str]] = {}
cancelled = 0


APPROVAL_FORM = {"type": "object", "properties": {"approved": {"type": "boolean", "description": "Go ahead?"}},
                 "required": ["approved"]}


@server.tool()
async def agent(message: str, ctx: Context, conversation_id: str | None = None) -> Any:
    """A conversational agent: it remembers what each conversation said, fails when asked to, and asks first
    (an `input_required` form, 2026-07-28) when asked to approve."""
    approval = (ctx.input_responses or {}).get("approval")
    if "please approve" in message and approval is None:
        return InputRequiredResult(input_requests={"approval": ElicitRequest(params=ElicitRequestFormParams(
            message="Delete /tmp/demo?", requested_schema=APPROVAL_FORM))}, request_state="asked-to-approve")
    if "please fail" in message:
        raise ToolError("scripted upstream failure")
    said = conversations.setdefault(conversation_id or "", [])
    said.append(message)
    answer = f"turn {len(said)}: you said {message}"
    if approval is not None:
        content = getattr(approval, "content", None) or {}
        approved = getattr(approval, "action", None) == "accept" and content.get("approved") is True
        answer += ": deleted /tmp/demo" if approved else ": kept /tmp/demo"
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


class Confirm(BaseModel):
    ok: bool = Field(description="Go ahead?")
    note: str = Field("", description="Anything to add")


async def _ask_to_confirm(message: str) -> Elicit[Confirm]:
    return Elicit(f"Really {message}?", Confirm)


@server.tool()
async def confirm(message: str, answer: Annotated[ElicitationResult[Confirm], Resolve(_ask_to_confirm)]) -> str:
    """Does what it is told once the user confirms it."""
    match answer:
        case AcceptedElicitation(data=Confirm(ok=True, note=note)):
            return f"{message}: done" + (f" ({note})" if note else "")
        case AcceptedElicitation():
            return f"{message}: not confirmed"
        case DeclinedElicitation():
            return f"{message}: declined"
        case CancelledElicitation():
            return f"{message}: cancelled"
    return f"{message}: no answer"


SIGN_IN_URL = "https://auth.example.com/authorize?client=gateway-peer"


@server.tool()
async def sign_in(message: str, ctx: Context) -> str:
    """Asks the user to sign in at a URL (the credentials never pass through the client), then goes on."""
    elicitation = f"signin-{len(message)}"
    answer = await ctx.elicit_url(f"Sign in to go on with {message}", SIGN_IN_URL, elicitation)
    match answer:
        case AcceptedUrlElicitation():
            await ctx.request_context.session.send_elicit_complete(elicitation, ctx.request_id)
            return f"{message}: signed in"
        case DeclinedElicitation():
            return f"{message}: declined"
    return f"{message}: cancelled"


@server.tool()
async def open_link(message: str, ctx: Context) -> Any:
    """Asks the user to open a link by an `input_required` result in URL mode (2026-07-28 only), then says what they
    answered."""
    answered = (ctx.input_responses or {}).get("link")
    if answered is None:
        return InputRequiredResult(input_requests={"link": ElicitRequest(params=ElicitRequestURLParams(
            message=f"Open this to go on with {message}", url=SIGN_IN_URL, elicitation_id="open-1"))},
            request_state="asked-to-open")
    return f"{message}: {getattr(answered, 'action', answered)}"


PAY_URL = "https://pay.example.com/checkout?for=gateway-peer"
asked_to_pay: set[str] = set()


@server.tool()
async def pay(message: str) -> str:
    """Needs the user to pay at a link first, which it says by the error that asks for URL elicitation (any era);
    called again for the same message, it goes on."""
    if message not in asked_to_pay:
        asked_to_pay.add(message)
        raise UrlElicitationRequiredError([ElicitRequestURLParams(
            message=f"Pay for {message} first", url=PAY_URL, elicitation_id=f"pay-{len(asked_to_pay)}")])
    return f"{message}: paid"


class Named(BaseModel):
    name: str = Field(description="Your name")


async def _ask_name(message: str) -> Elicit[Named]:
    return Elicit("Who is asking?", Named)


@server.tool()
async def greet(message: str, answer: Annotated[ElicitationResult[Named], Resolve(_ask_name)]) -> str:
    """Greets the user by the name a form of one field asks for."""
    match answer:
        case AcceptedElicitation(data=Named(name=name)):
            return f"{message}, {name}"
        case DeclinedElicitation():
            return f"{message}: declined"
    return f"{message}: cancelled"


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


mcp_app = server.streamable_http_app()


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """The server; under `/legacy`, as a server that speaks only the 2025 protocol answers a 2026-07-28 request."""
    if scope["type"] == "http" and scope["path"].startswith("/legacy/"):
        scope = {**scope, "path": scope["path"].removeprefix("/legacy"),
                 "raw_path": scope.get("raw_path", b"").removeprefix(b"/legacy")}
        version = Headers(scope=scope).get("mcp-protocol-version", "")
        if version.strip() not in ("", "2025-11-25", "2025-06-18", "2025-03-26"):
            refusal = JSONResponse({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": f"Bad Request: Unsupported protocol version: {version}"}}, status_code=400)
            await refusal(scope, receive, send)
            return
    await mcp_app(scope, receive, send)
