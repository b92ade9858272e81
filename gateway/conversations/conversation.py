"""A conversation as the gateway keeps it between turns, how it is stored, and one turn in flight (`Exchange`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from gateway.core.turn import Message, Turn


@dataclass(slots=True)
class Conversation:
    key: str
    upstream_id: str
    history: list[Message] = field(default_factory=list)
    pending_tools: dict[str, str] = field(default_factory=dict)
    """Client tool calls waiting for a result: id -> tool name."""
    interrupts: dict[str, str | None] = field(default_factory=dict)
    """Interrupts waiting for a resume: id -> the tool call they are about, if any."""
    state: Any = None
    upstream_variant: str | None = None
    """What the upstream showed itself to be (Inkeep, by its response headers), for the next turn on any replica."""
    interrupted_run: str | None = None
    """The client's id of the run that ended in the open `interrupts`: a client that answers a run rather than
    each interrupt (A2A continues a task) resumes them all by naming it."""
    answered: list[str] = field(default_factory=list)
    """The last interrupts (and interrupted runs) the client answered: an answer sent again (a retry, a double
    click) is dropped rather than passed on or read as something the user said."""
    interrupt_schemas: dict[str, Any] = field(default_factory=dict)
    """The `responseSchema` of each open interrupt that declared one: what its answer must be."""
    interrupt_states: dict[str, Any] = field(default_factory=dict)
    """The `upstream_state` of each open interrupt that has one: what the upstream needs back with its answer."""
    upstream: str = ""
    """Which of its route's upstreams heard the conversation last (a fallback's name; empty: the route's own): one
    that did not is given the whole history in a conversation of its own."""
    continued: bool = False
    """A later run continued this record of a chain of runs (`Turn.chains_runs`): an upstream that keeps the
    history has moved past it, so continuing from here again is a fork."""
    transcript_key: str | None = None
    """Where a run of a chain's record is also kept, for a client that sends its whole transcript back instead of
    the run's id: deleted with it."""


@dataclass(slots=True)
class Exchange:
    """One turn in flight: the conversation as it was, and what goes upstream."""

    route: str
    principal: str
    conversation: Conversation
    client_turn: Turn
    upstream_turn: Turn
    known_history: list[Message]
    """The history the upstream will have seen once it reads this turn: the base the run's messages extend."""
    stored: bool
    upstream_variant: str | None
    history_lost: bool = False
    """The store failed this turn (it could not be read, or the turn not saved): the access log says so."""
    decision: str = ""
    """What the upstream was sent this turn and why, in a sentence (the inspector shows it)."""
    followed: Conversation | None = None
    """The record of a chain's run this turn continues, as it was read: marked continued once this turn is stored,
    when the upstream keeps the history."""


_STORED = TypeAdapter(Conversation)
"""How a conversation is stored: its dataclasses as a JSON object per dataclass, keys named as the fields. Reading a
record, a field it lacks takes its default and a key no field has is ignored; anything else wrong is a ValueError."""


def encode_conversation(conversation: Conversation) -> bytes:
    return _STORED.dump_json(conversation)


def decode_conversation(raw: bytes) -> Conversation:
    return _STORED.validate_json(raw)
