"""AG-Kit's `send-message` (cloudbase-agent-server 0.1.1, `@cloudbase/agent-ui-web`): delta messages in, simple
kebab-case events and `[DONE]` out."""

from __future__ import annotations

from typing import Any

from gateway.core.codec import Dialect, Likeness, Sniff

from .conformance import judge
from .decode import AgKitDecoder
from .encode import AgKitEncoder
from .request import build_request, parse_request, sample_request


def sniff(body: dict[str, Any]) -> Likeness:
    """AG-Kit's clients send a conversation id, and never a thread, a `trigger` or messages made of `parts`."""
    if "conversationId" not in body or "threadId" in body:
        return Likeness.FOREIGN
    messages = body.get("messages")
    if "trigger" in body or (isinstance(messages, list) and any(isinstance(m, dict) and "parts" in m
                                                                for m in messages)):
        return Likeness.PLAUSIBLE
    return Likeness.OWN


DIALECT = Dialect(
    name="ag-kit",
    history="delta",
    paths=("/send-message",),
    carries=frozenset({"server_tools", "interrupts", "interrupt_ids", "tool_definitions", "client_tools", "errors"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=AgKitDecoder,
    new_encoder=AgKitEncoder,
    sniff=Sniff(sniff, "an AG-Kit request needs conversationId, with messages or a resume"),
    sample_request=sample_request,
    judge=judge,
)
