"""An A2A agent's messages and parts read as canonical events: a status update's or a reply's message (its text,
its Google ADK tool activity, its data and files), and the data a paused task asks about."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.decoding import Events, str_or
from gateway.core.ids import new_id

from .request import FUNCTION_CALL, FUNCTION_RESPONSE
from .wire import part_kind


def read_message(message: dict[str, Any], open_text: dict[str, str], out: Events) -> None:
    """An agent's message: its text as one message (closing the artifacts still written as text, `open_text`,
    before it), its ADK-marked data parts as tool calls and results, and any other data part as named data."""
    message_id = str_or(message.get("messageId")) or new_id("msg")
    text_open = False
    for part in parts_of(message):
        if not isinstance(part, dict):
            continue
        kind = part_kind(part)
        if kind == "text" and isinstance(part.get("text"), str):
            if not text_open:
                close_texts(open_text, out)
                out.append(canonical.TextStart(message_id))
                text_open = True
            out.append(canonical.TextDelta(message_id, part["text"]))
            continue
        if text_open:
            out.append(canonical.TextEnd(message_id))
            text_open = False
        metadata = part.get("metadata")
        mark = metadata.get("adk_type") if isinstance(metadata, dict) else None
        data = part.get("data")
        if mark == FUNCTION_CALL and isinstance(data, dict):
            call_id = str_or(data.get("id")) or new_id("call")
            out.append(canonical.ToolCallStart(call_id, str(data.get("name") or "unknown_tool"),
                                               parent_message_id=message_id))
            out.append(canonical.ToolCallArgs(call_id, orjson.dumps(data.get("args") or {}).decode()))
            out.append(canonical.ToolCallEnd(call_id))
        elif mark == FUNCTION_RESPONSE and isinstance(data, dict) and isinstance(data.get("id"), str):
            response = data.get("response")
            if isinstance(response, dict) and set(response) == {"result"}:
                response = response["result"]
            out.append(canonical.ToolResult(data["id"], response))
        elif kind == "data":
            out.append(canonical.Data("data", data, id=message_id))
        elif kind == "file":
            out.append(canonical.Data("file", part.get("file", part), id=message_id))
    if text_open:
        out.append(canonical.TextEnd(message_id))


def close_texts(open_text: dict[str, str], out: Events) -> None:
    """End the messages of the artifacts being written as text (artifact id -> message id)."""
    for message_id in open_text.values():
        out.append(canonical.TextEnd(message_id))
    open_text.clear()


def parts_of(message: Any) -> list[Any]:
    """A message's (or an artifact's) parts; 0.3's HTTP+JSON binding calls them `content`."""
    if not isinstance(message, dict):
        return []
    parts = message.get("parts") or message.get("content")
    return parts if isinstance(parts, list) else []


def data_of(message: Any) -> Any:
    """The data parts of a status message, for an interrupt's payload (what the agent asks for, as data)."""
    data = [p.get("data") for p in parts_of(message) if isinstance(p, dict) and part_kind(p) == "data"]
    return data[0] if len(data) == 1 else (data or None)
