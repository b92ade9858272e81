"""An Inkeep-like upstream for the tests: the Run API's `POST /run/api/chat` (also at `/api/chat`), imitated in memory.

Sources: "doc" is Inkeep's own guide ("Talk to your agents": calling an agent graph over the Vercel AI SDK data
stream API); "code" is inkeep/agents at d5d09d0c6 (`agents-api/src/domains/run/routes/chatDataStream.ts`,
`types/chat.ts`, `utils/message-parts.ts`, `stream/stream-helpers.ts`, `utils/agent-operations.ts`); "note" is a
summary of that code's request schema and responses, made when this file was written, whose code-level facts win
where it and the doc differ.

Request (note, code):
- The body is checked like Inkeep's zod schema: `messages` is required, each message has `role` in
  system|user|assistant|function|tool, `content` is anything, `id` (and the body's `messageId`) match
  `^[A-Za-z0-9_-]{1,64}$`, and `parts` are text|image|file|audio|video|data-*|tool-*|step-start. Any other part
  (`reasoning`, `dynamic-tool`, `source-url`, `source-document`, ...) in ANY message is a 400. Other body keys are
  type-checked when present and otherwise ignored (zod strips unknown keys), `id` included. The 400 body is what
  @hono/zod-validator's default hook sends: `{"success": false, "error": {"name": "ZodError", "message": <issues>}}`.
- Not in the code: at least one user message is required (doc: "Must include at least one user message"). The real
  server would run the agent on an empty text instead; here it is a 400 so a gateway that forgets it fails loudly.
- Approval responses (a part with `state: "approval-responded"` and a `toolCallId`) take Inkeep's classic fast path:
  no run, a JSON answer `{success, results: [{toolCallId, approved, alreadyProcessed, deferred}]}` (code).
- Only the LAST user message is read: its text parts and a string `content` (prepended unless an identical text part
  exists), joined with " " (code). History lives here, per `conversationId` (generated when absent, and never told
  to the client). The user message id (`lastUserMessage.id ?? body.messageId ?? generated`) is stored; a repeat is a
  409. As in the code, ids are unique per project (this whole app), not per conversation, and the 409 body is
  Inkeep's problem+json with `detail` "Message with id '<id>' already exists in this project".
- `stream: false` answers an OpenAI-style `chat.completion` JSON (code).

Response (note, code): 200 with `content-type: text/event-stream`, `cache-control: no-cache`,
`connection: keep-alive`, `x-vercel-ai-data-stream: v2`, `x-accel-buffering: no`; frames `data: <json>\\n\\n`, first
`start {messageId}`, then `data-operation agent_initializing`, the scripted reply, `data-operation completion`, and
`data: [DONE]`. Never `start-step`, `finish-step` or `finish`. ONE text id (`<ms>-<9 base36>`) per response, reused
by every text segment; each segment is text-start, word-granular text-deltas (`\\S+|\\s+`), text-end. Tool input is
`JSON.stringify(args)` in 16-character slices. Errors are `data-operation {type: "error", ...}` inside the 200 stream,
not `error` chunks. `keep_alive=True` starts the body with the doc's `: keep-alive` comment (the code sends none).

Scripts, picked from the last user text (case-insensitive), first match wins:

| keyword   | the reply                                                                                            |
|-----------|------------------------------------------------------------------------------------------------------|
| `fail`    | text "partial answer", then `data-operation {type: "error", message: "scripted upstream failure",   |
|           | agent: "qa", severity: "error", code: "agent_failed", timestamp}`, then [DONE] (no completion)       |
| `weather` | data-summary, text "Let me check.", tool `get_weather` {"city": "Paris"} -> "sunny, 21C in Paris",     |
|           | data-operation tool_call, data-artifact, text "It is sunny, 21C in Paris." (same text id)            |
| `plan`    | text "Planning.", data-summary, text "Searching.", data-summary, text "Done." (one text id: three     |
|           | segments split by status updates alone, no tool call between them)                                   |
| `steps`   | twenty segments "chunk 0." to "chunk 19.", a data-summary before each but the first (one text id)    |
| `research`| text "Planning.", data-summary, text "Let me check.", tool `get_weather` -> "sunny, 21C in Paris",    |
|           | text "It is sunny, 21C in Paris." (one text id: the segments before the tool and the one after)      |
| otherwise | "You said: <text>. This is user turn <n>.", n = user messages stored in this conversation, this one  |
|           | included: turn 2 proves the gateway kept ONE upstream conversation                                  |

Test hooks: `GET /captured` (every request body received, in order, rejected ones included),
`GET /conversations/{id}` (the stored history as `[{role, text}]`, 404 if unknown), `GET /healthz`.

    with Served(create_inkeep_app()) as inkeep:
        httpx.post(inkeep.url + "/run/api/chat", json={"conversationId": "c1", "messages": [...]})
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import string
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

AGENT_ID = "inkeep-agent"
SUB_AGENT_ID = "qa"
ROLES = ("system", "user", "assistant", "function", "tool")
MESSAGE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
WORDS = re.compile(r"\S+|\s+")
TOOL_INPUT_SLICE = 16
EXECUTION_MODES = ("classic", "durable")
STREAM_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-data-stream": "v2",
    "x-accel-buffering": "no",
}
DONE = b"data: [DONE]\n\n"
KEEP_ALIVE = b": keep-alive\n\n"
_ID_ALPHABET = string.ascii_lowercase + string.digits

Issue = dict[str, Any]


def now_ms() -> int:
    return int(time.time() * 1000)


def generate_id() -> str:
    """Inkeep's `generateId`: nanoid over [a-z0-9], 21 characters."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(21))


def text_id() -> str:
    """`${Date.now()}-${Math.random().toString(36).substr(2, 9)}`."""
    return f"{now_ms()}-" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(9))


def js_json(value: Any) -> str:
    """`JSON.stringify(value)`: no spaces."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sse(chunk: dict[str, Any]) -> bytes:
    return f"data: {js_json(chunk)}\n\n".encode()


# --------------------------------------------------------------------------- validation (zod, as Inkeep declares it)


def _issue(path: list[str | int], message: str, code: str = "invalid_type") -> Issue:
    return {"code": code, "path": path, "message": message}


def _check_optional(body: dict[str, Any], key: str, ok: Callable[[Any], bool], expected: str,
                    issues: list[Issue], path: list[str | int]) -> None:
    """zod `.optional()`: the key may be absent, but `null` is not allowed."""
    if key in body and not ok(body[key]):
        issues.append(_issue([*path, key], f"Invalid input: expected {expected}"))


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_record(value: Any) -> bool:
    return isinstance(value, dict)


def _is_message_id(value: Any) -> bool:
    return isinstance(value, str) and MESSAGE_ID.match(value) is not None


def _is_image_url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://", "data:image/"))


def _part_ok(part: Any) -> bool:
    """One member of `VercelMessagePartSchema` (a union of loose objects) accepts `part`."""
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        return False
    kind: str = part["type"]

    def optional_str(key: str) -> bool:
        return key not in part or isinstance(part[key], str)

    if kind == "text":
        return isinstance(part.get("text"), str)
    if kind == "image":
        return _is_image_url(part.get("text"))
    if kind == "file":
        return isinstance(part.get("url"), str) and isinstance(part.get("mediaType"), str) and optional_str("filename")
    if kind in ("audio", "video") or kind.startswith("data-"):
        return optional_str("text")
    if kind.startswith("tool-"):
        approval = part.get("approval")
        approval_ok = "approval" not in part or (
            isinstance(approval, dict) and isinstance(approval.get("id"), str)
            and ("approved" not in approval or isinstance(approval["approved"], bool))
            and ("reason" not in approval or isinstance(approval["reason"], str)))
        return isinstance(part.get("toolCallId"), str) and approval_ok  # `state: z.any()`: may even be absent
    return kind == "step-start"


def validate_body(body: Any) -> list[Issue]:
    if not isinstance(body, dict):
        return [_issue([], "Invalid input: expected object")]
    issues: list[Issue] = []
    messages = body.get("messages")
    if not isinstance(messages, list):
        issues.append(_issue(["messages"], "Invalid input: expected array"))
        messages = []
    for i, message in enumerate(messages):
        where: list[str | int] = ["messages", i]
        if not isinstance(message, dict):
            issues.append(_issue(where, "Invalid input: expected object"))
            continue
        if message.get("role") not in ROLES:
            issues.append(_issue([*where, "role"], "Invalid option: expected one of " + "|".join(
                f'"{r}"' for r in ROLES), "invalid_value"))
        _check_optional(message, "id", _is_message_id, "string matching /^[A-Za-z0-9_-]+$/, 1 to 64 long",
                        issues, where)
        if "parts" in message:
            parts = message["parts"]
            if not isinstance(parts, list):
                issues.append(_issue([*where, "parts"], "Invalid input: expected array"))
                continue
            for j, part in enumerate(parts):
                if not _part_ok(part):
                    issues.append(_issue([*where, "parts", j], "Invalid input", "invalid_union"))
    for key in ("model", "id", "conversationId"):
        _check_optional(body, key, _is_str, "string", issues, [])
    _check_optional(body, "messageId", _is_message_id, "string matching /^[A-Za-z0-9_-]+$/, 1 to 64 long",
                    issues, [])
    _check_optional(body, "stream", lambda v: isinstance(v, bool), "boolean", issues, [])
    _check_optional(body, "max_tokens", lambda v: isinstance(v, int | float) and not isinstance(v, bool),
                    "number", issues, [])
    for key in ("headers", "runConfig", "userProperties", "properties"):
        _check_optional(body, key, _is_record, "record", issues, [])
    _check_optional(body, "executionMode", lambda v: v in EXECUTION_MODES, '"classic"|"durable"', issues, [])
    return issues


def zod_error(issues: list[Issue]) -> JSONResponse:
    """The 400 of @hono/zod-validator's default hook: `c.json(safeParseResult, 400)` with a zod 4 ZodError."""
    return JSONResponse({"success": False, "error": {"name": "ZodError", "message": json.dumps(issues, indent=2)}},
                        status_code=400)


def problem(status: int, code: str, title: str, detail: str) -> JSONResponse:
    """Inkeep's `createApiError`: problem+json with a legacy `error` object."""
    message = detail if len(detail) <= 100 else detail[:97] + "..."
    return JSONResponse({"title": title, "status": status, "detail": detail, "code": code,
                         "error": {"code": code, "message": message}},
                        status_code=status, media_type="application/problem+json")


def user_text(message: dict[str, Any] | None) -> str:
    """`getMessagePartsFromVercelContent` + `extractTextFromParts`, text only."""
    if message is None:
        return ""
    texts = [p["text"] for p in message.get("parts") or [] if isinstance(p, dict) and p.get("type") == "text"
             and isinstance(p.get("text"), str)]
    content = message.get("content")
    if isinstance(content, str) and content != "" and content not in texts:
        texts.insert(0, content)
    return " ".join(texts)


# --------------------------------------------------------------------------- the scripted run


class Reply:
    """The chunks of one response, written the way `VercelDataStreamHelper` writes them."""

    def __init__(self) -> None:
        self.chunks: list[dict[str, Any]] = []
        self.text_id: str | None = None
        self.texts: list[str] = []
        self.failed = False

    def write(self, chunk: dict[str, Any]) -> None:
        self.chunks.append(chunk)

    def text(self, text: str) -> None:
        if self.text_id is None:
            self.text_id = text_id()
        tid = self.text_id
        self.write({"type": "text-start", "id": tid})
        for word in WORDS.findall(text) or [text]:
            self.write({"type": "text-delta", "id": tid, "delta": word})
        self.write({"type": "text-end", "id": tid})
        self.texts.append(text)

    def operation(self, data: dict[str, Any]) -> None:
        self.write({"type": "data-operation", "data": data})

    def tool(self, name: str, args: dict[str, Any], output: Any) -> str:
        call_id = "call_" + generate_id()
        self.write({"type": "tool-input-start", "toolCallId": call_id, "toolName": name})
        encoded = js_json(args)
        for start in range(0, len(encoded), TOOL_INPUT_SLICE):
            self.write({"type": "tool-input-delta", "toolCallId": call_id,
                        "inputTextDelta": encoded[start:start + TOOL_INPUT_SLICE]})
        self.write({"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": args})
        self.write({"type": "tool-output-available", "toolCallId": call_id, "output": output})
        return call_id


def script(reply: Reply, text: str, turn: int, conversation_id: str) -> None:
    lowered = text.lower()
    if "fail" in lowered:
        reply.text("partial answer")
        reply.operation({"type": "error", "message": "scripted upstream failure", "agent": SUB_AGENT_ID,
                         "severity": "error", "code": "agent_failed", "timestamp": now_ms()})
        reply.failed = True
        return
    if "steps" in lowered:
        for index in range(20):
            if index:
                reply.write({"type": "data-summary", "data": {"type": "progress", "label": f"step {index}"}})
            reply.text(f"chunk {index}.")
        return
    if "research" in lowered:
        reply.text("Planning.")
        reply.write({"type": "data-summary", "data": {"type": "progress", "label": "Checking the weather"}})
        reply.text("Let me check.")
        reply.tool("get_weather", {"city": "Paris"}, "sunny, 21C in Paris")
        reply.text("It is sunny, 21C in Paris.")
        return
    if "weather" in lowered:
        reply.write({"type": "data-summary", "data": {
            "type": "progress", "label": "Checking the weather",
            "details": {"summary": "Looking up the forecast for Paris", "progress": "50%"}}})
        reply.text("Let me check.")
        args = {"city": "Paris"}
        call_id = reply.tool("get_weather", args, "sunny, 21C in Paris")
        reply.operation({"type": "tool_call", "label": "Tool call: get_weather", "details": {
            "timestamp": now_ms(), "subAgentId": SUB_AGENT_ID,
            "data": {"toolName": "get_weather", "input": args, "toolCallId": call_id,
                     "conversationId": conversation_id}}})
        reply.write({"type": "data-artifact", "data": {
            "artifactId": "art_" + generate_id(), "toolCallId": call_id, "name": "Weather report",
            "description": "Current weather in Paris", "type": "document",
            "artifactSummary": {"city": "Paris", "sky": "sunny", "tempC": 21}}})
        reply.text("It is sunny, 21C in Paris.")
        return
    if "plan" in lowered:
        for index, segment in enumerate(("Planning.", "Searching.", "Done.")):
            if index:
                reply.write({"type": "data-summary", "data": {"type": "progress", "label": segment}})
            reply.text(segment)
        return
    reply.text(f"You said: {text}. This is user turn {turn}.")


# --------------------------------------------------------------------------- the app


@dataclass
class InkeepState:
    captured: list[Any] = field(default_factory=list)
    conversations: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    message_ids: set[str] = field(default_factory=set)
    """Every stored user-message id: unique per project (this app), as Inkeep's primary key is."""


def create_inkeep_app(*, delta_delay: float = 0.0, keep_alive: bool = False) -> Starlette:
    """An Inkeep Run API look-alike; its in-memory state is `app.state.inkeep` (an `InkeepState`).

    `delta_delay` sleeps between chunks (real Inkeep paces text deltas 100 ms apart); `keep_alive` opens the body
    with a `: keep-alive` comment as the doc's example shows.
    """
    state = InkeepState()

    async def chat(request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            state.captured.append(raw.decode(errors="replace"))
            return problem(400, "bad_request", "Bad Request", "Malformed JSON in request body")
        state.captured.append(body)
        issues = validate_body(body)
        if issues:
            return zod_error(issues)
        messages: list[dict[str, Any]] = body["messages"]

        approvals = [p for m in messages for p in m.get("parts") or []
                     if p.get("state") == "approval-responded" and isinstance(p.get("toolCallId"), str)]
        if approvals:
            conversation = body.get("conversationId")
            if not conversation:
                return JSONResponse({"success": False, "error": "conversationId is required for approval response"},
                                    status_code=400)
            if conversation not in state.conversations:
                return JSONResponse({"success": False, "error": "Conversation not found"}, status_code=404)
            return JSONResponse({"success": True, "results": [
                {"toolCallId": p["toolCallId"], "approved": bool((p.get("approval") or {}).get("approved")),
                 "alreadyProcessed": False, "deferred": True} for p in approvals]})

        users = [m for m in messages if m["role"] == "user"]
        if not users:
            return zod_error([_issue(["messages"], "Must include at least one user message", "custom")])
        last_user = users[-1]
        conversation_id: str = body["conversationId"] if "conversationId" in body else generate_id()  # `??`
        history = state.conversations.setdefault(conversation_id, [])
        message_id: str = last_user.get("id") or body.get("messageId") or generate_id()
        if message_id in state.message_ids:
            return problem(409, "conflict", "Conflict",
                           f"Message with id '{message_id}' already exists in this project")
        state.message_ids.add(message_id)
        text = user_text(last_user)
        history.append({"role": "user", "text": text})
        turn = sum(1 for entry in history if entry["role"] == "user")

        reply = Reply()
        script(reply, text, turn, conversation_id)
        if not reply.failed:
            history.append({"role": "assistant", "text": " ".join(reply.texts)})

        if body.get("stream", True) is False:
            error = next((c["data"]["message"] for c in reply.chunks
                          if c["type"] == "data-operation" and c["data"].get("type") == "error"), None)
            return JSONResponse({
                "id": f"chat-{now_ms()}", "object": "chat.completion", "created": int(time.time()),
                "model": AGENT_ID,
                "choices": [{"index": 0, "message": {"role": "assistant",
                                                     "content": error if error else "".join(reply.texts)},
                             "finish_reason": "error" if error else "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

        chunks: list[dict[str, Any]] = [
            {"type": "start", "messageId": generate_id()},
            {"type": "data-operation", "data": {"type": "agent_initializing",
                                                "details": {"sessionId": f"chatds-{now_ms()}", "agentId": AGENT_ID}}},
            *reply.chunks,
        ]
        if not reply.failed:
            chunks.append({"type": "data-operation", "data": {"type": "completion",
                                                              "details": {"agent": SUB_AGENT_ID, "iteration": 1}}})

        async def frames() -> AsyncIterator[bytes]:
            if keep_alive:
                yield KEEP_ALIVE
            for chunk in chunks:
                yield sse(chunk)
                await asyncio.sleep(delta_delay)
            yield DONE

        return StreamingResponse(frames(), headers=STREAM_HEADERS)

    async def captured(request: Request) -> Response:
        return JSONResponse(state.captured)

    async def conversation(request: Request) -> Response:
        history = state.conversations.get(request.path_params["conversation_id"])
        if history is None:
            return problem(404, "not_found", "Not Found", "Conversation not found")
        return JSONResponse(history)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[
        Route("/run/api/chat", chat, methods=["POST"]),
        Route("/api/chat", chat, methods=["POST"]),
        Route("/captured", captured, methods=["GET"]),
        Route("/conversations/{conversation_id}", conversation, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
    ])
    app.state.inkeep = state
    return app
