"""Vercel AI SDK requests: `useChat`'s full UIMessage history, or Inkeep's last message and a conversation id.

`useChat` (`DefaultChatTransport`) posts `{id, messages: UIMessage[], trigger, messageId?}` plus whatever the app
put in the transport's `body`; those extra keys become the turn's `forwarded_props`. An assistant UIMessage holds a
whole multi-step answer: text, reasoning, and one `tool-<name>` part per call that carries the call, its output
and any approval. Inkeep's `/api/chat` reads only the last user message and keeps history by `conversationId`.

An interrupt that is not about a tool call reaches a useChat client as a tool call of the gateway's own, whose
`toolCallId` starts with `INTERRUPT_CALL_PREFIX`, waiting for approval: the client answers it with
`addToolApprovalResponse`, and that answer comes back here as the resume of the interrupt it stands for, while the
call itself never enters the history an upstream sees.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, model_validator

from gateway.core.codec import UpstreamRequest, as_text, drop_none, json_or_text
from gateway.core.errors import HistoryConflict, InvalidRequest
from gateway.core.ids import new_id
from gateway.core.turn import ContentPart, Message, Resume, Role, ToolCall, Turn, approves, media_kind
from gateway.core.validation import validate

from .versions import shown_by

INKEEP = "inkeep"
INTERRUPT_CALL_PREFIX = "interrupt-"
"""Starts the id of the tool call that stands, for a useChat client, for an interrupt not about a tool call."""

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
    data: Any = None

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
        if self.role == "user" and self.parts is not None and not (isinstance(self.content, str) and self.content) \
                and not any(_readable(part.type) for part in self.parts):
            # Read, it would be an empty message, answered as if the user had said nothing.
            kinds = ", ".join(sorted({part.type for part in self.parts})) or "none"
            raise ValueError(f"a user message needs a text, file or data part; its parts are: {kinds}")
        return self


def _readable(kind: str) -> bool:
    """Whether a user message's part says something an agent can be told."""
    return kind in ("text", "file") or kind.startswith("data-")


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str | None = None
    messages: list[UIMessage]
    trigger: Literal["submit-message", "regenerate-message"] | None = None
    messageId: str | None = None
    conversationId: str | None = None


def parse_request(body: dict[str, Any]) -> Turn:
    request = validate(ChatRequest, body, "vercel")
    if not request.messages:  # useChat always sends the user's message, or the assistant's it continues
        raise InvalidRequest("invalid vercel request: messages: nothing to answer: a chat request holds the "
                             "user's message", [{"field": "messages", "message": "must not be empty"}])
    # Inkeep's body: no `trigger`, and a conversation id or plain `{role, content}` messages.
    inkeep = request.trigger is None and (request.conversationId is not None
                                          or all(m.parts is None for m in request.messages))
    messages: list[Message] = []
    for message in request.messages:
        _read_message(message, messages)
    last = request.messages[-1] if request.messages else None
    # Only a continuation (the last message is the assistant's) answers approvals: one answered in an earlier
    # message was settled then, and saying it again would resume what is no longer waiting.
    resume = _approvals(last) if last is not None and last.role == "assistant" else []
    extra = {k: v for k, v in (request.model_extra or {}).items() if k not in _BODY_KEYS}
    return Turn(
        messages=messages,
        history="delta" if inkeep and request.conversationId is not None else "full",
        conversation_id=request.conversationId or request.id,
        forwarded_props=extra or None,
        resume=resume,
        variant=INKEEP if inkeep else None,
        client_version=shown_by(body.get("messages")),
    )


def _read_message(message: UIMessage, out: list[Message]) -> None:
    if message.role in ("tool", "function"):
        return  # Inkeep accepts these but reads nothing from them; tool outputs travel in assistant parts
    role: Role = "assistant" if message.role == "assistant" else "system" if message.role == "system" else "user"
    parts = _parts_of(message)
    if parts is None:
        text = message.content if isinstance(message.content, str) else as_text(message.content)
        out.append(Message(role, text, message.id))
        return
    if role != "assistant":
        out.append(Message(role, _user_content(parts), message.id))
        return
    _read_assistant(message.id, parts, out)


def _parts_of(message: UIMessage) -> list[Part] | None:
    """A message's parts, Inkeep's ways included: `content` as a string beside parts (put first, unless a text
    part says the same), or as `{parts: [...]}`."""
    parts, content = message.parts, message.content
    if parts is None and isinstance(content, dict) and isinstance(content.get("parts"), list):
        return validate(UIMessage, {"role": message.role, "parts": content["parts"]}, "vercel").parts
    if parts is not None and isinstance(content, str) and content \
            and not any(p.type == "text" and p.text == content for p in parts):
        return [Part(type="text", text=content), *parts]
    return parts


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
        elif part.type.startswith("data-"):
            # An app's data in a user message (a choice, a form): the agent is told it as JSON text, as A2A's are.
            content.append(ContentPart("text", text=as_text({part.type[5:]: part.data})))
    if all(p.type == "text" for p in content):
        return "".join(p.text or "" for p in content)
    return content


def _read_assistant(message_id: str | None, parts: list[Part], out: list[Message]) -> None:
    """Split one multi-step assistant UIMessage into OpenAI-style messages: assistant, its tool results, and on."""
    base_id = message_id or new_id("msg")
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

    for part in parts:
        kind = part.type
        if kind in ("text", "reasoning") or kind == "step-start":
            if results:
                flush()
            if kind == "text":
                current.content = f"{current.content}{part.text}"
            elif kind == "reasoning" and part.text:
                out.append(Message("reasoning", part.text, f"{current.id}-reasoning"))
        elif (kind.startswith("tool-") or kind == "dynamic-tool") \
                and not (part.toolCallId or "").startswith(INTERRUPT_CALL_PREFIX):
            name = part.toolName if kind == "dynamic-tool" else kind[5:]
            call_id = part.toolCallId or ""
            arguments = "{}" if part.input is None else as_text(part.input)
            current.tool_calls.append(ToolCall(call_id, name or "", arguments))
            result = _tool_result(part, call_id)
            if result is not None:
                results.append(result)
    flush()


def _approvals(message: UIMessage) -> list[Resume]:
    """The approvals a continuation answers. One given to a call that stands for an interrupt resumes that
    interrupt, and names no tool call; so does the output an AI SDK 5 client, which has no approvals, gives such a
    call."""
    resume: list[Resume] = []
    for part in message.parts or ():
        call_id = part.toolCallId or ""
        if call_id.startswith(INTERRUPT_CALL_PREFIX) and part.state == "output-available" and part.approval is None:
            resume.append(Resume(call_id[len(INTERRUPT_CALL_PREFIX):], "resolved", part.output))
            continue
        approval = part.approval
        if part.state != "approval-responded" or approval is None:
            continue
        call_id = part.toolCallId or ""
        resume.append(Resume(approval.id, "resolved",
                             drop_none({"approved": bool(approval.approved), "reason": approval.reason}),
                             None if call_id.startswith(INTERRUPT_CALL_PREFIX) else call_id))
    return resume


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


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """useChat's first `sendMessage()`."""
    return {"id": conversation_id, "trigger": "submit-message",
            "messages": [{"id": new_id("msg"), "role": "user", "parts": [{"type": "text", "text": text}]}]}


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if variant == INKEEP:
        return UpstreamRequest(orjson.dumps(_inkeep_body(turn)), headers)
    # No messages asks the agent to speak first; an AI SDK server refuses a history with no message at all.
    messages = ui_messages(turn) or [{"id": new_id("msg"), "role": "user", "parts": [{"type": "text", "text": ""}]}]
    body: dict[str, Any] = {}
    if isinstance(turn.forwarded_props, dict):
        body.update({k: v for k, v in turn.forwarded_props.items() if k not in _BODY_KEYS})
    chat_id = turn.conversation_id or new_id("chat")
    # `conversationId` beside useChat's `id`: a server that keeps history itself (Inkeep) reads that one.
    body.update({"id": chat_id, "conversationId": chat_id, "messages": messages, "trigger": "submit-message"})
    if messages and messages[-1]["role"] == "assistant":
        body["messageId"] = messages[-1]["id"]  # a continuation: tool outputs or approvals for this message
    return UpstreamRequest(orjson.dumps(body), headers)


def _inkeep_body(turn: Turn) -> dict[str, Any]:
    """Inkeep reads the last user message only, and answers 409 to a message id it has stored: send none.

    So a new conversation cannot be given a history: one that would need it (a regenerated or edited turn after
    the first) is refused rather than answered without what came before.
    """
    last_index = max((i for i, m in enumerate(turn.messages) if m.role == "user"), default=-1)
    if turn.history == "full" and any(m.role != "system" for m in turn.messages[:last_index]):
        raise HistoryConflict("this agent keeps the conversation itself and reads only the newest message, so it "
                              "cannot be given a history it has not heard (an edited or regenerated one, or one "
                              "the gateway has never seen); start a new conversation with its first message")
    last = turn.messages[last_index] if last_index >= 0 else None
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
        reason = payload.get("reason")
        part.update(state="approval-responded",
                    approval=drop_none({"id": approval.interrupt_id, "approved": approves(approval),
                                        "reason": reason if isinstance(reason, str) else None}))
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
