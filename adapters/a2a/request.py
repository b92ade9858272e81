"""A2A requests: `SendStreamingMessage` / `SendMessage` (JSON-RPC 2.0; `message/stream` and `message/send` in
0.3) carrying one new message of a conversation the agent keeps by `contextId`.

A client continues a task that waits for it (input or auth required) with a message naming the task's `taskId`:
to the gateway that is a resume of the task's interrupts. A message whose parts answer tool calls (a data part
marked `adk_type: function_response`, Google ADK's convention) gives those calls their results.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from gateway.core.codec import UpstreamRequest, as_text, json_or_text
from gateway.core.errors import HistoryConflict, InvalidRequest
from gateway.core.ids import new_id
from gateway.core.turn import ContentPart, Message, Resume, Turn, approves, media_kind, new_messages
from gateway.core.validation import validate

from .errors import InvalidRpcRequest, MethodNotFound
from .push import request_webhooks
from .wire import (
    BINDING,
    GRPC,
    GRPC_SEND,
    METHODS,
    REST,
    SEND,
    SERVED,
    V03,
    data_part,
    is_user,
    message_v10,
    part_kind,
    role_for,
    text_part,
)

FUNCTION_CALL, FUNCTION_RESPONSE = "function_call", "function_response"
"""Google ADK's marks (`metadata.adk_type`) on the data parts that carry tool activity over A2A."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class MessageModel(_Model):
    message_id: str = Field(alias="messageId")
    role: str
    parts: list[dict[str, Any]] = Field(min_length=1)
    context_id: str | None = Field(None, alias="contextId")
    task_id: str | None = Field(None, alias="taskId")


class Configuration(_Model):
    history_length: int | None = Field(None, ge=0, alias="historyLength")
    return_immediately: bool = Field(False, alias="returnImmediately")


class SendParams(_Model):
    message: MessageModel
    configuration: Configuration | None = None


class RpcRequest(_Model):
    jsonrpc: Literal["2.0"]
    method: str
    params: SendParams
    id: str | int | None = None


def check_envelope(body: dict[str, Any]) -> str:
    """The method of a JSON-RPC 2.0 request; anything that is not one is refused (-32600)."""
    if body.get("jsonrpc") != "2.0":
        raise InvalidRpcRequest('a JSON-RPC request says "jsonrpc": "2.0"')
    method = body.get("method")
    if not isinstance(method, str) or not method:
        raise InvalidRpcRequest("a JSON-RPC request names its method")
    rpc_id = body.get("id")
    if rpc_id is not None and (isinstance(rpc_id, bool) or not isinstance(rpc_id, str | int)):
        raise InvalidRpcRequest("a JSON-RPC request's id is a string, a number or null")
    return method


def parse_request(body: dict[str, Any]) -> Turn:
    method = check_envelope(body)
    if method not in METHODS:
        raise MethodNotFound(f"{method} is not an A2A method the gateway serves: {', '.join(SERVED)}")
    if not isinstance(body.get("params"), dict):
        raise InvalidRequest(f"{method} needs params, an object")
    request = validate(RpcRequest, body, "a2a")
    stream, version = METHODS[request.method]
    message = request.params.message
    if not is_user(message.role):
        raise InvalidRequest(f"params.message.role must be the user's ({role_for(version, 'user')}), "
                             f"not {message.role!r}")
    content: list[ContentPart] = []
    tools: list[Message] = []
    answer: list[Any] = []
    for index, part in enumerate(message.parts):
        kind = part_kind(part)
        if kind == "text" and isinstance(part.get("text"), str):
            content.append(ContentPart("text", part["text"]))
            answer.append(part["text"])
        elif kind == "data":
            data = part.get("data")
            metadata = part.get("metadata")
            if isinstance(metadata, dict) and metadata.get("adk_type") == FUNCTION_RESPONSE and isinstance(data, dict):
                tools.append(_tool_message(data))
            else:
                content.append(ContentPart("text", as_text(data)))
                answer.append(data)
        elif kind == "file":
            content.append(_file_part(part, index))
        else:
            raise InvalidRequest(f"params.message.parts[{index}] is not a text, data or file part")
    messages: list[Message] = list(tools)
    resume: list[Resume] = []
    if message.task_id is not None and not tools:
        # The answer to a task waiting for the client: what it said, as the payload of the task's resume.
        payload = answer[0] if len(answer) == 1 else "".join(as_text(a) for a in answer)
        resume.append(Resume(message.task_id, payload=payload, message_id=message.message_id))
    elif content:
        only_text = all(p.type == "text" for p in content)
        messages.append(Message("user", "".join(p.text or "" for p in content) if only_text else content,
                                message.message_id))
    configuration = request.params.configuration
    sent = body["params"]["message"]
    asked = {"id": request.id, "stream": stream, "continues": message.task_id, "message": message_v10(sent),
             "history_length": configuration.history_length if configuration is not None else None,
             "return_immediately": configuration is not None and configuration.return_immediately,
             "webhooks": request_webhooks(body["params"]), "binding": body.get(BINDING) == REST}
    # A message naming its task continues it: its context is the task's (the server fills it in when not named).
    return Turn(messages=messages, history="delta",
                conversation_id=message.context_id or (None if message.task_id else new_id("ctx")),
                run_id=message.task_id or new_id("task"), resume=resume, variant=version, metadata={"a2a": asked})


def _tool_message(data: dict[str, Any]) -> Message:
    response = data.get("response")
    if isinstance(response, dict) and set(response) == {"result"}:
        response = response["result"]
    call_id = data.get("id")
    if not isinstance(call_id, str):
        raise InvalidRequest("a function_response data part needs the id of the call it answers")
    name = data.get("name")
    return Message("tool", as_text(response), tool_call_id=call_id, name=name if isinstance(name, str) else None)


def _file_part(part: dict[str, Any], index: int) -> ContentPart:
    """A file part: 1.0's `raw` (base64) or `url` with `mediaType` and `filename`; 0.3's `file` object."""
    nested = part.get("file")
    file: dict[str, Any] = nested if isinstance(nested, dict) else part
    raw = file.get("raw", file.get("bytes"))
    url = file.get("url", file.get("uri"))
    media_type = file.get("mediaType", file.get("mimeType"))
    filename = file.get("filename", file.get("name"))
    if isinstance(raw, str):
        try:
            base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequest(f"params.message.parts[{index}] holds bytes that are not base64") from None
    elif not isinstance(url, str):
        raise InvalidRequest(f"params.message.parts[{index}] is a file part with neither bytes nor a URL")
    media = media_type if isinstance(media_type, str) else None
    return ContentPart(media_kind(media), url=url if isinstance(url, str) else None,
                       data=raw if isinstance(raw, str) else None, media_type=media,
                       filename=filename if isinstance(filename, str) else None)


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    """The one message A2A sends a turn as. A conversation the agent must be given whole (`history == "full"`: an
    edited or regenerated history, one it has not heard) can be only when it is one message of the user's: its
    first turn, redone in a new context. Any more cannot be (a message is one turn of the user's, and the agent
    keeps the rest by `contextId`): it is refused (409 `history_conflict`), never joined into one message, nor
    answered without what came before."""
    _check_history(turn)
    version = V03 if variant == V03 else None
    parts: list[dict[str, Any]] = []
    message: dict[str, Any] = {"messageId": new_id("msg"), "role": role_for(version, "user"),
                               "contextId": turn.conversation_id}
    if turn.resume:
        resume = turn.resume[0]
        message["taskId"] = resume.interrupt_id
        payload = resume.payload
        if isinstance(payload, str):
            parts.append(text_part(version, payload))
        elif payload is None or (isinstance(payload, dict) and set(payload) == {"approved"}):
            parts.append(text_part(version, "yes" if approves(resume) else "no"))
        else:
            parts.append(data_part(version, payload))
    for m in new_messages(turn) if turn.history == "full" else turn.messages:
        parts += _parts(version, m)
    if not parts:  # an agent-first turn: servers refuse a message without parts, and an empty text part
        parts.append(data_part(version, {}))
    message["parts"] = parts
    if version == V03:
        message["kind"] = "message"
    streams = variant != SEND
    params = {"message": message, "configuration": {}}
    headers = {"content-type": "application/json", "accept": "text/event-stream" if streams else "application/json"}
    if version != V03:
        headers["a2a-version"] = "1.0"
    if variant == REST:
        return UpstreamRequest(orjson.dumps(params), headers, streams=True, path="/message:stream", json_reply=True)
    if variant in (GRPC, GRPC_SEND):
        from .grpc_calls import send_request

        return send_request(params, streams=variant == GRPC)
    method = ("message/stream" if streams else "message/send") if version == V03 else \
        ("SendStreamingMessage" if streams else "SendMessage")
    body = {"jsonrpc": "2.0", "id": new_id("rpc"), "method": method, "params": params}
    return UpstreamRequest(orjson.dumps(body), headers, streams=streams, json_reply=True)


def _check_history(turn: Turn) -> None:
    if turn.history != "full" or turn.resume:
        return
    last_user = max((i for i, m in enumerate(turn.messages) if m.role == "user"), default=0)
    if any(m.role != "system" for m in turn.messages[:last_user]):  # more than the one message it can be sent
        raise HistoryConflict("this A2A agent keeps the conversation itself and is sent one message a turn, so it "
                              "cannot be given a history it has not heard (an edited or regenerated one, or one the "
                              "gateway has never seen): start a new conversation")


def _parts(version: str | None, message: Message) -> list[dict[str, Any]]:
    """A message of the conversation as parts of the one message A2A sends: the agent keeps the rest."""
    if message.role == "tool":
        data = {"id": message.tool_call_id, "name": message.name or "",
                "response": {"result": json_or_text(message.text)}}
        return [data_part(version, data, {"adk_type": FUNCTION_RESPONSE})]
    if message.role != "user":
        return []  # the agent wrote its own messages, and A2A has no system role
    if isinstance(message.content, str):
        return [text_part(version, message.content)] if message.content else []
    parts = []
    for part in message.content or ():
        if part.type == "text":
            parts.append(text_part(version, part.text or ""))
        elif version == V03:
            file: dict[str, Any] = {"mimeType": part.media_type, "name": part.filename}
            file.update({"bytes": part.data} if part.data is not None else {"uri": part.url})
            parts.append({"kind": "file", "file": {k: v for k, v in file.items() if v is not None}})
        else:
            file = {"mediaType": part.media_type, "filename": part.filename}
            file.update({"raw": part.data} if part.data is not None else {"url": part.url})
            parts.append({k: v for k, v in file.items() if v is not None})
    return parts


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """What `a2a-sdk`'s client sends to open conversation `conversation_id`."""
    return {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": {"messageId": new_id("msg"), "role": "ROLE_USER", "contextId": conversation_id,
                                   "parts": [{"text": text}]}, "configuration": {}}}
