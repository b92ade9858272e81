"""The Vercel AI SDK UI message stream (`useChat`, ai 5-7), and Inkeep's `/api/chat` variant of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.codec import Dialect

from .conformance import judge
from .decode import VercelDecoder
from .encode import VercelEncoder
from .request import INKEEP, build_request, parse_request

__all__ = ["DIALECT", "INKEEP"]


def sniff(body: dict[str, Any]) -> int:
    messages = body.get("messages")
    has_parts = isinstance(messages, list) and any(isinstance(m, dict) and "parts" in m for m in messages)
    if "trigger" in body or has_parts:
        return 90
    if "conversationId" in body and "threadId" not in body:
        return 40  # Inkeep's body; an AG-Kit body looks the same, so the path's dialect decides
    return 0


def variant_of(headers: Mapping[str, str]) -> str | None:
    """Inkeep's Run API answers with `x-vercel-ai-data-stream: v2` where the AI SDK sends
    `x-vercel-ai-ui-message-stream: v1`."""
    return INKEEP if "x-vercel-ai-data-stream" in headers else None


DIALECT = Dialect(
    name="vercel",
    history="full",
    streaming=True,
    paths=("/api/chat",),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=VercelDecoder,
    new_encoder=VercelEncoder,
    sniff=sniff,
    judge=judge,
    variant_history={INKEEP: "delta"},  # Inkeep keeps history itself and reads only the last user message
    variant_of=variant_of,
    expects="a Vercel request needs messages: useChat UIMessages with parts, or Inkeep messages with role and content",
)
