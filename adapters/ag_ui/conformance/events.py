"""The AG-UI 1.0 event schemas, as `@ag-ui/core`'s `EventSchemas` hold them, in the language of `schema`."""

from __future__ import annotations

from .schema import Arr, Bool, Choice, Int, Json, Node, Obj, Opt, Record, Str, Tagged, TextOrParts

MAX_SAFE = 2**53 - 1
_STR = Str()
_OBJECT = Record()
_NOT_NULL = Json()
_COUNT = Opt(Int(0, MAX_SAFE))
_POINTER = Str(r"(/([^/~]|~[01])*)*", "a JSON Pointer (empty, or /-prefixed tokens, ~ written ~0 and / written ~1)")
_TEXT_ROLES = Choice("developer", "system", "assistant", "user")


def _opt(node: Node) -> Opt:
    return Opt(node)


def _source(kind: str, **spec: Node | Opt) -> Obj:
    return Obj({"type": Choice(kind), "value": _STR, **spec})


def _media(kind: str) -> Obj:
    source = Tagged("type", _source("data", mimeType=_STR), _source("url", mimeType=_opt(_STR)),
                     _source("file", provider=_opt(_STR), mimeType=_opt(_STR)))
    return Obj({"type": Choice(kind), "id": _opt(_STR), "source": source, "metadata": _opt(_NOT_NULL)})


_PARTS = TextOrParts(Arr(Tagged(
    "type", Obj({"type": Choice("text"), "id": _opt(_STR), "text": _STR, "metadata": _opt(_NOT_NULL)}),
    *(_media(kind) for kind in ("image", "audio", "video", "document")))))


def _patch_op(op: str, *keys: str) -> Obj:
    spec: dict[str, Node | Opt] = {"op": Choice(op), "path": _POINTER}
    for key in keys:
        spec[key] = _POINTER if key == "from" else Json(null=True)
    return Obj(spec, open_=True)


_PATCH = Arr(Tagged("op", _patch_op("add", "value"), _patch_op("remove"), _patch_op("replace", "value"),
                      _patch_op("move", "from"), _patch_op("copy", "from"), _patch_op("test", "value")))


def _message(role: str, **spec: Node | Opt) -> Obj:
    return Obj({"subagentRunId": _opt(_STR), "id": _STR, "role": Choice(role), "metadata": _opt(_OBJECT), **spec})


def _named(role: str, **spec: Node | Opt) -> Obj:
    return _message(role, name=_opt(_STR), encryptedValue=_opt(_STR), **spec)


_TOOL_CALL = Obj({"id": _STR, "type": Choice("function"), "function": Obj({"name": _STR, "arguments": _STR}),
                   "encryptedValue": _opt(_STR), "metadata": _opt(_OBJECT)})
_MESSAGE = Tagged(
    "role",
    _named("developer", content=_STR),
    _named("system", content=_STR),
    _named("assistant", content=_opt(_STR), toolCalls=_opt(Arr(_TOOL_CALL))),
    _named("user", content=_PARTS),
    _message("tool", content=_PARTS, toolCallId=_STR, error=_opt(_STR), encryptedValue=_opt(_STR)),
    _message("activity", activityType=_STR, content=_OBJECT),
    _message("reasoning", content=_STR, encryptedValue=_opt(_STR)),
)
_RUN_INPUT = Obj({
    "threadId": _STR, "runId": _STR, "protocolVersion": _opt(_STR), "parentRunId": _opt(_STR),
    "state": _opt(Json(null=True)), "messages": Arr(_MESSAGE),
    "tools": _opt(Arr(Obj({"name": _STR, "description": _STR, "parameters": _opt(_NOT_NULL),
                             "metadata": _opt(_OBJECT)}))),
    "context": _opt(Arr(Obj({"description": _STR, "value": _STR}))),
    "forwardedProps": _opt(_NOT_NULL),
    "resume": _opt(Arr(Obj({"interruptId": _STR, "status": Choice("resolved", "cancelled"),
                              "payload": _opt(_NOT_NULL), "metadata": _opt(_OBJECT)}))),
})
_INTERRUPT = Obj({
    "subagentRunId": _opt(_STR), "id": _STR, "reason": _STR, "message": _opt(_STR), "toolCallId": _opt(_STR),
    "responseSchema": _opt(_OBJECT), "expiresAt": _opt(_STR), "metadata": _opt(_OBJECT),
})
_USAGE = Arr(Obj({"provider": _opt(_STR), "model": _opt(_STR), "inputTokens": _COUNT, "outputTokens": _COUNT,
                    "totalTokens": _COUNT, "reasoningTokens": _COUNT, "cachedInputTokens": _COUNT,
                    "cacheWriteInputTokens": _COUNT}))


def _event(kind: str, attributable: bool = True, **spec: Node | Opt) -> tuple[str, Obj]:
    base: dict[str, Node | Opt] = {"type": Choice(kind), "timestamp": _opt(Int(-MAX_SAFE, MAX_SAFE)),
                                     "rawEvent": _opt(_NOT_NULL), "metadata": _opt(_OBJECT)}
    if attributable:
        base["subagentRunId"] = _opt(_STR)
    return kind, Obj({**base, **spec})


SCHEMAS: dict[str, Obj] = dict([
    _event("TEXT_MESSAGE_START", messageId=_STR, role=_opt(_TEXT_ROLES), name=_opt(_STR)),
    _event("TEXT_MESSAGE_CONTENT", messageId=_STR, delta=_STR),
    _event("TEXT_MESSAGE_END", messageId=_STR),
    _event("TEXT_MESSAGE_CHUNK", messageId=_opt(_STR), role=_opt(_TEXT_ROLES), delta=_opt(_STR), name=_opt(_STR)),
    _event("TOOL_CALL_START", toolCallId=_STR, toolCallName=_STR, parentMessageId=_opt(_STR)),
    _event("TOOL_CALL_ARGS", toolCallId=_STR, delta=_STR),
    _event("TOOL_CALL_END", toolCallId=_STR),
    _event("TOOL_CALL_CHUNK", toolCallId=_opt(_STR), toolCallName=_opt(_STR), parentMessageId=_opt(_STR),
           delta=_opt(_STR)),
    _event("TOOL_CALL_RESULT", messageId=_STR, toolCallId=_STR, content=_PARTS, role=_opt(Choice("tool"))),
    _event("STATE_SNAPSHOT", snapshot=Json(null=True)),
    _event("STATE_DELTA", delta=_PATCH),
    _event("MESSAGES_SNAPSHOT", attributable=False, messages=Arr(_MESSAGE)),
    _event("ACTIVITY_SNAPSHOT", messageId=_STR, activityType=_STR, content=_OBJECT, replace=_opt(Bool())),
    _event("ACTIVITY_DELTA", messageId=_STR, activityType=_STR, patch=_PATCH),
    _event("RAW", event=Json(null=True), source=_opt(_STR)),
    _event("CUSTOM", name=_STR, value=Json(null=True)),
    _event("RUN_STARTED", attributable=False, threadId=_STR, runId=_STR, protocolVersion=_opt(_STR),
           parentRunId=_opt(_STR), input=_opt(_RUN_INPUT)),
    _event("RUN_FINISHED", attributable=False, threadId=_STR, runId=_STR, result=_opt(_NOT_NULL),
           outcome=_opt(Tagged("type",
                                Obj({"type": Choice("success"), "pendingToolCallIds": _opt(Arr(_STR))}),
                                Obj({"type": Choice("interrupt"), "interrupts": Arr(_INTERRUPT, least=1)}),
                                Obj({"type": Choice("cancelled")}))),
           usage=_opt(_USAGE)),
    _event("RUN_ERROR", attributable=False, message=_STR, code=_opt(_STR), usage=_opt(_USAGE)),
    _event("STEP_STARTED", stepName=_STR),
    _event("STEP_FINISHED", stepName=_STR),
    _event("REASONING_START", messageId=_STR),
    _event("REASONING_MESSAGE_START", messageId=_STR, role=Choice("reasoning")),
    _event("REASONING_MESSAGE_CONTENT", messageId=_STR, delta=_STR),
    _event("REASONING_MESSAGE_END", messageId=_STR),
    _event("REASONING_MESSAGE_CHUNK", messageId=_opt(_STR), delta=_opt(_STR)),
    _event("REASONING_END", messageId=_STR),
    _event("REASONING_ENCRYPTED_VALUE", subtype=Choice("tool-call", "message"), entityId=_STR,
           encryptedValue=_STR),
    _event("SUBAGENT_STARTED", attributable=False, subagentRunId=_STR, name=_STR, description=_opt(_STR),
           parentSubagentRunId=_opt(_STR), parentToolCallId=_opt(_STR), parentMessageId=_opt(_STR)),
    _event("SUBAGENT_FINISHED", attributable=False, subagentRunId=_STR, result=_opt(_NOT_NULL),
           outcome=_opt(Tagged("type", Obj({"type": Choice("success")}),
                                Obj({"type": Choice("suspended"), "interruptIds": _opt(Arr(_STR))})))),
    _event("SUBAGENT_ERROR", attributable=False, subagentRunId=_STR, message=_STR, code=_opt(_STR)),
])
"""`@ag-ui/core` 1.0.0's `EventSchemas`, member by member (`src/generated/schemas.ts`)."""
