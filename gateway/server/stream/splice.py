"""Steady text spliced: an upstream's text delta re-framed for the client in the upstream connection's callback,
never decoded into an event nor encoded from one.

Most of a stream is deltas of one text message, each a frame that differs from the one before only in its text. Once
both sides say what such a frame is around its text (the upstream's decoder, `JsonSSEDecoder.spliced_text`; the
client's encoder, `SSEEncoder.text_around`), a body piece that is one such frame, whose text is a JSON string
written as the client's encoder writes strings (orjson's form: `canonical`), is the client's frame with the same
string in it: `TextSplice.took` keeps it for the client's connection, where a read's pieces go in one write at the
end of the read (`flush`), and keeps what the run's bookkeeping needs (how many, when, and the text, still escaped)
for the relay to catch up on (`taken`). Any other piece is declined, and the splice disarmed (what it kept is
written first): it goes the whole way, through the decoder, and the relay arms the splice again once the run is
steady.

This module is the reference; `_splice.c`, built with the compiled build (`scripts/compile`), is the same class
in C, imported instead of it when there.
"""

from __future__ import annotations

import contextlib
import re
import time
from typing import TYPE_CHECKING, Any

import orjson

from gateway.core.decoding import JsonSSEDecoder
from gateway.core.encoding import SSEEncoder
from gateway.core.events import TextDelta

MISSES = 8
"""Arms in a row that splice nothing before a run's splice is armed no more: an upstream whose strings the client's
encoder would write otherwise (non-ASCII escaped) costs a few tries, not one a delta."""
MAX_SPLICED = 1 << 16
"""Bytes of a string past which a piece is declined: the encoders write a text this long otherwise (`json_bytes`)."""
MAX_PENDING = 1 << 20
"""Bytes of spliced text the relay has not caught up on past which a piece is declined (and it catches up)."""
_PLAIN = re.compile(rb'"[ !#-\[\]-\x7f]+"')
"""A JSON string of printable ASCII that needs no escape, which orjson writes as it is: most deltas of a stream."""


def canonical(string: bytes) -> bool:
    """Whether `string` is a JSON string, not empty, in the bytes orjson writes for its value: UTF-8 as it is, and
    only `\\"`, `\\\\`, `\\b`, `\\f`, `\\n`, `\\r`, `\\t` and `\\u00XX` (lowercase, for the other control characters)
    escaped."""
    if len(string) < 3 or len(string) >= MAX_SPLICED or string[0] != 0x22 or string[-1] != 0x22:
        return False
    if _PLAIN.fullmatch(string) is not None:
        return True
    try:
        value = orjson.loads(string)
    except orjson.JSONDecodeError:
        return False
    if type(value) is not str:
        return False
    try:
        return orjson.dumps(value) == string
    except orjson.JSONEncodeError:  # a lone surrogate, escaped
        return False


class TextSplice:
    """One run's text deltas, from its upstream's body pieces to its client's connection (uvicorn's httptools
    `cycle`, whose `transport`, `flow.write_paused`, `disconnected` and `response_complete` are read as uvicorn's
    own `send` reads them). `arm` says what a steady frame is on each side."""

    __slots__ = ("_before", "_cycle", "_framing", "_out", "_prefix", "_suffix_end", "_tail", "_tail_crlf", "_text",
                 "armed", "count", "last_at")

    def __init__(self, cycle: Any) -> None:
        self._cycle = cycle
        self._before = self._tail = self._tail_crlf = self._prefix = self._suffix_end = b""
        self._framing = 0
        self._text = bytearray()
        self._out: list[bytes] = []
        """The client's chunks for this read's pieces, written at its end."""
        self.armed = False
        self.count = 0
        """Pieces spliced since the relay last caught up."""
        self.last_at = 0.0
        """When the last was written (monotonic)."""

    def arm(self, before: bytes, after: bytes, prefix: bytes, suffix: bytes) -> None:
        """Splice from now on: a piece `data: ` + `before` + string + `after`, ended by a blank line, is written
        to the client as `prefix` + string + `suffix` in one HTTP chunk."""
        self._before, self._tail, self._tail_crlf = b"data: " + before, after + b"\n\n", after + b"\r\n\r\n"
        self._prefix, self._suffix_end, self._framing = prefix, suffix + b"\r\n", len(prefix) + len(suffix)
        self.armed = True

    def took(self, piece: bytes) -> bool:
        """Whether `piece` was spliced (kept for the client, until `flush`); if not, the splice is disarmed and what
        it kept is written."""
        if not self.armed:
            return False
        string = self._string(piece)
        cycle = self._cycle
        if string is None or len(self._text) + len(string) > MAX_PENDING or cycle.flow.write_paused \
                or cycle.disconnected or cycle.response_complete:  # the client would not take it at once
            self.armed = False
            self.flush()
            return False
        self._out.append(b"%x\r\n%b%b%b" % (len(string) + self._framing, self._prefix, string, self._suffix_end))
        self._text += string[1:-1]
        self.count += 1
        return True

    def flush(self) -> None:
        """Write what was spliced since the last flush, in one write: at the end of each read."""
        out = self._out
        if out:
            self._cycle.transport.write(out[0] if len(out) == 1 else b"".join(out))
            out.clear()
            self.last_at = time.monotonic()

    def taken(self) -> tuple[int, str, float]:
        """How many pieces were spliced since the last call, their text joined, and when the last was; the
        splice starts counting anew."""
        count, text, self.count = self.count, self._text, 0
        if not count:
            return 0, "", self.last_at
        self._text = bytearray()
        return count, orjson.loads(b'"' + text + b'"'), self.last_at

    def _string(self, piece: bytes) -> bytes | None:
        before = self._before
        if not piece.startswith(before):
            return None
        if piece.endswith(self._tail):
            string = piece[len(before):len(piece) - len(self._tail)]
        elif piece.endswith(self._tail_crlf):
            string = piece[len(before):len(piece) - len(self._tail_crlf)]
        else:
            return None
        return string if canonical(string) else None


class RunSplice:
    """One run's splice, armed after each batch its relay wrote in the upstream's callback, when both dialects say
    what the next text delta is; and what it spliced, as the relay records it."""

    __slots__ = ("_armed_at", "_decoder", "_encoder", "_misses", "_spliced", "message_id", "splice")

    def __init__(self, splice: TextSplice, decoder: JsonSSEDecoder, encoder: SSEEncoder) -> None:
        self.splice = splice
        self._decoder = decoder
        self._encoder = encoder
        self.message_id = ""
        """The message of the deltas spliced since the last arm."""
        self._spliced = 0
        """Pieces spliced in the run so far."""
        self._armed_at = -1
        """`_spliced` when the splice was last armed."""
        self._misses = 0

    def arm(self) -> None:
        """Splice the next pieces, if they are text deltas both dialects can say the frame of: after a batch was
        written in the upstream's callback, and nothing is left to write."""
        if self._armed_at == self._spliced:  # it declined the first piece it was offered
            self._misses += 1
            if self._misses >= MISSES:
                return
        else:
            self._misses = 0
        steady = self._decoder.spliced_text()
        if steady is None:
            return
        before, after, message_id = steady
        around = self._encoder.text_around(message_id)
        if around is None:
            return
        self.splice.arm(before, after, *around)
        self.message_id = message_id
        self._armed_at = self._spliced

    def disarm(self) -> None:
        """What comes next goes through the run's steps: they write to the client now."""
        if self.splice.armed:  # it was offered nothing since it was armed: no miss
            self.splice.armed = False
            self._armed_at = -1

    def taken(self) -> tuple[int, TextDelta | None, float]:
        """How many deltas were spliced since the last call, all of them as one (their text joined), and when the
        last was (monotonic)."""
        count, text, at = self.splice.taken()
        if not count:
            return 0, None, at
        self._spliced += count
        return count, TextDelta(self.message_id, text), at


def says_steady_frames(decoder: JsonSSEDecoder, encoder: SSEEncoder) -> bool:
    """Whether the upstream's decoder and the client's encoder can each say a steady delta's frame, by their own
    `steady_message` and `text_around` (the bases' say nothing): a run of any other pair is never armed, and is
    given no splice to offer its pieces to."""
    return type(decoder).steady_message is not JsonSSEDecoder.steady_message \
        and type(encoder).text_around is not SSEEncoder.text_around


PythonTextSplice = TextSplice
"""The reference, whichever runs."""

if not TYPE_CHECKING:  # the same class in C, where the compiled build made it
    with contextlib.suppress(ImportError):
        from gateway.server.stream._splice import TextSplice
