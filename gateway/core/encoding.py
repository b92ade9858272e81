"""Encoders: canonical events into a client's bytes.

`SSEEncoder` owns what every streaming dialect shares (framing, headers, keep-alive, batching and dispatch); a
dialect's encoder writes one function per event type it shows, of the encoder and the event (a method, or in the
larger encoders a module function before the class), each returning that event's frames, and lists them in
`handlers`; the events it has no word for it lists in its drop map (`DROPS`, see `gateway.core.dropped`), and the
base counts those.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar, Protocol, get_args

import orjson

from gateway.core.dropped import Dropped
from gateway.core.errors import ErrorCode
from gateway.core.events import Event, RunError
from gateway.core.sse import KEEP_ALIVE
from gateway.core.turn import Turn

SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}
JSON_HEADERS: Mapping[str, str] = {"content-type": "application/json"}

EVENT_TYPES = frozenset(get_args(Event))


class Encoder(Protocol):
    status_code: int
    headers: dict[str, str]
    """Response headers, `content-type` included."""
    streams: bool
    """Whether the client gets a stream (SSE) it can be sent bytes on as they come, or one body at the end."""
    dropped: dict[Dropped, int]
    """Events this dialect could not carry, by kind: left out (`reasoning`, `state`, ...) or approximated
    (`interrupt_as_tool_call`, ...). Counted only where that happens, never per event carried; the proxy adds them
    to `agent_gateway_events_dropped_total` once per request."""

    def encode(self, events: list[Event]) -> bytes:
        """Bytes for the client; empty when these events show nothing in this dialect (yet)."""

    def keep_alive(self) -> bytes:
        """Bytes that keep an idle connection open without meaning anything, or empty if the dialect has none."""

    def opening(self) -> bytes:
        """A one-body reply sent as soon as the upstream has accepted the run, before any event, for a client that
        asked for its reply before the run's end and needs nothing of the run for it (an MCP task); the run goes on
        without the client. Empty for every other."""


LARGE_TEXT = 1 << 16
"""Characters of text past which a value is written to JSON by the standard library (see `json_bytes`)."""


def json_bytes(value: Any, chars: int) -> bytes:
    """`value` as JSON, holding about `chars` characters of text (as the caller counts them). orjson keeps about 16
    bytes for each character it writes, in the bytes it returns (4 Mi characters: 63 MiB); the standard library
    needs about two, so a value holding much text is written by it."""
    if chars < LARGE_TEXT:
        return orjson.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def sse_frame(event: dict[str, Any]) -> bytes:
    """One SSE frame of one JSON object (orjson output never holds a raw newline, so one `data:` line does)."""
    return b"data: " + orjson.dumps(event) + b"\n\n"


def is_one_of(kind: object, names: frozenset[str]) -> bool:
    """Whether an upstream event's type is one of `names`: the type may be any JSON value (a list is unhashable)."""
    return isinstance(kind, str) and kind in names


HOLE = "\x00"
"""The delta a `DeltaFrames` render function puts in its frame, where each delta then goes."""
_HOLE_JSON = orjson.dumps(HOLE)
_NO_ID = object()


class DeltaFrames:
    """The frames of one kind of delta event, byte for byte what rendering each whole makes, for a fraction of its
    cost: most of a stream is deltas of one message, so its frame is rendered once around a placeholder delta and
    each delta is only JSON-encoded into the gap.

    `render(id)` is the frame of a delta of message `id` whose delta is `HOLE` (nothing after the delta in the frame
    may hold a NUL). Only the last id's frame is kept: a stream that switches ids at every delta costs a render a
    delta, and never more memory.
    """

    __slots__ = ("_after", "_before", "_id", "_render")

    def __init__(self, render: Callable[[Any], bytes]) -> None:
        self._render = render
        self._id: object = _NO_ID
        self._before = self._after = b""

    def frame(self, delta: str, id: str | None = None) -> bytes:
        if id is not self._id and id != self._id:
            self._for(id)
        text = orjson.dumps(delta) if len(delta) < LARGE_TEXT else json_bytes(delta, len(delta))
        return self._before + text + self._after

    def around(self, id: str | None = None) -> tuple[bytes, bytes]:
        """The bytes `frame` writes before a delta's JSON string, and after it."""
        if id is not self._id and id != self._id:
            self._for(id)
        return self._before, self._after

    def _for(self, id: str | None) -> None:
        self._before, _, self._after = self._render(id).rpartition(_HOLE_JSON)
        self._id = id


class SSEEncoder:
    """Base of the streaming encoders: `encode` looks each event's type up in one table and joins what it makes.

    The table is `handlers`, the events the dialect shows (each a function of the encoder and the event that
    returns its bytes), and a handler from `dropped_as` for each event of `DROPS`, the ones it has no word for. It
    is one table per class, of plain functions rather than bound methods: a per-instance table of bound methods
    would make every encoder a reference cycle, freed only by the cyclic collector. A subclass that leaves an
    event type out of both fails when it is defined, not mid-stream.
    """

    __slots__ = ("dropped", "headers", "status_code")

    streams = True
    HEADERS: ClassVar[Mapping[str, str]] = SSE_HEADERS
    """Response headers; a dialect adds its own to the SSE content type."""
    KEEP_ALIVE: ClassVar[bytes] = KEEP_ALIVE
    """What an idle stream is sent, or empty for a dialect whose clients take no comment."""
    handlers: ClassVar[Mapping[type, Callable[[Any, Any], bytes]]] = {}
    DROPS: ClassVar[Mapping[type, Dropped]] = {}
    """The events this dialect has no word for, by the kind each is counted under; an event type in both tables is
    dropped (a variant drops what its parent shows)."""
    METADATA: ClassVar[frozenset[type]] = frozenset()
    """Event types whose `metadata` this dialect carries, or whose handler counts it as dropped itself (a delta's,
    checked inline where every microsecond counts): any other event's is counted under `Dropped.METADATA`."""

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        shown = {**cls.handlers, **{kind: dropped_as(dropped) for kind, dropped in cls.DROPS.items()}}
        must_place(cls.__name__, shown)
        table = {kind: handler if kind in cls.METADATA else _counting_metadata(handler)
                 for kind, handler in shown.items()}
        cls.encode = _dispatching(table)  # type: ignore[method-assign, assignment]

    def __init__(self, request: Turn | None = None) -> None:
        self.status_code = 200
        self.headers = dict(self.HEADERS)
        self.dropped: dict[Dropped, int] = defaultdict(int)

    def encode(self, events: list[Event]) -> bytes:
        """Each event's bytes from its handler, joined (each subclass gets its own, from `_dispatching`)."""
        raise NotImplementedError

    def keep_alive(self) -> bytes:
        return self.KEEP_ALIVE

    def opening(self) -> bytes:
        return b""

    def text_around(self, message_id: str) -> tuple[bytes, bytes] | None:
        """The bytes this encoder writes, now and for as long as only such deltas follow, before and after the JSON
        string of a `TextDelta` of `message_id` without metadata, whose text is not empty, written alone; None where
        it writes more, keeps anything of it, or the dialect does not say (see `gateway.server.stream.splice`)."""
        return None


def must_place(owner: str, placed: Collection[type]) -> None:
    """Fail, where a table of what each event becomes is made, for an event type it has no place for: a type added
    to the model must be shown or counted as dropped by every dialect before a run can lose it unnoticed."""
    missing = EVENT_TYPES.difference(placed)
    if missing:
        raise TypeError(f"{owner} has no place for {sorted(t.__name__ for t in missing)}")


class BodyEncoder:
    """Base of the encoders that answer in one JSON body rather than a stream: nothing goes out as events come, so
    there is nothing to keep an idle connection open with. `encode` is the dialect's."""

    streams = False

    __slots__ = ("dropped", "headers", "status_code")

    def __init__(self, headers: Mapping[str, str] = JSON_HEADERS) -> None:
        self.status_code = 200
        self.headers = dict(headers)
        self.dropped: dict[Dropped, int] = defaultdict(int)

    def encode(self, events: list[Event]) -> bytes:
        raise NotImplementedError

    def keep_alive(self) -> bytes:
        return b""

    def opening(self) -> bytes:
        return b""


def failed_status(e: RunError) -> int:
    """The status of a reply in one body whose run failed: 504 for the upstream's timeout, else 502."""
    return 504 if e.code == ErrorCode.UPSTREAM_TIMEOUT else 502


def dropped_as(kind: Dropped) -> Callable[[Any, Any], bytes]:
    """A handler for an event the dialect has no word for: it writes nothing and counts the event under `kind`."""
    def drop(encoder: Any, event: Any) -> bytes:
        encoder.dropped[kind] += 1
        return b""
    return drop


_METADATA = Dropped.METADATA  # read once: an enum's member is a lookup each time it is named


def _counting_metadata(handler: Callable[[Any, Any], bytes]) -> Callable[[Any, Any], bytes]:
    def counting(self: Any, event: Any) -> bytes:
        if event.metadata is not None:
            self.dropped[_METADATA] += 1
        return handler(self, event)

    return counting


def _dispatching(handlers: dict[type, Callable[[Any, Any], bytes]]) -> Callable[[Any, list[Event]], bytes]:
    """`encode` for one encoder class, with its table in a closure: read through the instance, a class attribute
    is looked up along the type's MRO on every call, a cost per event."""

    def encode(self: Any, events: list[Event]) -> bytes:
        if len(events) == 1:  # the usual call on a paced stream: one event, no list to build or join
            event = events[0]
            return handlers[type(event)](self, event)
        return b"".join([handlers[type(event)](self, event) for event in events])

    return encode
