"""Request bodies as each dialect's client sends them: for the end-to-end tests (through `e2e`) and the benchmarks,
which run without pytest."""

from __future__ import annotations

from typing import Any

import orjson

from adapters import registry
from gateway.core.ids import new_id
from gateway.core.turn import Message, Tool, Turn

DIALECTS = list(registry.DIALECTS)


def user_message(dialect: str, text: str) -> dict[str, Any]:
    if dialect == "ag-ui":
        return {"id": new_id("u"), "role": "user", "content": text}
    if dialect == "vercel":
        return {"id": new_id("u"), "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"role": "user", "content": text}


def request_body(dialect: str, messages: list[dict[str, Any]], conversation: str = "conv-1",
                 tools: list[dict[str, Any]] | None = None, agent: str | None = None, **extra: Any) -> dict[str, Any]:
    """A request as the dialect's real client shapes it (`@ag-ui/client` 1.0.0, `ai` 7.0.173's `DefaultChatTransport`,
    cloudbase-agent-server 0.1.1, the Connexity platform's `AgentRequest`); for a dialect without a client shape here,
    as the dialect's own request builder writes it, addressed to `agent` (a route's name, for the dialects whose
    requests name the agent they call: an MCP tool, an OpenAI model)."""
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
    turn = Turn(conversation_id=conversation, history=registry.get(dialect).history, agent=agent,
                messages=[Message(m["role"], m["content"], new_id("msg")) for m in messages],
                tools=[Tool(t["name"], t.get("description", ""), t["parameters"]) for t in tools or ()])
    return {**orjson.loads(registry.get(dialect).build_request(turn, None).body), **extra}
