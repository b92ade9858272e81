"""Request shapes several dialects share on the wire, as pydantic models: one model, so a bad body gets the same
words whichever dialect's client sent it (`validation` turns pydantic's errors into those words).

A tool call an assistant message carries, `{"id", "type": "function", "function": {"name", "arguments"}}`, is
Chat Completions' shape, which AG-UI, AG-Kit and the eval platform's `AgentRequest` took over whole.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class FunctionCall(BaseModel):
    """What a tool call calls: the tool's name, and its arguments as a JSON string."""

    model_config = ConfigDict(extra="ignore")

    name: str
    arguments: str


class ToolCallModel(BaseModel):
    """A tool call of an assistant message, as its client sends it back."""

    model_config = ConfigDict(extra="ignore")

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall
