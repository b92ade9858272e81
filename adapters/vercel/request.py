"""Vercel AI SDK requests: `useChat`'s full UIMessage history, or Inkeep's last message and a conversation id.

`useChat` (`DefaultChatTransport`) posts `{id, messages: UIMessage[], trigger, messageId?}` plus whatever the app
put in the transport's `body`; those extra keys become the turn's `forwarded_props`. An assistant UIMessage holds a
whole multi-step answer: text, reasoning, and one `tool-<name>` part per call that carries the call, its output
and any approval. Inkeep's `/api/chat` reads only the last user message and keeps history by `conversationId`.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, model_validator

from gateway.codec import UpstreamRequest, as_text, drop_none, json_or_text
from gateway.ids import new_id
from gateway.turn import ContentPart, Message, Resume, Role, ToolCall, Turn, media_kind
from gateway.validation import validate

INKEEP = "inkeep"

_TOOL_STATES = frozenset({
    "input-streaming", "input-available", "approval-requested", "approval-responded",
    "output-available", "output-error", "output-denied",
})
_BODY_KEYS = frozenset({"id", "messages", "trigger", "messageId", "conversationId"})


class Approval(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    approved: bool | None = None
    reason: str | None = None


class Part(BaseModel):
    """One UIMessage part. The `type` decides which of the other fields it needs (checked below)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    type: str
    text: str | None = None
    url: str | None = None
    mediaType: str | None = None
    filename: str | None = None
    toolCallId: str | None = None
    toolName: str | None = None
    state: str | None = None
    input: Any = None
    output: Any = None
    errorText: str | None = None
    approval: Approval | None = None

    @model_validator(mode="after")
    def _required_for_type(self) -> Part:
        kind = self.type
        if kind in ("text", "reasoning") and self.text is None:
            raise ValueError(f"a {kind} part needs `text`")
        if kind == "file" and (self.url is None or self.mediaType is None):
            raise ValueError("a file part needs `url` and `mediaType`")
        if kind.startswith("tool-") or kind == "dynamic-tool":
            if not self.toolCallId:
                raise ValueError(f"a {kind} part needs `toolCallId`")
            if self.state is not None and self.state not in _TOOL_STATES:
                raise ValueError(f"tool part state must be one of {', '.join(sorted(_TOOL_STATES))}")
            if kind == "dynamic-tool" and not self.toolName:
                raise ValueError("a dynamic-tool part needs `toolName`")
        return self


class UIMessage(BaseModel):
    """A useChat UIMessage, or Inkeep's `{role, content}` message."""

    model_config = ConfigDict(extra="ignore")
    id: str | None = None
    role: Literal["system", "user", "assistant", "tool", "function"]
    parts: list[Part] | None = None
    content: Any = None

    @model_validator(mode="after")
    def _parts_or_content(self) -> UIMessage:
        if self.parts is None and self.content is None:
            raise ValueError("a message needs `parts` (useChat) or `content` (Inkeep)")
        return self


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str | None = None
    messages: list[UIMessage]
    trigger: Literal["submit-message", "regenerate-message"] | None = None
    messageId: str | None = None
    conversationId: str | None = None


def parse_request(body: dict[str, Any]) -> Turn:
    request = validate(ChatRequest, body, "vercel")
    inkeep = request.trigger is None and request.conversationId is not None
    messages: list[Message] = []
    resume: list[Resume] = []
    for message in request.messages:
        _read_message(message, messages, resume)
    extra = {k: v for k, v in (request.model_extra or {}).items() if k not in _BODY_KEYS}
    return Turn(
        messages=messages,
        history="delta" if inkeep else "full",
        conversation_id=request.conversationId or request.id,
        forwarded_props=extra or None,
        resume=resume,
        variant=INKEEP if inkeep else None,
    )


def _read_message(message: UIMessage, out: list[Message], resume: list[Resume]) -> None:
    if message.role in ("tool", "function"):
        return  # Inkeep accepts these but reads nothing from them; tool outputs travel in assistant parts
    role: Role = "assistant" if message.role == "assistant" else "system" if message.role == "system" else "user"
    if message.parts is None:
        text = message.content if isinstance(message.content, str) else as_text(message.content)
        out.append(Message(role, text, message.id))
        return
    if role != "assistant":
        out.append(Message(role, _user_content(message.parts), message.id))
        return
    _read_assistant(message, out, resume)


def _user_content(parts: list[Part]) -> str | list[ContentPart]:
    content: list[ContentPart] = []
    for part in parts:
        if part.type == "text":
            content.append(ContentPart("text", text=part.text))
        elif part.type == "file":
            data = None
            url = part.url
            if url and url.startswith("data:") and ";base64," in url:
                data, url = url.split(";base64,", 1)[1], None
            content.append(ContentPart(media_kind(part.mediaType), url=url, data=data, media_type=part.mediaType,
                                       filename=part.filename))
    if all(p.type == "text" for p in content):
        return "".join(p.text or "" for p in content)
    return content


def _read_assistant(message: UIMessage, out: list[Message], resume: list[Resume]) -> None:
    """Split one multi-step assistant UIMessage into OpenAI-style messages: assistant, its tool results, and on."""
    base_id = message.id or new_id("msg")
    segment = 0
    current = Message("assistant", "", base_id)
    results: list[Message] = []

    def flush() -> None:
        nonlocal current, results, segment
        if current.content or current.tool_calls:
            out.append(current)
        out.extend(results)
        segment += 1
        current = Message("assistant", "", f"{base_id}-{segment}")
        results = []

    for part in message.parts or ():
        kind = part.type
        if kind in ("text", "reasoning") or kind == "step-start":
            if results:
                flush()
            if kind == "text":
                current.content = f"{current.content}{part.text}"
            elif kind == "reasoning" and part.text:
                out.append(Message("reasoning", part.text, f"{current.id}-reasoning"))
        elif kind.startswith("tool-") or kind == "dynamic-tool":
            name = part.toolName if kind == "dynamic-tool" else kind[5:]
            call_id = part.toolCallId or ""
            arguments = "{}" if part.input is None else as_text(part.input)
            current.tool_calls.append(ToolCall(call_id, name or "", arguments))
            result = _tool_result(part, call_id)
            if result is not None:
                results.append(result)
            if part.state == "approval-responded" and part.approval is not None:
                approval = part.approval
                resume.append(Resume(approval.id, "resolved",
                                     drop_none({"approved": bool(approval.approved), "reason": approval.reason}),
                                     call_id))
    flush()


def _tool_result(part: Part, call_id: str) -> Message | None:
    result_id = f"result-{call_id}"
    if part.state == "output-available":
        return Message("tool", as_text(part.output), result_id, tool_call_id=call_id)
    if part.state == "output-error":
        text = part.errorText or "tool failed"
        return Message("tool", text, result_id, tool_call_id=call_id, error=text)
    if part.state == "output-denied":
        reason = part.approval.reason if part.approval and part.approval.reason else "the user denied this tool call"
        return Message("tool", reason, result_id, tool_call_id=call_id, error=reason)
    return None


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if variant == INKEEP:
        return UpstreamRequest(orjson.dumps(_inkeep_body(turn)), headers)
    messages = ui_messages(turn)
    body: dict[str, Any] = {}
    if isinstance(turn.forwarded_props, dict):
        body.update({k: v for k, v in turn.forwarded_props.items() if k not in _BODY_KEYS})
    body.update({"id": turn.conversation_id or new_id("chat"), "messages": messages, "trigger": "submit-message"})
    if messages and messages[-1]["role"] == "assistant":
        body["messageId"] = messages[-1]["id"]  # a continuation: tool outputs or approvals for this message
    return UpstreamRequest(orjson.dumps(body), headers)


def _inkeep_body(turn: Turn) -> dict[str, Any]:
    """Inkeep reads the last user message only, and answers 409 to a message id it has stored: send none."""
    last = next((m for m in reversed(turn.messages) if m.role == "user"), None)
    body: dict[str, Any] = {"messages": [{"role": "user", "content": last.text if last else ""}]}
    if turn.conversation_id:
        body["conversationId"] = turn.conversation_id
    return body


def ui_messages(turn: Turn) -> list[dict[str, Any]]:
    """Canonical history as UIMessages: each run of assistant and tool messages becomes one assistant message."""
    results = {m.tool_call_id: m for m in turn.messages if m.role == "tool" and m.tool_call_id}
    approvals = {r.tool_call_id: r for r in turn.resume if r.tool_call_id}
    out: list[dict[str, Any]] = []
    assistant: dict[str, Any] | None = None
    for message in turn.messages:
        if message.role in ("assistant", "reasoning"):
            if assistant is None:
                assistant = {"id": message.id or new_id("msg"), "role": "assistant", "parts": []}
                out.append(assistant)
            parts = assistant["parts"]
            if message.role == "reasoning":
                parts.append({"type": "reasoning", "text": message.text})
                continue
            parts.append({"type": "step-start"})
            if message.text:
                parts.append({"type": "text", "text": message.text})
            for call in message.tool_calls:
                parts.append(_tool_part(call, results.get(call.id), approvals.get(call.id)))
        elif message.role == "tool":
            continue  # carried by its call's part
        else:
            assistant = None
            role = "system" if message.role in ("system", "developer") else "user"
            out.append({"id": message.id or new_id("msg"), "role": role, "parts": _parts(message)})
    return out


def _tool_part(call: ToolCall, result: Message | None, approval: Resume | None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": f"tool-{call.name}", "toolCallId": call.id, "input": json_or_text(call.arguments)}
    if result is not None and result.error is not None:
        part.update(state="output-error", errorText=result.error)
    elif result is not None:
        part.update(state="output-available", output=json_or_text(result.text))
    elif approval is not None:
        payload = approval.payload if isinstance(approval.payload, dict) else {}
        approved = approval.status == "resolved" and payload.get("approved", True) is not False
        part.update(state="approval-responded",
                    approval=drop_none({"id": approval.interrupt_id, "approved": approved,
                                        "reason": payload.get("reason")}))
    else:
        part["state"] = "input-available"
    return part


def _parts(message: Message) -> list[dict[str, Any]]:
    if isinstance(message.content, list):
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if part.type == "text":
                parts.append({"type": "text", "text": part.text or ""})
            elif part.url or part.data:
                url = part.url or f"data:{part.media_type or 'application/octet-stream'};base64,{part.data}"
                parts.append(drop_none({"type": "file", "mediaType": part.media_type or "application/octet-stream",
                                        "url": url, "filename": part.filename}))
        return parts
    return [{"type": "text", "text": message.text}]
