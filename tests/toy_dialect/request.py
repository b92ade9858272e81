"""Toy requests: a session id, OpenAI-like messages and the client's tools."""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from gateway.core.codec import UpstreamRequest, as_text, drop_none
from gateway.core.ids import new_id
from gateway.core.turn import Message, Tool, ToolCall, Turn
from gateway.core.validation import validate


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToyCall(_Model):
    id: str
    name: str
    arguments: str = "{}"


class ToyMessage(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    id: str | None = None
    calls: list[ToyCall] = []
    call_id: str | None = None


class ToyTool(_Model):
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


class ToyRequest(_Model):
    session: str
    messages: list[ToyMessage]
    tools: list[ToyTool] = []


def parse_request(body: dict[str, Any]) -> Turn:
    request = validate(ToyRequest, body, "toy")
    messages = [Message(m.role, m.content, m.id, [ToolCall(c.id, c.name, c.arguments) for c in m.calls],
                        tool_call_id=m.call_id) for m in request.messages]
    tools = [Tool(t.name, t.description, t.parameters) for t in request.tools]
    return Turn(messages=messages, conversation_id=request.session, tools=tools)


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    return {"session": conversation_id, "messages": [{"role": "user", "content": text}]}


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    messages = [drop_none({"role": "system" if m.role == "developer" else m.role, "content": m.text, "id": m.id,
                           "call_id": m.tool_call_id,
                           "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                     for c in m.tool_calls] or None})
                for m in turn.messages if m.role in ("system", "developer", "user", "assistant", "tool")]
    for message in messages:
        if message["role"] == "tool":
            message["content"] = as_text(message.get("content", ""))
    body = {"session": turn.conversation_id or new_id("session"), "messages": messages,
            "tools": [drop_none({"name": t.name, "description": t.description, "parameters": t.parameters})
                      for t in turn.tools]}
    return UpstreamRequest(orjson.dumps(body), {"content-type": "application/json",
                                                "accept": "application/x-ndjson"})
