"""A tool call as a turn, and a turn as a tool call.

A client's `tools/call` of the tool named after a route is one turn: `arguments.message` the user's new message,
`arguments.conversation_id` the conversation it continues (none: a new one, whose id the result names), and when
that conversation waits on an interrupt the message is its answer ("yes" or "no" to an approval). An MCP
server's tool called as an agent (`upstream.agent`: `TOOL`, or `TOOL:ARGUMENT` for a message argument other than
`message`) gets the user's new message and the conversation's id when its schema has a `conversation_id` (the
`threaded` variant, learnt when its session opens), else the whole history as text. A server that speaks
2026-07-28 (learnt as the session opens: the variant `2026-07-28`, or `2026-07-28+threaded`) is called with the
envelope and headers of that era; a turn that answers its questions retries the call they came from
(`upstream_questions.py`).

A 2026-07-28 call of a client (its `_meta` names the version) gets a typed result; its retry after an
`input_required` result (`inputResponses`, `requestState`) is a turn with no new message that resumes the
interrupts it answers (`input_required.py`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.core.codec import UpstreamRequest
from gateway.core.errors import InvalidRequest
from gateway.core.ids import new_id
from gateway.core.turn import ANY_OPEN_INTERRUPT, Message, Resume, Turn, new_messages
from gateway.core.validation import validate

from .input_required import InvalidAnswer, answers
from .modern_upstream import modern_request
from .resumption import STREAM
from .route_tool import tool_arguments
from .task_continued import CONTINUES
from .tasks import new_task
from .upstream_questions import called_again, retried_call
from .url_elicitation import takes_urls
from .wire import (
    ACCEPT,
    ANSWERS,
    CLIENT_CAPABILITIES,
    LATEST,
    LOG_LEVEL,
    MODERN,
    MODERN_VERSIONS,
    PROGRESS,
    PROTOCOL_VERSION,
    SAID,
    VERSION_HEADER,
    request,
    takes_forms,
)

SAMPLE_TOOL = "agent-gateway"
"""The tool the sample request calls: the route OpenAI's sample requests name as their model (the demo's)."""
MESSAGE = "message"
"""The argument a tool is given the user's message in, unless the route names another."""
CONVERSATION = "conversation_id"
THREADED = "threaded"
"""The variant of a tool that keeps conversations itself: its schema has a `conversation_id`."""


def variant_of(modern: bool, threaded: bool) -> str | None:
    """The variant a session learnt: the era its server speaks, and whether its tool keeps conversations."""
    parts = [MODERN] if modern else []
    if threaded:
        parts.append(THREADED)
    return "+".join(parts) or None


def is_modern(variant: str | None) -> bool:
    return variant is not None and MODERN in variant.split("+")


def is_threaded(variant: str | None) -> bool:
    return variant is not None and THREADED in variant.split("+")


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Answer(_Model):
    interruptId: str
    status: Literal["resolved", "cancelled"] = "resolved"
    payload: Any = None


class Meta(_Model):
    progressToken: str | int | None = None
    log_level: str | None = Field(None, alias=LOG_LEVEL)
    protocol_version: Any = Field(None, alias=PROTOCOL_VERSION)
    capabilities: Any = Field(None, alias=CLIENT_CAPABILITIES)
    answers: list[Answer] | None = Field(None, alias=ANSWERS)
    progress: int | None = Field(None, alias=PROGRESS)
    said: str | None = Field(None, alias=SAID)


class TaskParams(_Model):
    ttl: int | None = Field(None, ge=0)


class CallParams(_Model):
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Checked as the tool's (`tool_arguments`): arguments it cannot run with are a tool error, not a protocol one."""
    meta: Meta | None = Field(None, alias="_meta")
    input_responses: Any = Field(None, alias="inputResponses")
    request_state: Any = Field(None, alias="requestState")
    task: TaskParams | None = None
    """The call is a task (2025-11-25): answered at once with the task, its run asked about later (`tasks.py`)."""


class ToolCallRequest(_Model):
    jsonrpc: Literal["2.0"]
    id: str | int
    method: Literal["tools/call"]
    params: CallParams


def parse_request(body: dict[str, Any]) -> Turn:
    call = validate(ToolCallRequest, body, "mcp")
    params = call.params
    meta = params.meta or Meta()
    task = new_task(params.name, params.task.ttl) if params.task is not None else None
    arguments = tool_arguments(params.name, params.arguments)
    said, conversation = arguments.message, arguments.conversation_id
    asked = {"id": call.id, "progressToken": meta.progressToken, "logLevel": meta.log_level, "task": task,
             "progressAfter": meta.progress, "said": meta.said}
    if meta.protocol_version in MODERN_VERSIONS:  # 2026-07-28: typed results, and questions for a client that answers
        asked |= {"era": meta.protocol_version, "elicitation": takes_forms(meta.capabilities),
                  "links": takes_urls(meta.capabilities, meta.protocol_version)}
    try:
        answered = answers(params.name, conversation, params.input_responses, params.request_state)
    except InvalidAnswer as refused:
        raise InvalidRequest(f"invalid mcp request: {refused}") from None
    stream = body.get(STREAM) if task is None else None  # a session's call: a run whose stream may be resumed
    run_id: str | None = task["taskId"] if task is not None else None
    if isinstance(stream, dict) and isinstance(stream.get("run"), str):
        asked["stream"], run_id = stream, stream["run"]
    if isinstance(continues := body.get(CONTINUES), str) and task is None:  # a task's answers continue its run
        asked["continues"], run_id = continues, continues
    metadata = {"mcp": asked}
    if answered is not None:  # a retry that answers what an input_required result asked: the same call, resumed
        conversation, resume = answered
        return Turn(history="delta", conversation_id=conversation, agent=params.name, resume=resume, run_id=run_id,
                    metadata=metadata)
    if meta.answers and conversation is not None:  # the call that goes on after its client answered elicitation
        return Turn(history="delta", conversation_id=conversation, agent=params.name, run_id=run_id,
                    metadata=metadata, resume=[Resume(a.interruptId, a.status, a.payload) for a in meta.answers])
    if conversation is None:
        return Turn(messages=[Message("user", said)], history="delta", conversation_id=new_id("conv"),
                    agent=params.name, run_id=run_id, metadata=metadata)
    # A call that continues a conversation answers what it waits for, if anything (else it is the user's message).
    return Turn(history="delta", conversation_id=conversation, agent=params.name, run_id=run_id, metadata=metadata,
                resume=[Resume(ANY_OPEN_INTERRUPT, payload=said, message_id=new_id("msg"))])


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """What the SDKs' `call_tool(route, {...})` sends, with a progress token as `progress_callback` adds, for the
    route named as OpenAI's clients name the gateway's model."""
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": SAMPLE_TOOL, "arguments": {"message": text, "conversation_id": conversation_id},
                       "_meta": {"progressToken": 1}}}


def tool_of(agent: str | None) -> tuple[str, str]:
    """The tool a route calls and the argument its message goes in, from `upstream.agent` (`TOOL[:ARGUMENT]`)."""
    tool, _, argument = (agent or "agent").partition(":")
    return tool, argument or MESSAGE


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    tool, argument = tool_of(turn.agent)
    retried = (retried_call(turn.resume) if is_modern(variant) else None) or called_again(turn.resume)
    if retried is not None:  # the answers to an `input_required` result's questions, or to links: its call again
        params = retried
    elif is_threaded(variant):
        said = "\n\n".join(m.text for m in new_messages(turn) if m.role == "user" and m.text)
        params = {"name": tool, "arguments": {argument: said, CONVERSATION: turn.conversation_id}}
    else:
        params = {"name": tool, "arguments": {argument: history_as_text(turn.messages)}}
    params["_meta"] = {"progressToken": new_id("progress")}
    if is_modern(variant):
        modern = modern_request("tools/call", params, str(params["name"]))
        return UpstreamRequest(modern.body, modern.headers, json_reply=True)
    body = request(new_id("call"), "tools/call", params)
    return UpstreamRequest(body, {"content-type": "application/json", "accept": ACCEPT, VERSION_HEADER: LATEST},
                           json_reply=True)


def history_as_text(messages: list[Message]) -> str:
    """A conversation as one text for a tool that takes one message: the user's only message as it is, else each
    message on its own lines after its role."""
    said = [m for m in messages if m.role in ("user", "assistant", "system", "developer") and m.text]
    if len(said) == 1 and said[0].role == "user":
        return said[0].text
    return "\n\n".join(f"{m.role}: {m.text}" for m in said)
