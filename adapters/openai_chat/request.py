"""Chat Completions requests: `POST /v1/chat/completions` with the whole history every call (`messages`), the
client's tools (`tools`), and `stream` with `stream_options.include_usage`. An assistant message's `refusal` is its
words, as the reply showed them.

Chat Completions names no conversation: like the eval platform's, a client's conversation is found again by its
history (see `echoed`, what it will send back of a run). Assistant messages carry the tool calls the client ran,
`role: tool` messages their results. Reasoning a client sends back (`reasoning_content`, DeepSeek's and vLLM's
field) is kept as a reasoning message before its answer.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.openai_common.wire import DEFAULT_MODEL, file_data, from_url, image_url, parameters, upstream_request
from gateway.core import wire
from gateway.core.codec import UpstreamRequest, as_text
from gateway.core.errors import InvalidRequest
from gateway.core.turn import ContentPart, Message, Tool, ToolCall, Turn
from gateway.core.validation import validate


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionCall(wire.FunctionCall):
    arguments: str = ""
    """Chat Completions clients may leave it out: the call is read as one without arguments."""


class ToolCallModel(wire.ToolCallModel):
    function: FunctionCall


class ChatMessage(_Model):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCallModel] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    refusal: str | None = None


class FunctionDefinition(_Model):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolModel(_Model):
    type: Literal["function"]
    function: FunctionDefinition


class StreamOptions(_Model):
    include_usage: bool = False


class ChatRequest(_Model):
    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[ToolModel] | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    user: str | None = None


def parse_request(body: dict[str, Any]) -> Turn:
    request = validate(ChatRequest, body, "openai-chat")
    messages: list[Message] = []
    for index, m in enumerate(request.messages):
        if m.role == "tool" and not m.tool_call_id:
            raise InvalidRequest(f"messages[{index}].tool_call_id: a tool message names the call it answers",
                                 [{"field": f"messages[{index}].tool_call_id", "message": "Field required"}])
        if m.reasoning_content:
            messages.append(Message("reasoning", m.reasoning_content))
        calls = [ToolCall(c.id, c.function.name, c.function.arguments or "{}") for c in m.tool_calls or ()]
        content = _content(m.content, index) if m.content or not m.refusal else m.refusal  # a refusal is its words
        messages.append(Message(m.role, content, tool_calls=calls, tool_call_id=m.tool_call_id, name=m.name))
    tools = [Tool(t.function.name, t.function.description or "", t.function.parameters) for t in request.tools or ()]
    include_usage = bool(request.stream_options and request.stream_options.include_usage)
    return Turn(messages=messages, history="full", tools=tools, model=request.model,
                metadata={"openai": {"stream": bool(request.stream), "include_usage": include_usage}})


def _content(content: str | list[dict[str, Any]] | None, index: int) -> str | list[ContentPart] | None:
    """A message's content: a string, or parts (text, images, audio, files) as the canonical parts."""
    if not isinstance(content, list):
        return content
    parts: list[ContentPart] = []
    for number, part in enumerate(content):
        kind = part.get("type")
        where = f"messages[{index}].content[{number}]"
        if kind in ("text", "input_text", "output_text", "refusal"):
            text = part.get("text", part.get("refusal"))
            if not isinstance(text, str):
                raise InvalidRequest(f"{where}.text must be a string", [{"field": f"{where}.text",
                                                                        "message": "Input should be a valid string"}])
            parts.append(ContentPart("text", text))
        elif kind == "image_url" and isinstance(part.get("image_url"), dict | str):
            image = part["image_url"]
            url = image.get("url") if isinstance(image, dict) else image
            if not isinstance(url, str):
                raise InvalidRequest(f"{where}.image_url.url must be a string")
            image = from_url(url, "image")
            image.type = "image"  # an `image_url` part is an image, whatever its `data:` URL says
            parts.append(image)
        elif kind == "input_audio" and isinstance(part.get("input_audio"), dict):
            audio = part["input_audio"]
            parts.append(ContentPart("audio", data=str(audio.get("data", "")),
                                     media_type=f"audio/{audio.get('format', 'wav')}"))
        elif kind == "file" and isinstance(part.get("file"), dict):
            file = part["file"]
            data, file_id = file.get("file_data"), file.get("file_id")
            media = from_url(data, "document") if isinstance(data, str) and data.startswith("data:") else \
                ContentPart("document", data=data if isinstance(data, str) else None)
            media.filename = file.get("filename") if isinstance(file.get("filename"), str) else None
            media.file_id = file_id if isinstance(file_id, str) and media.data is None else None  # uploaded before
            parts.append(media)
        else:
            raise InvalidRequest(f"{where} is not a text, image_url, input_audio or file part",
                                 [{"field": f"{where}.type", "message": "Input should be 'text', 'image_url', "
                                   "'input_audio' or 'file'"}])
    return parts


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    """The whole history (an OpenAI-compatible server keeps none), the client's tools, streamed with usage."""
    # The agent speaks first: servers refuse an empty list of messages, so it is one empty message.
    messages = chat_messages(turn.messages) or [{"role": "user", "content": ""}]
    body: dict[str, Any] = {"model": turn.model or DEFAULT_MODEL, "messages": messages, "stream": True,
                            "stream_options": {"include_usage": True}}
    if turn.tools:
        body["tools"] = [{"type": "function", "function": _function(tool)} for tool in turn.tools]
    return upstream_request(body)


def _function(tool: Tool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": parameters(tool)}
    if tool.description:
        function["description"] = tool.description
    return function


def chat_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Canonical messages as Chat Completions writes them; a reasoning message rides on the assistant message
    after it (`reasoning_content`), and a run of assistant messages is one, as a chat client keeps it."""
    out: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for message in messages:
        if message.role == "reasoning":
            reasoning.append(message.text)
            continue
        if message.role == "tool":
            out.append({"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text})
            continue
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                entry["tool_calls"] = [{"id": c.id, "type": "function",
                                        "function": {"name": c.name, "arguments": c.arguments}}
                                       for c in message.tool_calls]
            if reasoning:
                entry["reasoning_content"] = "".join(reasoning)
            out.append(entry)
            reasoning = []
            continue
        role = "system" if message.role == "developer" else message.role
        out.append({"role": role, "content": _parts(message)})
    return out


def _named(part: ContentPart) -> dict[str, str]:
    return {"filename": part.filename} if part.filename else {}


def _parts(message: Message) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str) or message.content is None:
        return message.content or ""
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if part.type == "text":
            parts.append({"type": "text", "text": part.text or ""})
        elif part.type == "image" and (part.url is not None or part.data is not None):
            parts.append({"type": "image_url", "image_url": {"url": image_url(part)}})
        elif part.file_id is not None and part.data is None:
            parts.append({"type": "file", "file": {"file_id": part.file_id, **_named(part)}})
        elif part.data is not None:
            parts.append({"type": "file", "file": {"file_data": file_data(part),
                                                   "filename": part.filename or "file"}})
        else:
            parts.append({"type": "text", "text": as_text(part.url)})
    return parts


SEPARATOR = "\n\n"
"""What stands between two messages of a run in a completion's one text: a paragraph break, so that they do not run
together."""


def echoed(messages: list[Message]) -> list[Message]:
    """A run's messages as a chat client sends them back: one assistant message holding all its text and the calls
    left for the client (the tools the agent ran, and their results, never reached the client)."""
    ran = {m.tool_call_id for m in messages if m.role == "tool"}
    text = SEPARATOR.join(m.text for m in messages if m.role == "assistant" and m.text)
    calls = [c for m in messages if m.role == "assistant" for c in m.tool_calls if c.id not in ran]
    if not text and not calls:
        return []
    return [Message("assistant", text or None, tool_calls=calls)]


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """What the `openai` SDK sends for `client.chat.completions.create(model=..., messages=[...], stream=True)`."""
    return {"model": DEFAULT_MODEL, "messages": [{"role": "user", "content": text}], "stream": True}
