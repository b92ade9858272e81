"""The AG-UI protocol 1.0: `RunAgentInput` in, an SSE stream of UPPER_CASE events out."""

from __future__ import annotations

from typing import Any

from gateway.core.codec import Dialect, Likeness

from .conformance import judge
from .decode import AguiDecoder
from .encode import AguiEncoder
from .request import build_request, parse_request, sample_request


def sniff(body: dict[str, Any]) -> Likeness:
    """Only AG-UI's clients name a thread and a run."""
    return Likeness.OWN if "threadId" in body or "runId" in body else Likeness.FOREIGN


DIALECT = Dialect(
    name="ag-ui",
    history="full",
    paths=("/agui", "/send-message"),
    carries=frozenset({"messages", "reasoning", "state", "data", "interrupts", "interrupt_ids", "interrupt_tool_call",
                       "tool_definitions", "client_tools", "errors", "cancel", "server_tools"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=AguiDecoder,
    new_encoder=AguiEncoder,
    sniff=sniff,
    sample_request=sample_request,
    judge=judge,
    expects="an AG-UI request (RunAgentInput) needs threadId, runId and messages",
    event_ids=True,
)
