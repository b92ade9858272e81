"""The canonical events of one agent run: what every dialect's stream is decoded into.

Decoders guarantee a well formed stream (see `gateway.core.repair.RunRepair`): one `RunStarted` first, starts before
deltas and ends per id, and exactly one terminal event (`RunFinished` or `RunError`) last. Encoders rely on that
and stay simple.

Events are plain slotted dataclasses: they are created once per upstream frame on the hot path, so they carry no
validation and no methods. A field with a default is keyword-only (`TextStart(message_id, role="user")`): what an
event says past its required fields is named where it is made.

Every event may carry `metadata`, an open JSON object (AG-UI's `metadata` on any event; the key `ag-ui` is
reserved): a client that keeps it folds it into what the event builds, a message or a tool call. Content an agent's
subagent produced names it on the event that opens it (`subagent_run_id`); its deltas and end belong to the same
subagent.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

Outcome = Literal["success", "interrupt", "cancelled"]
StopReason = Literal["length", "content_filter"]
"""Why a finished run's answer stopped short of where its agent would have ended it: the model's output limit, or
its provider's content filter."""
Metadata = dict[str, Any] | None


@dataclass(slots=True, kw_only=True)
class RunStarted:
    thread_id: str | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    """The run this one branches from (AG-UI `parentRunId`): a retry or an edit that forks the conversation."""
    message_id: str | None = None
    """Id the upstream gave the assistant message it is producing (Vercel `start.messageId`), if any."""
    metadata: Metadata = None


@dataclass(slots=True, kw_only=True)
class RunFinished:
    outcome: Outcome = "success"
    result: Any = None
    metadata: Metadata = None
    stop_reason: StopReason | None = None
    """The answer was cut short (None: it is whole): a truncated or filtered answer is not a plain success."""


@dataclass(slots=True)
class RunError:
    message: str
    _: KW_ONLY
    code: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class TextStart:
    message_id: str
    _: KW_ONLY
    role: str = "assistant"
    subagent_run_id: str | None = None
    name: str | None = None
    """The author's display name, where a role has several participants."""
    metadata: Metadata = None
    refusal: bool = False
    """The message is the model declining to answer (OpenAI's `refusal`): its words, which a dialect without a
    place for refusals shows as the assistant's text."""


@dataclass(slots=True)
class TextDelta:
    message_id: str
    delta: str
    _: KW_ONLY
    metadata: Metadata = None


@dataclass(slots=True)
class TextEnd:
    message_id: str
    _: KW_ONLY
    metadata: Metadata = None


@dataclass(slots=True)
class ReasoningStart:
    message_id: str
    _: KW_ONLY
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class ReasoningDelta:
    message_id: str
    delta: str
    _: KW_ONLY
    metadata: Metadata = None


@dataclass(slots=True)
class ReasoningEnd:
    message_id: str
    _: KW_ONLY
    metadata: Metadata = None


@dataclass(slots=True)
class EncryptedValue:
    """Reasoning a model keeps encrypted (AG-UI `REASONING_ENCRYPTED_VALUE`), attached to the reasoning message or
    tool call `entity_id` it belongs to: the agent needs it back next turn, and nobody else can read it."""

    subtype: Literal["message", "tool-call"]
    entity_id: str
    value: str
    _: KW_ONLY
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class ToolCallStart:
    tool_call_id: str
    name: str
    _: KW_ONLY
    parent_message_id: str | None = None
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class ToolCallArgs:
    tool_call_id: str
    delta: str
    _: KW_ONLY
    metadata: Metadata = None


@dataclass(slots=True)
class ToolCallEnd:
    tool_call_id: str
    _: KW_ONLY
    metadata: Metadata = None


@dataclass(slots=True)
class ToolResult:
    """A tool's output. `content` is a string; any JSON value where the dialect carries structure (Vercel); or a list
    of `gateway.core.turn.ContentPart` (AG-UI's content parts: text, images, files)."""

    tool_call_id: str
    content: Any
    _: KW_ONLY
    message_id: str | None = None
    is_error: bool = False
    subagent_run_id: str | None = None
    denied: bool = False
    """The call never ran: the user said no to it (an error, where a dialect has no word for a denial)."""
    metadata: Metadata = None


@dataclass(slots=True)
class Interrupt:
    """The run pauses for a human. `tool_call_id` is set when it asks to approve a tool call."""

    id: str
    _: KW_ONLY
    reason: str = ""
    message: str | None = None
    payload: Any = None
    tool_call_id: str | None = None
    response_schema: Any = None
    expires_at: str | None = None
    """When the question lapses (ISO 8601); an expired interrupt can only be cancelled."""
    subagent_run_id: str | None = None
    metadata: Metadata = None
    upstream_state: Any = None
    """What the upstream's dialect needs back with the answer to go on with the run (MCP's `requestState` and the
    call it retries): kept with the open interrupt by the conversation store, given back on the `Resume`, never
    sent to a client (JSON)."""


@dataclass(slots=True)
class InterruptResolved:
    """An interrupt of this run answered within it (an AI SDK 7 approval the agent decided itself): the run does not
    wait for it any more."""

    interrupt_id: str
    _: KW_ONLY
    approved: bool = True
    reason: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class StateSnapshot:
    snapshot: Any
    _: KW_ONLY
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class StateDelta:
    patch: list[Any]
    """An RFC 6902 JSON Patch."""
    _: KW_ONLY
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class MessagesSnapshot:
    messages: list[Any]
    """Canonical `gateway.core.turn.Message` objects."""
    _: KW_ONLY
    metadata: Metadata = None


@dataclass(slots=True)
class ActivitySnapshot:
    """A message the client shows that is not chat (a plan, a search's progress), in full: AG-UI's activity
    messages. `replace` false merges it into one the client holds instead."""

    message_id: str
    activity_type: str
    content: dict[str, Any]
    _: KW_ONLY
    replace: bool = True
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class ActivityDelta:
    message_id: str
    activity_type: str
    patch: list[Any]
    """An RFC 6902 JSON Patch of the activity's content."""
    _: KW_ONLY
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class SubagentStarted:
    """An agent the run's agent called runs under its own id; what it says names that id."""

    subagent_run_id: str
    name: str
    _: KW_ONLY
    description: str | None = None
    parent_subagent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class SubagentFinished:
    subagent_run_id: str
    _: KW_ONLY
    result: Any = None
    outcome: Literal["success", "suspended"] | None = None
    interrupt_ids: list[str] | None = None
    """For a suspended subagent: the run's interrupts it waits on."""
    metadata: Metadata = None


@dataclass(slots=True)
class SubagentError:
    """A subagent failed; the run goes on."""

    subagent_run_id: str
    message: str
    _: KW_ONLY
    code: str | None = None
    metadata: Metadata = None


@dataclass(slots=True, kw_only=True)
class StepStarted:
    name: str | None = None
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True, kw_only=True)
class StepFinished:
    name: str | None = None
    subagent_run_id: str | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class Data:
    """Named application data: Vercel `data-<name>` parts, AG-UI `CUSTOM` events, AI SDK 7 `custom` parts
    (`custom`: the name is the part's `kind`, the data its provider metadata)."""

    name: str
    data: Any
    _: KW_ONLY
    id: str | None = None
    transient: bool = False
    subagent_run_id: str | None = None
    custom: bool = False
    metadata: Metadata = None


@dataclass(slots=True, kw_only=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    model: str | None = None
    provider: str | None = None
    reasoning_tokens: int | None = None
    """Part of `output_tokens`, never in addition to it; so are the cached counts of `input_tokens`."""
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    metadata: Metadata = None


@dataclass(slots=True)
class Raw:
    """A dialect event with no canonical meaning, kept so that a client of the same dialect still gets it."""

    dialect: str
    _: KW_ONLY
    event: dict[str, Any] = field(default_factory=dict)
    subagent_run_id: str | None = None
    metadata: Metadata = None


Event = (
    RunStarted
    | RunFinished
    | RunError
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | EncryptedValue
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolResult
    | Interrupt
    | InterruptResolved
    | StateSnapshot
    | StateDelta
    | MessagesSnapshot
    | ActivitySnapshot
    | ActivityDelta
    | SubagentStarted
    | SubagentFinished
    | SubagentError
    | StepStarted
    | StepFinished
    | Data
    | Usage
    | Raw
)
