"""A run's kept reply as a client of another dialect reads it: an AG-UI run followed by the AI SDK's resume GET, by
an A2A or a Responses client, each in its own dialect.

```
tape (the bytes the run's own client was sent) ─▶ that dialect's decoder ─▶ events ─▶ the follower's encoder ─▶
    the follower's own reply, numbered piece by piece (an SSE `id:` where its dialect has ids)
```

Why from the bytes, and not canonical events kept beside them: the run's per-event path stays as it is (nothing more
is written, to memory or Redis, for a follower that may never come), a tape written by any replica or release reads
the same, and every dialect already has a decoder that reads what its encoder writes (the gateway serves each
dialect's clients from an upstream of the same). What it costs: a follower sees no more than the run's own dialect
carried (an AG-Kit run shows no reasoning to an AG-UI follower), and each follower decodes and encodes the reply
again, from its start.

Positions: the translation is made from the tape's start for each follower, the same on every replica and every
time, so a follower's position is the number of an SSE event of its own translated reply, counted from 1: the `id:` an
AG-UI follower gets and sends back as `Last-Event-ID`, a Responses event's `sequence_number` (`starting_after`); a
follower that comes back with one is sent the events after it. A follower of the run's own dialect reads the tape as
it is, but for one that asked otherwise than the run's client (A2A's subscriber, answered with its own JSON-RPC id).
"""

from __future__ import annotations

import sys

from adapters import registry
from gateway.core.capabilities import EventIds, WireFormats
from gateway.core.codec import Dialect
from gateway.core.decoding import Decoder
from gateway.core.encoding import Encoder
from gateway.core.events import RunStarted
from gateway.core.turn import Turn
from gateway.runs.tape import Entry, Head, RunReply, Tape, TapeLost
from gateway.server.stream.relay import UNBUFFERED_HEADERS


class TranslatedReply:
    """A `RunReply` in `client`'s dialect, read from one kept in whichever dialect started the run. The translated
    pieces are held for the follower until it has read them, a batch of the source's at a time: the source's
    limits bound the rest (a translation may be larger than its source, and is not cut for it)."""

    __slots__ = ("_client", "_decoder", "_encoder", "_foreign", "_max_event_bytes", "_next", "_out", "_read",
                 "_rewrite", "_run_id", "_source", "_sse", "_through", "_turn")

    def __init__(self, source: RunReply, client: Dialect, turn: Turn, *, max_event_bytes: int,
                 rewrite: bool = False, foreign: bool = False) -> None:
        self._source = source
        self._client = client
        self._turn = turn
        self._max_event_bytes = max_event_bytes
        self._rewrite = rewrite
        """Translate a reply in the follower's own dialect too (written for another request of it)."""
        self._foreign = foreign
        """Only a reply another dialect's client started will do: one of the follower's own is another run than the
        one it named (its own runs are found by their ids), as good as not kept for it (`TapeLost`)."""
        self._out = Tape("", event_ids=False, max_entries=sys.maxsize, max_bytes=sys.maxsize, keep=0,
                         dialect=client.name)
        self._read = 0
        """The pieces before this one the follower has read, and are let go."""
        self._next = 0
        """The next entry of the source to read."""
        self._through: bool | None = None
        """Whether the source is in the follower's dialect already (None until its head is read)."""
        self._decoder: Decoder | None = None
        self._encoder: Encoder | None = None
        self._run_id = ""
        self._sse = False
        """Whether the follower's reply is SSE: numbered event by event (else piece by piece, as it is written)."""

    async def read(self, start: int, wait: float) -> list[Entry]:
        out = self._out
        while True:
            if self._through:
                return await self._source.read(start, wait)
            if start < len(out.entries) or out.ended or out.lost:
                self._let_go(start)
                return await out.read(start, 0)
            entries = await self._source.read(self._next, wait)
            if not entries:
                return []
            if self._through is None and entries[0].seq == 0 and self._opens_through(entries[0]):
                return [entry for entry in entries if entry.seq >= start]
            for entry in entries:
                self._take(entry)
            self._next = entries[-1].seq + 1

    def _let_go(self, start: int) -> None:
        """Forget the pieces before `start`: a follower reads on, never back (it comes back as a new one)."""
        entries = self._out.entries
        for seq in range(self._read, min(start, len(entries))):
            entries[seq] = b""
        self._read = max(self._read, start)

    def _opens_through(self, head_entry: Entry) -> bool:
        """Read the source's head: whether it is the follower's own dialect (read as it is), else the decoder and
        encoder that translate it, and the follower's head."""
        head = Head.load(head_entry.data)
        source = registry.DIALECTS.get(head.dialect)
        if self._foreign and source in (None, self._client):
            raise TapeLost("the conversation's run is of the follower's own dialect, and not the one it named")
        self._through = source is None or (source is self._client and not self._rewrite)
        if source is None or self._through:
            return True
        formats = source.capability(WireFormats)
        content_type = head.headers.get("content-type", "")
        decoder = formats.decoder_for(content_type, self._max_event_bytes) if formats is not None else None
        self._decoder = decoder if decoder is not None else source.new_decoder(max_event_bytes=self._max_event_bytes)
        self._encoder = encoder = self._client.new_encoder(self._turn)
        self._sse = encoder.streams and encoder.headers.get("content-type", "").startswith("text/event-stream")
        self._out.event_ids = self._sse and self._client.capability(EventIds) is not None
        self._out.open(Head(encoder.status_code, {**encoder.headers, **UNBUFFERED_HEADERS}, encoder.keep_alive()))
        self._next = 1
        self._run_id = head.run_id
        return False

    def _take(self, entry: Entry) -> None:
        """One piece of the source, translated onto the follower's reply."""
        if entry.seq == 0:
            return
        assert self._decoder is not None and self._encoder is not None
        events = self._decoder.feed(entry.data)
        if entry.last:
            events = [*events, *self._decoder.close()]
        for event in events:
            if isinstance(event, RunStarted):  # named as the follower names it, else as the run named itself
                event.thread_id = event.thread_id or self._turn.conversation_id
                event.run_id = self._turn.run_id or event.run_id or self._run_id or None
        body = self._encoder.encode(events) if events else b""
        pieces = _events_of(body) if self._sse else [body] if body else []
        if not pieces and entry.last:
            pieces = [b""]
        for n, piece in enumerate(pieces, 1):
            self._out.record(piece, last=entry.last and n == len(pieces))


def _events_of(body: bytes) -> list[bytes]:
    """An SSE body as its events, one piece each: a follower's position counts its reply's events."""
    frames = body.split(b"\n\n")
    tail = frames.pop()
    pieces = [frame + b"\n\n" for frame in frames]
    return [*pieces, tail] if tail else pieces
