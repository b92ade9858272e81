"""LangChain messages as a LangGraph server reads and writes them, to and from canonical messages.

A server serializes a message as `{"type": "human" | "ai" | "tool" | "system" | "AIMessageChunk", "content", "id",
"tool_calls", "tool_call_id", "status", ...}`; clients may also send OpenAI's `{"role": "user", ...}`, which the
server coerces. Content is a string or a list of blocks (`{"type": "text", "text"}`, images, a model's reasoning).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import as_text, drop_none, json_or_text
from gateway.core.decoding import str_or_none
from gateway.core.depth import MAX_DEPTH_IN_TEXT, nests_deeper
from gateway.core.turn import ContentPart, Message, Role, ToolCall, media_kind

ROLES: dict[str, Role] = {
    "human": "user", "user": "user", "HumanMessageChunk": "user",
    "ai": "assistant", "assistant": "assistant", "AIMessageChunk": "assistant",
    "tool": "tool", "ToolMessageChunk": "tool",
    "system": "system", "SystemMessageChunk": "system", "developer": "developer",
}
"""A message's `type` (or `role`) to its canonical role."""

_TYPES = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system", "developer": "system"}

REASONING_BLOCKS = frozenset({"reasoning", "thinking"})
"""Content blocks that hold a model's reasoning rather than its answer."""


def text_of(content: Any) -> str:
    """The answer's text in a message's content: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(block["text"] for block in content
                   if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str))


def reasoning_of(content: Any) -> str:
    """The reasoning blocks' text in a message's content (Anthropic's `thinking`, the standard `reasoning`)."""
    if not isinstance(content, list):
        return ""
    found = []
    for block in content:
        if isinstance(block, dict) and block.get("type") in REASONING_BLOCKS:
            text = block.get("reasoning", block.get("thinking", block.get("text")))
            if isinstance(text, str):
                found.append(text)
    return "".join(found)


def encrypted_of(content: Any) -> list[str]:
    """Reasoning a model keeps encrypted in a message's content: a reasoning block's `extras.encrypted_content` (as
    the gateway writes it, and LangChain keeps OpenAI's), Anthropic's `redacted_thinking` data."""
    found: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        extras = block.get("extras")
        value = extras.get("encrypted_content") if block.get("type") == "reasoning" and isinstance(extras, dict) \
            else block.get("data") if block.get("type") == "redacted_thinking" else None
        if isinstance(value, str) and value:
            found.append(value)
    return found


def to_langchain(message: Message) -> dict[str, Any]:
    """A canonical message as a LangGraph server takes it in `input.messages`."""
    out: dict[str, Any] = {"type": _TYPES.get(message.role, "human"),
                           "content": _content(message)}
    if message.id is not None:
        out["id"] = message.id
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [{"id": call.id, "name": call.name, "args": _arguments(call.arguments),
                              "type": "tool_call"} for call in message.tool_calls]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id or ""
        if message.name is not None:
            out["name"] = message.name
        if message.error is not None:
            out["content"], out["status"] = message.error, "error"
    return out


def from_langchain(value: dict[str, Any]) -> Message | None:
    """A LangChain message as a canonical one; None for one of no role the gateway knows."""
    kind = value.get("type", value.get("role"))
    role = ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        return None
    content = value.get("content")
    message = Message(role, _parts(content), str_or_none(value.get("id")), name=str_or_none(value.get("name")))
    if role == "assistant":
        for call in value.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                args = call.get("args")
                message.tool_calls.append(ToolCall(str_or_none(call.get("id")) or "", call["name"],
                                                   args if isinstance(args, str) else as_text(args or {})))
    elif role == "tool":
        message.tool_call_id = str_or_none(value.get("tool_call_id"))
        if value.get("status") == "error":
            message.error = text_of(content) or "the tool failed"
    return message


def tool_content(content: Any) -> Any:
    """A tool message's content as a result: its text (JSON read as such); blocks with media in them as content
    parts; other blocks as they are."""
    if isinstance(content, str):
        return json_or_text(content) if content[:1] in ("{", "[") else content
    if isinstance(content, list) and any(isinstance(block, dict) and block.get("type") != "text"
                                         for block in content):
        parts = _parts(content)
        if isinstance(parts, list) and any(part.type != "text" for part in parts):
            return parts
    text = text_of(content)
    return text if text or not content else content


def result_content(content: Any) -> Any:
    """A tool's result as a ToolMessage's content: a string, or content parts (AG-UI's) as LangChain's blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and all(isinstance(part, ContentPart) for part in content):
        return _blocks(content)
    return as_text(content)


def _content(message: Message) -> Any:
    if message.content is None or isinstance(message.content, str):
        return message.content or ""
    return _blocks(message.content)


def _blocks(parts: list[ContentPart]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if part.type == "text":
            blocks.append({"type": "text", "text": part.text or ""})
        elif part.url or part.data:
            url = part.url or f"data:{part.media_type or 'application/octet-stream'};base64,{part.data}"
            blocks.append({"type": "image_url", "image_url": {"url": url}} if part.type == "image" else
                          {"type": "file", "url": url, "mime_type": part.media_type})
        elif part.file_id:  # a file uploaded to a provider: LangChain's file block names it by id
            blocks.append(drop_none({"type": "file", "file_id": part.file_id, "mime_type": part.media_type}))
    return blocks


def _parts(content: Any) -> str | list[ContentPart] | None:
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        return as_text(content)
    parts: list[ContentPart] = []
    for block in content:
        if isinstance(block, str):
            parts.append(ContentPart("text", text=block))
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(ContentPart("text", text=block["text"]))
            elif kind == "image_url":
                image = block.get("image_url")
                url = image.get("url") if isinstance(image, dict) else image
                if isinstance(url, str):
                    parts.append(ContentPart("image", url=url))
            elif kind in ("image", "file", "audio", "video") and isinstance(block.get("url"), str):
                media = str_or_none(block.get("mime_type"))
                parts.append(ContentPart(media_kind(media) if kind == "file" else kind, url=block["url"],
                                         media_type=media))
            elif kind == "file" and isinstance(block.get("file_id"), str):
                parts.append(ContentPart("file", media_type=str_or_none(block.get("mime_type")),
                                         file_id=block["file_id"]))
    return parts


def _arguments(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {"arguments": arguments}
    return {"arguments": arguments} if nests_deeper(value, arguments, MAX_DEPTH_IN_TEXT) else value


