"""What a dialect's judge reports about one answer from an agent: each rule it broke, with the frame that broke it.

A judge holds the rules a real client of the dialect enforces (`@ag-ui/client`'s event verification, the `ai`
package's chunk schema and stream state machine, AG-Kit's event models, the eval platform's response contract), so
`agent-gateway check` can tell an agent developer what that client would reject, without the client.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import orjson

from gateway.core.sse import SSEDecoder

BLANK_LINE = re.compile(rb"(?:\r\n|\r|\n)(?:\r\n|\r|\n)")
"""Where an SSE event ends, whichever line ends the stream uses."""

PREVIEW = 300
"""Characters of an offending frame kept in a report."""
MAX_VIOLATIONS = 20
"""One broken rule early in a stream tends to break many after it: the first ones say what went wrong."""


@dataclass(frozen=True, slots=True)
class Answer:
    """An agent's whole reply to one request."""

    status: int
    headers: Mapping[str, str]
    """Lower-case names."""
    body: bytes
    request: object = None
    """The request's JSON body, when known: a client that reads the reply as going on from what it sent (the AI
    SDK's, from its last assistant message) is judged from there."""


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    """A short name for the rule, stable across runs (`text-content-without-start`)."""
    message: str
    """What is wrong, in the words of the dialect's documentation."""
    frame: str | None = None
    """The offending frame as the agent sent it, cut to `PREVIEW` characters."""
    index: int | None = None
    """The frame's position in the stream, from 0."""

    @property
    def convention(self) -> bool:
        """A rule the dialect's documents ask for that no client enforces: reported, never a failure."""
        return self.rule.startswith("convention-")


Judge = Callable[[Answer], list[Violation]]
FrameEnds = Callable[[Answer], list[int]]
"""Where each frame a judge numbers (`Violation.index`) ends in an answer's body, in bytes past its last one: what
places a broken rule beside the frame that broke it (`gateway.recordings.judged`)."""


def preview(frame: bytes | str) -> str:
    text = frame.decode("utf-8", "replace") if isinstance(frame, bytes) else frame
    return text if len(text) <= PREVIEW else text[:PREVIEW] + "…"


def each_frame(frames: list[tuple[int, bytes, object]], found: list[Violation]) -> Iterator[tuple[int, str, object]]:
    """The frames of `sse_json_frames` to judge, each with its preview, until `MAX_VIOLATIONS` are found."""
    for index, data, value in frames:
        if len(found) >= MAX_VIOLATIONS:
            return
        yield index, preview(data), value


def in_frame_order(found: list[Violation]) -> list[Violation]:
    """The first `MAX_VIOLATIONS` by the frame each is about, the answer's own first; stable: a frame's own order is
    kept."""
    found.sort(key=lambda v: -1 if v.index is None else v.index)
    return found[:MAX_VIOLATIONS]


def json_type(value: object) -> str:
    """A JSON value's type, as a message about a field names what it got."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def sse_head(answer: Answer) -> list[Violation]:
    """What SSE dialects ask of the response head. Clients fail on a status other than 2xx; a 2xx other than 200
    or another content type is what the documents rule out and the clients read anyway."""
    found: list[Violation] = []
    if not 200 <= answer.status < 300:
        found.append(Violation("status", f"a streamed reply must be HTTP 200, got {answer.status}",
                               preview(answer.body) if answer.body else None))
    elif answer.status != 200:
        found.append(Violation("convention-status", f"a streamed reply is HTTP 200, got {answer.status}"))
    content_type = answer.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "text/event-stream":
        found.append(Violation("convention-content-type",
                               f"a streamed reply is text/event-stream, got {content_type!r}"))
    return found


def sse_json_frames(answer: Answer, found: list[Violation]) -> list[tuple[int, bytes, object]]:
    """The stream's frames as (index, raw data, JSON value); `[DONE]` comes through as the string "[DONE]". A frame
    that is not JSON is a violation and is left out."""
    decoder = SSEDecoder(max_frame=len(answer.body) + 1)
    frames = decoder.feed(answer.body) + decoder.flush()
    out: list[tuple[int, bytes, object]] = []
    for index, data in enumerate(frames):
        if data.strip() == b"[DONE]":
            out.append((index, data, "[DONE]"))
            continue
        try:
            out.append((index, data, orjson.loads(data)))
        except orjson.JSONDecodeError:
            found.append(Violation("json", "an event's data is not JSON", preview(data), index))
    return out


def sse_frame_ends(answer: Answer) -> list[int]:
    """Where each frame ends as `sse_json_frames` numbers them: the SSE events that carry data, as `SSEDecoder`
    dispatches them (past the blank line, or the body's end for a last one without it). A body without any (one JSON
    document) is one frame, 0, as the one-body judges number it."""
    body = answer.body
    ends: list[int] = []
    start = 0
    for blank in BLANK_LINE.finditer(body):
        if _dispatched(body[start:blank.start()]):
            ends.append(blank.end())
        start = blank.end()
    if start < len(body) and _dispatched(body[start:]):
        ends.append(len(body))
    return ends or ([len(body)] if body.strip() else [])


def _dispatched(block: bytes) -> bool:
    """Whether an SSE block, its blank line left out, is an event a decoder hands on (it carries data)."""
    return b"data" in block and bool(SSEDecoder(max_frame=len(block) + 3).feed(block + b"\n\n"))
