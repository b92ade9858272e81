"""Decoders: an upstream's bytes into canonical events, in three stages.

```
bytes ──framing──▶ frames ──the dialect's mapping──▶ events ──RunRepair──▶ well formed events
```

Framing: `JsonSSEDecoder` (SSE of JSON objects), `JsonBodyDecoder` (one JSON body), and `JsonSSEOrBodyDecoder` for
dialects whose upstreams answer in either (the body's first byte tells).

The bases here own framing and repair; a dialect's decoder only maps one frame (or, for a one-body dialect, the
body) to events, appending them to `Events`. That is the decoder's `RunRepair`, which takes each event as it comes
(no list in between, nothing per event beyond the call) and turns whatever the mapping makes, however odd, into a
well formed run (see `gateway.core.repair`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import orjson

from gateway.core.errors import ErrorCode
from gateway.core.events import Event, RunFinished
from gateway.core.native import mypyc_attr
from gateway.core.repair import RunRepair
from gateway.core.sse import DEFAULT_MAX_FRAME, FrameTooLarge, SSEDecoder
from gateway.core.steady import FrameAroundText, SteadyText

if TYPE_CHECKING:
    from gateway.core.codec import UpstreamRequest

DEFAULT_MAX_BODY = 32 * 1024 * 1024


def str_or(value: Any, default: str = "") -> str:
    """`value` where an upstream sent a string, else `default`: for a field whose absence and emptiness are one."""
    return value if isinstance(value, str) else default


def str_or_none(value: Any) -> str | None:
    """`value` where an upstream sent a string, else None: for a field whose absence the event keeps."""
    return value if isinstance(value, str) else None


def str_at(mapping: dict[str, Any], key: str) -> str | None:
    """The string an upstream's object holds at `key`, or None: an optional field's value where it is a string."""
    value = mapping.get(key)
    return value if isinstance(value, str) else None


def required_str(frame: dict[str, Any], key: str) -> str:
    """A string field an event cannot do without: `TypeError` (or `KeyError`) where the upstream sent none, which
    a dialect's `on_frame` answers by keeping the frame as `Raw`."""
    value = frame[key]
    if type(value) is not str:
        raise TypeError(key)
    return value


class Events(Protocol):
    """Where a dialect's mapping puts the events it reads: the decoder's `RunRepair`, which repairs them on the way
    into the list `feed()` returns. A mapping appends to it as to a list and never needs to know more."""

    def append(self, event: Event, /) -> None: ...


class Decoder(Protocol):
    """An upstream's reply to canonical events. Beyond reading it, a decoder answers what the relay may ask about
    the run (`cancel_request`, `reattach_request`, `sent`, `ignored`); `RepairedDecoder`, which every decoder builds
    on, answers each with "nothing", so a dialect writes only those its upstreams need."""

    def feed(self, chunk: bytes) -> list[Event]:
        """Events completed by this chunk of the upstream's body; the chunk may be split anywhere."""

    def close(self) -> list[Event]:
        """The body ended: the last events, a terminal one among them if the stream had none."""

    def fail(self, message: str, code: str | None = None) -> list[Event]:
        """The transport broke: close the run with an error."""

    def cancel(self) -> list[Event]:
        """The client cancelled the run: close it as cancelled."""

    def cancel_request(self) -> UpstreamRequest | None:
        """What to send the upstream when the client leaves mid-run (A2A's `CancelTask` for the task this stream
        runs), or None where closing the connection says it."""

    def reattach_request(self, broke: bool = True) -> UpstreamRequest | None:
        """The stream broke off (`broke`: the connection failed; else the body ended) before the run ended: what to
        ask the upstream for the rest of the run (A2A's `SubscribeToTask`, then `GetTask`), whose answer this
        decoder then reads as the rest of its stream; None where there is no such way, or no more tries."""

    def sent(self, request: UpstreamRequest) -> None:
        """The request this decoder reads the answer to: a dialect whose later calls about the run name what only
        the request said (LangGraph's thread, in its path) keeps it."""

    @property
    def ignored(self) -> int:
        """Frames about another run than this one (another task's updates on the stream) it left out."""


class NewDecoder(Protocol):
    def __call__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> Decoder:
        """A decoder for one upstream response. `max_event_bytes` bounds one event (one SSE frame, or the whole
        body of a dialect that answers in one): past it the run fails rather than the gateway's memory."""


class BoundedBody:
    """A response body gathered whole, up to `limit` bytes: past it the run fails rather than memory growing."""

    __slots__ = ("_chunks", "_size", "limit")

    def __init__(self, limit: int) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        self.limit = limit

    def add(self, chunk: bytes, repair: RunRepair, out: list[Event]) -> None:
        self._size += len(chunk)
        if self._size > self.limit:
            self._chunks.clear()
            repair.fail(f"upstream response exceeded {self.limit} bytes", ErrorCode.UPSTREAM_EVENT_TOO_LARGE, out)
        else:
            self._chunks.append(chunk)

    def json(self, repair: RunRepair, out: list[Event]) -> tuple[bool, Any]:
        """(True, the body's JSON value), or (False, None) once the run failed for a body that is not JSON."""
        try:
            return True, orjson.loads(b"".join(self._chunks))
        except orjson.JSONDecodeError:
            repair.fail("upstream returned a body that is not JSON", ErrorCode.UPSTREAM_BAD_EVENT, out)
            return False, None


@mypyc_attr(allow_interpreted_subclasses=True)
class RepairedDecoder:
    """What every decoder shares: the repair stage, and failing the run when the transport breaks.

    Subclasses frame the bytes and hand the frames to the dialect's mapping, with `self.repair` as its `Events`.
    """

    __slots__ = ("ignored", "repair")

    def __init__(self) -> None:
        self.repair = RunRepair()
        self.ignored = 0
        """Frames about another run than this one (another task's updates on the stream), left out."""

    def fail(self, message: str, code: str | None = None) -> list[Event]:
        out: list[Event] = []
        self.repair.fail(message, code, out)
        return out

    def cancel(self) -> list[Event]:
        out: list[Event] = []
        self.repair.push(RunFinished(outcome="cancelled"), out)
        return out

    def cancel_request(self) -> UpstreamRequest | None:
        """What to send the upstream to stop a run the gateway abandons (its client left, a deadline or a limit
        ended it here), if its dialect has a way and the run may still be running there."""
        return None

    def reattach_request(self, broke: bool = True) -> UpstreamRequest | None:
        return None

    def sent(self, request: UpstreamRequest) -> None:
        pass


@mypyc_attr(allow_interpreted_subclasses=True)
class JsonSSEDecoder(RepairedDecoder):
    """Decoder for dialects whose stream is SSE frames of one JSON object each, maybe ended by `[DONE]`.

    Subclasses map a frame to events in `on_frame`, say what `[DONE]` means in `on_done`, and may end a run the
    stream left open in `on_end`. Frames after the one that ended the run are not read: repair would drop their
    events anyway.
    """

    __slots__ = ("_sse", "_steady")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__()
        self._sse = SSEDecoder(max_event_bytes)
        self._steady = SteadyText()

    def feed(self, chunk: bytes) -> list[Event]:
        out: list[Event] = []
        if self.repair.done:
            return out
        try:
            frames = self._sse.feed(chunk)
        except FrameTooLarge as exc:
            self.repair.fail(f"upstream sent an oversized event: {exc}", ErrorCode.UPSTREAM_EVENT_TOO_LARGE, out)
            return out
        self._frames(frames, out)
        return out

    def close(self) -> list[Event]:
        out: list[Event] = []
        repair = self.repair
        if not repair.done:
            self._frames(self._sse.flush(), out)
            if not repair.done:
                self.on_end(repair)
        repair.end_of_stream(out)
        return out

    def _frames(self, frames: list[bytes], out: list[Event]) -> None:
        """Each frame through the dialect's mapping, whose events go through repair into `out`; frames after the
        run's end are not read."""
        repair, steady = self.repair, self._steady
        repair.out = out
        for data in frames:
            if repair.done:
                return
            if steady.shape is not None:
                text = steady.text_of(data)
                if text is not None:  # the last frame again with other text: the rest need not be read
                    self.on_steady_text(text, repair)
                    continue
            if data == b"[DONE]":  # before JSON: orjson's decode error is a Python exception, slow to make
                self.on_done(repair)
                continue
            try:
                frame = orjson.loads(data)
            except orjson.JSONDecodeError:
                if data.strip() == b"[DONE]":
                    self.on_done(repair)
                else:
                    preview = data[:80].decode("utf-8", "replace")
                    repair.fail(f"upstream sent invalid JSON in an event: {preview!r}", ErrorCode.UPSTREAM_BAD_EVENT,
                                out)
                continue
            if type(frame) is dict:
                self.on_frame(frame, repair)
                if steady.tries > 0:
                    steady.learn(data, frame, self.steady_text)
            else:
                repair.fail("upstream sent an event that is not a JSON object", ErrorCode.UPSTREAM_BAD_EVENT, out)

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        raise NotImplementedError

    def steady_text(self, frame: Any) -> str | None:
        """The text of `frame` if it is a text delta that, read again now (after it was read), would be no more
        than `on_steady_text(text)`; else None (see `SteadyText`). A dialect that does not say is not asked
        again."""
        self._steady.tries = 0
        return None

    def on_steady_text(self, text: str, out: Events) -> None:
        """What `on_frame` does with a frame `steady_text` named, knowing only its text."""
        raise NotImplementedError

    def steady_message(self) -> str | None:
        """The message whose `TextDelta` (without metadata) is all `on_steady_text` makes of a text, keeping
        nothing; None where it does more, or the dialect does not say."""
        return None

    def spliced_text(self) -> tuple[bytes, bytes, str] | None:
        """What the next frame is, if it is another text delta of the open message and reading it would be no more
        than that delta: its bytes before and after the text's JSON string, and the message (see
        `gateway.server.stream.splice`). None where the next frame must be read."""
        shape = self._steady.shape
        if type(shape) is not FrameAroundText or self.repair.done or not self._sse.idle():
            return None
        message_id = self.steady_message()
        if message_id is None or message_id not in self.repair.open_text:
            return None
        before, after = shape.around()
        return before, after, message_id

    def on_done(self, out: Events) -> None:
        out.append(RunFinished())

    def on_end(self, out: Events) -> None:
        """The stream ended with the run still open. Repair then fails the run as cut short, unless the dialect's
        runs may end so and this ends it (Chat Completions, after a finish reason)."""


@mypyc_attr(allow_interpreted_subclasses=True)
class JsonBodyDecoder(RepairedDecoder):
    """Decoder for dialects that answer in one JSON body: the framing is the whole body, read at `close()`.

    Subclasses map the parsed body to events in `on_body`, ending with the terminal one.
    """

    __slots__ = ("_body",)

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_BODY) -> None:
        """`max_event_bytes` bounds the whole body: for such a dialect the body is the one event."""
        super().__init__()
        self._body = BoundedBody(max_event_bytes)

    def feed(self, chunk: bytes) -> list[Event]:
        out: list[Event] = []
        if not self.repair.done:
            self._body.add(chunk, self.repair, out)
        return out

    def close(self) -> list[Event]:
        out: list[Event] = []
        repair = self.repair
        if repair.done:
            return out
        repair.out = out
        parsed, body = self._body.json(repair, out)
        if parsed:
            self.on_body(body, repair)
        repair.end_of_stream(out)
        return out

    def on_body(self, body: Any, out: Events) -> None:
        raise NotImplementedError


@mypyc_attr(allow_interpreted_subclasses=True)
class JsonSSEOrBodyDecoder(JsonSSEDecoder):
    """Decoder for dialects whose upstream answers in SSE frames of JSON objects or in one JSON body (a server that
    does not stream, or an error sent before any stream): the body's first byte that is not blank tells which.

    One of `json_starts` (`{`, unless the dialect says more) begins one body; anything else is SSE, read as
    `JsonSSEDecoder` reads it. The body is gathered, up to the larger of `max_event_bytes` and `DEFAULT_MAX_BODY`,
    and at `close()` its JSON value, of whatever type, goes to `on_body`.
    """

    __slots__ = ("_body", "_json_starts", "_max_event_bytes", "_mode")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME, *, json_starts: bytes = b"{") -> None:
        super().__init__(max_event_bytes)
        self._max_event_bytes = max_event_bytes
        self._json_starts = json_starts
        """The bytes, each, that begin a body of one JSON value."""
        self._mode: str | None = None
        """`sse` or `json`, once the body's first byte tells."""
        self._body = BoundedBody(max(max_event_bytes, DEFAULT_MAX_BODY))

    def feed(self, chunk: bytes) -> list[Event]:
        if self._mode is None:
            head = chunk.lstrip()
            if not head:
                return []
            self._mode = "json" if head[:1] in self._json_starts else "sse"
        if self._mode == "sse":
            return super().feed(chunk)
        out: list[Event] = []
        if not self.repair.done:
            self._body.add(chunk, self.repair, out)
        return out

    def close(self) -> list[Event]:
        if self._mode != "json":
            return super().close()
        out: list[Event] = []
        repair = self.repair
        repair.out = out
        if not repair.done:
            parsed, body = self._body.json(repair, out)
            if parsed:
                self.on_body(body, repair)
        repair.end_of_stream(out)
        return out

    def restart(self) -> None:
        """Read the next body from its first byte: the answer to another request about the same run (a
        re-attach), which may come in the other form."""
        self._mode = None
        self._sse = SSEDecoder(self._max_event_bytes)
        self._steady.forget()
        self._body = BoundedBody(max(self._max_event_bytes, DEFAULT_MAX_BODY))

    def on_body(self, body: Any, out: Events) -> None:
        raise NotImplementedError
