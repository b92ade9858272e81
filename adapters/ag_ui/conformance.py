"""What `@ag-ui/client` 1.0.0 rejects in an AG-UI answer, frame by frame, without Node.

A port of the inbound pipeline a real `HttpAgent.runAgent` runs over a response: the SSE parser (`transform/sse.ts`,
`transform/http.ts`), the always-on `CompatibilityBoundary`, `enforceEvents` with `@ag-ui/core`'s zod event schemas,
`transformChunks`, `verifyEvents` and the reducer (`apply/default.ts`). The client fails a run on a malformed frame,
but only *warns* when it drops an unknown event, strips an unknown key or upgrades a pre-1.0 shape; a conforming
stream draws no warning, so each of those is a violation here too, as is a stream that ends without a terminal event.

The client stops at its first error. The judge goes on, as if the broken event had been right, so one answer shows
every broken frame; past that first error it no longer models the client's messages and state (the reducer's
warnings stop), because the client would hold none.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jsonpatch

from gateway.core.conformance import MAX_VIOLATIONS, Answer, Violation, json_type, preview, sse_head

PROTOCOL_VERSION = "1.0"
PROTOBUF = "application/vnd.ag-ui.event+proto"
MAX_BUFFER = 10 * 1024 * 1024
"""Characters the client's SSE buffer may hold before the run fails: an event longer than this cannot arrive."""

Event = dict[str, Any]
Path = tuple[str | int, ...]
Report = Callable[[str, str], None]
"""(rule, message) about the frame being judged."""


# ---------------------------------------------------------------------------------------------------- SSE framing


def _frames(body: bytes) -> list[str]:
    """The `data` of each event exactly as the client frames it: split on a literal "\\n\\n", lines on "\\n",
    `data:` lines kept with one optional space removed. Unlike the SSE standard, CR and CRLF end nothing."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    frames = []
    for block in text.split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            frames.append("\n".join(data))
    return frames


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")




def _dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _who(owner: str | None) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


# ---------------------------------------------------------------------------------------------------- schemas


@dataclass(frozen=True, slots=True)
class _Issue:
    path: Path
    problem: str
    missing: bool = False


@dataclass(frozen=True, slots=True)
class _Dropped:
    """What `stripUnknown` removes whole: a member of a tagged union the schema does not know."""

    why: str


@dataclass(frozen=True, slots=True)
class _Stripped:
    path: Path
    why: str | None
    """Why a whole value went; None for an unknown key."""


class _Node:
    """One zod schema: `strip` removes what it does not describe (the client warns), `check` is `parse` (fatal)."""

    def strip(self, value: Any, path: Path, stripped: list[_Stripped]) -> Any:
        return value

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        raise NotImplementedError


class _Str(_Node):
    def __init__(self, pattern: str | None = None, meaning: str = "") -> None:
        self.pattern = re.compile(pattern) if pattern else None
        self.meaning = meaning

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if not isinstance(value, str):
            issues.append(_Issue(path, f"must be a string, got {json_type(value)}"))
        elif self.pattern and not self.pattern.fullmatch(value):
            issues.append(_Issue(path, f"must be {self.meaning}, got {value!r}"))


class _Int(_Node):
    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                isinstance(value, float) and not value.is_integer()):
            issues.append(_Issue(path, f"must be an integer, got {json_type(value)}"))
        elif not self.low <= value <= self.high:
            issues.append(_Issue(path, f"must be an integer from {self.low} to {self.high}, got {value!r}"))


class _Bool(_Node):
    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if not isinstance(value, bool):
            issues.append(_Issue(path, f"must be true or false, got {json_type(value)}"))


class _Json(_Node):
    """Any JSON value; `null` too only where the schema says so."""

    def __init__(self, null: bool = False) -> None:
        self.null = null

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if value is None and not self.null:
            issues.append(_Issue(path, "must not be null (leave an optional field out instead)"))


class _Record(_Node):
    """An open JSON object (`metadata`, activity content, a response schema): any keys, never null or an array."""

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if not isinstance(value, dict):
            issues.append(_Issue(path, f"must be a JSON object, got {json_type(value)}"))


class _Choice(_Node):
    def __init__(self, *values: str) -> None:
        self.values = values

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if not isinstance(value, str) or value not in self.values:
            expected = " or ".join(repr(v) for v in self.values)
            got = repr(value) if isinstance(value, str) else json_type(value)
            issues.append(_Issue(path, f"must be {expected}, got {got}"))


class _Opt:
    def __init__(self, node: _Node) -> None:
        self.node = node


class _Obj(_Node):
    """A `looseObject`: unknown keys are stripped with a warning, unless the spec leaves the object open (RFC 6902
    operations)."""

    def __init__(self, spec: dict[str, _Node | _Opt], open_: bool = False) -> None:
        self.fields = {key: (f.node, True) if isinstance(f, _Opt) else (f, False) for key, f in spec.items()}
        self.required = frozenset(key for key, (_, optional) in self.fields.items() if not optional)
        self.open = open_

    def strip(self, value: Any, path: Path, stripped: list[_Stripped]) -> Any:
        if not isinstance(value, dict):
            return value
        out = {}
        for key, item in value.items():
            spec = self.fields.get(key)
            if spec is None:
                if self.open:
                    out[key] = item
                else:
                    stripped.append(_Stripped((*path, key), None))
                continue
            node, optional = spec
            mark = len(stripped)
            child = node.strip(item, (*path, key), stripped)
            if isinstance(child, _Dropped):
                del stripped[mark:]
                if not optional:
                    return _Dropped(f"its required '{key}' was dropped: {child.why}")
                stripped.append(_Stripped((*path, key), child.why))
                continue
            out[key] = child
        return out

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if not isinstance(value, dict):
            issues.append(_Issue(path, f"must be an object, got {json_type(value)}"))
            return
        for key, (node, optional) in self.fields.items():
            if key in value:
                node.check(value[key], (*path, key), issues)
            elif not optional:
                issues.append(_Issue((*path, key), "is required", missing=True))


class _Arr(_Node):
    def __init__(self, item: _Node, least: int = 0) -> None:
        self.item, self.least = item, least

    def strip(self, value: Any, path: Path, stripped: list[_Stripped]) -> Any:
        if not isinstance(value, list):
            return value
        out = []
        for index, item in enumerate(value):
            mark = len(stripped)
            child = self.item.strip(item, (*path, index), stripped)
            if isinstance(child, _Dropped):
                del stripped[mark:]
                stripped.append(_Stripped((*path, index), child.why))
            else:
                out.append(child)
        return out

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if not isinstance(value, list):
            issues.append(_Issue(path, f"must be an array, got {json_type(value)}"))
            return
        if len(value) < self.least:
            issues.append(_Issue(path, f"must hold at least {self.least} item(s)"))
        for index, item in enumerate(value):
            self.item.check(item, (*path, index), issues)


class _Tagged(_Node):
    """A discriminated union: a member whose tag the schema does not know is dropped with a warning, never fatal."""

    def __init__(self, key: str, *members: _Obj) -> None:
        self.key = key
        self.members: dict[str, _Obj] = {}
        for member in members:
            tag = member.fields[key][0]
            if not isinstance(tag, _Choice):
                raise TypeError(f"a member of a union tagged by {key!r} must pin {key!r} to one value")
            self.members[tag.values[0]] = member

    def strip(self, value: Any, path: Path, stripped: list[_Stripped]) -> Any:
        if not isinstance(value, dict):
            return value
        tag = value.get(self.key)
        member = self.members.get(tag) if isinstance(tag, str) else None
        if member is None:
            shown = repr(tag) if self.key in value else "missing"
            return _Dropped(f"its {self.key} is {shown}, not one of {', '.join(map(repr, self.members))}")
        return member.strip(value, path, stripped)

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if not isinstance(value, dict):
            issues.append(_Issue(path, f"must be an object, got {json_type(value)}"))
            return
        tag = value.get(self.key)
        member = self.members.get(tag) if isinstance(tag, str) else None
        if member is None:
            issues.append(_Issue((*path, self.key), f"must be one of {', '.join(map(repr, self.members))}"))
        else:
            member.check(value, path, issues)


class _TextOrParts(_Node):
    """`content`: a string or an array of content parts."""

    def __init__(self, parts: _Arr) -> None:
        self.parts = parts

    def strip(self, value: Any, path: Path, stripped: list[_Stripped]) -> Any:
        return self.parts.strip(value, path, stripped) if isinstance(value, list) else value

    def check(self, value: Any, path: Path, issues: list[_Issue]) -> None:
        if isinstance(value, list):
            self.parts.check(value, path, issues)
        elif not isinstance(value, str):
            issues.append(_Issue(path, f"must be a string or an array of content parts, got {json_type(value)}"))


MAX_SAFE = 2**53 - 1
_STR = _Str()
_OBJECT = _Record()
_NOT_NULL = _Json()
_COUNT = _Opt(_Int(0, MAX_SAFE))
_POINTER = _Str(r"(/([^/~]|~[01])*)*", "a JSON Pointer (empty, or /-prefixed tokens, ~ written ~0 and / written ~1)")
_TEXT_ROLES = _Choice("developer", "system", "assistant", "user")


def _opt(node: _Node) -> _Opt:
    return _Opt(node)


def _source(kind: str, **spec: _Node | _Opt) -> _Obj:
    return _Obj({"type": _Choice(kind), "value": _STR, **spec})


def _media(kind: str) -> _Obj:
    source = _Tagged("type", _source("data", mimeType=_STR), _source("url", mimeType=_opt(_STR)),
                     _source("file", provider=_opt(_STR), mimeType=_opt(_STR)))
    return _Obj({"type": _Choice(kind), "id": _opt(_STR), "source": source, "metadata": _opt(_NOT_NULL)})


_PARTS = _TextOrParts(_Arr(_Tagged(
    "type", _Obj({"type": _Choice("text"), "id": _opt(_STR), "text": _STR, "metadata": _opt(_NOT_NULL)}),
    *(_media(kind) for kind in ("image", "audio", "video", "document")))))


def _patch_op(op: str, *keys: str) -> _Obj:
    spec: dict[str, _Node | _Opt] = {"op": _Choice(op), "path": _POINTER}
    for key in keys:
        spec[key] = _POINTER if key == "from" else _Json(null=True)
    return _Obj(spec, open_=True)


_PATCH = _Arr(_Tagged("op", _patch_op("add", "value"), _patch_op("remove"), _patch_op("replace", "value"),
                      _patch_op("move", "from"), _patch_op("copy", "from"), _patch_op("test", "value")))


def _message(role: str, **spec: _Node | _Opt) -> _Obj:
    return _Obj({"subagentRunId": _opt(_STR), "id": _STR, "role": _Choice(role), "metadata": _opt(_OBJECT), **spec})


def _named(role: str, **spec: _Node | _Opt) -> _Obj:
    return _message(role, name=_opt(_STR), encryptedValue=_opt(_STR), **spec)


_TOOL_CALL = _Obj({"id": _STR, "type": _Choice("function"), "function": _Obj({"name": _STR, "arguments": _STR}),
                   "encryptedValue": _opt(_STR), "metadata": _opt(_OBJECT)})
_MESSAGE = _Tagged(
    "role",
    _named("developer", content=_STR),
    _named("system", content=_STR),
    _named("assistant", content=_opt(_STR), toolCalls=_opt(_Arr(_TOOL_CALL))),
    _named("user", content=_PARTS),
    _message("tool", content=_PARTS, toolCallId=_STR, error=_opt(_STR), encryptedValue=_opt(_STR)),
    _message("activity", activityType=_STR, content=_OBJECT),
    _message("reasoning", content=_STR, encryptedValue=_opt(_STR)),
)
_RUN_INPUT = _Obj({
    "threadId": _STR, "runId": _STR, "protocolVersion": _opt(_STR), "parentRunId": _opt(_STR),
    "state": _opt(_Json(null=True)), "messages": _Arr(_MESSAGE),
    "tools": _opt(_Arr(_Obj({"name": _STR, "description": _STR, "parameters": _opt(_NOT_NULL),
                             "metadata": _opt(_OBJECT)}))),
    "context": _opt(_Arr(_Obj({"description": _STR, "value": _STR}))),
    "forwardedProps": _opt(_NOT_NULL),
    "resume": _opt(_Arr(_Obj({"interruptId": _STR, "status": _Choice("resolved", "cancelled"),
                              "payload": _opt(_NOT_NULL), "metadata": _opt(_OBJECT)}))),
})
_INTERRUPT = _Obj({
    "subagentRunId": _opt(_STR), "id": _STR, "reason": _STR, "message": _opt(_STR), "toolCallId": _opt(_STR),
    "responseSchema": _opt(_OBJECT), "expiresAt": _opt(_STR), "metadata": _opt(_OBJECT),
})
_USAGE = _Arr(_Obj({"provider": _opt(_STR), "model": _opt(_STR), "inputTokens": _COUNT, "outputTokens": _COUNT,
                    "totalTokens": _COUNT, "reasoningTokens": _COUNT, "cachedInputTokens": _COUNT,
                    "cacheWriteInputTokens": _COUNT}))


def _event(kind: str, attributable: bool = True, **spec: _Node | _Opt) -> tuple[str, _Obj]:
    base: dict[str, _Node | _Opt] = {"type": _Choice(kind), "timestamp": _opt(_Int(-MAX_SAFE, MAX_SAFE)),
                                     "rawEvent": _opt(_NOT_NULL), "metadata": _opt(_OBJECT)}
    if attributable:
        base["subagentRunId"] = _opt(_STR)
    return kind, _Obj({**base, **spec})


SCHEMAS: dict[str, _Obj] = dict([
    _event("TEXT_MESSAGE_START", messageId=_STR, role=_opt(_TEXT_ROLES), name=_opt(_STR)),
    _event("TEXT_MESSAGE_CONTENT", messageId=_STR, delta=_STR),
    _event("TEXT_MESSAGE_END", messageId=_STR),
    _event("TEXT_MESSAGE_CHUNK", messageId=_opt(_STR), role=_opt(_TEXT_ROLES), delta=_opt(_STR), name=_opt(_STR)),
    _event("TOOL_CALL_START", toolCallId=_STR, toolCallName=_STR, parentMessageId=_opt(_STR)),
    _event("TOOL_CALL_ARGS", toolCallId=_STR, delta=_STR),
    _event("TOOL_CALL_END", toolCallId=_STR),
    _event("TOOL_CALL_CHUNK", toolCallId=_opt(_STR), toolCallName=_opt(_STR), parentMessageId=_opt(_STR),
           delta=_opt(_STR)),
    _event("TOOL_CALL_RESULT", messageId=_STR, toolCallId=_STR, content=_PARTS, role=_opt(_Choice("tool"))),
    _event("STATE_SNAPSHOT", snapshot=_Json(null=True)),
    _event("STATE_DELTA", delta=_PATCH),
    _event("MESSAGES_SNAPSHOT", attributable=False, messages=_Arr(_MESSAGE)),
    _event("ACTIVITY_SNAPSHOT", messageId=_STR, activityType=_STR, content=_OBJECT, replace=_opt(_Bool())),
    _event("ACTIVITY_DELTA", messageId=_STR, activityType=_STR, patch=_PATCH),
    _event("RAW", event=_Json(null=True), source=_opt(_STR)),
    _event("CUSTOM", name=_STR, value=_Json(null=True)),
    _event("RUN_STARTED", attributable=False, threadId=_STR, runId=_STR, protocolVersion=_opt(_STR),
           parentRunId=_opt(_STR), input=_opt(_RUN_INPUT)),
    _event("RUN_FINISHED", attributable=False, threadId=_STR, runId=_STR, result=_opt(_NOT_NULL),
           outcome=_opt(_Tagged("type",
                                _Obj({"type": _Choice("success"), "pendingToolCallIds": _opt(_Arr(_STR))}),
                                _Obj({"type": _Choice("interrupt"), "interrupts": _Arr(_INTERRUPT, least=1)}),
                                _Obj({"type": _Choice("cancelled")}))),
           usage=_opt(_USAGE)),
    _event("RUN_ERROR", attributable=False, message=_STR, code=_opt(_STR), usage=_opt(_USAGE)),
    _event("STEP_STARTED", stepName=_STR),
    _event("STEP_FINISHED", stepName=_STR),
    _event("REASONING_START", messageId=_STR),
    _event("REASONING_MESSAGE_START", messageId=_STR, role=_Choice("reasoning")),
    _event("REASONING_MESSAGE_CONTENT", messageId=_STR, delta=_STR),
    _event("REASONING_MESSAGE_END", messageId=_STR),
    _event("REASONING_MESSAGE_CHUNK", messageId=_opt(_STR), delta=_opt(_STR)),
    _event("REASONING_END", messageId=_STR),
    _event("REASONING_ENCRYPTED_VALUE", subtype=_Choice("tool-call", "message"), entityId=_STR,
           encryptedValue=_STR),
    _event("SUBAGENT_STARTED", attributable=False, subagentRunId=_STR, name=_STR, description=_opt(_STR),
           parentSubagentRunId=_opt(_STR), parentToolCallId=_opt(_STR), parentMessageId=_opt(_STR)),
    _event("SUBAGENT_FINISHED", attributable=False, subagentRunId=_STR, result=_opt(_NOT_NULL),
           outcome=_opt(_Tagged("type", _Obj({"type": _Choice("success")}),
                                _Obj({"type": _Choice("suspended"), "interruptIds": _opt(_Arr(_STR))})))),
    _event("SUBAGENT_ERROR", attributable=False, subagentRunId=_STR, message=_STR, code=_opt(_STR)),
])
"""`@ag-ui/core` 1.0.0's `EventSchemas`, member by member (`src/generated/schemas.ts`)."""


# ---------------------------------------------------------------------------------------------------- compatibility


_THINKING = {
    "THINKING_START": "REASONING_START",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
    "THINKING_END": "REASONING_END",
}
_MEDIA = frozenset({"image", "audio", "video", "document"})


class _Legacy:
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


# ---------------------------------------------------------------------------------------------------- chunks


class _Rejected(Exception):
    """A fatal error from a stage that stops at it (chunk expansion)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


@dataclass(slots=True)
class _Lane:
    kind: str
    id: str
    owner: str | None
    role: str | None = None
    name: str | None = None
    parent: str | None = None


_ID_KEY = {"text": "messageId", "tool": "toolCallId", "reasoning": "messageId"}
_CONTENT = {"text": "TEXT_MESSAGE_CONTENT", "tool": "TOOL_CALL_ARGS", "reasoning": "REASONING_MESSAGE_CONTENT"}
_END = {"text": "TEXT_MESSAGE_END", "tool": "TOOL_CALL_END", "reasoning": "REASONING_MESSAGE_END"}
_LANE_FIELD = {"role": "role", "name": "name", "toolCallName": "name", "parentMessageId": "parent"}
"""A chunk field a continuation may repeat -> where the lane keeps what the opener said."""
_CLOSES_OWN_LANE = frozenset({
    "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS",
    "TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STATE_DELTA", "CUSTOM", "STEP_STARTED", "STEP_FINISHED",
    "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
    "REASONING_END",
})
_CLOSES_ALL_LANES = frozenset({"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"})


class _Chunks:
    """`transformChunks`: each `*_CHUNK` becomes START/CONTENT/END events, one open stream per subagent lane; any
    other event of the lane ends the stream it left open."""

    def __init__(self) -> None:
        self._lanes: dict[str | None, _Lane] = {}

    def expand(self, event: Event) -> list[Event]:
        kind = event["type"]
        if kind in _CLOSES_OWN_LANE:
            return [*self._close(event.get("subagentRunId")), event]
        if kind in _CLOSES_ALL_LANES:
            return [*(end for owner in list(self._lanes) for end in self._close(owner)), event]
        if kind in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR") and event.get("subagentRunId") is not None:
            return [*self._close(event["subagentRunId"]), event]
        if kind == "TEXT_MESSAGE_CHUNK":
            return self._chunk(event, "text", "text message", ("role", "name"))
        if kind == "TOOL_CALL_CHUNK":
            return self._chunk(event, "tool", "tool call", ("toolCallName", "parentMessageId"))
        if kind == "REASONING_MESSAGE_CHUNK":
            return self._chunk(event, "reasoning", "reasoning message", ())
        return [event]

    def _close(self, owner: str | None) -> list[Event]:
        lane = self._lanes.pop(owner, None)
        if lane is None:
            return []
        end: Event = {"type": _END[lane.kind], _ID_KEY[lane.kind]: lane.id}
        if lane.owner is not None:
            end["subagentRunId"] = lane.owner
        return [end]

    def _chunk(self, event: Event, kind: str, entity: str, repeated: tuple[str, ...]) -> list[Event]:
        chunk, key = event["type"], _ID_KEY[kind]
        entity_id, tag = event.get(key), event.get("subagentRunId")
        owner = self._lane_of(kind, entity_id, tag, chunk, entity)
        lane = self._lanes.get(owner)
        out: list[Event] = []
        if lane is not None and lane.kind == kind and entity_id in (None, lane.id):
            for name in repeated:
                said, established = event.get(name), getattr(lane, _LANE_FIELD[name])
                if said is not None and said != established:
                    raise _Rejected("chunk-conflict", f"{chunk} continues {entity} '{lane.id}' with {name} {said!r}, "
                                                     f"but the stream was opened with {established!r}")
        else:
            out += self._close(owner)
            if entity_id is None:
                raise _Rejected("chunk-without-id", f"the first {chunk} of a {entity} must carry its {key}")
            if kind == "tool" and event.get("toolCallName") is None:
                raise _Rejected("chunk-without-name", f"the first {chunk} of a tool call must carry its toolCallName")
            label = event["toolCallName"] if kind == "tool" else event.get("name")
            lane = _Lane(kind, entity_id, tag, event.get("role", "assistant"), label, event.get("parentMessageId"))
            self._lanes[owner] = lane
            out.append(self._opener(lane, event))
        content = _CONTENT[kind]
        attributed = {"subagentRunId": tag if tag is not None else lane.owner} if (
            tag is not None or lane.owner is not None) else {}
        origin: Event = {k: event[k] for k in ("metadata", "rawEvent") if k in event}
        if "delta" in event or "rawEvent" in event:
            out.append({"type": content, key: lane.id, "delta": event.get("delta", ""), **attributed, **origin})
        elif not out and origin:
            out.append({"type": content, key: lane.id, "delta": "", **attributed, **origin})
        return out

    @staticmethod
    def _opener(lane: _Lane, chunk: Event) -> Event:
        if lane.kind == "text":
            opener: Event = {"type": "TEXT_MESSAGE_START", "messageId": lane.id, "role": lane.role}
            if lane.name is not None:
                opener["name"] = lane.name
        elif lane.kind == "tool":
            opener = {"type": "TOOL_CALL_START", "toolCallId": lane.id, "toolCallName": lane.name}
            if lane.parent is not None:
                opener["parentMessageId"] = lane.parent
        else:
            opener = {"type": "REASONING_MESSAGE_START", "messageId": lane.id, "role": "reasoning"}
        if lane.owner is not None:
            opener["subagentRunId"] = lane.owner
        if "metadata" in chunk:
            opener["metadata"] = chunk["metadata"]
        return opener

    def _lane_of(self, kind: str, entity_id: str | None, tag: str | None, chunk: str, entity: str) -> str | None:
        """Which lane a chunk continues: the one holding its id, else the one its tag names, else the only one open."""
        if entity_id is not None:
            for owner, lane in self._lanes.items():
                if lane.kind == kind and lane.id == entity_id:
                    if tag is not None and tag != owner:
                        raise _Rejected("chunk-owner-mismatch", f"{chunk} for {entity} '{entity_id}' says "
                                                                f"subagentRunId '{tag}', but that stream is open "
                                                                f"under {_who(owner)}")
                    return owner
            return tag
        if tag is not None:
            return tag
        parent = self._lanes.get(None)
        if parent is not None and parent.kind == kind:
            return None
        candidates = [owner for owner, lane in self._lanes.items() if lane.kind == kind]
        if len(candidates) > 1:
            raise _Rejected("chunk-ambiguous", f"{chunk} carries neither a {_ID_KEY[kind]} nor a subagentRunId, but "
                                              f"{len(candidates)} subagents have a {entity} open")
        return candidates[0] if candidates else None



# ---------------------------------------------------------------------------------------------------- verification


_ABSENT = object()


class _Streamed(NamedTuple):
    """An entity opened, continued and closed by id."""

    opener: str
    end: str
    noun: str
    rule: str
    """How its rules start: `text` in `text-content-without-start`."""
    key: str
    """The field holding its id."""


_STREAMED = {
    "message": _Streamed("TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "text message", "text", "messageId"),
    "tool call": _Streamed("TOOL_CALL_START", "TOOL_CALL_END", "tool call", "tool-call", "toolCallId"),
    "reasoning message": _Streamed("REASONING_MESSAGE_START", "REASONING_MESSAGE_END", "reasoning message",
                                   "reasoning-message", "messageId"),
    "reasoning span": _Streamed("REASONING_START", "REASONING_END", "reasoning span", "reasoning-span", "messageId"),
}


class _Verifier:
    """`verifyEvents`: the run lifecycle, start/content/end pairing by id, steps, subagents, and that a continuation's
    `subagentRunId` agrees with whoever opened the entity."""

    def __init__(self, fail: Report) -> None:
        self._fail = fail
        self._first = True
        self._started = self._finished = self._errored = False
        self._reset()

    def _reset(self) -> None:
        self._open: dict[str, dict[str, None]] = {kind: {} for kind in _STREAMED}
        self._ended: dict[str, set[str]] = {kind: set() for kind in _STREAMED}
        owners = ("message", "tool call", "activity", "reasoning message")
        self._owners: dict[str, dict[str, str | None]] = {kind: {} for kind in owners}
        self._steps: dict[str | None, dict[str, None]] = {}
        self._subagents: dict[str, None] = {}
        self._closed_subagents: set[str] = set()

    def check(self, event: Event) -> None:
        kind = event["type"]
        if self._errored and kind != "RUN_STARTED":
            self._fail("event-after-run-error", f"{kind} after RUN_ERROR: a run that errored is over, and only a new "
                                                f"RUN_STARTED may follow")
            self._errored = False
        if self._finished and kind not in ("RUN_STARTED", "RUN_ERROR"):
            self._fail("event-after-run-finished", f"{kind} after RUN_FINISHED: the run is over; start a new one "
                                                   f"with RUN_STARTED first")
            self._finished = False
        if self._first:
            self._first = False
            if kind not in ("RUN_STARTED", "RUN_ERROR"):
                self._fail("first-event-not-run-started", f"the first event must be RUN_STARTED (or RUN_ERROR), "
                                                          f"got {kind}")
        elif kind == "RUN_STARTED":
            if self._started and not self._finished and not self._errored:
                self._fail("run-started-while-active", "RUN_STARTED while a run is still active: end it with "
                                                       "RUN_FINISHED or RUN_ERROR first")
            if self._finished or self._errored:
                self._reset()
                self._finished = self._errored = False
        handler = _VERIFY.get(kind)
        if handler is not None:
            handler(self, event)

    def _disagrees(self, event: Event, kind: str, entity_id: str, owner: Any = _ABSENT) -> bool:
        tag = event.get("subagentRunId")
        if owner is _ABSENT:
            owner = self._owners[kind].get(entity_id, _ABSENT)
        if tag is None or owner is _ABSENT or owner == tag:
            return False
        self._fail("subagent-owner-mismatch", f"{event['type']} says subagentRunId '{tag}', but the {kind} "
                                              f"'{entity_id}' belongs to {_who(owner)}, which opened it")
        return True

    def _opened(self, event: Event, kind: str, owner_kind: str) -> None:
        entity = _STREAMED[kind]
        entity_id = event[entity.key]
        if entity_id in self._open[kind]:
            self._fail(f"{entity.rule}-start-duplicate", f"{entity.opener} for {entity.noun} '{entity_id}', which is "
                                                         f"already open: end it with {entity.end} first")
            return
        owners = self._owners[owner_kind]
        known = entity_id in owners
        if known:
            self._disagrees(event, owner_kind, entity_id)
        self._open[kind][entity_id] = None
        if not known:
            owners[entity_id] = event.get("subagentRunId")

    def _continued(self, event: Event, kind: str, owner_kind: str) -> None:
        entity = _STREAMED[kind]
        entity_id = event[entity.key]
        closing = event["type"] == entity.end
        if entity_id not in self._open[kind]:
            state = f"which already ended ({entity.end})" if entity_id in self._ended[kind] else \
                f"which was never started ({entity.opener})"
            step = "end" if closing else "args" if kind == "tool call" else "content"
            self._fail(f"{entity.rule}-{step}-without-start", f"{event['type']} for {entity.noun} '{entity_id}', "
                                                              f"{state}")
            if closing:
                return
            self._open[kind][entity_id] = None
        self._disagrees(event, owner_kind, entity_id)
        if closing:
            del self._open[kind][entity_id]
            self._ended[kind].add(entity_id)

    def _text_start(self, event: Event) -> None:
        self._opened(event, "message", "message")

    def _text(self, event: Event) -> None:
        self._continued(event, "message", "message")

    def _reasoning_start(self, event: Event) -> None:
        span = event["type"] == "REASONING_START"
        self._opened(event, "reasoning span" if span else "reasoning message", "reasoning message")

    def _reasoning(self, event: Event) -> None:
        span = event["type"] == "REASONING_END"
        self._continued(event, "reasoning span" if span else "reasoning message", "reasoning message")

    def _tool_start(self, event: Event) -> None:
        call, parent, tag = event["toolCallId"], event.get("parentMessageId"), event.get("subagentRunId")
        if call in self._open["tool call"]:
            self._opened(event, "tool call", "tool call")
            return
        inherited: Any = _ABSENT
        owners = self._owners["tool call"]
        if parent is not None and parent in self._owners["message"]:
            inherited = self._owners["message"][parent]
            if tag is not None and tag != inherited:
                self._fail("subagent-owner-mismatch", f"TOOL_CALL_START '{call}' says subagentRunId '{tag}', but its "
                                                      f"parent message '{parent}' belongs to {_who(inherited)}: a "
                                                      f"tool call belongs to the message that carries it")
                owners.setdefault(call, tag)
                self._open["tool call"][call] = None
                return
        if call in owners:
            if not self._disagrees(event, "tool call", call) and tag is None and inherited is not _ABSENT and (
                    inherited != owners[call]):
                self._fail("subagent-owner-mismatch", f"TOOL_CALL_START '{call}' reopens a tool call of "
                                                      f"{_who(owners[call])} under parent message '{parent}' of "
                                                      f"{_who(inherited)}: a tool call belongs to the message that "
                                                      f"carries it")
        else:
            owners[call] = tag if tag is not None else (None if inherited is _ABSENT else inherited)
        self._open["tool call"][call] = None

    def _tool(self, event: Event) -> None:
        self._continued(event, "tool call", "tool call")

    def _tool_result(self, event: Event) -> None:
        self._owners["message"][event["messageId"]] = event.get("subagentRunId")

    def _step_started(self, event: Event) -> None:
        name, owner = event["stepName"], event.get("subagentRunId")
        where = "" if owner is None else f" in subagent '{owner}'"
        steps = self._steps.setdefault(owner, {})
        if name in steps:
            self._fail("step-start-duplicate", f'STEP_STARTED for step "{name}"{where}, which is already active')
            return
        steps[name] = None

    def _step_finished(self, event: Event) -> None:
        name, owner = event["stepName"], event.get("subagentRunId")
        steps = self._steps.setdefault(owner, {})
        if name in steps:
            del steps[name]
            return
        others = [o for o, names in self._steps.items() if o != owner and name in names]
        if others:
            self._fail("step-owner-mismatch", f'STEP_FINISHED for step "{name}" comes from {_who(owner)}, but '
                                              f"{_who(others[0])} started it: a step is finished by whoever started it")
        else:
            self._fail("step-finished-without-start", f'STEP_FINISHED for step "{name}", which was never started '
                                                      f"(STEP_STARTED)")

    def _activity_snapshot(self, event: Event) -> None:
        activity = event["messageId"]
        if activity not in self._owners["activity"] or event.get("replace") is not False:
            self._owners["activity"][activity] = event.get("subagentRunId")

    def _activity_delta(self, event: Event) -> None:
        self._disagrees(event, "activity", event["messageId"])

    def _encrypted(self, event: Event) -> None:
        entity, subtype = event["entityId"], event["subtype"]
        if subtype == "tool-call":
            kind, owner = "tool call", self._owners["tool call"].get(entity, _ABSENT)
        else:
            kind = "message"
            owner = self._owners["message"].get(entity, self._owners["reasoning message"].get(entity, _ABSENT))
        self._disagrees(event, kind, entity, owner)

    def _subagent_started(self, event: Event) -> None:
        subagent, parent = event["subagentRunId"], event.get("parentSubagentRunId")
        if subagent in self._subagents:
            self._fail("subagent-start-duplicate", f"SUBAGENT_STARTED for subagent '{subagent}', which is already "
                                                   f"active: finish it with SUBAGENT_FINISHED first")
        elif subagent in self._closed_subagents:
            self._fail("subagent-id-reused", f"SUBAGENT_STARTED for subagent '{subagent}', which already finished in "
                                             f"this run: a subagentRunId names one invocation")
        elif parent is not None and parent not in self._subagents and parent not in self._closed_subagents:
            self._fail("subagent-parent-unknown", f"SUBAGENT_STARTED names parentSubagentRunId '{parent}', which has "
                                                  f"not started in this run")
        else:
            self._subagents[subagent] = None

    def _subagent_finished(self, event: Event) -> None:
        subagent = event["subagentRunId"]
        if subagent not in self._subagents:
            self._fail("subagent-end-without-start", f"{event['type']} for subagent '{subagent}', which is not active "
                                                     f"(SUBAGENT_STARTED)")
            return
        del self._subagents[subagent]
        self._closed_subagents.add(subagent)

    def _seed(self, messages: Any, authoritative: bool) -> None:
        """Messages replayed on the wire (a snapshot, RUN_STARTED.input) have owners later events must agree with."""
        for message in messages if isinstance(messages, list) else ():
            if not isinstance(message, dict) or not isinstance(message.get("id"), str):
                continue
            role, owner = message.get("role"), message.get("subagentRunId")
            bucket = self._owners["reasoning message" if role == "reasoning" else
                                  "activity" if role == "activity" else "message"]
            if authoritative or message["id"] not in bucket:
                bucket[message["id"]] = owner
            for call in message.get("toolCalls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str) and (
                        authoritative or call["id"] not in self._owners["tool call"]):
                    self._owners["tool call"][call["id"]] = owner

    def _messages_snapshot(self, event: Event) -> None:
        self._seed(event["messages"], authoritative=True)

    def _run_started(self, event: Event) -> None:
        self._started = True
        run = event.get("input")
        self._seed(run.get("messages") if isinstance(run, dict) else None, authoritative=False)

    def _run_finished(self, event: Event) -> None:
        steps = [name if owner is None else f"{name} (subagent '{owner}')"
                 for owner, names in self._steps.items() for name in names]
        still_open = [("steps", steps)] + [
            (f"{_STREAMED[kind].noun}s", list(self._open[kind]))
            for kind in ("message", "reasoning message", "reasoning span", "tool call")
        ] + [("subagents", list(self._subagents))]
        for noun, names in still_open:
            if names:
                self._fail(f"run-finished-with-open-{noun.replace(' ', '-')}", f"RUN_FINISHED while {noun} are still "
                                                                               f"open: {', '.join(names)}; end each "
                                                                               f"one before the run")
        for kind in self._open:
            self._open[kind].clear()
        self._steps.clear()
        self._subagents.clear()
        self._finished = True

    def _run_error(self, event: Event) -> None:
        self._errored = True


_VERIFY: dict[str, Callable[[_Verifier, Event], None]] = {
    "TEXT_MESSAGE_START": _Verifier._text_start,
    "TEXT_MESSAGE_CONTENT": _Verifier._text,
    "TEXT_MESSAGE_END": _Verifier._text,
    "TOOL_CALL_START": _Verifier._tool_start,
    "TOOL_CALL_ARGS": _Verifier._tool,
    "TOOL_CALL_END": _Verifier._tool,
    "TOOL_CALL_RESULT": _Verifier._tool_result,
    "REASONING_START": _Verifier._reasoning_start,
    "REASONING_MESSAGE_START": _Verifier._reasoning_start,
    "REASONING_MESSAGE_CONTENT": _Verifier._reasoning,
    "REASONING_MESSAGE_END": _Verifier._reasoning,
    "REASONING_END": _Verifier._reasoning,
    "REASONING_ENCRYPTED_VALUE": _Verifier._encrypted,
    "STEP_STARTED": _Verifier._step_started,
    "STEP_FINISHED": _Verifier._step_finished,
    "ACTIVITY_SNAPSHOT": _Verifier._activity_snapshot,
    "ACTIVITY_DELTA": _Verifier._activity_delta,
    "SUBAGENT_STARTED": _Verifier._subagent_started,
    "SUBAGENT_FINISHED": _Verifier._subagent_finished,
    "SUBAGENT_ERROR": _Verifier._subagent_finished,
    "MESSAGES_SNAPSHOT": _Verifier._messages_snapshot,
    "RUN_STARTED": _Verifier._run_started,
    "RUN_FINISHED": _Verifier._run_finished,
    "RUN_ERROR": _Verifier._run_error,
}


# ---------------------------------------------------------------------------------------------------- reducer


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


class _Reducer:
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
    """Which activity types a snapshot declares it owns: a list, None for all, `_ABSENT` when it does not say."""
    if not isinstance(metadata, dict) or _HISTORY not in metadata:
        return _ABSENT
    value = metadata[_HISTORY]
    if not value or not isinstance(value, dict):
        return []
    if "authoritativeActivityTypes" not in value:
        return _ABSENT
    types = value["authoritativeActivityTypes"]
    if types is None:
        return None
    return types if isinstance(types, list) and all(isinstance(t, str) for t in types) else []


_APPLY: dict[str, Callable[[_Reducer, Event], None]] = {
    "RUN_STARTED": _Reducer._run_started,
    "TEXT_MESSAGE_START": _Reducer._text_start,
    "TEXT_MESSAGE_CONTENT": _Reducer._text,
    "TEXT_MESSAGE_END": _Reducer._text,
    "REASONING_MESSAGE_START": _Reducer._reasoning_start,
    "REASONING_MESSAGE_CONTENT": _Reducer._reasoning,
    "REASONING_MESSAGE_END": _Reducer._reasoning,
    "TOOL_CALL_START": _Reducer._tool_start,
    "TOOL_CALL_ARGS": _Reducer._tool,
    "TOOL_CALL_END": _Reducer._tool,
    "TOOL_CALL_RESULT": _Reducer._tool_result,
    "STATE_SNAPSHOT": _Reducer._state_snapshot,
    "STATE_DELTA": _Reducer._state_delta,
    "MESSAGES_SNAPSHOT": _Reducer._messages_snapshot,
    "ACTIVITY_SNAPSHOT": _Reducer._activity_snapshot,
    "ACTIVITY_DELTA": _Reducer._activity_delta,
}


# ---------------------------------------------------------------------------------------------------- the pipeline


class AguiClient:
    """One `runAgent` over one answer's frames: parse, upgrade, enforce, expand, verify, apply, in the client's
    order, collecting what each stage rejects or warns about."""

    def __init__(self, found: list[Violation] | None = None) -> None:
        self.found: list[Violation] = found if found is not None else []
        self.failed = False
        """The real client would have stopped by now."""
        self._said: set[tuple[str, str]] = set()
        self._index: int | None = None
        self._frame: str | None = None
        self._last: str | None = None
        self._legacy = _Legacy(self._warn)
        self._chunks = _Chunks()
        self._verifier = _Verifier(self._fail)
        self._reducer = _Reducer(self._warn)

    @property
    def full(self) -> bool:
        return len(self.found) >= MAX_VIOLATIONS

    def _add(self, rule: str, message: str) -> None:
        if self.full or (rule, message) in self._said:
            return
        self._said.add((rule, message))
        self.found.append(Violation(rule, message, None if self._frame is None else preview(self._frame),
                                    self._index))

    def _warn(self, rule: str, message: str) -> None:
        self._add(rule, message)

    def _fail(self, rule: str, message: str) -> None:
        self._add(rule, message)
        self.failed = True

    def frame(self, index: int, data: str) -> None:
        self._index, self._frame = index, data
        if len(data) > MAX_BUFFER:
            self._fail("sse-buffer", f"an event of {len(data)} characters: the client's SSE buffer holds at most "
                                     f"{MAX_BUFFER // (1024 * 1024)} MB and the run fails")
            return
        try:
            value = json.loads(data, parse_constant=_no_constant)
        except ValueError as exc:
            hint = ""
            if "\r" in data:
                hint = " (this stream has CR line ends: the client splits events only on a blank LF line, so CRLF " \
                       "events run together)"
            elif data.strip() == "[DONE]":
                hint = " ([DONE] ends an OpenAI or Vercel stream; an AG-UI stream ends with RUN_FINISHED)"
            self._fail("json", f"an event's data is not JSON: {exc}{hint}")
            return
        if not isinstance(value, dict):
            self._fail("event-not-object", f"an event must be a JSON object, got {json_type(value)}")
            return
        if not isinstance(value.get("type"), str) or not value["type"]:
            self._fail("event-without-type", "an event must carry its type as a non-empty string")
            return
        event = self._enforce(self._legacy.upgrade(value))
        if event is None:
            return
        try:
            expanded = self._chunks.expand(event)
        except _Rejected as exc:
            self._fail(exc.rule, exc.message)
            return
        for item in expanded:
            self._last = item["type"]
            self._verifier.check(item)
            if not self.failed:
                self._reducer.apply(item)

    def _enforce(self, event: Event) -> Event | None:
        """The event as the schema leaves it, or None when the client drops it. An event with a malformed field
        goes on without that field, so later stages judge the rest; without a required one it goes no further."""
        kind = event["type"]
        schema = SCHEMAS.get(kind)
        if schema is None:
            self._warn("unknown-event-type", f"unknown event type '{kind}': AG-UI 1.0 has no such event, so the "
                                             f"client drops it with a warning")
            return None
        stripped: list[_Stripped] = []
        value = schema.strip(event, (), stripped)
        for item in stripped:
            if item.why is None:
                self._warn("unknown-field", f"{kind} carries '{_dotted(item.path)}', which the AG-UI 1.0 schema does "
                                            f"not describe: the client strips it with a warning")
            else:
                self._warn("unknown-union-member", f"{kind} '{_dotted(item.path)}' is dropped with a warning: "
                                                   f"{item.why}")
        issues: list[_Issue] = []
        schema.check(value, (), issues)
        for issue in issues:
            where = f"{kind}.{_dotted(issue.path)}"
            self._fail("missing-field" if issue.missing else "invalid-field", f"{where} {issue.problem}")
        if not issues:
            return dict(value)
        bad = {issue.path[0] for issue in issues if issue.path}
        if bad & schema.required:
            return None
        return {key: item for key, item in value.items() if key not in bad}

    def finish(self) -> None:
        self._index = self._frame = None
        if self._last not in ("RUN_FINISHED", "RUN_ERROR"):
            self._fail("no-terminal-event", f"the stream ended without RUN_FINISHED or RUN_ERROR (last event: "
                                            f"{self._last or 'none'}): nothing tells the client the run is over "
                                            f"rather than cut off")


def judge(answer: Answer) -> list[Violation]:
    """Every rule of `@ag-ui/client` 1.0.0 the answer breaks, first broken first, at most `MAX_VIOLATIONS`."""
    found = sse_head(answer)
    if not 200 <= answer.status < 300:
        return found  # the client rejects the response before it reads a byte of the body
    if answer.headers.get("content-type", "") == PROTOBUF:
        return found  # the client would read protobuf frames, which this judge does not
    client = AguiClient(found)
    for index, data in enumerate(_frames(answer.body)):
        if client.full:
            break
        client.frame(index, data)
    client.finish()
    return client.found
