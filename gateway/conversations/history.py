"""What the upstream is sent each turn, from what the client sent and what the store holds (the table in
`mapper`'s docstring), and what "extends" means there: a history read as the turns an agent hears (`heard`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from gateway.conversations.conversation import Conversation
from gateway.core.ids import new_id
from gateway.core.turn import History, Message, Turn, new_messages

log = logging.getLogger("agent_gateway.conversation")

FULL_ASKED = "the upstream takes the whole history each turn: the client's, as sent"
DECISION = {"full": "whole history", "delta": "delta"}


def sent_upstream(turn: Turn, conversation: Conversation, stored: bool, upstream: History,
                  transparent: bool = False) -> tuple[list[Message], list[Message], History, str]:
    """(what the upstream is sent, the whole history it will have seen, which of the two the first is, why)."""
    if turn.history == "delta":
        known = conversation.history + turn.messages
        if upstream == "full":
            return known, known, "full", ("the client sends only what is new and the upstream takes the whole "
                                          "history: the stored history with the new messages")
        return turn.messages, known, "delta", "client and upstream both keep the history: the new messages"
    if upstream == "full":
        return turn.messages, turn.messages, "full", FULL_ASKED
    if not stored and turn.conversation_id is None:
        # a new upstream conversation: it has heard nothing yet
        return turn.messages, turn.messages, "full", "a new upstream conversation, given the client's history"
    if not stored:
        new = new_messages(turn)
        answers = turn.resume or any(m.role == "tool" for m in new)
        if answers or not heard(turn.messages[:len(turn.messages) - len(new)]):
            # What is new answers the upstream (a tool's result, a resume): its conversation is the one that
            # asked, reached by the derived id even when the store lost it.
            return new, turn.messages, "delta", ("no stored conversation for this id: what is new since the "
                                                 "agent last spoke")
        # A history the gateway never saw (an eval's golden transcript, a client's own): a new upstream
        # conversation is given all of it. Sent into the derived one, only its last message would be heard.
        log.info("conversation %s: a history of %d messages the gateway has not seen; starting a new upstream "
                 "conversation with it", conversation.key, len(turn.messages))
        if not transparent:
            conversation.upstream_id = new_id("conv")
        return turn.messages, turn.messages, "full", ("a history the gateway has not seen: a new upstream "
                                                      "conversation, given all of it")
    client, heard_before = heard(turn.messages), heard(conversation.history)
    seen = _common_prefix(client, heard_before)
    if seen == len(heard_before):
        after = client[seen - 1].end if seen else 0
        return ([m for m in turn.messages[after:] if m.role not in _UNHEARD], turn.messages, "delta",
                f"the upstream keeps the history and has heard {seen} of these turns: the rest")
    # The client's history forks from what the upstream has heard: a regenerated or edited turn. A new
    # upstream conversation, given the whole history, answers it; appending it would answer another question.
    log.info("conversation %s: the client's history differs from the upstream's at turn %d of %d; "
             "starting a new upstream conversation", conversation.key, seen, len(client))
    conversation.upstream_id = new_id("conv")
    conversation.interrupts = {}
    conversation.pending_tools = {}
    return turn.messages, turn.messages, "full", (f"fork: the client's history differs from what the upstream "
                                                  f"heard at turn {seen + 1}: a new upstream "
                                                  f"conversation, given the whole history")


def needs_history(turn: Turn, upstream: History) -> bool:
    """Whether the turn cannot be put to the upstream without the conversation the store holds: a delta client's
    turn to an upstream that must be sent the whole history, answers to interrupts only the store can place, or a
    turn that continues a stored response (which must not be taken for a first turn)."""
    return (turn.history == "delta" and upstream == "full") or bool(turn.resume) or turn.follows is not None


def says_anything_new(turn: Turn, conversation: Conversation, stored: bool) -> bool:
    """Whether a turn holds more than what the upstream has heard: a new message or a tool's result."""
    if turn.history == "delta" or not stored:
        return bool(turn.messages) if turn.history == "delta" else bool(new_messages(turn))
    client = heard(turn.messages)
    return _common_prefix(client, heard(conversation.history)) < len(client)


_UNHEARD = frozenset({"reasoning", "activity"})
"""Roles of what a client shows but an agent is not told back: its reasoning, activity messages."""


@dataclass(frozen=True, slots=True)
class Heard:
    """One turn of a conversation as an agent hears it, and where it ends in the client's list of messages."""

    signature: tuple[Any, ...]
    end: int


def heard(messages: list[Message]) -> list[Heard]:
    """A history as the turns an agent hears, however a client rebuilt it: ids are ignored, consecutive assistant
    messages are one turn (a client may split one around a tool call or a data part, or join several), whitespace
    between its pieces does not count, a tool result is known by its call, and reasoning and activity are left out.
    """
    out: list[Heard] = []
    text: list[str] = []
    calls: list[str] = []
    end = 0

    def close() -> None:
        out.append(Heard(("assistant", "".join("".join(text).split()), tuple(calls)), end))
        text.clear()
        calls.clear()

    speaking = False
    for index, message in enumerate(messages):
        if message.role in _UNHEARD:
            continue
        if message.role == "assistant":
            speaking = True
            text.append(message.text)
            calls.extend(c.id for c in message.tool_calls)
            end = index + 1
            continue
        if speaking:
            close()
            speaking = False
        if message.role == "tool":
            out.append(Heard(("tool", message.tool_call_id), index + 1))
        else:
            out.append(Heard((message.role, " ".join(message.text.split())), index + 1))
    if speaking:
        close()
    return out


def _common_prefix(client: list[Heard], known: list[Heard]) -> int:
    count = 0
    for left, right in zip(client, known, strict=False):
        if left.signature != right.signature:
            break
        count += 1
    return count
