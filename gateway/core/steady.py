"""Steady text deltas read without parsing their envelope: most of a stream is frames that differ from the one
before only in their text, and in the dialects that wrap each token in an envelope (A2A's JSON-RPC result, a Chat
Completions chunk, a LangGraph message chunk) most of such a frame's bytes are the envelope.

`SteadyText` learns a frame's shape from a frame read whole, as its dialect says (`steady_text`), and reads the
next frames of that shape by their text alone (`FrameAroundText`, or `FrameWithHoles` where values the dialect does
not read change from frame to frame). A frame of any other shape is read whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import orjson

LEARNING_TRIES = 4
"""Frames whose shape a decoder learns that the next text delta then does not keep, before it stops learning: an
upstream that writes something new in every frame costs a few tries, not one per frame."""
_PROBE = "\x00probe"
_PROBE_JSON = orjson.dumps(_PROBE)

NUMBER = re.compile(rb"(?:0|[1-9][0-9]{0,18})(?![0-9])")
"""A non-negative JSON integer of at most 19 digits (no leading zero: JSON has none): a sequence number. Bounded, so
that a frame the fast path takes is one that reads whole too (past 308 digits a number is no float)."""
ASCII_STRING = re.compile(rb'"[\x20\x21\x23-\x5b\x5d-\x7e]*"')
"""A JSON string of printable ASCII without a quote or a backslash: OpenAI's `obfuscation`, a random padding."""
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
"""Where a JSON string ends (what it holds is for orjson to check)."""
_OTHER = {NUMBER: b"1234567", ASCII_STRING: b'"probe"'}
"""What a probe puts in a hole: a value its frames never held, of the hole's kind."""


class FrameAroundText:
    """A text delta's frame as the upstream writes it, but for its text: a frame with the same bytes before and
    after a JSON string is the same value with that string for text. Most of a stream is such frames, and most of
    their bytes are the envelope around the text (a JSON-RPC result, a chunk's ids): only the text is parsed."""

    __slots__ = ("_after", "_before", "_least", "_start")

    def __init__(self, before: bytes, after: bytes) -> None:
        self._before = before
        self._after = after
        self._start = len(before)
        self._least = len(before) + len(after) + 2  # the shortest JSON string, ""

    def around(self) -> tuple[bytes, bytes]:
        """The frame's bytes before its text's JSON string, and after it."""
        return self._before, self._after

    def text_of(self, data: bytes) -> str | None:
        """The frame's text, if it is this shape; else None."""
        if len(data) < self._least or not data.startswith(self._before) or not data.endswith(self._after):
            return None
        return _text(data, self._start, len(data) - len(self._after))


class FrameWithHoles:
    """`FrameAroundText` for frames whose envelope holds values that change from frame to frame and that the
    dialect does not read (Open Responses' `sequence_number`, OpenAI's `obfuscation`): the frame is its fixed bytes
    with holes between them, the text's and one for each such value, which must be of its kind (`NUMBER`,
    `ASCII_STRING`) and may be any value of it."""

    __slots__ = ("_after", "_before_text", "_steps")

    def __init__(self, steps: list[tuple[bytes, re.Pattern[bytes] | None]], after: bytes) -> None:
        """`steps`: fixed bytes, then the hole after them (a value's kind, or None for the text); `after`: the fixed
        bytes after the last hole."""
        self._before_text: bytes | None = None
        """The fixed bytes before the text, when it is the last hole: then it ends where `after` begins, and its end
        need not be looked for."""
        if steps[-1][1] is None:
            steps, self._before_text = steps[:-1], steps[-1][0]
        self._steps = steps
        self._after = after

    def text_of(self, data: bytes) -> str | None:
        at = start = end = 0
        for fixed, hole in self._steps:
            if not data.startswith(fixed, at):
                return None
            at += len(fixed)
            value = (_STRING if hole is None else hole).match(data, at)
            if value is None:
                return None
            if hole is None:
                start, end = at, value.end()
            at = value.end()
        after, before_text = self._after, self._before_text
        if before_text is not None:
            if not data.startswith(before_text, at) or not data.endswith(after):
                return None
            start, end = at + len(before_text), len(data) - len(after)
            if end - start < 2:
                return None
        elif len(data) - at != len(after) or not data.endswith(after):
            return None
        return _text(data, start, end)


def _text(data: bytes, start: int, end: int) -> str | None:
    try:
        text = orjson.loads(data[start:end])
    except orjson.JSONDecodeError:
        return None
    return text if type(text) is str else None


class SteadyText:
    """A decoder's steady text deltas read without parsing their envelope.

    The decoder `learn`s from each frame it read whole, with its dialect's `steady_text`: the text of a frame that
    is a text delta which, read again now, would be no more than that text passed on (None for any other frame).
    The bytes around that text become the frame's shape, once found where the text's JSON is (once) and checked by
    reading the frame again with other text there (and other values where `unread` says). The next frame of that
    shape is `text_of`; any other is read whole, and ends the shape."""

    __slots__ = ("_missed", "_unread", "shape", "tries")

    def __init__(self, unread: tuple[bytes, ...] = ()) -> None:
        self.shape: FrameAroundText | FrameWithHoles | None = None
        """The shape learnt last, if any: while there is none, no frame need be asked for its text."""
        self._unread = unread
        """Keys (with their colon, as servers write them: `"sequence_number":`) of values the dialect does not read
        and its upstreams change in every frame: the shape leaves them open."""
        self._missed = False
        self.tries = LEARNING_TRIES
        """Learnt shapes the next steady frame may still miss: none left, nothing more is learnt."""

    def text_of(self, data: bytes) -> str | None:
        """The text of a frame of the shape learnt last, or None: then it is read whole."""
        shape = self.shape
        if shape is None:
            return None
        text = shape.text_of(data)
        if text is None:
            self.shape = None
            self._missed = True
        return text

    def learn(self, data: bytes, value: Any, steady_text: Callable[[Any], str | None]) -> None:
        """What the frame `data`, read whole as `value`, shows of the next ones."""
        missed, self._missed = self._missed, False
        text = steady_text(value)
        if text is None:
            return
        if missed:  # the shape learnt from the frame before did not hold for this steady one
            self.tries -= 1
            if self.tries <= 0:
                return
        encoded = orjson.dumps(text)
        at = data.find(encoded)
        if at < 0 or data.find(encoded, at + 1) >= 0:  # written otherwise (escaped), or not only there
            return
        holes = self._holes(data, at, at + len(encoded))
        if holes is None:
            return
        probe: list[bytes] = []
        steps: list[tuple[bytes, re.Pattern[bytes] | None]] = []
        start = 0
        for hole_start, hole_end, kind in holes:
            probe += [data[start:hole_start], _PROBE_JSON if kind is None else _OTHER[kind]]
            steps.append((data[start:hole_start], kind))
            start = hole_end
        try:
            probed = orjson.loads(b"".join(probe) + data[start:])
        except orjson.JSONDecodeError:
            return
        if steady_text(probed) == _PROBE:
            self.shape = (FrameAroundText(data[:at], data[at + len(encoded):]) if len(holes) == 1
                          else FrameWithHoles(steps, data[start:]))

    def _holes(self, data: bytes, text_start: int, text_end: int
               ) -> list[tuple[int, int, re.Pattern[bytes] | None]] | None:
        """Where the text and the unread values are, in order; None if an unread key is there more than once."""
        holes: list[tuple[int, int, re.Pattern[bytes] | None]] = [(text_start, text_end, None)]
        for key in self._unread:
            at = data.find(key)
            if at < 0:
                continue
            if data.find(key, at + 1) >= 0 or text_start <= at < text_end:
                return None
            for kind in (NUMBER, ASCII_STRING):
                value = kind.match(data, at + len(key))
                if value is not None:
                    holes.append((value.start(), value.end(), kind))
                    break
        holes.sort(key=lambda hole: hole[0])
        if any(after[0] < before[1] for before, after in pairwise(holes)):
            return None  # a value of an unread key's is where the text is
        return holes

    def forget(self) -> None:
        """Read the next frames whole: the decoder's state changed outside its frames (a re-attach)."""
        self.shape = None
