"""What a client's dialect could not carry of a run, by kind: the counts an encoder keeps (`Encoder.dropped`), which
the metrics label and the inspector shows.

A kind is left out (`reasoning`: the client never sees it) or approximated (`interrupt_as_note`: the client sees it
said another way, and the kind's name says how). A kind named after a family of events (`reasoning`, `state`, ...)
is what a dialect with no word for that family counts each of its events under: an encoder declares those as a drop
map (`drop_map`), and the encoding base writes their handlers.
"""

from __future__ import annotations

from enum import StrEnum

from gateway.core import events


class Dropped(StrEnum):
    """Every kind, in one place: a `StrEnum`, so the metrics labels and the inspector read the same strings."""

    # Left out: a family of events the dialect has no word for, each counted.
    REASONING = "reasoning"
    STATE = "state"
    MESSAGES_SNAPSHOT = "messages_snapshot"
    STEP = "step"
    DATA = "data"
    USAGE = "usage"
    RAW = "raw"
    ACTIVITY = "activity"
    SUBAGENT = "subagent"
    ENCRYPTED_VALUE = "encrypted_value"
    INTERRUPT_RESOLVED = "interrupt_resolved"
    # Left out: a part of an event the dialect carries.
    METADATA = "metadata"
    DATA_ID = "data_id"
    INTERRUPT_EXPIRY = "interrupt_expiry"
    STOP_REASON = "stop_reason"
    SERVER_TOOL = "server_tool"
    UPSTREAM_OTHER_RUN = "upstream_other_run"
    """The upstream's words about another run than the request's (counted by the server, not an encoder)."""
    # Approximated: said another way.
    CANCELLED_AS_FINISH = "cancelled_as_finish"
    TOOL_ERROR_AS_RESULT = "tool_error_as_result"
    INTERRUPT_AS_NOTE = "interrupt_as_note"
    INTERRUPT_AS_TOOL_CALL = "interrupt_as_tool_call"
    INTERRUPT_AS_CUSTOM = "interrupt_as_custom"
    CUSTOM_AS_DATA = "custom_as_data"
    REASONING_FILE_AS_FILE = "reasoning_file_as_file"
    PENDING_TOOL_AS_NOTE = "pending_tool_as_note"


def approximated(kind: str) -> bool:
    """Whether a kind is something said another way (`interrupt_as_tool_call`) rather than left out (`reasoning`).
    Any string: a recording read back holds the kinds of the gateway that made it."""
    return "_as_" in kind


FAMILIES: dict[Dropped, tuple[type, ...]] = {
    Dropped.REASONING: (events.ReasoningStart, events.ReasoningDelta, events.ReasoningEnd),
    Dropped.STATE: (events.StateSnapshot, events.StateDelta),
    Dropped.MESSAGES_SNAPSHOT: (events.MessagesSnapshot,),
    Dropped.STEP: (events.StepStarted, events.StepFinished),
    Dropped.DATA: (events.Data,),
    Dropped.USAGE: (events.Usage,),
    Dropped.RAW: (events.Raw,),
    Dropped.ACTIVITY: (events.ActivitySnapshot, events.ActivityDelta),
    Dropped.SUBAGENT: (events.SubagentStarted, events.SubagentFinished, events.SubagentError),
    Dropped.ENCRYPTED_VALUE: (events.EncryptedValue,),
    Dropped.INTERRUPT_RESOLVED: (events.InterruptResolved,),
}
"""The event types each family kind counts."""


def drop_map(*kinds: Dropped) -> dict[type, Dropped]:
    """A dialect's drop map: each event type of these families, and the kind it is counted under."""
    return {event_type: kind for kind in kinds for event_type in FAMILIES[kind]}
