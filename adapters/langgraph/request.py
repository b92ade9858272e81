"""LangGraph runs: a client's `POST /threads/{thread_id}/runs/stream` (or `/runs/stream`) to a turn, and a turn to
the same call on an upstream LangGraph server.

The server keeps each thread's history: a run's `input.messages` holds only what is new, and an answer to an
interrupt is `command.resume`. Thread ids are UUIDs: the id the gateway sends for a conversation (`conv_` and 32 hex
digits, see Security) is written as one; any other id is mapped to one by a name-based UUID, so it stays stable.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from gateway.core.codec import UpstreamRequest
from gateway.core.errors import InvalidRequest
from gateway.core.ids import new_id
from gateway.core.turn import ANY_OPEN_INTERRUPT, Message, Resume, Tool, Turn
from gateway.core.validation import validate

from .interrupts import answer_of
from .messages import from_langchain, to_langchain

DEFAULT_AGENT = "agent"
"""The assistant (or graph) a route runs when neither it nor the client names one: `langgraph new`'s templates and
most examples call their graph `agent`."""

STREAM_MODES = ("values", "messages", "messages-tuple", "updates", "custom", "events", "debug", "tasks",
                "checkpoints")
UPSTREAM_MODES = ["messages-tuple", "updates", "values", "custom"]
"""What the gateway asks an upstream for: tokens and tool messages, interrupts, state, and the graph's own data."""

_THREADS = uuid.UUID("6f1c1e4e-0b8a-4b5e-9a57-6c4a7d0e8b21")
"""The namespace of the name-based UUIDs that stand for thread ids that are not UUIDs."""
_ASSISTANTS = uuid.UUID("0c6c5c2e-3f5e-4d55-8a7e-2f3d4b5a6c7d")
"""The namespace of the gateway's assistants' UUIDs, one per route."""
_OURS = "a9e47a7e"
"""The first eight digits of every assistant id the gateway lists: an id a client took from its listing names the
route, not an assistant of the upstream's."""
_MINTED = re.compile(r"[a-z]+_([0-9a-f]{32})")
_INTERRUPT_ID = re.compile(r"[A-Za-z]*[-_]?[0-9a-f]{16,}")
"""What the keys of a `command.resume` map look like (LangGraph's 32 hex digits, the gateway's `int-...`)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CommandModel(_Model):
    resume: Any = None
    update: Any = None
    goto: Any = None


class RunCreate(_Model):
    """`RunCreateStateful` / `RunCreateStateless`, as far as a run's content goes: the fields that only steer the
    server (`multitask_strategy`, `durability`, `webhook`, ...) are read past."""

    assistant_id: str = Field(min_length=1)
    input: dict[str, Any] | None = None
    command: CommandModel | None = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    thread_id: str | None = None
    """The thread of the path, put here by the resource that read it; absent for a stateless run."""
    agent_gateway_reply: Literal["stream", "run", "wait"] = "stream"
    """What the request is answered with, as the resource it came to says (`resources.REPLY`)."""


def parse_request(body: dict[str, Any]) -> Turn:
    request = validate(RunCreate, body, "langgraph")
    modes = [request.stream_mode] if isinstance(request.stream_mode, str) else request.stream_mode or ["values"]
    unknown = [mode for mode in modes if mode not in STREAM_MODES]
    if unknown:
        raise InvalidRequest(f"invalid langgraph request: stream_mode: {unknown[0]!r} is not one of "
                             f"{', '.join(STREAM_MODES)}", [{"field": "stream_mode", "message": "unknown mode"}])
    given = dict(request.input or {})
    raw_messages = given.pop("messages", [])
    if isinstance(raw_messages, dict):
        raw_messages = [raw_messages]
    if not isinstance(raw_messages, list):
        raise InvalidRequest("invalid langgraph request: input.messages: must be a list of messages",
                             [{"field": "input.messages", "message": "must be a list of messages"}])
    messages = []
    for index, raw in enumerate(raw_messages):
        message = from_langchain(raw) if isinstance(raw, dict) else \
            Message("user", raw) if isinstance(raw, str) else None
        if message is None:
            raise InvalidRequest(f"invalid langgraph request: input.messages[{index}]: a message has a `type` "
                                 "(human, ai, tool, system) or a `role`",
                                 [{"field": f"input.messages[{index}]", "message": "not a message"}])
        messages.append(message)
    tools = [_tool(t) for t in given.pop("tools", None) or () if isinstance(t, dict) and isinstance(t.get("name"), str)]
    return Turn(
        messages=messages,
        history="delta",
        conversation_id=request.thread_id,
        run_id=uuid_of(new_id("run")),
        tools=tools,
        state=given or None,
        resume=_resumes(request.command),
        metadata={"langgraph": {"stream_mode": modes, "subgraphs": request.stream_subgraphs,
                                "reply": request.agent_gateway_reply}},
        agent=request.assistant_id,
    )


def sample_request(text: str, conversation_id: str) -> dict[str, Any]:
    """What `@langchain/langgraph-sdk`'s `client.runs.stream(threadId, "agent", {input})` sends, its thread (in the
    path for the real client) in the body, as the gateway's own path takes it."""
    return {"assistant_id": DEFAULT_AGENT, "thread_id": conversation_id,
            "input": {"messages": [{"type": "human", "content": text}]},
            "stream_mode": ["messages-tuple", "values"], "if_not_exists": "create"}


def build_request(turn: Turn, variant: str | None = None) -> UpstreamRequest:
    agent = turn.agent if turn.agent and not listed_by_gateway(turn.agent) else DEFAULT_AGENT
    body: dict[str, Any] = {"assistant_id": agent, "stream_mode": UPSTREAM_MODES,
                            "stream_resumable": True}
    if turn.history == "delta":
        sent = [m for m in turn.messages if m.role in ("user", "system", "developer", "tool")]
    else:  # a new thread given the whole history: what the agent said too
        sent = [m for m in turn.messages if m.role != "reasoning"]
    if turn.resume:
        body["command"] = {"resume": _resume_value(turn.resume)}
    if sent or not turn.resume:
        given: dict[str, Any] = dict(turn.state) if isinstance(turn.state, dict) else {}
        # Nothing to say asks the agent to speak first: graphs read the last message, so it is an empty one.
        given["messages"] = [to_langchain(m) for m in sent] or [{"type": "human", "content": ""}]
        if turn.tools:
            given["tools"] = [{"name": t.name, "description": t.description,
                               "parameters": t.parameters or {"type": "object"}} for t in turn.tools]
        body["input"] = given
    if turn.conversation_id is None:
        path = "/runs/stream"
    else:
        body["if_not_exists"] = "create"
        path = f"/threads/{thread_uuid(turn.conversation_id)}/runs/stream"
    return UpstreamRequest(orjson.dumps(body), {"content-type": "application/json", "accept": "text/event-stream"},
                           path=path)


def thread_uuid(conversation_id: str) -> str:
    """The thread a conversation is upstream: an id of the gateway's as the UUID its 128 bits are, a UUID as it
    is, anything else as a name-based UUID of it."""
    minted = _MINTED.fullmatch(conversation_id)
    if minted:
        return str(uuid.UUID(minted.group(1)))
    try:
        return str(uuid.UUID(conversation_id))
    except ValueError:
        return str(uuid.uuid5(_THREADS, conversation_id))


def assistant_id(name: str) -> str:
    """The id of the assistant the gateway lists for a route that runs `name`: a UUID, as LangGraph's are, marked
    as the gateway's."""
    return _OURS + str(uuid.uuid5(_ASSISTANTS, name))[8:]


def listed_by_gateway(assistant: str) -> bool:
    """Whether a client names an assistant by the id the gateway listed it under (`assistant_id`)."""
    return assistant.startswith(_OURS + "-") and len(assistant) == 36


def uuid_of(minted: str) -> str:
    """A run id the gateway mints, written as LangGraph's clients expect one: a UUID of its 128 random bits."""
    return str(uuid.UUID(minted.rpartition("_")[2]))


def _tool(value: dict[str, Any]) -> Tool:
    parameters, description = value.get("parameters"), value.get("description")
    return Tool(value["name"], description if isinstance(description, str) else "",
                parameters if isinstance(parameters, dict) else None)


def _resumes(command: CommandModel | None) -> list[Resume]:
    """`command.resume`: a map of interrupt ids to answers, or one answer to whatever waits."""
    if command is None or (command.resume is None and "resume" not in command.model_fields_set):
        return []
    value = command.resume
    if isinstance(value, dict) and value and all(_INTERRUPT_ID.fullmatch(key) for key in value):
        return [Resume(key, "resolved", answer) for key, answer in value.items()]
    return [Resume(ANY_OPEN_INTERRUPT, "resolved", value)]


def _resume_value(resumes: list[Resume]) -> Any:
    """One answer as it is; several as a map by interrupt id, which the server gives each interrupt."""
    answers = {r.interrupt_id: answer_of(r) for r in resumes}
    if len(answers) == 1 or ANY_OPEN_INTERRUPT in answers:
        return next(iter(answers.values()))
    return answers
