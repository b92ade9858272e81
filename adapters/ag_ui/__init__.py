"""The AG-UI protocol 1.0: `RunAgentInput` in, an SSE stream of UPPER_CASE events out."""

from __future__ import annotations

from typing import Any

from gateway.core.codec import Dialect

from .conformance import judge
from .decode import AguiDecoder
from .encode import AguiEncoder
from .request import build_request, parse_request


def sniff(body: dict[str, Any]) -> int:
    if "threadId" in body and "runId" in body:
        return 90
    if "threadId" in body or "runId" in body:
        return 60
    return 0


DIALECT = Dialect(
    name="ag-ui",
    history="full",
    streaming=True,
    paths=("/agui", "/send-message"),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=AguiDecoder,
    new_encoder=AguiEncoder,
    sniff=sniff,
    judge=judge,
    expects="an AG-UI request (RunAgentInput) needs threadId, runId and messages",
)
