"""The eval platform contract: `POST /agent/respond`, OpenAI-style history in, one `AgentResponse` JSON out."""

from __future__ import annotations

from typing import Any

from gateway.core.capabilities import ClientHistory
from gateway.core.codec import Dialect, Likeness, Sniff

from .conformance import judge
from .decode import AgentRespondDecoder
from .encode import AgentRespondEncoder
from .request import build_request, parse_request, reply_messages, sample_request


def sniff(body: dict[str, Any]) -> Likeness:
    """The eval platform sends a test case's metadata, or at least OpenAI-style messages without ids, and never
    names a conversation or a thread."""
    if "threadId" in body or "conversationId" in body or "trigger" in body:
        return Likeness.FOREIGN
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and ("test_case_id" in metadata or "turn_index" in metadata):
        return Likeness.OWN
    messages = body.get("messages")
    if "model" in body:  # an OpenAI client's: readable here, but not surely the eval platform's
        return Likeness.PLAUSIBLE if isinstance(messages, list) else Likeness.FOREIGN
    if isinstance(messages, list) and all(isinstance(m, dict) and "parts" not in m and "id" not in m
                                          for m in messages):
        return Likeness.OWN
    return Likeness.FOREIGN


DIALECT = Dialect(
    name="agent-respond",
    history="full",
    paths=("/agent/respond",),
    carries=frozenset({"server_tools", "stop_reason"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=AgentRespondDecoder,
    new_encoder=AgentRespondEncoder,
    sniff=Sniff(sniff, "an agent-respond request needs messages with role and content (OpenAI style), and metadata"),
    sample_request=sample_request,
    judge=judge,
    capabilities=(ClientHistory(from_reply=reply_messages),),
)
