"""The eval platform's `POST /agent/respond`: OpenAI-style full history in (`AgentRequest`).

The real client (Connexity's backend) sends every optional field, `null` included, tool calls with a
`tool_result: null` extension, earlier turns' tool messages with `name: null`, `messages: []` for agent-first test
cases, and `metadata.turn_index` = the transcript's length so far.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, model_validator

from gateway.core.codec import UpstreamRequest, drop_none
from gateway.core.errors import GatewayError
from gateway.core.turn import Message, ToolCall, Turn
from gateway.core.validation import validate
from gateway.core.wire import ToolCallModel


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ChatMessage(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCallModel] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _user_text(self) -> ChatMessage:
        """A user message with no `content` would reach the agent as an empty one, and be answered as if the user
        had said nothing: a body of another dialect (a UIMessage's `parts`) is the usual cause."""
        if self.role == "user" and self.content is None:
            raise ValueError("a user message needs its text in `content`, a string")
        return self


class RequestMetadata(_Model):
    test_case_id: str | None = None
    turn_index: int | None = None


class AgentRequest(_Model):
    messages: list[ChatMessage]
    metadata: RequestMetadata | None = None


def parse_request(body: dict[str, Any]) -> Turn:
    request = validate(AgentRequest, body, "agent-respond")
    metadata = request.metadata.model_dump(exclude_none=True) if request.metadata else {}
    messages = []
    for m in request.messages:
        calls = [ToolCall(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or ()]
        messages.append(Message(m.role, m.content, tool_calls=calls, tool_call_id=m.tool_call_id, name=m.name))
    return Turn(messages=messages, history="full", metadata=metadata)


def reply_messages(body: bytes) -> list[Message] | None:
    """An `AgentResponse`'s messages as the platform's next request will send them back: read as a request is."""
    try:
        return parse_request({"messages": orjson.loads(body)["messages"]}).messages
    except (GatewayError, ValueError, KeyError, TypeError):
        return None


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """The eval platform's first turn of test case `conversation_id`."""
    return {"messages": [{"role": "user", "content": text}],
            "metadata": {"test_case_id": conversation_id, "turn_index": 0}}


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    body: dict[str, Any] = {"messages": [chat_message(m) for m in turn.messages if m.role != "reasoning"]}
    metadata = {k: turn.metadata[k] for k in ("test_case_id", "turn_index") if k in turn.metadata}
    if metadata:
        body["metadata"] = metadata
    return UpstreamRequest(orjson.dumps(body), {"content-type": "application/json", "accept": "application/json"},
                           streams=False)


def chat_message(message: Message) -> dict[str, Any]:
    role = "system" if message.role == "developer" else message.role
    if role == "tool":
        return drop_none({"role": "tool", "content": message.text, "tool_call_id": message.tool_call_id,
                          "name": message.name})
    out: dict[str, Any] = {"role": role, "content": message.text}
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                             for c in message.tool_calls]
        if not message.text:
            out["content"] = None
    return out
