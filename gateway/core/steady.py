"""Steady text deltas read without parsing their envelope: most of a stream is frames that differ from the one
before only in their text, and in the dialects that wrap each token in an envelope (A2A's JSON-RPC result, a Chat
Completions chunk, a LangGraph message chunk) most of such a frame's bytes are the envelope.

`SteadyText` learns a frame's shape from a frame read whole, as its dialect says (`steady_text`), and reads the
next frames of that shape by their text alone (`FrameAroundText`). A frame of any other shape is read whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

LEARNING_TRIES = 4
"""Frames whose shape a decoder learns that the next text delta then does not keep, before it stops learning: an
upstream that writes something new in every frame (OpenAI's `obfuscation`, a sequence number) costs a few tries,
not one per frame."""
_PROBE = "\x00probe"
_PROBE_JSON = orjson.dumps(_PROBE)


_NUMBER = re.compile(rb"0|[1-9][0-9]*")
"""A non-negative JSON integer (no leading zero: JSON has none)."""


class FrameAroundText:
    """A text delta's frame as the upstream writes it, but for its text: a frame with the same bytes before and
    after a JSON string is the same value with that string for text. Most of a stream is such frames, and most of
    their bytes are the envelope around the text (a JSON-RPC result, a chunk's ids): only the text is parsed.

    `counted` is the bytes before the text split around a number that differs from frame to frame and that the
    dialect does not read (Open Responses' `sequence_number`): the bytes before it, and after it."""

    __slots__ = ("_after", "_before", "_counted", "_least", "_start")

    def __init__(self, before: bytes, after: bytes, counted: tuple[bytes, bytes] | None = None) -> None:
        self._before = before
        self._after = after
        self._counted = counted
        self._start = len(before)
        self._least = len(before) + len(after) + 2  # the shortest JSON string, ""

    def text_of(self, data: bytes) -> str | None:
        """The frame's text, if it is this shape; else None."""
        end = len(data) - len(self._after)
        if self._counted is None:
            if len(data) < self._least or not data.startswith(self._before) or not data.endswith(self._after):
                return None
            start = self._start
        else:
            head, tail = self._counted
            number = _NUMBER.match(data, len(head)) if data.startswith(head) else None
            if number is None or not data.startswith(tail, number.end()) or not data.endswith(self._after):
                return None
            start = number.end() + len(tail)
            if end - start < 2:
                return None
        try:
            text = orjson.loads(data[start:end])
        except orjson.JSONDecodeError:
            return None
        return text if type(text) is str else None


class SteadyText:
    """A decoder's steady text deltas read without parsing their envelope.

    The decoder `learn`s from each frame it read whole, with its dialect's `steady_text`: the text of a frame that
    is a text delta which, read again now, would be no more than that text passed on (None for any other frame).
    The bytes around that text become a `FrameAroundText`, once found where the text's JSON is (once) and checked
    by reading the frame again with other text there. The next frame of that shape is `text_of`; any other is read
    whole, and ends the shape."""

    __slots__ = ("_counter", "_missed", "shape", "tries")

    def __init__(self, counter: bytes = b"") -> None:
        self.shape: FrameAroundText | None = None
        """The shape learnt last, if any: while there is none, no frame need be asked for its text."""
        self._counter = counter
        """The key of a number the dialect does not read and its upstreams count up in every frame (with its
        colon, as servers write it: `"sequence_number":`), or empty."""
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
        before, after = data[:at], data[at + len(encoded):]
        counted = self._counted(before)
        probe = before if counted is None else counted[0] + b"1234567" + counted[1]  # another number there
        try:
            probed = orjson.loads(probe + _PROBE_JSON + after)
        except orjson.JSONDecodeError:
            return
        if steady_text(probed) == _PROBE:
            self.shape = FrameAroundText(before, after, counted)

    def _counted(self, before: bytes) -> tuple[bytes, bytes] | None:
        """`before` split around the counter's number, if the counter is in it (once)."""
        at = before.find(self._counter) if self._counter else -1
        if at < 0 or before.find(self._counter, at + 1) >= 0:
            return None
        number = _NUMBER.match(before, at + len(self._counter))
        return None if number is None else (before[:number.start()], before[number.end():])

    def forget(self) -> None:
        """Read the next frames whole: the decoder's state changed outside its frames (a re-attach)."""
        self.shape = None
