"""AG-Kit `send-message` requests: a conversation id and only the messages that are new.

The server keeps the history by `conversationId`. Tool parameters travel as a JSON string, and a resume payload
must be a JSON string (cloudbase-agent-server answers 422 otherwise). What `@cloudbase/agent-ui-web` sends:
no message ids, no `messages` key on a resume, and every tool result of a round in one POST.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from gateway.core.codec import UpstreamRequest, as_text, json_or_text
from gateway.core.ids import new_id
from gateway.core.turn import Message, Resume, Tool, ToolCall, Turn
from gateway.core.validation import load_carried_json, validate
from gateway.core.wire import ToolCallModel


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class SystemMessage(_Model):
    role: Literal["system"]
    content: str


class UserMessage(_Model):
    role: Literal["user"]
    content: str


class ToolMessage(_Model):
    role: Literal["tool"]
    content: str
    tool_call_id: str = Field(validation_alias=AliasChoices("toolCallId", "tool_call_id"))


class AssistantMessage(_Model):
    id: str | None = None
    role: Literal["assistant"]
    content: str | None = None
    tool_calls: list[ToolCallModel] | None = Field(None, validation_alias=AliasChoices("toolCalls", "tool_calls"))


AnyMessage = Annotated[SystemMessage | UserMessage | ToolMessage | AssistantMessage, Field(discriminator="role")]


class ToolModel(_Model):
    name: str
    description: str = ""
    parameters: Any = None

    @field_validator("parameters")
    @classmethod
    def _schema(cls, value: Any) -> dict[str, Any] | None:
        """The official client sends the schema as a JSON string; accept an object too."""
        if isinstance(value, str):
            try:
                value = load_carried_json(value.encode(), at=4)  # tools[i].parameters, as an object would be
            except ValueError:
                raise ValueError("must be a JSON Schema, as an object or a JSON string") from None
        if value is not None and not isinstance(value, dict):
            raise ValueError("must be a JSON Schema object")
        return value


class ResumeModel(_Model):
    interrupt_id: str = Field(validation_alias=AliasChoices("interruptId", "interrupt_id"))
    payload: Any = None


class SendMessageInput(_Model):
    conversation_id: str = Field(validation_alias=AliasChoices("conversationId", "conversation_id"))
    messages: list[AnyMessage] = []
    tools: list[ToolModel] = []
    resume: ResumeModel | None = None


def parse_request(body: dict[str, Any]) -> Turn:
    request = validate(SendMessageInput, body, "ag-kit")
    resume = []
    if request.resume is not None:
        payload = request.resume.payload
        resume.append(Resume(request.resume.interrupt_id, "resolved",
                             json_or_text(payload) if isinstance(payload, str) else payload))
    return Turn(
        messages=[_message(m) for m in request.messages],
        history="delta",
        conversation_id=request.conversation_id,
        tools=[Tool(t.name, t.description, t.parameters) for t in request.tools],
        resume=resume,
    )


def _message(message: Any) -> Message:
    if isinstance(message, ToolMessage):
        return Message("tool", message.content, tool_call_id=message.tool_call_id)
    if isinstance(message, AssistantMessage):
        calls = [ToolCall(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ()]
        return Message("assistant", message.content, message.id, calls)
    return Message(message.role, message.content)


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """`@cloudbase/agent-ui-web`'s first `send-message`."""
    return {"conversationId": conversation_id, "messages": [{"role": "user", "content": text}]}


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    body: dict[str, Any] = {"conversationId": turn.conversation_id or new_id("conv")}
    if turn.history == "delta":
        # Only user, system and tool messages: the server has heard its own replies already.
        messages = [_message_to_agkit(m) for m in turn.messages if m.role in ("user", "system", "developer", "tool")]
    else:
        # A new conversation given the whole history: what the agent said goes as text. cloudbase-agent-server
        # 0.1.1 breaks on an assistant message with tool calls, so calls and their results are left out.
        messages = [_message_to_agkit(m) for m in turn.messages
                    if m.role in ("user", "system", "developer") or (m.role == "assistant" and m.text)]
    if messages or not turn.resume:
        body["messages"] = messages
    body["tools"] = [
        {"name": t.name, "description": t.description, "parameters": as_text(t.parameters or {"type": "object"})}
        for t in turn.tools
    ]
    if turn.resume:
        # The dialect resumes one interrupt per request, with its answer as a JSON string.
        resume = turn.resume[0]
        payload = resume.payload if resume.status == "resolved" else {"cancelled": True}
        body["resume"] = {"interruptId": resume.interrupt_id, "payload": orjson.dumps(payload).decode()}
    return UpstreamRequest(orjson.dumps(body), {"content-type": "application/json", "accept": "text/event-stream"})


def _message_to_agkit(message: Message) -> dict[str, Any]:
    if message.role == "assistant":
        return {"role": "assistant", "id": message.id or new_id("msg"), "content": message.text}
    if message.role == "tool":
        content = message.text if message.error is None else message.error
        return {"role": "tool", "content": content, "toolCallId": message.tool_call_id or ""}
    return {"role": "system" if message.role == "developer" else message.role, "content": message.text}
