"""Responses requests: `POST /v1/responses` with `input` (a string, or items: messages, `function_call`s and their
`function_call_output`s, reasoning, the `mcp_call`s the agent ran, and answers to its approval requests:
`mcp_approval_response`, or the gateway's `agent_gateway:resume`), `instructions`, function `tools`, and the history
kept on the server: `previous_response_id` (the conversation as that response left it) or `conversation` (a
conversation by id, like AG-Kit's). Without either, `input` is the whole history.

As an upstream, any Responses server is sent the whole history each call (`store: false`): every server takes that,
and no id of the gateway's or a client's reaches it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters.openai_common.wire import DEFAULT_MODEL, file_data, from_url, image_url, parameters, upstream_request
from gateway.core.codec import UpstreamRequest, as_text, drop_none
from gateway.core.errors import InvalidRequest
from gateway.core.ids import new_id
from gateway.core.turn import ContentPart, Message, Resume, Tool, ToolCall, Turn
from gateway.core.validation import validate

from .items import APPROVAL_REQUEST, APPROVAL_RESPONSE, MCP_CALL, RESUME, expanded

_IGNORED_ITEMS = frozenset({APPROVAL_REQUEST, "item_reference"})
"""Items a client sends back that say nothing new: the question it answers with an approval response; a reference
to an item the gateway already holds."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionTool(_Model):
    type: str
    name: str | None = Field(None, min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ResponsesRequest(_Model):
    model: str = Field(min_length=1)
    input: str | list[dict[str, Any]] = ""
    instructions: str | None = None
    tools: list[FunctionTool] | None = None
    previous_response_id: str | None = Field(None, min_length=1)
    conversation: str | dict[str, Any] | None = None
    store: bool | None = True
    stream: bool | None = False
    background: bool | None = False
    metadata: dict[str, Any] | None = None


def parse_request(body: dict[str, Any]) -> Turn:
    request = validate(ResponsesRequest, body, "openai-responses")
    if request.background:
        raise InvalidRequest("background: true is not served: a response runs while its request is open (use "
                             "stream, and GET /v1/responses/{id} for a stored one)",
                             [{"field": "background", "message": "Input should be false"}])
    conversation = _conversation(request.conversation)
    if conversation is not None and request.previous_response_id is not None:
        raise InvalidRequest("previous_response_id and conversation cannot both be given",
                             [{"field": "previous_response_id", "message": "not with conversation"}])
    tools = []
    for index, tool in enumerate(request.tools or ()):
        if tool.type != "function" or not tool.name:
            raise InvalidRequest(f"tools[{index}]: only function tools can be offered to an agent here, not "
                                 f"{tool.type!r}", [{"field": f"tools[{index}].type", "message":
                                                     "Input should be 'function' (with a name)"}])
        tools.append(Tool(tool.name, tool.description or "", tool.parameters))
    messages, resume = read_input(request.input)
    delta = conversation is not None or request.previous_response_id is not None
    if not (messages or resume or delta):  # the whole history, and empty
        raise InvalidRequest("invalid openai-responses request: input: nothing to answer: give a message, or a "
                             "function_call_output", [{"field": "input", "message": "must not be empty"}])
    store = request.store is not False
    echo = {"stream": bool(request.stream), "store": store, "instructions": request.instructions,
            "previous_response_id": request.previous_response_id, "conversation": conversation,
            "metadata": request.metadata or {},
            "tools": [{"type": "function", "name": t.name, "description": t.description or None,
                       "parameters": t.parameters, "strict": t.strict} for t in request.tools or ()]}
    if request.instructions:
        messages.insert(0, Message("system", request.instructions))
    return Turn(messages=messages, history="delta" if delta else "full", conversation_id=conversation,
                run_id=new_id("resp"), tools=tools, resume=resume, model=request.model,
                follows=request.previous_response_id, chains_runs=store and conversation is None,
                metadata={"openai_responses": echo})


def _conversation(value: str | dict[str, Any] | None) -> str | None:
    if isinstance(value, dict):
        found = value.get("id")
        if not isinstance(found, str) or not found:
            raise InvalidRequest("conversation.id must be a string", [{"field": "conversation.id",
                                                                      "message": "Input should be a valid string"}])
        return found
    return value or None


def read_input(value: str | list[dict[str, Any]]) -> tuple[list[Message], list[Resume]]:
    """`input` as canonical messages (a run of function calls joins the assistant message before it) and the
    answers to interrupts it holds."""
    if isinstance(value, str):
        return ([Message("user", value)] if value else []), []
    messages: list[Message] = []
    resume: list[Resume] = []
    for index, item in enumerate(value):
        kind = item.get("type", "message")
        where = f"input[{index}]"
        if kind == "message":
            messages.append(_message(item, where))
        elif kind == "function_call":
            call = ToolCall(_str(item, "call_id", where), _str(item, "name", where), _arguments(item))
            _assistant(messages).tool_calls.append(call)
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append(Message("tool", output if isinstance(output, str) else as_text(output),
                                    tool_call_id=_str(item, "call_id", where)))
        elif kind == MCP_CALL:
            call_id = _str(item, "id", where)
            _assistant(messages).tool_calls.append(ToolCall(call_id, _str(item, "name", where), _arguments(item)))
            messages.append(_mcp_result(item, call_id))
        elif kind == "reasoning":
            text = "".join(p.get("text", "") for p in [*(item.get("content") or ()), *(item.get("summary") or ())]
                           if isinstance(p, dict) and isinstance(p.get("text"), str))
            messages.append(Message("reasoning", text))
        elif kind == "compaction":  # the history it stands for, where it stands
            messages += read_input(expanded(item, where))[0]
        elif kind == APPROVAL_RESPONSE:  # a yes or no, as a useChat client answers one
            reason = item.get("reason")
            resume.append(Resume(_str(item, "approval_request_id", where),
                                 payload=drop_none({"approved": item.get("approve") is True,
                                                    "reason": reason if isinstance(reason, str) else None})))
        elif kind == RESUME:
            resume.append(Resume(_str(item, "interrupt_id", where), payload=item.get("payload"),
                                 status="cancelled" if item.get("status") == "cancelled" else "resolved"))
        elif kind not in _IGNORED_ITEMS:
            raise InvalidRequest(f"{where}.type: {kind!r} is not an input item the gateway reads (message, "
                                 "function_call, function_call_output, reasoning, compaction, mcp_call, "
                                 "mcp_approval_response, agent_gateway:resume)",
                                 [{"field": f"{where}.type", "message": f"unknown item type {kind!r}"}])
    return messages, resume


def _mcp_result(item: dict[str, Any], call_id: str) -> Message:
    """The result of a call the agent ran: its output, or the error it failed with."""
    error = item.get("error")
    if error is None:
        output = item.get("output")
        return Message("tool", output if isinstance(output, str) else as_text(output), tool_call_id=call_id)
    said = as_text(error.get("content", error.get("message")) if isinstance(error, dict) else error)
    return Message("tool", said, tool_call_id=call_id, error=said)


def _assistant(messages: list[Message]) -> Message:
    """The assistant message a function call belongs to: the one just before it, or a new one."""
    if messages and messages[-1].role == "assistant":
        return messages[-1]
    messages.append(Message("assistant", None))
    return messages[-1]


def _str(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{where}.{key} must be a non-empty string",
                             [{"field": f"{where}.{key}", "message": "Input should be a valid string"}])
    return value


def _arguments(item: dict[str, Any]) -> str:
    arguments = item.get("arguments")
    return arguments if isinstance(arguments, str) and arguments else "{}"


def _message(item: dict[str, Any], where: str) -> Message:
    role = item.get("role")
    if role not in ("user", "system", "developer", "assistant"):
        raise InvalidRequest(f"{where}.role must be user, system, developer or assistant",
                             [{"field": f"{where}.role", "message": "Input should be 'user', 'system', "
                               "'developer' or 'assistant'"}])
    content = item.get("content")
    if isinstance(content, str):
        return Message(role, content, item.get("id") if isinstance(item.get("id"), str) else None)
    if not isinstance(content, list):
        raise InvalidRequest(f"{where}.content must be a string or a list of parts",
                             [{"field": f"{where}.content", "message": "Input should be a string or a list"}])
    parts: list[ContentPart] = []
    for number, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
            parts.append(ContentPart("text", str(part.get("text") or "")))
        elif kind == "refusal":
            parts.append(ContentPart("text", str(part.get("refusal") or "")))
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append(from_url(part["image_url"], "image"))
        elif kind == "input_image" and isinstance(part.get("file_id"), str):
            parts.append(ContentPart("image", file_id=part["file_id"]))
        elif kind == "input_file" and isinstance(part, dict):
            data, url, file_id = part.get("file_data"), part.get("file_url"), part.get("file_id")
            name = part.get("filename") if isinstance(part.get("filename"), str) else None
            media = from_url(data, "document") if isinstance(data, str) else ContentPart(
                "document", url=url if isinstance(url, str) else None,
                file_id=file_id if isinstance(file_id, str) and not isinstance(url, str) else None)
            media.filename = name
            parts.append(media)
        else:
            raise InvalidRequest(f"{where}.content[{number}] is not an input_text, input_image or input_file part",
                                 [{"field": f"{where}.content[{number}].type", "message": "unknown content part"}])
    only_text = all(p.type == "text" for p in parts)
    return Message(role, "".join(p.text or "" for p in parts) if only_text else parts,
                   item.get("id") if isinstance(item.get("id"), str) else None)


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    """The whole history as input items, streamed, stored nowhere upstream; answers to interrupts after them (see
    `answer_item`)."""
    items = input_items(turn.messages)
    items += [answer_item(r) for r in turn.resume]
    if not items:  # the agent speaks first: servers refuse an empty input, so it is one empty message
        items.append({"type": "message", "role": "user", "content": ""})
    body: dict[str, Any] = {"model": turn.model or DEFAULT_MODEL, "input": items, "stream": True, "store": False}
    if turn.tools:
        body["tools"] = [{"type": "function", "name": t.name, "description": t.description or None,
                          "parameters": parameters(t)} for t in turn.tools]
    return upstream_request(body)


def answer_item(resume: Resume) -> dict[str, Any]:
    """A yes or no (`{"approved": bool}`, and why) as the `mcp_approval_response` any Responses server reads; any
    other answer, or a cancelled one, as the gateway's resume item (which a Responses server of the gateway's reads)."""
    payload = resume.payload
    if resume.status == "resolved" and isinstance(payload, dict) and isinstance(payload.get("approved"), bool) \
            and set(payload) <= {"approved", "reason"} and isinstance(payload.get("reason", ""), str):
        return drop_none({"type": APPROVAL_RESPONSE, "approval_request_id": resume.interrupt_id,
                          "approve": payload["approved"], "reason": payload.get("reason")})
    return {"type": RESUME, "interrupt_id": resume.interrupt_id, "payload": payload,
            **({"status": "cancelled"} if resume.status == "cancelled" else {})}


def input_items(messages: list[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id or "", "output": m.text})
        elif m.role == "reasoning":
            continue  # a server's reasoning goes back only as its own encrypted item, which the gateway has not
        elif m.role == "assistant":
            if m.text:
                items.append({"type": "message", "role": "assistant", "content": m.text})
            items += [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
                      for c in m.tool_calls]
        else:
            items.append({"type": "message", "role": m.role, "content": _content(m)})
    return items


def _content(message: Message) -> str | list[dict[str, Any]]:
    if not isinstance(message.content, list):
        return message.text
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if part.type == "text":
            parts.append({"type": "input_text", "text": part.text or ""})
        elif part.type == "image" and (part.url is not None or part.data is not None):
            parts.append({"type": "input_image", "image_url": image_url(part)})
        elif part.file_id is not None and part.data is None and part.url is None:  # uploaded to a provider before
            kind = "input_image" if part.type == "image" else "input_file"
            parts.append({"type": kind, "file_id": part.file_id,
                          **({"filename": part.filename} if part.filename and kind == "input_file" else {})})
        elif part.data is not None:
            parts.append({"type": "input_file", "file_data": file_data(part),
                          "filename": part.filename or "file"})
        else:
            parts.append({"type": "input_file", "file_url": part.url})
    return parts


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """What `client.responses.create(model=..., input=..., stream=True)` sends."""
    return {"model": DEFAULT_MODEL, "input": text, "stream": True}


def echo(turn: Turn | None) -> dict[str, Any]:
    """What the client's request said that its response repeats (see `parse_request`); empty for another
    dialect's."""
    found = turn.metadata.get("openai_responses") if turn is not None else None
    return found if isinstance(found, dict) else {}
