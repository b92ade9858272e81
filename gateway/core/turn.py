"""The canonical request: one turn of a conversation, whatever dialect the client spoke.

A `Turn` says who the conversation is (`conversation_id`), what the client sent (`messages`) and whether those
messages are the whole history or only what is new since the last turn (`history`). The proxy fills in or trims
history between dialects that keep it and dialects that don't.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal

Role = Literal["system", "developer", "user", "assistant", "tool", "reasoning"]
History = Literal["full", "delta"]


@dataclass(slots=True)
class ContentPart:
    """One part of a multimodal message. `type` is "text", or a media kind: image, audio, video, document, file."""

    type: str
    text: str | None = None
    url: str | None = None
    data: str | None = None
    """Base64 payload, when the media is inline."""
    media_type: str | None = None
    filename: str | None = None
    file_id: str | None = None
    """A file uploaded to a provider beforehand (AG-UI's `file` source), named by its id there."""
    provider: str | None = None
    """Who holds `file_id`."""


def media_kind(media_type: str | None) -> str:
    """The `ContentPart.type` for a MIME type: image, audio or video, else document."""
    major = (media_type or "").split("/", 1)[0]
    return major if major in ("image", "audio", "video") else "document"


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str = "{}"
    """The arguments as a JSON string, as every dialect's history carries them."""


@dataclass(slots=True)
class Message:
    role: Role
    content: str | list[ContentPart] | None = None
    id: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    error: str | None = None
    """For a tool message: the tool failed, and this says why."""

    @property
    def text(self) -> str:
        """The message's text, multimodal parts other than text left out."""
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return "".join(part.text or "" for part in self.content if part.type == "text")


@dataclass(slots=True)
class Tool:
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    """A JSON Schema object."""


@dataclass(slots=True)
class Context:
    description: str
    value: str


@dataclass(slots=True)
class Resume:
    """The client's answer to an interrupt."""

    interrupt_id: str
    status: Literal["resolved", "cancelled"] = "resolved"
    payload: Any = None
    tool_call_id: str | None = None
    """The tool call the interrupt asked to approve, when the client says (Vercel approvals do)."""
    message_id: str | None = None
    """The id of the client's message the answer came in, when it came in one (A2A answers with a message to the
    task); AG-UI carries it in the resume entry's `metadata`."""
    response_schema: Any = None
    """The `responseSchema` the interrupt declared, when the conversation keeps it: an upstream's dialect may write
    an answer in the shape its interrupt takes (an approval as LangChain's review decisions)."""
    upstream_state: Any = None
    """The interrupt's `upstream_state`, when the conversation keeps it: what the upstream's dialect needs to send
    the answer back (the call an MCP server's `input_required` result asks to be retried)."""


ANY_OPEN_INTERRUPT = ""
"""The interrupt id of a resume that names none (a client before AG-UI 1.0 answers with LangGraph's
`Command(resume=...)`, a LangGraph client with `command.resume` of a plain value): it answers whatever its
conversation has open."""


YES = frozenset({"yes", "y", "yep", "yeah", "yup", "ok", "okay", "sure", "approve", "approved", "accept", "accepted",
                 "allow", "allowed", "confirm", "confirmed", "true", "go", "proceed", "absolutely", "definitely",
                 "certainly", "affirmative", "agreed", "please"})
NO = frozenset({"no", "n", "nope", "nah", "not", "never", "deny", "denied", "reject", "rejected", "decline",
                "declined", "cancel", "cancelled", "false", "stop", "abort", "don't", "dont", "negative"})
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_HEDGES = frozenset({"but", "unless", "except", "maybe", "perhaps", "if", "wait", "later"})
_YES_IDIOMS = frozenset({"problem", "worries", "objection", "objections"})
"""What after a "no" makes a yes: "no problem", "no worries"."""


def yes_or_no(text: str) -> bool | None:
    """What a yes or a no in words says, as a person answering a question would put it ("yes, go ahead", "no
    thanks", "absolutely not", "please don't"); None when it is neither, or hedged ("yes, but not that file"), so
    that an answer nobody would read as plain consent is never taken for one."""
    words = _WORD.findall(text.lower().replace("\u2019", "'"))[:12]
    if not words or len(text) > 200:
        return None
    first, rest = words[0], words[1:]
    negated = any(word in NO or word.endswith("n't") for word in rest)
    if first == "no" and rest[:1] and rest[0] in _YES_IDIOMS:
        return None if any(word in NO or word in _HEDGES for word in rest[1:]) else True
    if first in NO or (first == "do" and rest[:1] == ["not"]):
        return None if any(word in _HEDGES or word == "sure" for word in rest) else False  # not "not sure"
    if first in YES:
        if rest[:1] == ["not"] or (first == "please" and negated):  # "absolutely not", "please don't"
            return False
        return None if negated or any(word in _HEDGES for word in rest) else True
    return None


def approves(resume: Resume) -> bool:
    """Whether a resume says yes to what the interrupt asked. Clients answer approvals in their own words:
    `{"approved": false}` (Vercel, and what the gateway sends), a bare `false`, a no in words (a client that answers
    in a message: A2A, MCP), or a cancelled status say no."""
    payload = resume.payload
    if resume.status == "cancelled" or payload is False:
        return False
    if isinstance(payload, str):
        return yes_or_no(payload) is not False
    return not (isinstance(payload, dict) and payload.get("approved", True) is False)


@dataclass(slots=True)
class Turn:
    messages: list[Message] = field(default_factory=list)
    history: History = "full"
    conversation_id: str | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    tools: list[Tool] = field(default_factory=list)
    context: list[Context] = field(default_factory=list)
    state: Any = None
    forwarded_props: Any = None
    resume: list[Resume] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    """Dialect metadata worth keeping across a hop, e.g. agent-respond's `test_case_id` and `turn_index`."""
    variant: str | None = None
    """The request's shape within its dialect (Vercel's "inkeep"), so the reply can take the same shape."""
    agent: str | None = None
    """Which of the agents a server hosts the client asked for (LangGraph's `assistant_id`); a route's
    `upstream.agent` takes its place for the upstream."""
    client_version: str | None = None
    """The version of its protocol the client speaks, as its request shows it (AG-UI's `protocolVersion`, what an
    AI SDK client's messages hold) or its route says: the reply holds only what that version reads."""
    accept: str | None = None
    """The media types the client reads (its `Accept`), for a dialect with more than one wire format (AG-UI's
    protobuf)."""
    model: str | None = None
    """The model or agent the request names (OpenAI's `model`): the client's, echoed in replies that name one; the
    upstream's, for an upstream whose requests name one."""
    follows: str | None = None
    """The run this turn continues, for a client that names a run rather than a conversation (Responses'
    `previous_response_id`): the conversation is as that run left it."""
    chains_runs: bool = False
    """The client continues runs by their ids (`follows`) rather than by naming a conversation: the gateway keeps
    the conversation as each run leaves it, under the run's id, so any run of it can be continued (a fork)."""


_FIELDS = tuple(f.name for f in fields(Turn))
_read_fields = attrgetter(*_FIELDS)
_FIELD_AT = {name: index for index, name in enumerate(_FIELDS)}


def revised(turn: Turn, **changes: Any) -> Turn:
    """`dataclasses.replace(turn, **changes)` at half its cost, for the turn every request makes for its upstream:
    the fields read in one call, without replace's checks of each field's kind. A name that is no field is a
    `KeyError`."""
    values = list(_read_fields(turn))
    for name, value in changes.items():
        values[_FIELD_AT[name]] = value
    return Turn(*values)


def new_messages(turn: Turn) -> list[Message]:
    """What a delta upstream needs from this turn when nobody tracked what it was sent before.

    For a full history that is what came after the agent last spoke: the new user message, or the results of the
    client tools it asked for. The conversation store knows better and trims turns itself before this is reached.
    """
    if turn.history == "delta":
        return turn.messages
    for index in range(len(turn.messages) - 1, -1, -1):
        if turn.messages[index].role == "assistant":
            return turn.messages[index + 1:]
    return turn.messages
