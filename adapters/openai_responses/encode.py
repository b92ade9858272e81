"""A run as a Responses reply: semantic events over SSE (`event:` naming each, a `sequence_number` in each, then
`data: [DONE]`), or the response object in one body when the client did not ask to stream. What each event becomes
is `writer.ResponseWriter`'s; this module frames it."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.dropped import Dropped
from gateway.core.encoding import EVENT_TYPES, LARGE_TEXT, BodyEncoder, SSEEncoder, failed_status, json_bytes
from gateway.core.ids import new_id
from gateway.core.turn import Turn

from .items import ERRORS
from .request import echo
from .writer import ResponseWriter, Semantic


class LongTexts:
    """Each long text of a response written to JSON once (by `json_bytes`): the `.done` events, the item and the
    whole response repeat a message's text, so a frame holding one is written around a placeholder and the text's
    JSON spliced in (a 10 MiB message: one encoding, not five)."""

    __slots__ = ("_encoded", "_mark")

    def __init__(self) -> None:
        self._encoded: dict[int, tuple[str, bytes]] = {}
        """id of a text -> (the text, kept so that its id stays its own; its JSON)."""
        self._mark = ""
        """What stands for a long text while a frame is written: unguessable, so no text of the response is it."""

    def pieces(self, value: dict[str, Any]) -> list[bytes]:
        """`value` as JSON, in pieces to join: the long texts' JSON as written once, between the rest."""
        if not self._mark:
            self._mark = new_id("\x00text")
        holes: list[bytes] = []
        rest = orjson.dumps(self._swap(value, holes))  # small: the long texts are placeholders
        out: list[bytes] = []
        for number, encoded in enumerate(holes):
            before, _, rest = rest.partition(orjson.dumps(f"{self._mark}.{number}"))
            out += (before, encoded)
        out.append(rest)
        return out

    def _swap(self, value: Any, holes: list[bytes]) -> Any:
        """`value` with each long text replaced by a placeholder, and that text's JSON in `holes`."""
        if isinstance(value, str):
            if len(value) < LARGE_TEXT:
                return value
            found = self._encoded.get(id(value))
            if found is None or found[0] is not value:
                found = self._encoded[id(value)] = (value, json_bytes(value, len(value)))
            holes.append(found[1])
            return f"{self._mark}.{len(holes) - 1}"
        if isinstance(value, dict):
            return {key: self._swap(item, holes) for key, item in value.items()}
        if isinstance(value, list):
            return [self._swap(item, holes) for item in value]
        return value


def _frames(self: ResponsesStreamEncoder, events: list[Semantic]) -> bytes:
    out: list[bytes] = []
    long_texts = self.writer.out.chars >= LARGE_TEXT  # joined once: a long text is copied no more than it must be
    for kind, fields in events:
        self.sequence += 1
        frame = {"type": kind, "sequence_number": self.sequence, **fields}
        out += (b"event: ", kind.encode(), b"\ndata: ")
        if long_texts:
            out += self.texts.pieces(frame)
        else:
            out.append(orjson.dumps(frame))
        out.append(b"\n\n")
    if events and events[-1][0] in ("response.completed", "response.incomplete", "response.failed"):
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def _event(self: ResponsesStreamEncoder, e: canonical.Event) -> bytes:
    events = self.writer.event(e)
    return _frames(self, events) if events else b""


_TEXT_DELTA = b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":'
_REFUSAL_DELTA = b'event: response.refusal.delta\ndata: {"type":"response.refusal.delta","sequence_number":'


def _text_delta(self: ResponsesStreamEncoder, e: canonical.TextDelta) -> bytes:
    """Most of a stream: the frame around the delta is the message's, made once; only the number and the delta
    change."""
    if e.metadata is not None:  # inline, not by the base's wrapper: most of a stream is text deltas
        self.dropped[Dropped.METADATA] += 1
    text = self.writer.text_delta(e)
    if text is None:
        return b""
    if self.delta_of is not text:  # by the item, not the message id: an id may come back as a new message
        self.delta_of = text
        self.delta_start = _REFUSAL_DELTA if text.refusal else _TEXT_DELTA
        self.delta_middle = (b',"item_id":' + orjson.dumps(text.item_id) + b',"output_index":'
                             + str(text.index).encode()
                             + (b',"content_index":0,"delta":' if text.refusal else
                                b',"content_index":0,"logprobs":[],"delta":'))
    self.sequence += 1
    head = self.delta_start + str(self.sequence).encode() + self.delta_middle
    if len(e.delta) < LARGE_TEXT:
        return head + orjson.dumps(e.delta) + b"}\n\n"
    return b"".join((head, json_bytes(e.delta, len(e.delta)), b"}\n\n"))


class ResponsesStreamEncoder(SSEEncoder):
    __slots__ = ("delta_middle", "delta_of", "delta_start", "sequence", "texts", "writer")

    handlers = {**dict.fromkeys(EVENT_TYPES, _event), canonical.TextDelta: _text_delta}
    METADATA = frozenset({canonical.TextDelta})  # counts its own

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self.writer = ResponseWriter(request, self.dropped)
        self.sequence = 0
        self.delta_of: object = None
        """The open message whose delta frame `delta_start` and `delta_middle` are."""
        self.delta_start = _TEXT_DELTA
        self.delta_middle = b""
        self.texts = LongTexts()


class ResponsesBodyEncoder(BodyEncoder):
    """`stream: false`: the response object once the run ends; a failed run is an HTTP 502 (504 on a timeout)
    with an error object, as the `openai` SDKs raise it."""

    __slots__ = ("writer",)

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__()
        self.writer = ResponseWriter(request, self.dropped)

    def encode(self, events: list[canonical.Event]) -> bytes:
        for e in events:
            if e.metadata is not None:
                self.dropped[Dropped.METADATA] += 1  # no item has a place for an event's metadata
            if isinstance(e, canonical.RunError):
                self.status_code = failed_status(e)
                return orjson.dumps({"error": ERRORS.failed(e, self.status_code)})
            semantic = self.writer.event(e)
            if isinstance(e, canonical.RunFinished):
                return json_bytes(semantic[-1][1]["response"], self.writer.out.chars)
        return b""


def new_encoder(request: Turn | None = None) -> ResponsesStreamEncoder | ResponsesBodyEncoder:
    if request is not None and echo(request).get("stream") is False:
        return ResponsesBodyEncoder(request)
    return ResponsesStreamEncoder(request)
