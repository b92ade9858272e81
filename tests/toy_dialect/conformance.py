"""What a toy client holds a reply to: JSON lines of known types, ended by one `end` or `error`."""

from __future__ import annotations

import orjson

from gateway.core.conformance import Answer, Violation, preview

TYPES = frozenset({"start", "text", "tool", "result", "error", "end"})


def judge(answer: Answer) -> list[Violation]:
    if answer.status != 200:
        return [Violation("status", f"a reply is HTTP 200, got {answer.status}")]
    found: list[Violation] = []
    lines = [line for line in answer.body.split(b"\n") if line.strip()]
    for index, line in enumerate(lines):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            found.append(Violation("json", "a line is not JSON", preview(line), index))
            continue
        if not isinstance(event, dict) or event.get("type") not in TYPES:
            found.append(Violation("type", "a line is an event of a known type", preview(line), index))
        elif event["type"] in ("end", "error") and index != len(lines) - 1:
            found.append(Violation("terminal", "the run ends once, on the last line", preview(line), index))
    if not found and (not lines or orjson.loads(lines[-1])["type"] not in ("end", "error")):
        found.append(Violation("terminal", "the last line ends the run (end or error)"))
    return found


def frame_ends(answer: Answer) -> list[int]:
    """Where each line the judge numbers ends (past its line feed): its frames are lines, not SSE events."""
    ends: list[int] = []
    at = 0
    for line in answer.body.split(b"\n"):
        at += len(line)
        if line.strip():
            ends.append(min(at + 1, len(answer.body)))
        at += 1
    return ends
