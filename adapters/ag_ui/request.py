"""AG-UI requests: `RunAgentInput` in, `RunAgentInput` out.

The models follow the ag-ui-protocol 1.0 schema (camelCase on the wire, full history with ids, tools with a JSON
Schema object). They validate what a client sends; what we send is built as plain dicts without `null`s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from gateway.core.codec import UpstreamRequest, drop_none
from gateway.core.ids import new_id
from gateway.core.turn import ContentPart, Context, Message, Resume, Tool, ToolCall, Turn, media_kind
from gateway.core.validation import validate
from gateway.core.wire import ToolCallModel

from . import proto
from .content import content_to_agui
from .versions import PROTOCOL_VERSION, declared, resume_of_command


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class TextInput(_Model):
    type: Literal["text"]
    text: str


class MediaSource(_Model):
    type: Literal["data", "url", "file"]
    value: str
    mime_type: str | None = None
    provider: str | None = None


class MediaInput(_Model):
    type: Literal["image", "audio", "video", "document"]
    source: MediaSource


class BinaryInput(_Model):
    """The pre-1.0 content part; clients still send it."""

    type: Literal["binary"]
    mime_type: str
    url: str | None = None
    data: str | None = None
    filename: str | None = None


InputContent = Annotated[TextInput | MediaInput | BinaryInput, Field(discriminator="type")]


class DeveloperMessage(_Model):
    id: str
    role: Literal["developer"]
    content: str
    name: str | None = None


class SystemMessage(_Model):
    id: str
    role: Literal["system"]
    content: str
    name: str | None = None


class AssistantMessage(_Model):
    id: str
    role: Literal["assistant"]
    content: str | None = None
    tool_calls: list[ToolCallModel] | None = None
    name: str | None = None


class UserMessage(_Model):
    id: str
    role: Literal["user"]
    content: str | list[InputContent]
    name: str | None = None


class ToolMessage(_Model):
    id: str
    role: Literal["tool"]
    content: str | list[InputContent]
    tool_call_id: str
    error: str | None = None


class ReasoningMessage(_Model):
    id: str
    role: Literal["reasoning"]
    content: str


class ActivityMessage(_Model):
    """UI-only state the client keeps in its history; it carries nothing an agent reads."""

    id: str
    role: Literal["activity"]
    activity_type: str
    content: dict[str, Any]


AnyMessage = Annotated[
    DeveloperMessage | SystemMessage | AssistantMessage | UserMessage | ToolMessage | ReasoningMessage
    | ActivityMessage,
    Field(discriminator="role"),
]


class ToolModel(_Model):
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


class ContextModel(_Model):
    description: str
    value: str


class ResumeModel(_Model):
    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: Any = None
    metadata: dict[str, Any] | None = None


class RunAgentInput(_Model):
    thread_id: str
    run_id: str
    parent_run_id: str | None = None
    state: Any = None
    messages: list[AnyMessage]
    tools: list[ToolModel] = []
    context: list[ContextModel] = []
    forwarded_props: Any = None
    resume: list[ResumeModel] | None = None
    protocol_version: str | None = None


_MESSAGE = TypeAdapter(AnyMessage)


def parse_request(body: dict[str, Any]) -> Turn:
    plain = plain_request(body)
    return plain if plain is not None else modelled_request(body)


def modelled_request(body: dict[str, Any]) -> Turn:
    """The turn of any request, read by the models: the reference `plain_request` is held to."""
    run = validate(RunAgentInput, body, "ag-ui")
    return Turn(
        messages=[m for message in run.messages if (m := _message_from_model(message)) is not None],
        history="full",
        conversation_id=run.thread_id,
        run_id=run.run_id,
        parent_run_id=run.parent_run_id,
        tools=[Tool(t.name, t.description, t.parameters) for t in run.tools],
        context=[Context(c.description, c.value) for c in run.context],
        state=run.state,
        forwarded_props=run.forwarded_props,
        resume=[Resume(r.interrupt_id, r.status, r.payload, message_id=_message_id(r)) for r in run.resume or ()]
        or ([] if run.protocol_version else resume_of_command(run.forwarded_props)),
        client_version=declared(run.protocol_version),
    )


_PLAIN_FIELDS = frozenset({"threadId", "runId", "parentRunId", "state", "messages", "tools", "context",
                           "forwardedProps", "protocolVersion"})
_PLAIN_MESSAGE_FIELDS = frozenset({"id", "role", "content", "name"})
_PLAIN_ROLES = frozenset({"user", "system", "developer", "assistant"})
_TOOL_FIELDS = frozenset({"name", "description", "parameters"})
_CONTEXT_FIELDS = frozenset({"description", "value"})


def plain_request(body: dict[str, Any]) -> Turn | None:
    """The turn of a request as plain as most are (text messages without tool calls, tools, context, no answers to
    interrupts, nothing the models would ignore), read without building the models: the turn `RunAgentInput` makes
    of it, for a seventh of its cost. None for any other request, which the models read, and refuse in their words."""
    if not body.keys() <= _PLAIN_FIELDS:
        return None
    thread, run, parent, version = body.get("threadId"), body.get("runId"), body.get("parentRunId"), \
        body.get("protocolVersion")
    said, tools, context = body.get("messages"), body.get("tools", []), body.get("context", [])
    if type(thread) is not str or type(run) is not str or (parent is not None and type(parent) is not str) \
            or (version is not None and type(version) is not str) or type(said) is not list \
            or type(tools) is not list or type(context) is not list:
        return None
    messages: list[Message] = []
    for message in said:
        if type(message) is not dict or not message.keys() <= _PLAIN_MESSAGE_FIELDS:
            return None
        role, content, id_, name = message.get("role"), message.get("content"), message.get("id"), message.get("name")
        if role not in _PLAIN_ROLES or type(id_) is not str or (name is not None and type(name) is not str) \
                or (type(content) is not str and (role != "assistant" or content is not None)):
            return None
        messages.append(Message(role, content, id_, [], name=name))
    read_tools: list[Tool] = []
    for tool in tools:
        if type(tool) is not dict or not tool.keys() <= _TOOL_FIELDS:
            return None
        name, description, parameters = tool.get("name"), tool.get("description", ""), tool.get("parameters")
        if type(name) is not str or type(description) is not str \
                or (parameters is not None and type(parameters) is not dict):
            return None
        read_tools.append(Tool(name, description, dict(parameters) if parameters is not None else None))
    read_context: list[Context] = []
    for item in context:
        if type(item) is not dict or not item.keys() <= _CONTEXT_FIELDS:
            return None
        description, value = item.get("description"), item.get("value")
        if type(description) is not str or type(value) is not str:
            return None
        read_context.append(Context(description, value))
    forwarded = body.get("forwardedProps")
    return Turn(messages=messages, history="full", conversation_id=thread, run_id=run, parent_run_id=parent,
                tools=read_tools, context=read_context, state=body.get("state"), forwarded_props=forwarded,
                resume=[] if version else resume_of_command(forwarded), client_version=declared(version))


def _message_id(resume: ResumeModel) -> str | None:
    found = (resume.metadata or {}).get("messageId")
    return found if isinstance(found, str) else None


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """`HttpAgent.runAgent()`'s first request (`@ag-ui/client` 1.0)."""
    return {"threadId": conversation_id, "runId": new_id("run"), "protocolVersion": PROTOCOL_VERSION, "state": {},
            "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": new_id("msg"), "role": "user", "content": text}]}


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    body: dict[str, Any] = {
        "threadId": turn.conversation_id or new_id("thread"),
        "runId": turn.run_id or new_id("run"),
        "protocolVersion": PROTOCOL_VERSION,
        "state": turn.state if turn.state is not None else {},
        "messages": [message_to_agui(message) for message in turn.messages] or _speak_first(turn),
        "tools": [drop_none({"name": t.name, "description": t.description, "parameters": t.parameters})
                  for t in turn.tools],
        "context": [{"description": c.description, "value": c.value} for c in turn.context],
        "forwardedProps": turn.forwarded_props if turn.forwarded_props is not None else {},
    }
    if turn.parent_run_id:
        body["parentRunId"] = turn.parent_run_id
    if turn.resume:
        body["resume"] = [drop_none({"interruptId": r.interrupt_id, "status": r.status, "payload": r.payload,
                                     "metadata": {"messageId": r.message_id} if r.message_id else None})
                          for r in turn.resume]
        forwarded = body["forwardedProps"]
        if isinstance(forwarded, dict) and "command" not in forwarded:
            # Servers before 1.0 (LangGraph's, cloudbase-agent-server 0.1.2 on) know no `resume`: they take the
            # answer as LangGraph's `Command(resume=...)` from here, one interrupt at a time. 1.0 servers that
            # read both prefer `resume`.
            first = turn.resume[0]
            answer = first.payload if first.status == "resolved" else {"cancelled": True}
            body["forwardedProps"] = {**forwarded, "command": {"resume": answer}}
    # An upstream asked for protobuf (variant "proto") still may answer SSE, as the protocol lets it.
    accept = f"{proto.MEDIA_TYPE}, text/event-stream;q=0.5" if variant == proto.VARIANT else "text/event-stream"
    return UpstreamRequest(orjson.dumps(body), {"content-type": "application/json", "accept": accept})


def _speak_first(turn: Turn) -> list[dict[str, Any]]:
    """A turn with no messages asks the agent to speak first. AG-UI allows that, but pydantic-ai's servers refuse
    a run with no message at all: an empty user message is what every server takes."""
    return [] if turn.resume else [{"id": new_id("msg"), "role": "user", "content": ""}]


def message_from_agui(value: Any) -> Message | None:
    """Read one message of an upstream's `MESSAGES_SNAPSHOT`; an invalid one is left out rather than trusted."""
    try:
        return _message_from_model(_MESSAGE.validate_python(value))
    except ValidationError:
        return None


def message_to_agui(message: Message) -> dict[str, Any]:
    mid = message.id or new_id("msg")
    role = message.role
    if role == "assistant":
        out: dict[str, Any] = {"id": mid, "role": "assistant", "content": message.text}
        if message.tool_calls:
            out["toolCalls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.tool_calls
            ]
        return out
    if role == "tool":
        return drop_none({"id": mid, "role": "tool", "toolCallId": message.tool_call_id or "",
                          "content": _content_to_agui(message.content), "error": message.error})
    if role in ("system", "developer", "reasoning"):
        return drop_none({"id": mid, "role": role, "content": message.text,
                          "name": message.name if role != "reasoning" else None})
    return drop_none({"id": mid, "role": "user", "content": _content_to_agui(message.content), "name": message.name})


def _message_from_model(message: Any) -> Message | None:
    if isinstance(message, AssistantMessage):
        calls = [ToolCall(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ()]
        return Message("assistant", message.content, message.id, calls, name=message.name)
    if isinstance(message, ToolMessage):
        return Message("tool", _content_from_agui(message.content), message.id,
                       tool_call_id=message.tool_call_id, error=message.error)
    if isinstance(message, UserMessage):
        return Message("user", _content_from_agui(message.content), message.id, name=message.name)
    if isinstance(message, DeveloperMessage | SystemMessage):
        return Message(message.role, message.content, message.id, name=message.name)
    if isinstance(message, ReasoningMessage):
        return Message("reasoning", message.content, message.id)
    return None  # activity messages are the client's UI state


def _content_from_agui(content: str | list[Any]) -> str | list[ContentPart]:
    if isinstance(content, str):
        return content
    parts: list[ContentPart] = []
    for part in content:
        if isinstance(part, TextInput):
            parts.append(ContentPart("text", text=part.text))
        elif isinstance(part, MediaInput):
            source = part.source
            if source.type == "file":
                parts.append(ContentPart(part.type, media_type=source.mime_type, file_id=source.value,
                                         provider=source.provider))
            else:
                inline = source.type == "data"
                parts.append(ContentPart(part.type, url=None if inline else source.value,
                                         data=source.value if inline else None, media_type=source.mime_type))
        elif isinstance(part, BinaryInput):
            parts.append(ContentPart(media_kind(part.mime_type), url=part.url, data=part.data,
                                     media_type=part.mime_type, filename=part.filename))
    return parts


def _content_to_agui(content: str | list[ContentPart] | None) -> str | list[dict[str, Any]]:
    return content_to_agui(content)
