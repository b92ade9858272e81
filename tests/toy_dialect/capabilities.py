"""What the toy dialect alone brings, to prove a dialect brings such things from its own package: a second wire
format (an upstream may answer in JSON text sequences, RFC 7464, as well as JSON lines), an endpoint of its own
under its path (`GET <path>/formats`, answered here, the upstream never asked), and how its judge numbers frames
(lines, `JudgedFrames`)."""

from __future__ import annotations

import orjson

from gateway.core import events as canonical
from gateway.core.capabilities import Asked, JudgedFrames, PathAnswer, WireFormats
from gateway.core.decoding import Decoder
from gateway.core.queries import Answer

from .conformance import frame_ends
from .decode import ToyDecoder

LINES = "application/x-ndjson"
SEQUENCE = "application/json-seq"
RECORD_SEPARATOR = b"\x1e"


class ToySequenceDecoder(ToyDecoder):
    """JSON text sequences: each event a record, opened by the record separator and closed by a line feed."""

    def feed(self, chunk: bytes) -> list[canonical.Event]:
        return super().feed(chunk.replace(RECORD_SEPARATOR, b""))


def decoder_for(content_type: str, max_event_bytes: int) -> Decoder | None:
    if content_type.partition(";")[0].strip().lower() != SEQUENCE:
        return None
    return ToySequenceDecoder(max_event_bytes)


async def formats(asked: Asked) -> Answer:
    """The wire formats a toy upstream may answer in, the usual one first."""
    return Answer(orjson.dumps({"formats": [LINES, SEQUENCE]}))


CAPABILITIES = (WireFormats(decoder_for), PathAnswer("GET", "/formats", formats, outcome="formats"),
                JudgedFrames(frame_ends))
