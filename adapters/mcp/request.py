"""A tool call as a turn, and a turn as a tool call.

A client's `tools/call` of the tool named after a route is one turn: `arguments.message` the user's new message,
`arguments.conversation_id` the conversation it continues (none: a new one, whose id the result names), and when
that conversation waits on an interrupt the message is its answer ("yes" or "no" to an approval). An MCP
server's tool called as an agent (`upstream.agent`: `TOOL`, or `TOOL:ARGUMENT` for a message argument other than
`message`) gets the user's new message and the conversation's id when its schema has a `conversation_id` (the
`threaded` variant, learnt when its session opens), else the whole history as text.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.core.codec import UpstreamRequest
from gateway.core.ids import new_id
from gateway.core.turn import ANY_OPEN_INTERRUPT, Message, Resume, Turn, new_messages
from gateway.core.validation import validate

from .wire import ACCEPT, LATEST, LOG_LEVEL, VERSION_HEADER, request

SAMPLE_TOOL = "agent-gateway"
"""The tool the sample request calls: the route OpenAI's sample requests name as their model (the demo's)."""
MESSAGE = "message"
"""The argument a tool is given the user's message in, unless the route names another."""
CONVERSATION = "conversation_id"
ANSWERS = "io.agent-gateway/answers"
"""Where a call's `_meta` holds answers to the interrupts its conversation waits on ([{interruptId, status,
payload}]): what a client's answers to elicitation make of the call that goes on (`elicitation.py`)."""
PROGRESS = "io.agent-gateway/progress"
"""In a call's `_meta`, the progress its token was given already (its notifications count on from it); in an
interrupted result's, the progress it was given."""
SAID = "io.agent-gateway/said"
"""In a call's `_meta`, the text its answer goes on from (the run before, which asked); in an interrupted result's,
how much of its text the agent said (the question follows)."""
THREADED = "threaded"
"""The variant of a tool that keeps conversations itself: its schema has a `conversation_id`."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Arguments(_Model):
    message: str
    conversation_id: str | None = None


class Answer(_Model):
    interruptId: str
    status: Literal["resolved", "cancelled"] = "resolved"
    payload: Any = None


class Meta(_Model):
    progressToken: str | int | None = None
    log_level: str | None = Field(None, alias=LOG_LEVEL)
    answers: list[Answer] | None = Field(None, alias=ANSWERS)
    progress: int | None = Field(None, alias=PROGRESS)
    said: str | None = Field(None, alias=SAID)


class CallParams(_Model):
    name: str = Field(min_length=1)
    arguments: Arguments
    meta: Meta | None = Field(None, alias="_meta")


class ToolCallRequest(_Model):
    jsonrpc: Literal["2.0"]
    id: str | int
    method: Literal["tools/call"]
    params: CallParams


def parse_request(body: dict[str, Any]) -> Turn:
    call = validate(ToolCallRequest, body, "mcp")
    params = call.params
    meta = params.meta or Meta()
    said, conversation = params.arguments.message, params.arguments.conversation_id
    metadata = {"mcp": {"id": call.id, "progressToken": meta.progressToken, "logLevel": meta.log_level,
                        "progressAfter": meta.progress, "said": meta.said}}
    if meta.answers and conversation is not None:
        return Turn(history="delta", conversation_id=conversation, agent=params.name, metadata=metadata,
                    resume=[Resume(a.interruptId, a.status, a.payload) for a in meta.answers])
    if conversation is None:
        return Turn(messages=[Message("user", said)], history="delta", conversation_id=new_id("conv"),
                    agent=params.name, metadata=metadata)
    # A call that continues a conversation answers what it waits for, if anything (else it is the user's message).
    return Turn(history="delta", conversation_id=conversation, agent=params.name, metadata=metadata,
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
    if variant == THREADED:
        said = "\n\n".join(m.text for m in new_messages(turn) if m.role == "user" and m.text)
        arguments: dict[str, Any] = {argument: said, CONVERSATION: turn.conversation_id}
    else:
        arguments = {argument: history_as_text(turn.messages)}
    body = request(new_id("call"), "tools/call",
                   {"name": tool, "arguments": arguments, "_meta": {"progressToken": new_id("progress")}})
    return UpstreamRequest(body, {"content-type": "application/json", "accept": ACCEPT, VERSION_HEADER: LATEST},
                           json_reply=True)


def history_as_text(messages: list[Message]) -> str:
    """A conversation as one text for a tool that takes one message: the user's only message as it is, else each
    message on its own lines after its role."""
    said = [m for m in messages if m.role in ("user", "assistant", "system", "developer") and m.text]
    if len(said) == 1 and said[0].role == "user":
        return said[0].text
    return "\n\n".join(f"{m.role}: {m.text}" for m in said)
