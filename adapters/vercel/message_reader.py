"""The message `readUIMessageStream` builds from a stream whose every chunk the schema takes: what one `ai` version
keeps of it, to fail where that version's `processUIMessageStream` throws (a delta of a part never started, a tool
output for a call the message does not have, metadata it cannot merge)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .chunk_schema import show


@dataclass(slots=True)
class ToolPart:
    call_id: str
    approval_id: str | None = None


class Reader:
    """What one `ai` version's `processUIMessageStream` keeps of the message it builds, as `readUIMessageStream`
    runs it: just enough to fail where it throws. After a failure it goes on as if the missing chunk had come, so
    one mistake is reported once."""

    def __init__(self, version: Literal[6, 7]) -> None:
        self.version = version
        self.message_id = ""
        self.gone: dict[tuple[str, str], str] = {}
        """(part kind, id) -> why a part once there no longer is, for the message."""
        self.text: dict[str, int] = {}
        """Open text parts: id -> the index of the frame that opened it; so for reasoning, tool inputs."""
        self.reasoning: dict[str, int] = {}
        self.inputs: dict[str, int] = {}
        """Tool calls whose input streams (`partialToolCalls`): what tool-input-delta needs."""
        self.awaiting_input: dict[str, int] = {}
        self.parts: list[ToolPart | None] = []
        """The message's tool parts, None for each step-start."""
        self.metadata: Literal["primitive", "object"] | None = None

    def continuing(self, request: object) -> None:
        """Begin from the request's last message when it is the assistant's (a tool's output added, an approval
        answered): `useChat` reads the reply as going on with that message, its tool parts and its id."""
        messages = request.get("messages") if isinstance(request, dict) else None
        last = messages[-1] if isinstance(messages, list) and messages else None
        if not isinstance(last, dict) or last.get("role") != "assistant":
            return
        self.message_id = last["id"] if isinstance(last.get("id"), str) else ""
        for part in last.get("parts") or ():
            if not isinstance(part, dict):
                continue
            if part.get("type") == "step-start":
                self.parts.append(None)
            elif isinstance(call_id := part.get("toolCallId"), str):
                approval = part.get("approval")
                approval_id = approval.get("id") if isinstance(approval, dict) else None
                self.parts.append(ToolPart(call_id, approval_id if isinstance(approval_id, str) else None))

    def read(self, chunk: dict[str, Any], index: int) -> tuple[str, str] | None:
        """Take in one schema-valid chunk; return (rule, message) where the client would throw."""
        kind: str = chunk["type"]
        if kind in ("text-start", "reasoning-start"):
            (self.text if kind == "text-start" else self.reasoning)[chunk["id"]] = index
        elif kind in ("text-delta", "text-end", "reasoning-delta", "reasoning-end"):
            part, _, step = kind.partition("-")
            opened = self.text if part == "text" else self.reasoning
            if chunk["id"] not in opened:
                failure = self._missing(kind, f"{part} part", part, chunk["id"], f"{part}-start")
                if step == "delta":
                    opened[chunk["id"]] = index
                return failure
            if step == "end":
                del opened[chunk["id"]]
                self.gone[part, chunk["id"]] = f"which has ended ({kind})"
        elif kind == "tool-input-start":
            self.inputs[chunk["toolCallId"]] = self.awaiting_input[chunk["toolCallId"]] = index
            self._tool_part(chunk["toolCallId"])
        elif kind == "tool-input-delta":
            if chunk["toolCallId"] not in self.inputs:
                self.inputs[chunk["toolCallId"]] = index
                return self._missing(kind, "tool call", "input", chunk["toolCallId"], "tool-input-start")
        elif kind in ("tool-input-available", "tool-input-error"):
            self.awaiting_input.pop(chunk["toolCallId"], None)
            self._tool_part(chunk["toolCallId"])
        elif kind in ("tool-output-available", "tool-output-error", "tool-output-denied", "tool-approval-request"):
            return self._settle(chunk, kind)
        elif kind == "tool-approval-response":
            if not any(p is not None and p.approval_id == chunk["approvalId"] for p in self.parts):
                return ("approval-response-without-request",
                        f"tool-approval-response for approval {chunk['approvalId']!r}, which no tool-approval-request "
                        f"of this message asked for")
        elif kind == "start-step":
            self.parts.append(None)
        elif kind == "finish-step" and self.version == 6:
            self._drop("which finish-step ended: ai 6 ends every open text and reasoning part at finish-step",
                       tools=False)
        elif kind == "reset-step":
            self._drop("which reset-step removed", tools=True)
        elif kind == "start":
            message_id = chunk.get("messageId")
            if isinstance(message_id, str):
                if self.version == 7 and message_id != self.message_id:
                    self._drop(f"which the start chunk with messageId {message_id!r} dropped: ai 7 begins a new "
                               f"message at a start with another messageId", tools=True, whole_message=True)
                self.message_id = message_id
        if kind in ("start", "finish", "message-metadata"):
            return self._merge_metadata(chunk.get("messageMetadata"))
        return None

    def _missing(self, kind: str, what: str, part: str, part_id: str, start: str) -> tuple[str, str]:
        why = self.gone.get((part, part_id), f"which was never started ({start})")
        return f"{kind}-without-start", f"{kind} for {what} {part_id!r}, {why}"

    def _find_tool(self, call_id: str) -> ToolPart | None:
        """`getToolInvocation`: ai 7 looks in the current step first, then the whole message from its end; ai 6 in
        the whole message from its start."""
        tools = [p for p in self.parts if p is not None and p.call_id == call_id]
        if self.version == 6 or not tools:
            return tools[0] if tools else None
        current = [p for p in self._step() if p.call_id == call_id]
        return current[0] if current else tools[-1]

    def _step(self) -> list[ToolPart]:
        start = max((i for i, p in enumerate(self.parts) if p is None), default=-1)
        return [p for p in self.parts[start + 1:] if p is not None]

    def _tool_part(self, call_id: str) -> ToolPart:
        """The part a tool-input chunk updates (in the current step for ai 7, anywhere for ai 6), or a new one."""
        scope = self._step() if self.version == 7 else [p for p in self.parts if p is not None]
        part = next((p for p in scope if p.call_id == call_id), None)
        if part is None:
            part = ToolPart(call_id)
            self.parts.append(part)
        return part

    def _settle(self, chunk: dict[str, Any], kind: str) -> tuple[str, str] | None:
        call_id: str = chunk["toolCallId"]
        part = self._find_tool(call_id)
        failure = None
        if kind != "tool-approval-request":
            self.awaiting_input.pop(call_id, None)
        if part is None:
            rule = "approval-request-without-call" if kind == "tool-approval-request" else "tool-output-without-call"
            why = self.gone.get(("tool", call_id), "which no tool-input-start or tool-input-available of this "
                                "message announced (useChat takes it only when continuing a message that has the call)")
            failure = rule, f"{kind} for tool call {call_id!r}, {why}"
            part = self._tool_part(call_id)
        if kind == "tool-approval-request":
            part.approval_id = chunk["approvalId"]
        return failure

    def _drop(self, why: str, *, tools: bool, whole_message: bool = False) -> None:
        """Forget open parts (and the current step's tool parts, or all of the message), saying why."""
        for part, opened in (("text", self.text), ("reasoning", self.reasoning), ("input", self.inputs)):
            if part == "input" and not tools:
                continue
            for part_id in opened:
                self.gone[part, part_id] = why
            opened.clear()
        if not tools:
            return
        start = -1 if whole_message else max((i for i, p in enumerate(self.parts) if p is None), default=-1)
        for removed in self.parts[start + 1:]:
            if removed is not None:
                self.gone["tool", removed.call_id] = why
        del self.parts[start + 1:]
        self.awaiting_input.clear()
        if whole_message:
            self.metadata = None

    def _merge_metadata(self, metadata: object) -> tuple[str, str] | None:
        """`mergeObjects(message.metadata, metadata)`: it asks `key in base` of each key of the new metadata, a
        TypeError when the metadata so far is a plain value (string, number, boolean)."""
        if metadata is None:
            return None
        if self.metadata is None:
            self.metadata = "object" if isinstance(metadata, dict | list) else "primitive"
            return None
        had, self.metadata = self.metadata, "object"
        if had == "primitive" and _has_own_keys(metadata):
            return ("metadata-merge", f"messageMetadata {show(metadata)} cannot be merged into the message's "
                                      f"metadata, a plain value so far: the client throws a TypeError (send "
                                      f"messageMetadata as an object, every time)")
        return None


def _has_own_keys(value: object) -> bool:
    """Whether JavaScript's `for (key in value)` finds a key `mergeObjects` goes on to look up."""
    if isinstance(value, dict):
        return any(key not in ("__proto__", "constructor", "prototype") for key in value)
    return isinstance(value, list | str) and len(value) > 0

