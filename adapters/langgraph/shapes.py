"""The LangChain objects the encoder writes a run's messages as: an AI message chunk, what a message says of itself
beyond its content, and its usage."""

from __future__ import annotations

from typing import Any

from gateway.core.codec import drop_none


def ai_chunk(message_id: str, content: Any, **fields: Any) -> dict[str, Any]:
    """An `AIMessageChunk` of the message `message_id`, as LangGraph streams one in `messages-tuple`."""
    return {"content": content, "additional_kwargs": {}, "response_metadata": {}, "type": "AIMessageChunk",
            "name": None, "id": message_id, "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": None,
            "tool_call_chunks": [], **fields}


def message_tags(name: str | None, subagent_run_id: str | None, metadata: Any) -> dict[str, Any]:
    """What a message says of itself beyond its content: its author's `name`, and the gateway's part of its
    `response_metadata` (the event's metadata, the subagent that wrote it); empty for most messages."""
    ours = drop_none({"metadata": metadata, "subagent_run_id": subagent_run_id})
    return drop_none({"name": name, "response_metadata": {"agent_gateway": ours} if ours else None})


def usage_metadata(counts: dict[str, int]) -> dict[str, Any]:
    """Counts as LangChain's `UsageMetadata` holds them: the three totals, then details within them."""
    inputs, outputs = counts.get("input_tokens", 0), counts.get("output_tokens", 0)
    usage: dict[str, Any] = {"input_tokens": inputs, "output_tokens": outputs,
                             "total_tokens": counts.get("total_tokens", inputs + outputs)}
    cached = drop_none({"cache_read": counts.get("cached_input_tokens"),
                        "cache_creation": counts.get("cache_write_input_tokens")})
    if cached:
        usage["input_token_details"] = cached
    if "reasoning_tokens" in counts:
        usage["output_token_details"] = {"reasoning": counts["reasoning_tokens"]}
    return usage
