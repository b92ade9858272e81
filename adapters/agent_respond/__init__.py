"""The eval platform contract: `POST /agent/respond`, OpenAI-style history in, one `AgentResponse` JSON out."""

from __future__ import annotations

from typing import Any

from gateway.core.codec import Dialect

from .conformance import judge
from .decode import AgentRespondDecoder
from .encode import AgentRespondEncoder
from .request import build_request, parse_request


def sniff(body: dict[str, Any]) -> int:
    if "threadId" in body or "conversationId" in body or "trigger" in body:
        return 0
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and ("test_case_id" in metadata or "turn_index" in metadata):
        return 90
    messages = body.get("messages")
    if isinstance(messages, list) and all(isinstance(m, dict) and "parts" not in m and "id" not in m
                                          for m in messages):
        return 50
    return 0


DIALECT = Dialect(
    name="agent-respond",
    history="full",
    streaming=False,
    paths=("/agent/respond",),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=AgentRespondDecoder,
    new_encoder=AgentRespondEncoder,
    sniff=sniff,
    judge=judge,
    expects="an agent-respond request needs messages with role and content (OpenAI style), and metadata",
)
