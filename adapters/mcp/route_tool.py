"""A route as the MCP tool its clients call: how `tools/list` describes it (in either era), and a call's arguments
read in the words of whoever called it. Arguments the tool cannot run with are the tool's error, not the protocol's
(2025-11-25, SEP-1303), so that the model that called it reads what to give and calls again: `errors.reply` answers
`InvalidArguments` with a result whose `isError` is true."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.core.capabilities import AgentDescription
from gateway.core.errors import InvalidRequest

from . import tasks

MESSAGE_SAYS = "what the user says to the agent, as a text"
CONVERSATION_SAYS = "the conversation to continue, as a text a result named"

TOOL_SCHEMA = {"type": "object", "properties": {
    "message": {"type": "string", "description": "What the user says to the agent"},
    "conversation_id": {"type": "string", "description": "The conversation to continue, as a result named it; "
                                                         "none for a new one"}},
    "required": ["message"]}


def described(route: AgentDescription, version: Any = None) -> dict[str, Any]:
    """The route's tool as `tools/list` names it to a client of the protocol `version`."""
    tool = {"name": route.name, "description": route.description or f"The agent {route.name}",
            "inputSchema": TOOL_SCHEMA}
    return {**tool, "execution": tasks.EXECUTION} if tasks.offered(version) else tool


class InvalidArguments(InvalidRequest):
    """A tool called with arguments it cannot run with."""


@dataclass(frozen=True, slots=True)
class Arguments:
    message: str
    conversation_id: str | None = None


def tool_arguments(tool: str, given: dict[str, Any]) -> Arguments:
    """The arguments of a call of the route's tool `tool`: a text `message`, and maybe a text `conversation_id`."""
    message, conversation = given.get("message"), given.get("conversation_id")
    if message is None:
        raise InvalidArguments(f"The tool {tool} was called without `message`: give {MESSAGE_SAYS}.")
    if not isinstance(message, str):
        raise InvalidArguments(f"The tool {tool}'s `message` must be {MESSAGE_SAYS}, not {_kind(message)}.")
    if conversation is not None and not isinstance(conversation, str):
        raise InvalidArguments(f"The tool {tool}'s `conversation_id` must be {CONVERSATION_SAYS}, not "
                               f"{_kind(conversation)}.")
    return Arguments(message, conversation)


def _kind(value: Any) -> str:
    """A JSON value's kind, as a person names it."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"
