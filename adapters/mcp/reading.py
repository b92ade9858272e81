"""Progress notifications that repeat the text so far, read by what each adds.

An MCP server that reports every piece of its answer (`ctx.report_progress(i, message=text_so_far)`) sends the
whole text again in each notification, so reading each whole costs the square of the answer's length. A
notification that differs from the one before only in its count and in what its message adds is read by those bytes
alone:

```
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":7,"message":"turn 1: you"}}
|---------------------------- head -----------------------------------------| count |between|-shown-|added|- tail -|
```

`head`, `between` and `tail` are the bytes of the notification read whole before it, the count any number, `shown`
the text shown so far as that notification wrote it (checked byte for byte, not parsed), and only `added` is parsed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from gateway.core.steady import FrameAroundText, SteadyText

PROGRESS = "notifications/progress"
_COUNT_KEY = b'"progress":'
COUNT = re.compile(rb"(?:0|[1-9][0-9]{0,18})(?:\.[0-9]{1,17})?(?![0-9.eE])")
"""A progress count as servers write it (an integer, or a float such as `2.0`); bounded, as `steady.NUMBER`."""
_PROBE = "\x00probe"


def progress_text(frame: Any) -> str | None:
    """The message of a progress notification without a `total` (one with a total may be a progress bar's label):
    the text so far, if it is text."""
    if type(frame) is not dict or frame.get("method") != PROGRESS or frame.get("jsonrpc") != "2.0":
        return None
    params = frame.get("params")
    if type(params) is not dict or params.get("total") is not None:
        return None
    message = params.get("message")
    return message if type(message) is str and message else None


class TextSoFar(SteadyText):
    """`SteadyText` for an MCP server's progress notifications: `text_of` gives what a notification of the shape
    learnt last adds to the text shown so far (it may be empty), or None when it is not that notification again
    with more text, and then it is read whole."""

    __slots__ = ("_between", "_head", "_shown", "_tail")

    def __init__(self) -> None:
        super().__init__()
        self._head = self._between = self._tail = b""
        self._shown = bytearray()
        """The text shown so far, as JSON string content written as the server writes it."""

    def text_of(self, data: bytes) -> str | None:
        head = self._head
        count = COUNT.match(data, len(head)) if data.startswith(head) else None
        if count is not None and data.startswith(self._between, count.end()):
            start = count.end() + len(self._between) + len(self._shown)
            end = len(data) - len(self._tail)
            if start <= end and data.startswith(self._shown, start - len(self._shown)) and data.endswith(self._tail):
                added = data[start:end]
                if not added:
                    return ""
                text = _string(added)
                if text is not None:
                    self._shown += added
                    return text
        self.shape = None
        self._missed = True
        return None

    def learn(self, data: bytes, value: Any, steady_text: Callable[[Any], str | None]) -> None:
        """The shape of `data`, read whole as `value`: a notification whose message `steady_text` says is the whole
        text shown so far."""
        missed, self._missed = self._missed, False
        text = steady_text(value)
        if text is None:
            return
        if missed:
            self.tries -= 1
            if self.tries <= 0:
                return
        try:
            encoded = orjson.dumps(text)
        except orjson.JSONEncodeError:  # a lone surrogate: no server wrote it so
            return
        at = data.rfind(encoded)
        key = data.find(_COUNT_KEY)
        if at < 0 or key < 0 or data.find(_COUNT_KEY, key + 1) >= 0:
            return
        count = COUNT.match(data, key + len(_COUNT_KEY))
        if count is None or count.end() > at:
            return
        head, between, tail = data[:count.start()], data[count.end():at + 1], data[at + len(encoded) - 1:]
        try:
            probed = orjson.loads(head + b"12345" + between + orjson.dumps(_PROBE)[1:] + tail[1:])
        except orjson.JSONDecodeError:
            return
        if progress_text(probed) != _PROBE or probed["params"].get("progress") != 12345:
            return
        self._head, self._between, self._tail = head, between, tail
        self._shown = bytearray(encoded[1:-1])
        self.shape = FrameAroundText(head, tail)


def _string(content: bytes) -> str | None:
    """JSON string content (between its quotes) as the text it holds, or None if it is not whole and valid."""
    try:
        text = orjson.loads(b'"' + content + b'"')
    except orjson.JSONDecodeError:
        return None
    return text if type(text) is str else None
