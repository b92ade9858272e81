"""The client's always-on `CompatibilityBoundary`: the pre-1.0 shapes it upgrades, each with a warning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .common import Event, Report

_THINKING = {
    "THINKING_START": "REASONING_START",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
    "THINKING_END": "REASONING_END",
}
_MEDIA = frozenset({"image", "audio", "video", "document"})


class Legacy:
    """`CompatibilityBoundary`: pre-1.0 shapes the client upgrades to 1.0 ones, each with a warning."""

    def __init__(self, warn: Report) -> None:
        self._warn = warn
        self._span: str | None = None
        self._message: str | None = None
        self._minted = 0

    def upgrade(self, event: Event) -> Event:
        kind = event["type"]
        if "rawEvent" in event and event["rawEvent"] is None:
            event = self._omit_null(event, "rawEvent", kind)
        if kind in ("RUN_FINISHED", "SUBAGENT_FINISHED") and "result" in event and event["result"] is None:
            event = self._omit_null(event, "result", kind)
        if kind in _THINKING:
            return self._thinking(kind, event)
        if kind in ("TOOL_CALL_START", "TOOL_CALL_CHUNK"):
            event = self._omit_null(event, "parentMessageId", kind)
        elif kind == "RUN_FINISHED":
            event = self._omit_null(event, "outcome", kind)
        elif kind == "MESSAGES_SNAPSHOT" and isinstance(event.get("messages"), list):
            event = {**event, "messages": [self._inbound(m) for m in event["messages"]]}
        elif kind == "RUN_STARTED" and isinstance(run := event.get("input"), dict):
            run = self._omit_null(run, "forwardedProps", "RunAgentInput")
            run = self._each(run, "tools", lambda tool: self._omit_null(tool, "parameters", "Tool"))
            run = self._each(run, "resume", lambda entry: self._omit_null(entry, "payload", "ResumeEntry"))
            event = {**event, "input": self._each(run, "messages", self._inbound)}
        return event

    def _omit_null(self, value: Any, key: str, where: str) -> Any:
        if not isinstance(value, dict) or key not in value or value[key] is not None:
            return value
        self._warn("legacy-null", f"{where}.{key} is null: before 1.0 that meant absent, and the client drops it "
                                  f"with a warning; leave the field out")
        return {k: v for k, v in value.items() if k != key}

    @staticmethod
    def _each(value: dict[str, Any], key: str, upgrade: Callable[[Any], Any]) -> dict[str, Any]:
        items = value.get(key)
        return {**value, key: [upgrade(item) for item in items]} if isinstance(items, list) else value

    def _media_nulls(self, part: Any) -> Any:
        if isinstance(part, dict) and part.get("type") in _MEDIA:
            return self._omit_null(part, "metadata", f"{part['type']} content part")
        return part

    def _inbound(self, message: Any) -> Any:
        """A replayed message (snapshot, RUN_STARTED.input): media-part nulls dropped, binary parts upgraded."""
        if isinstance(message, dict):
            message = self._each(message, "content", self._media_nulls)
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or not any(isinstance(p, dict) and p.get("type") == "binary"
                                                    for p in content):
            return message
        self._warn("legacy-binary-content", f"message '{message.get('id')}' has a pre-1.0 'binary' content part; the "
                                            f"client converts it to an image/audio/video/document part with a warning")
        upgraded = []
        for part in content:
            binary = isinstance(part, dict) and part.get("type") == "binary" and isinstance(part.get("mimeType"), str)
            modern = self._modern(part) if binary else part
            if binary and modern is not part and any(_same_media(other, modern, part.get("filename"))
                                                     for other in content):
                continue
            upgraded.append(modern)
        return {**message, "content": upgraded}

    def _modern(self, part: dict[str, Any]) -> dict[str, Any]:
        mime: str = part["mimeType"]
        kind = next((k for k in ("image", "audio", "video") if mime.startswith(k + "/")), "document")
        for source in ("data", "url"):
            if part.get(source):
                modern = {"type": kind, "source": {"type": source, "value": part[source], "mimeType": mime}}
                if part.get("filename"):
                    modern["metadata"] = {"filename": part["filename"]}
                return modern
        self._warn("legacy-binary-content", f"a 'binary' content part with only an id ('{part.get('id', '')}') "
                                            f"cannot become a 1.0 media part; give it data or a url")
        return part

    def _thinking(self, kind: str, event: Event) -> Event:
        modern = _THINKING[kind]
        self._warn("legacy-thinking", f"{kind} is a pre-1.0 event: the client converts it to {modern} with a "
                                      f"warning; send {modern}")
        if kind == "THINKING_START":
            self._span = self._mint()
            if "title" in event:
                self._warn("legacy-thinking", f"THINKING_START.title {event['title']!r} is lost: {modern} has no "
                                              f"title")
            rest = {k: v for k, v in event.items() if k != "title"}
            return {**rest, "type": modern, "messageId": self._span}
        if kind == "THINKING_TEXT_MESSAGE_START":
            self._message = self._mint()
            return {**event, "type": modern, "messageId": self._message, "role": "reasoning"}
        if kind == "THINKING_END":
            span, self._span = self._continued(kind, self._span), None
            return {**event, "type": modern, "messageId": span}
        message = self._continued(kind, self._message)
        if kind == "THINKING_TEXT_MESSAGE_END":
            self._message = None
        return {**event, "type": modern, "messageId": message}

    def _mint(self) -> str:
        self._minted += 1
        return f"thinking-{self._minted}"

    def _continued(self, kind: str, established: str | None) -> str:
        if established is not None:
            return established
        minted = self._mint()
        self._warn("legacy-thinking", f"{kind} with no THINKING opener before it: the client invents the id "
                                      f"'{minted}' for it, which nothing opened")
        return minted


def _same_media(part: Any, modern: dict[str, Any], filename: Any) -> bool:
    """Whether a modern part already carries what a legacy one converts to (the client keeps just one)."""
    if not isinstance(part, dict) or part.get("type") != modern["type"] or not isinstance(part.get("source"), dict):
        return False
    source, wanted = part["source"], modern["source"]
    if any(key not in source or source[key] != wanted[key] for key in ("type", "value", "mimeType")):
        return False
    metadata = part.get("metadata")
    return not filename or (isinstance(metadata, dict) and metadata.get("filename") == filename)
