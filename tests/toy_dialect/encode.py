"""Canonical events to toy reply lines: a tool call goes out whole, once its arguments are in."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson

from gateway.core.codec import as_text
from gateway.core.events import (
    Event,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.turn import Turn


class ToyEncoder:
    status_code = 200
    streams = True

    def __init__(self, request: Turn | None = None) -> None:
        self.headers = {"content-type": "application/x-ndjson"}
        self.dropped: dict[str, int] = defaultdict(int)
        self._calls: dict[str, list[str]] = {}

    def encode(self, events: list[Event]) -> bytes:
        return b"".join(self._encode(e) for e in events)

    def keep_alive(self) -> bytes:
        return b"\n"

    def _encode(self, e: Event) -> bytes:
        if isinstance(e, TextDelta):
            return _line({"type": "text", "id": e.message_id, "text": e.delta}) if e.delta else b""
        if isinstance(e, ToolCallStart):
            self._calls[e.tool_call_id] = [e.name, ""]
        elif isinstance(e, ToolCallArgs):
            self._calls[e.tool_call_id][1] += e.delta
        elif isinstance(e, ToolCallEnd):
            name, arguments = self._calls.pop(e.tool_call_id)
            return _line({"type": "tool", "id": e.tool_call_id, "name": name, "arguments": arguments})
        elif isinstance(e, ToolResult):
            return _line({"type": "result", "id": e.tool_call_id, "content": as_text(e.content)})
        elif isinstance(e, RunStarted):
            return _line({"type": "start"})
        elif isinstance(e, RunError):
            return _line({"type": "error", "message": e.message})
        elif isinstance(e, RunFinished):
            return _line({"type": "end"})
        elif not isinstance(e, TextStart | TextEnd):
            self.dropped[type(e).__name__.lower()] += 1
        return b""


def _line(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event) + b"\n"
