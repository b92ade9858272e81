"""A run as a Responses reply: semantic events over SSE (`event:` naming each, a `sequence_number` in each, then
`data: [DONE]`), or the response object in one body when the client did not ask to stream. What each event becomes
is `writer.ResponseWriter`'s; this module frames it."""

from __future__ import annotations

from collections import defaultdict

import orjson

from gateway.core.encoding import EVENT_TYPES, SSEEncoder
from gateway.core.events import Event, RunError, RunFinished, TextDelta
from gateway.core.turn import Turn

from .items import error_object
from .request import echo
from .writer import ResponseWriter, Semantic


def _frames(self: ResponsesStreamEncoder, events: list[Semantic]) -> bytes:
    out = []
    for kind, fields in events:
        self.sequence += 1
        body = orjson.dumps({"type": kind, "sequence_number": self.sequence, **fields})
        out.append(b"event: " + kind.encode() + b"\ndata: " + body + b"\n\n")
    if events and events[-1][0] in ("response.completed", "response.incomplete", "response.failed"):
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def _event(self: ResponsesStreamEncoder, e: Event) -> bytes:
    events = self.writer.event(e)
    return _frames(self, events) if events else b""


def _text_delta(self: ResponsesStreamEncoder, e: TextDelta) -> bytes:
    """Most of a stream: the frame around the delta is the message's, made once; only the number and the delta
    change."""
    text = self.writer.text_delta(e)
    if text is None:
        return b""
    if self.delta_of != e.message_id:
        self.delta_of = e.message_id
        self.delta_middle = (b',"item_id":' + orjson.dumps(text.item_id) + b',"output_index":'
                             + str(text.index).encode() + b',"content_index":0,"logprobs":[],"delta":')
    self.sequence += 1
    return (b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
            b"\"sequence_number\":" + str(self.sequence).encode() + self.delta_middle + orjson.dumps(e.delta)
            + b"}\n\n")


class ResponsesStreamEncoder(SSEEncoder):
    __slots__ = ("delta_middle", "delta_of", "sequence", "writer")

    handlers = {**dict.fromkeys(EVENT_TYPES, _event), TextDelta: _text_delta}

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self.writer = ResponseWriter(request, self.dropped)
        self.sequence = 0
        self.delta_of: str | None = None
        self.delta_middle = b""


class ResponsesBodyEncoder:
    """`stream: false`: the response object once the run ends; a failed run is an HTTP 502 (504 on a timeout)
    with an error object, as the `openai` SDKs raise it."""

    streams = False

    __slots__ = ("dropped", "headers", "status_code", "writer")

    def __init__(self, request: Turn | None = None) -> None:
        self.status_code = 200
        self.headers = {"content-type": "application/json"}
        self.dropped: dict[str, int] = defaultdict(int)
        self.writer = ResponseWriter(request, self.dropped)

    def keep_alive(self) -> bytes:
        return b""

    def encode(self, events: list[Event]) -> bytes:
        for e in events:
            if isinstance(e, RunError):
                self.status_code = 504 if e.code == "upstream_timeout" else 502
                return orjson.dumps({"error": error_object(e.message, self.status_code, e.code or "upstream_error")})
            semantic = self.writer.event(e)
            if isinstance(e, RunFinished):
                return orjson.dumps(semantic[-1][1]["response"])
        return b""


def new_encoder(request: Turn | None = None) -> ResponsesStreamEncoder | ResponsesBodyEncoder:
    if request is not None and echo(request).get("stream") is False:
        return ResponsesBodyEncoder(request)
    return ResponsesStreamEncoder(request)
