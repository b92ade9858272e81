"""An `AgentResponse` JSON body from an upstream, expanded into the events of the run it describes."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import as_text
from gateway.core.events import (
    Event,
    RunFinished,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.ids import new_id
from gateway.core.repair import RunRepair

DEFAULT_MAX_BODY = 32 * 1024 * 1024


class AgentRespondDecoder:
    """Not a stream: the body is gathered whole, then read at `close()`."""

    __slots__ = ("_body", "_max_body", "_size", "repair")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_BODY) -> None:
        """`max_event_bytes` bounds the whole body: for this dialect the body is the one event."""
        self._body: list[bytes] = []
        self._size = 0
        self._max_body = max_event_bytes
        self.repair = RunRepair()

    def feed(self, chunk: bytes) -> list[Event]:
        out: list[Event] = []
        if self.repair.done:
            return out
        self._size += len(chunk)
        if self._size > self._max_body:
            self._body.clear()
            self.repair.fail(f"upstream response exceeded {self._max_body} bytes", "upstream_event_too_large", out)
            return out
        self._body.append(chunk)
        return out

    def close(self) -> list[Event]:
        out: list[Event] = []
        if self.repair.done:
            return out
        try:
            body = orjson.loads(b"".join(self._body))
        except orjson.JSONDecodeError:
            self.repair.fail("upstream returned a body that is not JSON", "upstream_bad_event", out)
            return out
        messages = body.get("messages") if isinstance(body, dict) else None
        error = _error(body)
        if not isinstance(messages, list):
            self.repair.fail(error[0] if error else "upstream returned no messages", "upstream_bad_event", out)
            return out
        for message in messages:
            if isinstance(message, dict):
                self._message(message, out)
        usage = body.get("usage")
        model, provider = body.get("model"), body.get("provider")
        if isinstance(usage, dict) or model or provider:
            usage = usage if isinstance(usage, dict) else {}
            self.repair.push(Usage(usage.get("prompt_tokens"), usage.get("completion_tokens"),
                                   usage.get("total_tokens"), model if isinstance(model, str) else None,
                                   provider if isinstance(provider, str) else None), out)
        if error:
            # An agent's error body (a 502 with the messages it had made): what it said, then why it stopped.
            self.repair.fail(error[0], error[1], out)
        else:
            self.repair.push(RunFinished(), out)
        return out

    def fail(self, message: str, code: str | None = None) -> list[Event]:
        out: list[Event] = []
        self.repair.fail(message, code, out)
        return out

    def _message(self, message: dict[str, Any], out: list[Event]) -> None:
        push = self.repair.push
        role, content = message.get("role"), _text(message.get("content"))
        if role == "assistant":
            message_id = new_id("msg")
            if content:
                push(TextStart(message_id), out)
                push(TextDelta(message_id, content), out)
                push(TextEnd(message_id), out)
            calls = message.get("tool_calls")
            for call in calls if isinstance(calls, list) else ():
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(call.get("id"), str):
                    continue
                push(ToolCallStart(call["id"], str(function.get("name") or "unknown_tool"), message_id), out)
                arguments = function.get("arguments")
                push(ToolCallArgs(call["id"], arguments if isinstance(arguments, str) else as_text(arguments or {})),
                     out)
                push(ToolCallEnd(call["id"]), out)
        elif role == "tool" and isinstance(message.get("tool_call_id"), str):
            push(ToolResult(message["tool_call_id"], content), out)


def _error(body: Any) -> tuple[str, str] | None:
    """(message, code) of an error body: ours and the built-in agent's `{"error": {...}}`, FastAPI's `detail`."""
    if not isinstance(body, dict):
        return None
    error = body.get("error", body.get("detail"))
    if not error:
        return None
    if isinstance(error, dict):
        return str(error.get("message") or error), str(error.get("code") or "upstream_error")
    return str(error), "upstream_error"


def _text(content: Any) -> str:
    """OpenAI content: a string, or a list of parts of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
