"""The `ai` package's rules for a UI message stream: what `useChat` (its `DefaultChatTransport` feeding
`readUIMessageStream`) rejects in an agent's answer, frame by frame, without Node.

A stream passes when both clients the test suite runs accept it (`tests/clients/verify-vercel.mjs`): ai 7.0.173, and
ai 6.0.230, whose chunk schemas are strict (one key outside the schema rejects the whole stream) and whose state
machine ends every open text and reasoning part at `finish-step`. An in-band `{"type": "error"}` chunk is the agent
reporting a failure the protocol's way, not a violation.

Rules named `convention-...` are what the protocol's documentation or the AI SDK's own server does and no client
checks (the headers, `data: [DONE]`, ending what was started): worth fixing, never why a real client fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import orjson

from gateway.core.conformance import MAX_VIOLATIONS, Answer, Violation, preview, sse_head, sse_json_frames
from gateway.core.sse import SSEDecoder

CONVENTION = "convention-"
"""The prefix of every rule a real client does not enforce."""

# ---------------------------------------------------------------------------------------------------- the schema


@dataclass(frozen=True, slots=True)
class Key:
    """One key of a chunk (`uiMessageChunkSchema`): its kind (one of `KINDS`), whether the chunk must carry it, and
    whether only ai 7 knows it (strict ai 6 rejects it like any unknown key)."""

    kind: str
    required: bool = False
    ai7: bool = False


STRING = Key("string", required=True)
VALUE = Key("unknown", required=True)
"""Typed `unknown` in the schema, yet the key must be there (`input`, `output`, `data`); null will do."""
OPTIONAL_STRING = Key("string")
OPTIONAL_BOOLEAN = Key("boolean")
OPTIONAL_VALUE = Key("unknown")
PROVIDER_METADATA = Key("provider-metadata")
TOOL_METADATA = Key("json-object")

FINISH_REASONS = ("stop", "length", "content-filter", "tool-calls", "error", "other")
AI7_VALUES: dict[str, frozenset[str]] = {"finish-reason": frozenset({"interrupted"})}
"""Values of a kind that only ai 7 accepts (`finishReason: "interrupted"` came late in 7.0.x)."""


def _is_provider_metadata(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(inner, dict) for inner in value.values())


KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "boolean": (lambda v: isinstance(v, bool), "true or false"),
    "unknown": (lambda v: True, "any JSON value"),
    "json-object": (lambda v: isinstance(v, dict), "a JSON object"),
    "provider-metadata": (_is_provider_metadata, 'an object of objects ({"provider": {...}})'),
    "array": (lambda v: isinstance(v, list), "an array"),
    "finish-reason": (lambda v: isinstance(v, str) and v in {*FINISH_REASONS, "interrupted"},
                      "one of " + ", ".join(repr(r) for r in FINISH_REASONS)),
    "input-encoding": (lambda v: v in ("json", "text"), "'json' or 'text'"),
}

_TOOL = {"providerExecuted": OPTIONAL_BOOLEAN, "providerMetadata": PROVIDER_METADATA, "toolMetadata": TOOL_METADATA,
         "dynamic": OPTIONAL_BOOLEAN}
_PART = {"id": STRING, "providerMetadata": PROVIDER_METADATA}

CHUNKS: dict[str, dict[str, Key]] = {
    "start": {"messageId": OPTIONAL_STRING, "messageMetadata": OPTIONAL_VALUE},
    "start-step": {},
    "finish-step": {},
    "finish": {"finishReason": Key("finish-reason"), "messageMetadata": OPTIONAL_VALUE},
    "abort": {"reason": OPTIONAL_STRING},
    "error": {"errorText": STRING},
    "message-metadata": {"messageMetadata": VALUE},
    "text-start": _PART,
    "text-delta": {**_PART, "delta": STRING},
    "text-end": {**_PART, "citations": Key("array", ai7=True)},
    "reasoning-start": _PART,
    "reasoning-delta": {**_PART, "delta": STRING},
    "reasoning-end": _PART,
    "tool-input-start": {"toolCallId": STRING, "toolName": STRING, "inputEncoding": Key("input-encoding", ai7=True),
                         **_TOOL, "title": OPTIONAL_STRING},
    "tool-input-delta": {"toolCallId": STRING, "inputTextDelta": STRING},
    "tool-input-available": {"toolCallId": STRING, "toolName": STRING, "input": VALUE, **_TOOL,
                             "title": OPTIONAL_STRING},
    "tool-input-error": {"toolCallId": STRING, "toolName": STRING, "input": VALUE, "errorText": STRING, **_TOOL,
                         "title": OPTIONAL_STRING},
    "tool-output-available": {"toolCallId": STRING, "output": VALUE, **_TOOL, "preliminary": OPTIONAL_BOOLEAN},
    "tool-output-error": {"toolCallId": STRING, "errorText": STRING, **_TOOL},
    "tool-output-denied": {"toolCallId": STRING},
    "tool-approval-request": {"approvalId": STRING, "toolCallId": STRING, "signature": OPTIONAL_STRING,
                              "approvalDescriptor": Key("unknown", ai7=True),
                              "inputSchemaInput": Key("unknown", ai7=True),
                              "reason": Key("string", ai7=True), "isAutomatic": Key("boolean", ai7=True)},
    "tool-approval-response": {"approvalId": STRING, "approved": Key("boolean", required=True),
                               "reason": OPTIONAL_STRING, "providerExecuted": OPTIONAL_BOOLEAN,
                               "providerMetadata": PROVIDER_METADATA},
    "source-url": {"sourceId": STRING, "url": STRING, "title": OPTIONAL_STRING, "providerMetadata": PROVIDER_METADATA},
    "source-document": {"sourceId": STRING, "mediaType": STRING, "title": STRING, "filename": OPTIONAL_STRING,
                        "providerMetadata": PROVIDER_METADATA},
    "file": {"url": STRING, "mediaType": STRING, "providerMetadata": PROVIDER_METADATA},
    "reasoning-file": {"url": STRING, "mediaType": STRING, "providerMetadata": PROVIDER_METADATA},
    "custom": {"kind": STRING, "providerMetadata": PROVIDER_METADATA},
    "steering-message": {"id": STRING, "parts": Key("array", required=True)},
    "reset-step": {},
    "data-": {"data": VALUE, "id": OPTIONAL_STRING, "transient": OPTIONAL_BOOLEAN},
}
"""Every chunk type of ai 7.0.173 and its keys besides `type`; `data-` stands for every `data-<name>`."""

AI7_TYPES = frozenset({"tool-approval-response", "custom", "reasoning-file", "steering-message", "reset-step"})
"""Chunk types only ai 7 knows: ai 6 (and 5) reject the stream."""

_HINTS = {
    "text": "text streams as text-start, text-delta and text-end",
    "reasoning": "reasoning streams as reasoning-start, reasoning-delta and reasoning-end",
    "tool-call": "a tool call streams as tool-input-start, tool-input-delta and tool-input-available",
    "tool-result": "a tool's result is tool-output-available (or tool-output-error)",
    "data": "custom data goes in data-<name> chunks",
}


def _show(value: object) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:60] + "…"


def _schema(chunk: object) -> tuple[list[tuple[str, str]], bool]:
    """The chunk's schema problems as (rule, message), and whether the state machine can still read it (its
    type is known and its required keys are right)."""
    if not isinstance(chunk, dict):
        return [("chunk-not-object", f"a chunk is a JSON object with a type, got {_show(chunk)}")], False
    kind = chunk.get("type")
    if not isinstance(kind, str):
        hint = (": an error is {\"type\": \"error\", \"errorText\": ...}" if "error" in chunk
                else "" if kind is None else f", got {_show(kind)}")
        return [("unknown-chunk-type", f"a chunk needs a string type{hint}")], False
    keys = CHUNKS.get("data-" if kind.startswith("data-") else kind)
    if keys is None:
        hint = _HINTS.get(kind, "see the UI message stream protocol; custom data goes in data-<name> chunks")
        return [("unknown-chunk-type", f"unknown chunk type {kind!r}: no ai client accepts it ({hint})")], False
    problems: list[tuple[str, str]] = []
    if kind in AI7_TYPES:
        problems.append(("ai7-only", f"{kind} chunks are known only to ai 7: ai 6 and 5 reject the stream"))
    usable = True
    for name, key in keys.items():
        test, description = KINDS[key.kind]
        if name not in chunk:
            if key.required:
                problems.append(("missing-key", f"{kind} needs {name}, {description}"
                                 + (" (null will do, but the key must be there)" if key.kind == "unknown" else "")))
                usable = False
            continue
        value = chunk[name]
        if not test(value):
            null = " (leave the key out instead of sending null)" if value is None and not key.required else ""
            problems.append(("wrong-type", f"{kind}'s {name} must be {description}, got {_show(value)}{null}"))
            usable = usable and not key.required
        elif key.ai7 or (isinstance(value, str) and value in AI7_VALUES.get(key.kind, ())):
            what = f"{name} {_show(value)}" if not key.ai7 else name
            problems.append(("ai7-only", f"{what} on {kind} is known only to ai 7: ai 6 rejects the stream"))
    for name in chunk:
        if name != "type" and name not in keys:
            problems.append(("unknown-key", f"unknown key {name!r} on {kind}: ai 6 up to 6.0.230 (and 5.0.0-5.0.216, "
                                            f"7.0.0-7.0.31) reject every chunk with a key outside the schema"))
    return problems, usable


def _forbidden_key(value: object) -> bool:
    """Whether the `ai` client's JSON parser (secure-json-parse) refuses the value: a `__proto__` key, or a
    `constructor` object with a `prototype` key, at any depth."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            constructor = node.get("constructor")
            if "__proto__" in node or (isinstance(constructor, dict) and "prototype" in constructor):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


# ---------------------------------------------------------------------------------------------- the state machine

@dataclass(slots=True)
class _ToolPart:
    call_id: str
    approval_id: str | None = None


class _Reader:
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
        self.parts: list[_ToolPart | None] = []
        """The message's tool parts, None for each step-start."""
        self.metadata: Literal["primitive", "object"] | None = None

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

    def _find_tool(self, call_id: str) -> _ToolPart | None:
        """`getToolInvocation`: ai 7 looks in the current step first, then the whole message from its end; ai 6 in
        the whole message from its start."""
        tools = [p for p in self.parts if p is not None and p.call_id == call_id]
        if self.version == 6 or not tools:
            return tools[0] if tools else None
        current = [p for p in self._step() if p.call_id == call_id]
        return current[0] if current else tools[-1]

    def _step(self) -> list[_ToolPart]:
        start = max((i for i, p in enumerate(self.parts) if p is None), default=-1)
        return [p for p in self.parts[start + 1:] if p is not None]

    def _tool_part(self, call_id: str) -> _ToolPart:
        """The part a tool-input chunk updates (in the current step for ai 7, anywhere for ai 6), or a new one."""
        scope = self._step() if self.version == 7 else [p for p in self.parts if p is not None]
        part = next((p for p in scope if p.call_id == call_id), None)
        if part is None:
            part = _ToolPart(call_id)
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
            return ("metadata-merge", f"messageMetadata {_show(metadata)} cannot be merged into the message's "
                                      f"metadata, a plain value so far: the client throws a TypeError (send "
                                      f"messageMetadata as an object, every time)")
        return None


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def _has_own_keys(value: object) -> bool:
    """Whether JavaScript's `for (key in value)` finds a key `mergeObjects` goes on to look up."""
    if isinstance(value, dict):
        return any(key not in ("__proto__", "constructor", "prototype") for key in value)
    return isinstance(value, list | str) and len(value) > 0


def _adds_to_message(chunk: object) -> bool:
    """Whether a chunk would change the message, unlike the ends an agent sends after an error chunk."""
    return not isinstance(chunk, dict) or chunk.get("type") not in ("error", "finish-step", "finish", "abort")


# -------------------------------------------------------------------------------------------------------- judge


def judge(answer: Answer) -> list[Violation]:
    found, readable = _head(answer)
    if readable:
        found += _Stream(answer).run(MAX_VIOLATIONS - len(found))
    return found[:MAX_VIOLATIONS]


def _head(answer: Answer) -> tuple[list[Violation], bool]:
    """Status and headers; whether the client reads the body as a stream at all."""
    found: list[Violation] = []
    for violation in sse_head(answer):
        if violation.rule == CONVENTION + "content-type":
            found.append(replace(violation,
                                 message=violation.message + " (useChat parses the body as SSE whatever it says)"))
        elif answer.status in (204, 205) or violation.rule == "status":
            reason = ("there is no body: useChat fails with 'The response body is empty'"
                      if answer.status in (204, 205) else
                      "useChat fails, with the response body as the error's message (AI_APICallError)")
            return [Violation("status", f"HTTP {answer.status}: {reason}", violation.frame)], False
        else:
            found.append(replace(violation,
                                 message=f"HTTP {answer.status}: useChat reads any 2xx, the AI SDK answers 200"))
    ui, data = answer.headers.get("x-vercel-ai-ui-message-stream"), answer.headers.get("x-vercel-ai-data-stream")
    if ui != "v1" and data != "v2":  # v2 is Inkeep's `/api/chat`
        found.append(Violation(CONVENTION + "stream-header", (
            "x-vercel-ai-data-stream: v1 is the ai 4 data stream, which no ai 5+ client reads; a UI message stream "
            "sets x-vercel-ai-ui-message-stream: v1" if data == "v1" else
            f"the protocol asks a custom backend for x-vercel-ai-ui-message-stream: v1, "
            f"{f'got {ui!r}' if ui is not None else 'which is missing'} (useChat does not check it)")))
    return found, True


class _Stream:
    """One pass over the frames, in order: each chunk's schema, then both clients' state machines."""

    def __init__(self, answer: Answer) -> None:
        body = answer.body.removeprefix(b"\xef\xbb\xbf")  # the client's TextDecoder drops a byte order mark...
        try:
            body.decode()
        except UnicodeDecodeError:  # ...and reads broken UTF-8 as U+FFFD
            body = body.decode("utf-8", "replace").encode()
        not_json: list[Violation] = []
        self.frames = {index: (data, value) for index, data, value in sse_json_frames(replace(answer, body=body),
                                                                                     not_json)}
        decoder = SSEDecoder(max_frame=len(body) + 1)
        raw = decoder.feed(body)
        self.complete = len(raw)
        """Frames from here on have no blank line after them: the client's SSE parser never hands them on."""
        raw += decoder.flush()
        self.not_json: dict[int, Violation] = {}
        for violation in not_json:
            index = violation.index
            if index is None:
                continue
            try:  # orjson refuses some texts JavaScript's JSON.parse reads, as a lone surrogate escape
                self.frames[index] = raw[index], json.loads(raw[index].decode(), parse_constant=_not_json)
            except (ValueError, RecursionError):
                self.not_json[index] = violation
        self.readers = (_Reader(6), _Reader(7))
        self.found: list[Violation] = []
        self.error_at: int | None = None
        self.said_after_error = False
        self.aborted = False

    def add(self, rule: str, message: str, data: bytes | None = None, index: int | None = None) -> None:
        self.found.append(Violation(rule, message, preview(data) if data is not None else None, index))

    def run(self, budget: int) -> list[Violation]:
        chunks = 0
        last: tuple[int, str | None, bool] | None = None  # the last frame read: index, preview, whether [DONE]
        for index in sorted(self.frames.keys() | self.not_json.keys()):
            if len(self.found) >= budget:
                return self.found
            bad = self.not_json.get(index)
            data, value = self.frames.get(index, (b"", None))
            if index >= self.complete:
                self.found.append(Violation(CONVENTION + "unterminated-frame", "the stream ends inside this frame "
                                            "(no blank line after it): the client's SSE parser drops it",
                                            bad.frame if bad is not None else preview(data), index))
                continue
            if bad is not None:
                self.found.append(bad)
                chunks, last = chunks + 1, (index, bad.frame, False)
                continue
            done = value == "[DONE]" and data.strip() == b"[DONE]"
            last = (index, preview(data), done)
            if done:
                if data != b"[DONE]":
                    self.add("json", "the client skips only an exact [DONE]; this one it parses as JSON, and fails",
                             data, index)
                continue
            chunks += 1
            self.chunk(index, data, value)
        self.end(chunks, last)
        return self.found

    def chunk(self, index: int, data: bytes, value: object) -> None:
        if _forbidden_key(value):
            self.add("json-prototype-key", "the client's JSON parser refuses a __proto__ key, or a constructor "
                     "with a prototype key, anywhere in a chunk", data, index)
            return
        if self.error_at is not None and not self.said_after_error and _adds_to_message(value):
            self.said_after_error = True
            self.add(CONVENTION + "after-error", f"useChat stops reading at the error chunk (frame {self.error_at}): "
                     f"this chunk, and any after it, never reach the message", data, index)
        problems, usable = _schema(value)
        for rule, message in problems:
            self.add(rule, message, data, index)
        if not usable or not isinstance(value, dict):
            return
        if self.error_at is None:  # as the client, which stops at the first error chunk
            self.state(index, data, value)
            if value["type"] == "error":
                self.error_at = index
        self.aborted = self.aborted or value["type"] == "abort"

    def state(self, index: int, data: bytes, chunk: dict[str, Any]) -> None:
        failures = {reader.version: reader.read(chunk, index) for reader in self.readers
                    if reader.version == 7 or chunk["type"] not in AI7_TYPES}
        failed = {version: failure for version, failure in failures.items() if failure is not None}
        if not failed:
            return
        rule, message = failed.get(7) or failed[6]
        only = next(iter(failed)) if len(failed) == 1 else None
        if only is not None and f"ai {only}" not in message:
            message += f" (in ai {only})"
        self.add(rule, message, data, index)

    def end(self, chunks: int, last: tuple[int, str | None, bool] | None) -> None:
        if chunks == 0:
            self.add(CONVENTION + "empty-stream", "no chunk at all: useChat shows nothing and reports no error (a UI "
                     "message stream is SSE, one `data: {json chunk}` event per chunk)")
            return
        if last is None or not last[2]:
            self.found.append(Violation(CONVENTION + "done", "the stream does not end with data: [DONE], as the "
                                        "protocol and the AI SDK's server end it (useChat does not need it)",
                                        last[1] if last else None, last[0] if last else None))
        if self.error_at is not None or self.aborted:
            return
        reader = self.readers[1]
        for what, opened, end in (("text part", reader.text, "text-end"),
                                  ("reasoning part", reader.reasoning, "reasoning-end"),
                                  ("tool call", reader.awaiting_input, "tool-input-available")):
            for part_id, index in opened.items():
                self.add(CONVENTION + "unfinished-part", f"{what} {part_id!r} never got its {end}: useChat leaves it "
                         f"streaming", self.frames[index][0], index)
