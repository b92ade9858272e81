"""A captured run judged by its dialects' rules, as `agent-gateway check` judges an agent: the upstream's reply by the
upstream dialect's judge, and what the gateway wrote by the client dialect's. A broken rule on the upstream's side
is the agent's; on the client's, the gateway's own.

Only a whole run is judged: one the client left, one the capture cut short, or one whose reply this request did not
run (a resumed one), would break rules their streams kept.

A broken rule about a frame is placed on the capture's row that holds it (the inspector's timeline row): the frames
a judge numbers are found in the side's body by its dialect's framing (`JudgedFrames`, else SSE events), and each is
given the row its last byte came in: the upstream's frame read, or the bytes the row's events were written to the
client as. The client's body holds more than those (ids, keep-alives): its frames are placed only when the rows'
bytes frame alike, else left to the run.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace
from typing import Any, Literal

import orjson

from adapters import registry
from gateway.core.capabilities import JudgedFrames
from gateway.core.conformance import Answer, FrameEnds, Violation, sse_frame_ends
from gateway.recordings.capture import Row, RunCapture

Side = Literal["upstream", "client"]


@dataclass(frozen=True, slots=True)
class Broken:
    """One rule a run broke, on one side, by that side's dialect."""

    side: Side
    dialect: str
    violation: Violation
    row: int | None = None
    """The capture's row that holds the frame (`RunCapture.rows`), on the side's own column of it; None for a rule
    about no frame (the head, the stream's end) or one whose frame no row holds."""


def judge_run(capture: RunCapture, client_dialect: str, upstream_dialect: str) -> list[Broken] | None:
    """What each side's judge found of a run, in frame order per side; None when the capture does not hold the
    whole run. The upstream's side is left out when the gateway cut its stream (a deadline, a cancel). Slow (every
    frame is read again): called off the run's path, after its last byte."""
    upstream_head, client_head = capture.upstream_head, capture.client_head
    if capture.truncated or not capture.client_done or upstream_head is None or client_head is None:
        return None
    found: list[Broken] = []
    rows = capture.rows
    if not any(row.source.startswith("gateway: ") for row in rows):
        read = [(at, row.frame) for at, row in enumerate(rows) if row.source == "upstream"]
        upstream = Answer(upstream_head["status"], _lower(upstream_head["headers"]), b"".join(b for _, b in read),
                          _asked(capture.upstream_request))
        found += _judged("upstream", upstream_dialect, upstream, read)
    client = Answer(client_head["status"], _lower(client_head["headers"]),
                    b"".join(data for _, data in capture.client_frames), _asked(capture.client_request))
    return found + _judged("client", client_dialect, client, [(at, _written(row)) for at, row in enumerate(rows)])


def _judged(side: Side, dialect: str, answer: Answer, pieces: list[tuple[int, bytes]]) -> list[Broken]:
    """What `dialect`'s judge found of `answer`, each rule about a frame on the row whose piece holds the frame;
    `pieces` are the rows' bytes for this side, in order, with each row's place."""
    if dialect not in registry.DIALECTS:  # a request refused before its dialect was known
        return []
    found = registry.get(dialect).judge(answer)
    if not any(violation.index is not None for violation in found):
        return [Broken(side, dialect, violation) for violation in found]
    framing = registry.get(dialect).capability(JudgedFrames)
    rows = _rows_of_frames(answer, pieces, framing.ends if framing is not None else sse_frame_ends)
    return [Broken(side, dialect, v, rows[v.index] if v.index is not None and v.index < len(rows) else None)
            for v in found]


def _rows_of_frames(answer: Answer, pieces: list[tuple[int, bytes]], ends: FrameEnds) -> list[int]:
    """The row holding each frame the judge numbers: the row whose piece holds the frame's last byte. Empty when
    the pieces together do not frame as the body does (the client's body has bytes no row made)."""
    joined = b"".join(piece for _, piece in pieces)
    frames = ends(answer) if joined == answer.body else ends(replace(answer, body=joined))
    if joined != answer.body and len(frames) != len(ends(answer)):
        return []
    reached: list[int] = []  # where each piece ends in the joined body
    total = 0
    for _, piece in pieces:
        total += len(piece)
        reached.append(total)
    return [pieces[bisect_left(reached, end)][0] for end in frames]


def _written(row: Row) -> bytes:
    """The bytes a row's events were written to the client as."""
    return b"".join(event.out for event in row.events)


def _asked(request: dict[str, Any] | None) -> object:
    return request_json(request["body"]) if request is not None else None


def request_json(body: bytes) -> object:
    """A request's body as a judge is given it (`Answer.request`): None if it is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}
