"""An `AgentResponse` JSON body from an upstream, expanded into the events of the run it describes: its messages,
the state the run left (`metadata.state`, as the encoder writes it) as a snapshot, whether the answer was cut short
(`metadata.finish_reason`, as the gateway writes it), its usage, its error."""

from __future__ import annotations

from typing import Any

from adapters.openai_common.usage import read_usage
from gateway.core import events as canonical
from gateway.core.codec import as_text
from gateway.core.decoding import Events, JsonBodyDecoder
from gateway.core.errors import ErrorCode
from gateway.core.ids import new_id

_STOP_REASONS: dict[str, canonical.StopReason] = {"length": "length", "content_filter": "content_filter"}


class AgentRespondDecoder(JsonBodyDecoder):
    """Not a stream: the body is gathered whole, then read at `close()`."""

    __slots__ = ()

    def on_body(self, body: Any, out: Events) -> None:
        messages = body.get("messages") if isinstance(body, dict) else None
        error = _error(body)
        if not isinstance(messages, list):
            out.append(canonical.RunError(error[0] if error else "upstream returned no messages",
                                          code=ErrorCode.UPSTREAM_BAD_EVENT))
            return
        for message in messages:
            if isinstance(message, dict):
                self._message(message, out)
        metadata = body.get("metadata")
        if isinstance(metadata, dict) and "state" in metadata and metadata["state"] is not None:
            out.append(canonical.StateSnapshot(metadata["state"]))
        usage = body.get("usage")
        model, provider = body.get("model"), body.get("provider")
        if isinstance(usage, dict) or model or provider:
            usage = usage if isinstance(usage, dict) else {}
            read = read_usage(usage, "chat", model if isinstance(model, str) else None)
            read.provider = provider if isinstance(provider, str) else None
            out.append(read)
        if error:
            # An agent's error body (a 502 with the messages it had made): what it said, then why it stopped.
            out.append(canonical.RunError(error[0], code=error[1]))
        else:
            metadata = body.get("metadata")
            reason = metadata.get("finish_reason") if isinstance(metadata, dict) else None
            out.append(canonical.RunFinished(stop_reason=_STOP_REASONS.get(reason) if isinstance(reason,
                                                                                                 str) else None))

    def _message(self, message: dict[str, Any], out: Events) -> None:
        role, content = message.get("role"), _text(message.get("content"))
        if role == "assistant":
            message_id = new_id("msg")
            if content:
                out.append(canonical.TextStart(message_id))
                out.append(canonical.TextDelta(message_id, content))
                out.append(canonical.TextEnd(message_id))
            calls = message.get("tool_calls")
            for call in calls if isinstance(calls, list) else ():
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(call.get("id"), str):
                    continue
                out.append(canonical.ToolCallStart(call["id"], str(function.get("name") or "unknown_tool"),
                                                   parent_message_id=message_id))
                arguments = function.get("arguments")
                arguments = arguments if isinstance(arguments, str) else as_text(arguments or {})
                out.append(canonical.ToolCallArgs(call["id"], arguments))
                out.append(canonical.ToolCallEnd(call["id"]))
        elif role == "tool" and isinstance(message.get("tool_call_id"), str):
            out.append(canonical.ToolResult(message["tool_call_id"], content))


def _error(body: Any) -> tuple[str, str] | None:
    """(message, code) of an error body: ours and the built-in agent's `{"error": {...}}`, FastAPI's `detail`."""
    if not isinstance(body, dict):
        return None
    error = body.get("error", body.get("detail"))
    if not error:
        return None
    if isinstance(error, dict):
        return str(error.get("message") or error), str(error.get("code") or ErrorCode.UPSTREAM_ERROR)
    return str(error), ErrorCode.UPSTREAM_ERROR


def _text(content: Any) -> str:
    """OpenAI content: a string, or a list of parts of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
