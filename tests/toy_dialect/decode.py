"""Toy reply lines to canonical events, made well formed by `RunRepair`."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.codec import json_or_text
from gateway.core.decoding import RepairedDecoder
from gateway.core.sse import DEFAULT_MAX_FRAME


class ToyDecoder(RepairedDecoder):
    """Frames lines itself; the base gives it repair, `fail` and `cancel_request`."""

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__()
        self._buffer = b""
        self._max = max_event_bytes
        self._text: str | None = None

    def feed(self, chunk: bytes) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        if self.repair.done:
            return out
        *lines, self._buffer = (self._buffer + chunk).split(b"\n")
        for line in lines:
            self._line(line, out)
        if len(self._buffer) > self._max and not self.repair.done:
            self.repair.fail("upstream sent an oversized event", "upstream_event_too_large", out)
        return out

    def close(self) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        if self._buffer and not self.repair.done:
            self._line(self._buffer, out)
        self._end_text(out)
        self.repair.end_of_stream(out)
        return out

    def _line(self, line: bytes, out: list[canonical.Event]) -> None:
        if self.repair.done or not line.strip():
            return
        try:
            event: Any = orjson.loads(line)
        except orjson.JSONDecodeError:
            self.repair.fail("upstream sent a line that is not JSON", "upstream_bad_event", out)
            return
        if not isinstance(event, dict):
            self.repair.fail("upstream sent an event that is not a JSON object", "upstream_bad_event", out)
            return
        kind = event.get("type")
        push = self.repair.push
        if kind == "start":
            push(canonical.RunStarted(), out)
        elif kind == "text" and isinstance(event.get("id"), str) and isinstance(event.get("text"), str):
            if self._text != event["id"]:
                self._end_text(out)
                self._text = event["id"]
                push(canonical.TextStart(event["id"]), out)
            push(canonical.TextDelta(event["id"], event["text"]), out)
        elif kind == "tool" and isinstance(event.get("id"), str) and isinstance(event.get("name"), str):
            self._end_text(out)
            push(canonical.ToolCallStart(event["id"], event["name"]), out)
            if isinstance(event.get("arguments"), str) and event["arguments"]:
                push(canonical.ToolCallArgs(event["id"], event["arguments"]), out)
            push(canonical.ToolCallEnd(event["id"]), out)
        elif kind == "result" and isinstance(event.get("id"), str):
            self._end_text(out)
            push(canonical.ToolResult(event["id"], json_or_text(str(event.get("content", "")))), out)
        elif kind == "error":
            self._end_text(out)
            push(canonical.RunError(str(event.get("message", "the agent failed"))), out)
        elif kind == "end":
            self._end_text(out)
            push(canonical.RunFinished(), out)

    def _end_text(self, out: list[canonical.Event]) -> None:
        if self._text is not None:
            self.repair.push(canonical.TextEnd(self._text), out)
            self._text = None
