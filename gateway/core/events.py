"""The canonical events of one agent run: what every dialect's stream is decoded into.

Decoders guarantee a well formed stream (see `gateway.core.repair.RunRepair`): one `RunStarted` first, starts before
deltas and ends per id, and exactly one terminal event (`RunFinished` or `RunError`) last. Encoders rely on that
and stay simple.

Events are plain slotted dataclasses: they are created once per upstream frame on the hot path, so they carry no
validation and no methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["success", "interrupt", "cancelled"]


@dataclass(slots=True)
class RunStarted:
    thread_id: str | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    message_id: str | None = None
    """Id the upstream gave the assistant message it is producing (Vercel `start.messageId`), if any."""


@dataclass(slots=True)
class RunFinished:
    outcome: Outcome = "success"
    result: Any = None


@dataclass(slots=True)
class RunError:
    message: str
    code: str | None = None


@dataclass(slots=True)
class TextStart:
    message_id: str
    role: str = "assistant"


@dataclass(slots=True)
class TextDelta:
    message_id: str
    delta: str


@dataclass(slots=True)
class TextEnd:
    message_id: str


@dataclass(slots=True)
class ReasoningStart:
    message_id: str


@dataclass(slots=True)
class ReasoningDelta:
    message_id: str
    delta: str


@dataclass(slots=True)
class ReasoningEnd:
    message_id: str


@dataclass(slots=True)
class ToolCallStart:
    tool_call_id: str
    name: str
    parent_message_id: str | None = None


@dataclass(slots=True)
class ToolCallArgs:
    tool_call_id: str
    delta: str


@dataclass(slots=True)
class ToolCallEnd:
    tool_call_id: str


@dataclass(slots=True)
class ToolResult:
    """A tool's output. `content` is a string, or any JSON value where the dialect carries structure (Vercel)."""

    tool_call_id: str
    content: Any
    message_id: str | None = None
    is_error: bool = False


@dataclass(slots=True)
class Interrupt:
    """The run pauses for a human. `tool_call_id` is set when it asks to approve a tool call."""

    id: str
    reason: str = ""
    message: str | None = None
    payload: Any = None
    tool_call_id: str | None = None
    response_schema: Any = None


@dataclass(slots=True)
class StateSnapshot:
    snapshot: Any


@dataclass(slots=True)
class StateDelta:
    patch: list[Any]
    """An RFC 6902 JSON Patch."""


@dataclass(slots=True)
class MessagesSnapshot:
    messages: list[Any]
    """Canonical `gateway.core.turn.Message` objects."""


@dataclass(slots=True)
class StepStarted:
    name: str | None = None


@dataclass(slots=True)
class StepFinished:
    name: str | None = None


@dataclass(slots=True)
class Data:
    """Named application data: Vercel `data-<name>` parts, AG-UI `CUSTOM` events."""

    name: str
    data: Any
    id: str | None = None
    transient: bool = False


@dataclass(slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    model: str | None = None
    provider: str | None = None


@dataclass(slots=True)
class Raw:
    """A dialect event with no canonical meaning, kept so that a client of the same dialect still gets it."""

    dialect: str
    event: dict[str, Any] = field(default_factory=dict)


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
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolResult
    | Interrupt
    | StateSnapshot
    | StateDelta
    | MessagesSnapshot
    | StepStarted
    | StepFinished
    | Data
    | Usage
    | Raw
)
