"""The AG-UI protocol 1.0: `RunAgentInput` in, an SSE stream of UPPER_CASE events out."""

from __future__ import annotations

from typing import Any

from gateway.core.capabilities import EventIds, JudgedFrames, Variants, WireFormats
from gateway.core.codec import Dialect, Encoder, Likeness, Sniff
from gateway.core.turn import Turn

from . import proto
from .conformance import frame_ends, judge
from .decode import AguiDecoder
from .encode import AguiEncoder
from .legacy import LegacyAguiEncoder, LegacyProtoAguiEncoder
from .request import build_request, parse_request, sample_request
from .versions import writes_legacy


def new_encoder(request: Turn | None = None) -> Encoder:
    """The encoder for the AG-UI the client speaks (1.0, or what came before) and the wire it reads: SSE, or
    protobuf for a client that asks for it, when the `protobuf` runtime is installed."""
    legacy = writes_legacy(request)
    if request is not None and proto.wants_proto(request.accept) and proto.available():
        return proto.ProtoEncoder(LegacyProtoAguiEncoder(request) if legacy else AguiEncoder(request))
    return LegacyAguiEncoder(request) if legacy else AguiEncoder(request)


def sniff(body: dict[str, Any]) -> Likeness:
    """Only AG-UI's clients name a thread and a run."""
    return Likeness.OWN if "threadId" in body or "runId" in body else Likeness.FOREIGN


DIALECT = Dialect(
    name="ag-ui",
    history="full",
    paths=("/agui", "/send-message"),
    carries=frozenset({"messages", "reasoning", "state", "data", "interrupts", "interrupt_ids", "interrupt_tool_call",
                       "tool_definitions", "client_tools", "errors", "cancel", "server_tools", "stop_reason"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=AguiDecoder,
    new_encoder=new_encoder,
    sniff=Sniff(sniff, "an AG-UI request (RunAgentInput) needs threadId, runId and messages"),
    sample_request=sample_request,
    judge=judge,
    capabilities=(EventIds(), Variants({proto.VARIANT: "full"}), WireFormats(proto.decoder_for),
                  JudgedFrames(frame_ends)),
)
