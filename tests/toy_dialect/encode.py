"""Canonical events to toy reply lines: a tool call goes out whole, once its arguments are in."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.codec import as_text
from gateway.core.turn import Turn


class ToyEncoder:
    status_code = 200
    streams = True

    def __init__(self, request: Turn | None = None) -> None:
        self.headers = {"content-type": "application/x-ndjson"}
        self.dropped: dict[str, int] = defaultdict(int)
        self._calls: dict[str, list[str]] = {}

    def encode(self, events: list[canonical.Event]) -> bytes:
        return b"".join(self._encode(e) for e in events)

    def keep_alive(self) -> bytes:
        return b"\n"

    def _encode(self, e: canonical.Event) -> bytes:
        if isinstance(e, canonical.TextDelta):
            return _line({"type": "text", "id": e.message_id, "text": e.delta}) if e.delta else b""
        if isinstance(e, canonical.ToolCallStart):
            self._calls[e.tool_call_id] = [e.name, ""]
        elif isinstance(e, canonical.ToolCallArgs):
            self._calls[e.tool_call_id][1] += e.delta
        elif isinstance(e, canonical.ToolCallEnd):
            name, arguments = self._calls.pop(e.tool_call_id)
            return _line({"type": "tool", "id": e.tool_call_id, "name": name, "arguments": arguments})
        elif isinstance(e, canonical.ToolResult):
            return _line({"type": "result", "id": e.tool_call_id, "content": as_text(e.content)})
        elif isinstance(e, canonical.RunStarted):
            return _line({"type": "start"})
        elif isinstance(e, canonical.RunError):
            return _line({"type": "error", "message": e.message})
        elif isinstance(e, canonical.RunFinished):
            return _line({"type": "end"})
        elif not isinstance(e, canonical.TextStart | canonical.TextEnd):
            self.dropped[type(e).__name__.lower()] += 1
        return b""


def _line(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event) + b"\n"
