"""Helpers for end-to-end tests: request bodies as each dialect's client sends them, reading replies, and watching
the relay's direct path."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from helpers import decode, encode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters import registry
from gateway.core.events import (
    Event,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.ids import new_id
from gateway.core.turn import Message, Tool, Turn
from gateway.server.relay import Relay
from gateway.upstream.http1 import Offer

DIALECTS = list(registry.DIALECTS)


def watch_offers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Offer, object]]:
    """Every outcome of `Relay._offered` from now on (TAKEN: written in the upstream's read callback; DECLINED: left
    to the run's task; TAKEN_AND_WAKE: handed to it), with what was handed. For gateways served in this process."""
    seen: list[tuple[Offer, object]] = []
    offered = Relay._offered

    def watching(relay: Relay, chunk: bytes) -> Offer:
        took = offered(relay, chunk)
        seen.append((took, relay._handed_back))
        return took

    monkeypatch.setattr(Relay, "_offered", watching)
    return seen


def user_message(dialect: str, text: str) -> dict[str, Any]:
    if dialect == "ag-ui":
        return {"id": new_id("u"), "role": "user", "content": text}
    if dialect == "vercel":
        return {"id": new_id("u"), "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"role": "user", "content": text}


def request_body(dialect: str, messages: list[dict[str, Any]], conversation: str = "conv-1",
                 tools: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    """A request as the dialect's real client shapes it (`@ag-ui/client` 1.0.0, `ai` 7.0.173's `DefaultChatTransport`,
    cloudbase-agent-server 0.1.1, the Connexity platform's `AgentRequest`); for a dialect without a client shape here,
    as the dialect's own request builder writes it."""
    if dialect == "ag-ui":
        return {"threadId": conversation, "runId": new_id("run"), "protocolVersion": "1.0", "state": {},
                "messages": messages, "tools": tools or [], "context": [], "forwardedProps": {}, **extra}
    if dialect == "ag-kit":
        body = {"conversationId": conversation, "messages": messages, **extra}
        if tools:
            body["tools"] = [{**t, "parameters": orjson.dumps(t["parameters"]).decode()} for t in tools]
        return body
    if dialect == "vercel":
        return {"id": conversation, "messages": messages, "trigger": "submit-message", **extra}
    if dialect == "agent-respond":
        return {"messages": messages, "metadata": {"test_case_id": conversation, "turn_index": len(messages) - 1},
                **extra}
    # What a client of a dialect whose servers keep the history sends: its new messages (an A2A client's one
    # message), not a history for a new conversation.
    turn = Turn(conversation_id=conversation, history=registry.get(dialect).history,
                messages=[Message(m["role"], m["content"], new_id("msg")) for m in messages],
                tools=[Tool(t["name"], t.get("description", ""), t["parameters"]) for t in tools or ()])
    return {**orjson.loads(registry.get(dialect).build_request(turn, None).body), **extra}


def usage_agent() -> Starlette:
    """An AG-UI agent at /agui that reports the tokens each run used, twice (as a run over two models does):
    15 in and 7 out in all, the last model `gpt-test-mini`."""
    run = encode("ag-ui", [RunStarted("t", "r"), TextStart("m1"), TextDelta("m1", "Counted."), TextEnd("m1"),
                           Usage(12, 5, 17, "gpt-test", "openai"), Usage(3, 2, 5, "gpt-test-mini", "openai"),
                           RunFinished()])

    async def respond(request: Request) -> Response:
        return Response(run, media_type="text/event-stream")

    return Starlette(routes=[Route("/agui", respond, methods=["POST"])])


def post(client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str] | None = None,
         **kwargs: Any) -> httpx.Response:
    headers = {"content-type": "application/json", **(headers or {})}
    return client.post(url, content=orjson.dumps(body), headers=headers, **kwargs)


class Reply:
    """A gateway reply read back with the client dialect's own decoder."""

    def __init__(self, dialect: str, response: httpx.Response) -> None:
        self.dialect = dialect
        self.response = response
        if response.status_code >= 400:
            error = orjson.loads(response.content)["error"]
            self.events: list[Event] = [RunStarted(), RunError(error["message"], error.get("code"))]
        else:
            self.events = decode(dialect, response.content)

    @property
    def text(self) -> str:
        return "".join(e.delta for e in self.events if isinstance(e, TextDelta))

    @property
    def tool_calls(self) -> list[str]:
        return [e.name for e in self.events if isinstance(e, ToolCallStart)]

    @property
    def results(self) -> list[str]:
        return [e.content if isinstance(e.content, str) else orjson.dumps(e.content).decode()
                for e in self.events if isinstance(e, ToolResult)]

    @property
    def error(self) -> RunError | None:
        last = self.events[-1]
        return last if isinstance(last, RunError) else None

    @property
    def finished(self) -> RunFinished | None:
        last = self.events[-1]
        return last if isinstance(last, RunFinished) else None
