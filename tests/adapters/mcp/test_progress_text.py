"""An MCP server's progress notifications that repeat the text so far, read by what each adds (`TextSoFar`): the
same events as reading every notification whole, on random streams shaped as the SDKs' servers write them."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from adapters import registry
from adapters.mcp.decode import McpDecoder
from gateway.core import events as canonical

PIECES = ["tok ", "é", "😀", '"quoted"', "back\\slash", "line\nbreak", "\t", "\u2028", "\x01", "日本", " "]


def _frame(message: dict[str, Any], crlf: bool) -> bytes:
    end = b"\r\n" if crlf else b"\n"
    return b"event: message" + end + b"data: " + orjson.dumps(message) + end + end


def _stream(rng: random.Random, crlf: bool) -> list[bytes]:
    """An SDK server's answer: progress with the text so far (now and then a status line, a repeat, a float count,
    another token, a `total`), then the result."""
    frames, text = [], ""
    token: Any = rng.choice([1, "p-1"])
    for count in range(1, rng.randint(1, 61)):
        roll = rng.random()
        if roll < 0.06:
            message = f"step {count}"  # a status line: does not extend the text
        elif roll < 0.1:
            message = text  # the same text again
        else:
            text += "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 3)))
            message = text
        if rng.random() < 0.03:
            token = "p-2"
        params: dict[str, Any] = {"progressToken": token, "progress": count + 0.5 if roll > 0.97 else count}
        if rng.random() < 0.03:
            params["total"] = 100
        params["message"] = message
        frames.append(_frame({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}, crlf))
    result = {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": {"result": text}}
    frames.append(_frame({"jsonrpc": "2.0", "id": 1, "result": result}, crlf))
    return frames


def _read(pieces: list[bytes], steady: bool) -> tuple[list[Any], McpDecoder]:
    decoder = McpDecoder()
    if not steady:
        decoder._steady.tries = 0  # every notification read whole
    events = [e for piece in pieces for e in decoder.feed(piece)] + decoder.close()
    return [(type(e).__name__, getattr(e, "delta", None), getattr(e, "name", None)) for e in events], decoder


@pytest.mark.parametrize("crlf", [True, False])
def test_notifications_read_by_what_they_add_give_the_events_of_reading_them_whole(crlf: bool) -> None:
    rng = random.Random(44)
    for _ in range(150):
        frames = _stream(rng, crlf)
        body = b"".join(frames)
        size = rng.randint(1, 200)
        for pieces in (frames, [body[i:i + size] for i in range(0, len(body), size)]):
            assert _read(pieces, steady=True)[0] == _read(pieces, steady=False)[0]


def test_a_steady_stream_is_read_by_what_each_notification_adds() -> None:
    """The path is taken: after the first notification, none is parsed whole until the result."""
    text, frames = "", []
    for count in range(1, 200):
        text += f"tok{count} "
        frames.append(_frame({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": 1, "progress": count, "message": text}}, crlf=True))
    decoder = McpDecoder()
    deltas = [e.delta for frame in frames for e in decoder.feed(frame) if isinstance(e, canonical.TextDelta)]
    assert "".join(deltas) == text and len(deltas) == 199
    assert decoder._steady.shape is not None and decoder._steady.tries > 0


def test_a_notification_that_is_not_the_text_so_far_is_read_whole() -> None:
    """Bytes that would break the JSON after the text shown (a raw quote in what a notification adds) are not
    taken as text: the notification is read whole, and the run fails as for any invalid frame."""
    head = b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":'
    decoder = registry.get("mcp").new_decoder()
    events = decoder.feed(head + b'1,"message":"one"}}\n\n') + decoder.feed(head + b'2,"message":"one two"}}\n\n')
    events += decoder.feed(head + b'3,"message":"one two" three"}}\n\n')
    assert [e.delta for e in events if isinstance(e, canonical.TextDelta)] == ["one", " two"]
    assert isinstance(events[-1], canonical.RunError)
