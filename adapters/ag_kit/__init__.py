"""AG-Kit's `send-message` (cloudbase-agent-server 0.1.1, `@cloudbase/agent-ui-web`): delta messages in, simple
kebab-case events and `[DONE]` out."""

from __future__ import annotations

from typing import Any

from gateway.core.codec import Dialect

from .conformance import judge
from .decode import AgKitDecoder
from .encode import AgKitEncoder
from .request import build_request, parse_request


def sniff(body: dict[str, Any]) -> int:
    if "conversationId" in body and "threadId" not in body:
        messages = body.get("messages")
        if isinstance(messages, list) and any(isinstance(m, dict) and "parts" in m for m in messages):
            return 20  # UIMessages: a Vercel client that sends a conversation id
        return 30 if "trigger" in body else 70
    return 0


DIALECT = Dialect(
    name="ag-kit",
    history="delta",
    streaming=True,
    paths=("/send-message",),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=AgKitDecoder,
    new_encoder=AgKitEncoder,
    sniff=sniff,
    judge=judge,
    expects="an AG-Kit request needs conversationId, with messages or a resume",
)
