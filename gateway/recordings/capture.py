"""One run as the gateway saw it: the requests on both sides, each upstream frame as it came with the canonical
events it made, each event's bytes for the client with what its dialect dropped or approximated, and when the
client was written to.

A run is captured by wrapping its decoder, its encoder and its writer's send (`RunCapture.tap`,
`ClientWriter.tap`) when it starts, and only then: a run nobody watches or records runs the relay's own objects, so
capture costs the per-event path nothing unless it is on. A capture holds at most `limit` bytes (and takes from a
shared `Budget`); past either it keeps counting but stops keeping (`truncated`). A capture the route records leaves
the budget instead of stopping, as its recording needs all of it: `limit` still bounds it.

```
upstream chunk ─▶ TappedDecoder: cut into frames, each fed alone ─▶ Row(frame, at) + its events
canonical events ─▶ TappedEncoder: each encoded alone ─▶ the row's event: bytes out, dropped kinds
client write ─▶ ClientTap: the rows written get their time, the bytes are kept as the client got them
```
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, cast

import orjson

from gateway.core.codec import Decoder, Encoder, UpstreamRequest
from gateway.core.dropped import Dropped
from gateway.core.events import Event
from gateway.recordings.exchange import FORMAT, safe_body, safe_headers, safe_url, wire

FRAME_END = re.compile(rb"(?:\r\n|\r|\n)(?:\r\n|\r|\n)")
"""Where an SSE frame ends (a blank line). A body that is not SSE is cut there too, which changes nothing: the
pieces are fed in order, and replayed as they came."""
EVENT_OVERHEAD = 64
"""Bytes an event costs a capture beyond its JSON and its output, for the bounds."""


class Budget:
    """Bytes all the captures one process keeps may hold, shared: `over` frees what it can (the inspector's oldest
    ended runs) and says whether still over."""

    __slots__ = ("limit", "over", "used")

    def __init__(self, limit: int, over: Callable[[], bool] | None = None) -> None:
        self.limit = limit
        self.used = 0
        self.over: Callable[[], bool] = over or (lambda: self.used > self.limit)


class CapturedEvent:
    """One canonical event: its type, its fields as JSON, its bytes for the client and what was lost on the way."""

    __slots__ = ("body", "dropped", "kind", "out")

    def __init__(self, kind: str, body: bytes) -> None:
        self.kind = kind
        self.body = body
        self.out = b""
        self.dropped: tuple[str, ...] = ()
        """The kinds the client's dialect counted for it (`Encoder.dropped`): left out, or approximated
        (`..._as_...`)."""


class Row:
    """One upstream frame (or the gateway's own word, `source`), the events it made, and when the client got
    them."""

    __slots__ = ("at", "events", "frame", "source", "written_at")

    def __init__(self, at: float, frame: bytes, source: str) -> None:
        self.at = at
        self.frame = frame
        self.source = source
        """"upstream", or what made events without a frame ("end of stream", "gateway: upstream_timeout")."""
        self.events: list[CapturedEvent] = []
        self.written_at: float | None = None


class DirectWriter(Protocol):
    def ready(self) -> bool: ...
    def write(self, body: bytes) -> None: ...
    def abort(self) -> bool: ...


class RunCapture:
    """What one run's capture holds; `version` moves on each change, for live views."""

    def __init__(self, request_id: str, route: str, *, limit: int, budget: Budget | None = None,
                 recorded: bool = False, configured_headers: Iterable[str] = (),
                 clock: Callable[[], float] = time.monotonic, origin: float | None = None) -> None:
        self.request_id = request_id
        self.route = route
        self.limit = limit
        self.budget = budget
        self.recorded = recorded
        """The route records the run: only `limit` (its `max_file_bytes`) may cut it, never the shared budget."""
        self.clock = clock
        self.origin = clock() if origin is None else origin
        """When the request came (monotonic): every time kept is seconds from it."""
        self.recorded_at = time.time() - (clock() - self.origin)
        self.configured = frozenset(name.lower() for name in configured_headers)
        """The route's own upstream headers: never kept."""
        self.size = 0
        self.frames = 0
        """Upstream frames read, kept or not."""
        self.events_out = 0
        """Events that gave the client bytes, kept or not."""
        self.truncated = False
        self.version = 0
        self.client_request: dict[str, Any] | None = None
        self.upstream_request: dict[str, Any] | None = None
        self.upstream_head: dict[str, Any] | None = None
        self.client_head: dict[str, Any] | None = None
        self.mapping: str | None = None
        """What the conversation mapping decided this turn, and why."""
        self.conversation: str | None = None
        """The upstream's conversation id: a recording's file per conversation is named after it."""
        self.attempts: list[dict[str, Any]] = []
        """The upstreams that failed the run before its reply, on a route with fallbacks (`upstream_failed`)."""
        self.rows: list[Row] = []
        self.client_frames: list[tuple[float, bytes]] = []
        self.client_done = False
        """The response's last byte has been sent (or its send failed)."""
        self.when_done: Callable[[], None] | None = None
        """Called once the last byte is sent, for what needs all of it (a recording, a judge)."""
        self.judged = False
        """The route's judge sampled the run: it is judged once it ends (`gateway.recordings.judged`)."""
        self._unwritten = 0
        """The first row whose output may not have been written yet."""
        self._batches: dict[int, tuple[list[Event], list[tuple[Row, int]]]] = {}
        """Event lists the decoder returned and the encoder has not yet seen: which row made each event."""

    def _keep(self, size: int) -> bool:
        """Whether `size` more bytes may be kept."""
        self.version += 1
        if self.truncated:
            return False
        self.size += size
        budget = self.budget
        if budget is not None:
            budget.used += size
            if budget.used > budget.limit and budget.over():
                if self.recorded:  # the budget lets this capture go: its own limit bounds it, as unwatched
                    budget.used -= self.size
                    self.budget = None
                else:
                    self.truncated = True
        if self.size > self.limit:
            self.truncated = True
        return not self.truncated

    # The requests and heads: once per run.

    def client_said(self, method: str, path: str, headers: Iterable[tuple[str, str]], body: bytes) -> None:
        body = safe_body(body)
        if self._keep(len(body)):
            self.client_request = {"method": method, "path": path, "headers": safe_headers(headers), "body": body}

    def upstream_asked(self, url: str, request: UpstreamRequest, headers: Mapping[str, str], variant: str | None,
                       discovery: Any = None) -> None:
        body = safe_body(request.body)
        if self._keep(len(body)):
            self.upstream_request = {
                "url": safe_url(url), "path": request.path, "variant": variant, "body": body,
                "headers": safe_headers(headers.items(), self.configured), "sent_at": self.clock() - self.origin,
                "discovery": discovery, "streams": request.streams}

    def upstream_answered(self, status: int, headers: Iterable[tuple[str, str]]) -> None:
        self.version += 1
        self.upstream_head = {"status": status, "headers": safe_headers(headers, self.configured),
                              "at": self.clock() - self.origin}

    def upstream_failed(self, upstream: str, dialect: str, url: str, reason: str, error: str, began: float) -> None:
        """The upstream asked since `began` (monotonic) failed the run before its reply, which moves on (`Moved`): what
        it was asked and answered becomes an attempt, with why, and the next upstream's is the run's."""
        asked, self.version = self.upstream_request, self.version + 1
        self.attempts.append({"upstream": upstream, "dialect": dialect, "url": asked["url"] if asked else safe_url(url),
                              "reason": reason, "error": error, "request": asked, "head": self.upstream_head,
                              "began": began - self.origin, "ended": self.clock() - self.origin})
        self.upstream_request = self.upstream_head = None

    def last_asked(self, dialect: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
        """The upstream request and answer a recording holds, and the upstream's dialect: the run's, or when every
        upstream failed it, the last one asked's (no request: none was asked)."""
        if self.upstream_request is None:
            for attempt in reversed(self.attempts):
                if attempt["request"] is not None:
                    return attempt["request"], attempt["head"], attempt["dialect"]
        return self.upstream_request, self.upstream_head, dialect

    # The upstream's frames and the events they made.

    def frame(self, at: float, data: bytes, events: list[Event], rows: list[tuple[Row, int]],
              source: str = "upstream") -> None:
        if source == "upstream":
            self.frames += 1
        row = Row(at - self.origin, data if self._keep(len(data) + EVENT_OVERHEAD) else b"", source)
        if not self.truncated:
            self.rows.append(row)
        rows.append((row, len(events)))

    def batch(self, events: list[Event], rows: list[tuple[Row, int]]) -> None:
        """The decoder returned `events`, made by `rows`: kept until the encoder takes them. A batch the relay never
        encodes (a run cut short) is let go when a later one is."""
        self._batches[id(events)] = (events, rows)

    def rows_of(self, events: list[Event]) -> list[Row]:
        """The row of each event of a batch the encoder was given; events it was not given by the decoder (the
        gateway's own, as an error) get a row of their own."""
        batch = self._batches.pop(id(events), None)
        if batch is None or batch[0] is not events:
            row = Row(self.clock() - self.origin, b"", "gateway")
            if not self.truncated:
                self.rows.append(row)
            return [row] * len(events)
        self._batches.clear()  # older batches were never encoded: the run moved past them
        found: list[Row] = []
        for row, count in batch[1]:
            found += [row] * count
        return found

    def encoded(self, row: Row, event: Event, out: bytes, dropped: tuple[str, ...]) -> None:
        if out:
            self.events_out += 1
        body = orjson.dumps(event, default=repr)
        if self._keep(len(body) + len(out) + EVENT_OVERHEAD):
            captured = CapturedEvent(type(event).__name__, body)
            captured.out, captured.dropped = out, dropped
            row.events.append(captured)

    # The client's side.

    def wrote(self, body: bytes) -> None:
        now = self.clock() - self.origin
        if body.startswith(b"{"):  # a JSON body (an answer about a run may hold a credential), not an SSE piece
            body = safe_body(body)
        if self._keep(len(body)):
            self.client_frames.append((now, body))
        rows = self.rows
        for index in range(self._unwritten, len(rows)):
            row = rows[index]
            if row.written_at is None and any(e.out for e in row.events):
                row.written_at = now
        self._unwritten = len(rows)

    def done(self) -> None:
        self.client_done = True
        self.version += 1
        when_done, self.when_done = self.when_done, None
        if when_done is not None:
            when_done()

    def client_started(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        self.version += 1
        self.client_head = {"status": status,
                            "headers": safe_headers((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers)}

    def tap(self, decoder: Decoder, encoder: Encoder) -> tuple[Decoder, Encoder]:
        """The run's decoder and encoder, each wrapped to fill this capture."""
        # The encoder's fields are read through properties (the dialect's encoder may change them as it goes),
        # which a protocol of plain attributes does not describe.
        return TappedDecoder(decoder, self), cast(Encoder, TappedEncoder(encoder, self))

    def direct(self, direct: DirectWriter) -> DirectWriter:
        return TappedDirect(direct, self)

    def exchange(self, record: Any, client_dialect: str, upstream_dialect: str) -> dict[str, Any]:
        """The capture as a line of a recording; `record` is the run's access record. A run that moved between
        upstreams adds `attempts`, which replaying ignores."""
        client = self.client_request or {"method": "POST", "path": "", "headers": {}, "body": b""}
        upstream, upstream_head, upstream_dialect = self.last_asked(upstream_dialect)
        upstream = upstream or {"url": "", "path": None, "headers": {}, "body": b"", "variant": None}
        upstream_head = upstream_head or {"status": 0, "headers": {}, "at": 0.0}
        client_head = self.client_head or {"status": 0, "headers": {}}
        exchange: dict[str, Any] = {
            "format": FORMAT, "id": self.request_id,
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.recorded_at)),
            "route": self.route, "conversation": record.conversation_id, "key_id": record.key_id,
            "outcome": record.outcome, "error": record.error, "mapping": self.mapping, "truncated": self.truncated,
            "client": {"dialect": client_dialect, "method": client["method"], "path": client["path"],
                       "headers": client["headers"], "body": wire(client["body"])},
            "upstream": {"dialect": upstream_dialect, "variant": upstream.get("variant"), "url": upstream["url"],
                         "path": upstream.get("path"), "headers": upstream["headers"], "body": wire(upstream["body"]),
                         "sent_at": upstream.get("sent_at", 0.0), "discovery": upstream.get("discovery")},
            "upstream_response": {**upstream_head,
                                  "frames": [(row.at, wire(row.frame)) for row in self.rows
                                             if row.frame and row.source == "upstream"]},
            "client_response": {**client_head, "frames": [(at, wire(data)) for at, data in self.client_frames]},
        }
        if self.attempts:  # what replay ignores: who failed the run first, and why
            exchange["attempts"] = [
                {key: attempt[key] for key in ("upstream", "dialect", "url", "reason", "error", "began", "ended")}
                | {"status": attempt["head"]["status"] if attempt["head"] else None} for attempt in self.attempts]
        return exchange


class TappedDecoder:
    """A run's decoder, fed one frame at a time so that each frame's events are known; the events it returns, and
    so the client's bytes, are the same as the decoder's own."""

    __slots__ = ("_capture", "_inner", "_partial")

    def __init__(self, inner: Decoder, capture: RunCapture) -> None:
        self._inner = inner
        self._capture = capture
        self._partial = b""
        """The start of a frame whose end has not come yet."""

    def feed(self, chunk: bytes) -> list[Event]:
        capture, inner = self._capture, self._inner
        now = capture.clock()
        data = self._partial + chunk
        skip = len(self._partial)
        start = fed = 0
        out: list[Event] = []
        rows: list[tuple[Row, int]] = []
        for end in FRAME_END.finditer(data, max(0, skip - 3)):
            stop = end.end() - skip
            if stop <= fed:
                continue
            events = inner.feed(chunk[fed:stop])
            fed = stop
            capture.frame(now, data[start:end.end()], events, rows)
            start = end.end()
            out += events
        if fed < len(chunk):
            events = inner.feed(chunk[fed:])
            if events:  # a reply that is not SSE, or SSE without blank lines: what came is the frame
                capture.frame(now, data[start:], events, rows)
                start = len(data)
            out += events
        self._partial = data[start:]
        capture.batch(out, rows)
        return out

    def close(self) -> list[Event]:
        events = self._inner.close()
        return self._ended(events, "upstream" if self._partial else "end of stream")

    def fail(self, message: str, code: str | None = None) -> list[Event]:
        return self._ended(self._inner.fail(message, code), f"gateway: {code or 'error'}")

    def cancel(self) -> list[Event]:
        return self._ended(self._inner.cancel(), "gateway: cancelled")

    def _ended(self, events: list[Event], source: str) -> list[Event]:
        """The run's last events, made by the body's end or by the gateway; a frame the body left unfinished is a
        row of its own, so that what came is all kept."""
        capture = self._capture
        rows: list[tuple[Row, int]] = []
        now = capture.clock()
        if self._partial and source == "upstream":
            capture.frame(now, self._partial, events, rows)
        else:
            if self._partial:
                capture.frame(now, self._partial, [], [])
            capture.frame(now, b"", events, rows, source)
        self._partial = b""
        capture.batch(events, rows)
        return events

    def cancel_request(self) -> UpstreamRequest | None:
        return self._inner.cancel_request()

    def reattach_request(self, broke: bool = True) -> UpstreamRequest | None:
        return self._inner.reattach_request(broke)

    def sent(self, request: UpstreamRequest) -> None:
        self._inner.sent(request)

    @property
    def ignored(self) -> int:
        return self._inner.ignored


class TappedEncoder:
    """A run's encoder, given one event at a time so that each event's bytes and losses are known; the bytes it
    returns are those the encoder would have made of the whole batch (encoding is per event in every dialect)."""

    __slots__ = ("_capture", "_inner")

    def __init__(self, inner: Encoder, capture: RunCapture) -> None:
        self._inner = inner
        self._capture = capture

    def encode(self, events: list[Event]) -> bytes:
        capture, inner = self._capture, self._inner
        dropped = inner.dropped
        outs: list[bytes] = []
        for row, event in zip(capture.rows_of(events), events, strict=True):
            before = dict(dropped)
            out = inner.encode([event])
            lost = tuple(kind for kind, count in dropped.items() if count != before.get(kind, 0))
            capture.encoded(row, event, out, lost)
            outs.append(out)
        return b"".join(outs)

    def keep_alive(self) -> bytes:
        return self._inner.keep_alive()

    def opening(self) -> bytes:
        return self._inner.opening()

    @property
    def status_code(self) -> int:
        return self._inner.status_code

    @property
    def headers(self) -> dict[str, str]:
        return self._inner.headers

    @property
    def streams(self) -> bool:
        return self._inner.streams

    @property
    def dropped(self) -> dict[Dropped, int]:
        return self._inner.dropped

    def __getattr__(self, name: str) -> Any:  # what a dialect's encoder has beyond the protocol
        return getattr(self._inner, name)


class TappedDirect:
    """The server's direct writer of a captured run: each piece written is the client's, with its time."""

    __slots__ = ("_capture", "_inner")

    def __init__(self, inner: DirectWriter, capture: RunCapture) -> None:
        self._inner = inner
        self._capture = capture

    def ready(self) -> bool:
        return self._inner.ready()

    def write(self, body: bytes) -> None:
        self._inner.write(body)
        self._capture.wrote(body)

    def abort(self) -> bool:
        return self._inner.abort()
