"""The client's reducer (`apply/default.ts`), as far as it warns: patches that do not apply, activities misused."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from gateway.core.conformance import preview

from .common import ABSENT, PROTOCOL_VERSION, Event, Report


@dataclass(slots=True)
class _Message:
    id: str
    role: str
    tool_calls: dict[str, str] = field(default_factory=dict)
    """Tool call id -> name."""
    activity_type: Any = None
    content: Any = None


def _from_wire(message: dict[str, Any]) -> _Message:
    calls = {c["id"]: c["function"]["name"] for c in message.get("toolCalls") or ()}
    return _Message(message["id"], message["role"], calls, message.get("activityType"), message.get("content"))


_PATCH_ERRORS = (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError, KeyError,
                 IndexError, AttributeError)
_HISTORY = "@ag-ui/client"


class Reducer:
    """The part of `defaultApplyEvents` that warns: it keeps the agent's messages and state, starting from a fresh
    `HttpAgent` (no messages, state `{}`), and says when an event does not fit them."""

    def __init__(self, warn: Report) -> None:
        self._warn = warn
        self._messages: list[_Message] = []
        self._state: Any = {}

    def apply(self, event: Event) -> None:
        handler = _APPLY.get(event["type"])
        if handler is not None:
            handler(self, event)

    def _find(self, message_id: str) -> _Message | None:
        return next((m for m in self._messages if m.id == message_id), None)

    def _holder(self, call: str) -> _Message | None:
        return next((m for m in self._messages if call in m.tool_calls), None)

    def _run_started(self, event: Event) -> None:
        declared = event.get("protocolVersion")
        if declared is not None and declared != PROTOCOL_VERSION:
            if not re.fullmatch(r"[0-9]+\.[0-9]+", declared):
                self._warn("protocol-version", f"RUN_STARTED.protocolVersion {declared!r} is not MAJOR.MINOR: the "
                                               f"client cannot interpret it and warns")
            elif tuple(map(int, declared.split("."))) > (1, 0):
                self._warn("protocol-version", f"RUN_STARTED.protocolVersion {declared!r} is newer than the "
                                               f"{PROTOCOL_VERSION} the client speaks: it warns that it will strip "
                                               f"what it does not know")
        run = event.get("input")
        for message in run.get("messages", ()) if isinstance(run, dict) else ():
            if self._find(message["id"]) is None:
                self._messages.append(_from_wire(message))

    def _streamed(self, event: Event, kind: str) -> None:
        """A content or end event needs a message to write to, and not an activity."""
        message_id = event["messageId"]
        target = self._find(message_id)
        if target is None:
            self._warn("message-not-found", f"{event['type']} for {kind} '{message_id}', which is not in the client's "
                                            f"messages any more (a MESSAGES_SNAPSHOT left it out)")
        elif target.role == "activity":
            self._activity_collision(event)

    def _activity_collision(self, event: Event) -> None:
        self._warn("message-id-is-activity", f"{event['type']} for '{event['messageId']}', the id of an activity "
                                             f"message: message ids are unique across kinds, so the client ignores "
                                             f"it")

    def _text_start(self, event: Event) -> None:
        self._open(event, event.get("role", "assistant"))

    def _reasoning_start(self, event: Event) -> None:
        self._open(event, "reasoning")

    def _open(self, event: Event, role: str) -> None:
        message_id = event["messageId"]
        existing = self._find(message_id)
        if existing is None:
            self._messages.append(_Message(message_id, role))
        elif existing.role == "activity":
            self._activity_collision(event)

    def _text(self, event: Event) -> None:
        self._streamed(event, "text message")

    def _reasoning(self, event: Event) -> None:
        self._streamed(event, "reasoning message")

    def _tool_start(self, event: Event) -> None:
        call, name, parent = event["toolCallId"], event["toolCallName"], event.get("parentMessageId")
        holder = self._holder(call)
        if holder is not None:
            if holder.tool_calls[call] != name:
                self._warn("tool-call-renamed", f"TOOL_CALL_START reopens tool call '{call}' as {name!r}; it was "
                                                f"{holder.tool_calls[call]!r}, and the client renames it with a "
                                                f"warning")
                holder.tool_calls[call] = name
            return
        existing = self._find(parent) if parent else None
        if existing is not None and existing.role == "assistant":
            target = existing
        else:
            if existing is not None:
                self._warn("tool-call-parent-not-assistant", f"TOOL_CALL_START '{call}' names parentMessageId "
                                                             f"'{parent}', a {existing.role} message: a tool call "
                                                             f"hangs on an assistant message, so the client makes a "
                                                             f"new one with a warning")
            target = _Message(call if existing is not None or not parent else parent, "assistant")
            self._messages.append(target)
        target.tool_calls[call] = name

    def _tool(self, event: Event) -> None:
        call = event["toolCallId"]
        if self._holder(call) is None:
            self._warn("tool-call-not-found", f"{event['type']} for tool call '{call}', which is not in the client's "
                                              f"messages any more (a MESSAGES_SNAPSHOT left it out)")

    def _tool_result(self, event: Event) -> None:
        message = _Message(event["messageId"], event.get("role") or "tool")
        owner = next((i for i, m in enumerate(self._messages)
                      if m.role == "assistant" and event["toolCallId"] in m.tool_calls), None)
        if owner is None:
            self._messages.append(message)
            return
        at = owner + 1
        while at < len(self._messages) and self._messages[at].role == "tool":
            at += 1
        self._messages.insert(at, message)

    def _state_snapshot(self, event: Event) -> None:
        self._state = event["snapshot"]

    def _state_delta(self, event: Event) -> None:
        try:
            self._state = jsonpatch.apply_patch(copy.deepcopy(self._state), event["delta"], in_place=True)
        except _PATCH_ERRORS as exc:
            self._warn("state-patch-failed", f"STATE_DELTA does not apply to the client's state "
                                             f"({preview(json.dumps(self._state))}): {exc}; the client warns and keeps "
                                             f"the state as it was")

    def _messages_snapshot(self, event: Event) -> None:
        incoming = [_from_wire(m) for m in event["messages"]]
        owned = _activity_authority(event.get("metadata"))
        has_activity = any(m.role == "activity" for m in incoming)
        has_reasoning = any(m.role == "reasoning" for m in incoming)

        def client_only(m: _Message) -> bool:
            if m.role == "activity":
                if isinstance(owned, list):
                    return m.activity_type not in owned
                return owned is not None and not has_activity
            return m.role == "reasoning" and not has_reasoning

        by_id = {m.id: m for m in incoming}
        kept = [by_id.get(m.id, m) for m in self._messages if m.id in by_id or client_only(m)]
        known = {m.id for m in kept}
        self._messages = kept + [m for m in incoming if m.id not in known]

    def _activity_snapshot(self, event: Event) -> None:
        index = next((i for i, m in enumerate(self._messages) if m.id == event["messageId"]), None)
        activity = _Message(event["messageId"], "activity", activity_type=event["activityType"],
                            content=event["content"])
        replace = event.get("replace", True)
        if index is None:
            self._messages.append(activity)
        elif replace:
            self._messages[index] = activity

    def _activity_delta(self, event: Event) -> None:
        target = self._find(event["messageId"])
        if target is None:
            return
        if target.role != "activity":
            self._warn("activity-delta-not-activity", f"ACTIVITY_DELTA for '{target.id}', a {target.role} message: "
                                                      f"only an activity message takes a patch")
            return
        try:
            target.content = jsonpatch.apply_patch(copy.deepcopy(target.content or {}), event["patch"], in_place=True)
        except _PATCH_ERRORS as exc:
            self._warn("activity-patch-failed", f"ACTIVITY_DELTA does not apply to activity '{target.id}': {exc}")


def _activity_authority(metadata: Any) -> object:
    """Which activity types a snapshot declares it owns: a list, None for all, `ABSENT` when it does not say."""
    if not isinstance(metadata, dict) or _HISTORY not in metadata:
        return ABSENT
    value = metadata[_HISTORY]
    if not value or not isinstance(value, dict):
        return []
    if "authoritativeActivityTypes" not in value:
        return ABSENT
    types = value["authoritativeActivityTypes"]
    if types is None:
        return None
    return types if isinstance(types, list) and all(isinstance(t, str) for t in types) else []


_APPLY: dict[str, Callable[[Reducer, Event], None]] = {
    "RUN_STARTED": Reducer._run_started,
    "TEXT_MESSAGE_START": Reducer._text_start,
    "TEXT_MESSAGE_CONTENT": Reducer._text,
    "TEXT_MESSAGE_END": Reducer._text,
    "REASONING_MESSAGE_START": Reducer._reasoning_start,
    "REASONING_MESSAGE_CONTENT": Reducer._reasoning,
    "REASONING_MESSAGE_END": Reducer._reasoning,
    "TOOL_CALL_START": Reducer._tool_start,
    "TOOL_CALL_ARGS": Reducer._tool,
    "TOOL_CALL_END": Reducer._tool,
    "TOOL_CALL_RESULT": Reducer._tool_result,
    "STATE_SNAPSHOT": Reducer._state_snapshot,
    "STATE_DELTA": Reducer._state_delta,
    "MESSAGES_SNAPSHOT": Reducer._messages_snapshot,
    "ACTIVITY_SNAPSHOT": Reducer._activity_snapshot,
    "ACTIVITY_DELTA": Reducer._activity_delta,
}
