"""The chunks of a UI message stream as the `ai` package's schema (`uiMessageChunkSchema`) takes them: every chunk
type of ai 7.0.173 and its keys, which of them only ai 7 knows (strict ai 6 rejects a stream with one), and what is
wrong with one chunk (`chunk_problems`); and what the client's JSON parser refuses before any schema
(`forbidden_key`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import orjson


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


def show(value: object) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:60] + "…"


def chunk_problems(chunk: object) -> tuple[list[tuple[str, str]], bool]:
    """The chunk's schema problems as (rule, message), and whether the state machine can still read it (its
    type is known and its required keys are right)."""
    if not isinstance(chunk, dict):
        return [("chunk-not-object", f"a chunk is a JSON object with a type, got {show(chunk)}")], False
    kind = chunk.get("type")
    if not isinstance(kind, str):
        hint = (": an error is {\"type\": \"error\", \"errorText\": ...}" if "error" in chunk
                else "" if kind is None else f", got {show(kind)}")
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
            problems.append(("wrong-type", f"{kind}'s {name} must be {description}, got {show(value)}{null}"))
            usable = usable and not key.required
        elif key.ai7 or (isinstance(value, str) and value in AI7_VALUES.get(key.kind, ())):
            what = f"{name} {show(value)}" if not key.ai7 else name
            problems.append(("ai7-only", f"{what} on {kind} is known only to ai 7: ai 6 rejects the stream"))
    for name in chunk:
        if name != "type" and name not in keys:
            problems.append(("unknown-key", f"unknown key {name!r} on {kind}: ai 6 up to 6.0.230 (and 5.0.0-5.0.216, "
                                            f"7.0.0-7.0.31) reject every chunk with a key outside the schema"))
    return problems, usable


def forbidden_key(value: object) -> bool:
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

