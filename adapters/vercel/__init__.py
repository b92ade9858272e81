"""The Vercel AI SDK UI message stream (`useChat`, ai 5-7), and Inkeep's `/api/chat` variant of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.capabilities import Variants
from gateway.core.codec import Dialect, Likeness, Sniff

from .conformance import judge
from .decode import VercelDecoder
from .encode import VercelEncoder
from .request import INKEEP, build_request, parse_request, sample_request

__all__ = ["DIALECT", "INKEEP"]


def sniff(body: dict[str, Any]) -> Likeness:
    """useChat sends a `trigger` and messages made of `parts`; Inkeep's body (a conversation id and plain
    messages) looks like AG-Kit's, so there the path's dialect decides."""
    messages = body.get("messages")
    if "trigger" in body or (isinstance(messages, list) and any(isinstance(m, dict) and "parts" in m
                                                                for m in messages)):
        return Likeness.OWN
    if "conversationId" in body and "threadId" not in body:
        return Likeness.PLAUSIBLE
    return Likeness.FOREIGN


def variant_of(headers: Mapping[str, str]) -> str | None:
    """Inkeep's Run API answers with `x-vercel-ai-data-stream: v2` where the AI SDK sends
    `x-vercel-ai-ui-message-stream: v1`."""
    if "x-vercel-ai-data-stream" in headers:
        return INKEEP
    return "" if "x-vercel-ai-ui-message-stream" in headers else None


DIALECT = Dialect(
    name="vercel",
    history="full",
    paths=("/api/chat",),
    carries=frozenset({"messages", "reasoning", "data", "interrupts", "interrupt_ids", "interrupt_tool_call",
                       "client_tools", "tool_errors", "errors", "cancel", "server_tools", "stop_reason"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=VercelDecoder,
    new_encoder=VercelEncoder,
    sniff=Sniff(sniff, "a Vercel request needs messages: useChat UIMessages with parts, or Inkeep messages with "
                       "role and content"),
    sample_request=sample_request,
    judge=judge,
    capabilities=(Variants({INKEEP: "delta"}, variant_of),),  # Inkeep keeps history itself: the last user message
)
