"""The eval platform's response contract: what `agent-gateway check` holds an agent's reply to, and the tests our
own encoder's.

A port of `backend/app/models/agent_contract.py` in Connexity-AI/connexity (models and the one validator, as of
02f4299, where the file last changed in 0e85064); the platform is not installable, so this copy is what replies are
checked against.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, model_validator


class TurnRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class ToolCallFunction(BaseModel):
    name: str
    arguments: str


class ToolCall(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: ToolCallFunction
    tool_result: Any | None = None


class ChatMessage(BaseModel):
    role: TurnRole
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class TokenUsage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class AgentResponse(BaseModel):
    messages: list[ChatMessage]
    model: str | None = None
    provider: str | None = None
    usage: TokenUsage | None = None
    metadata: dict[str, object] | None = None

    @model_validator(mode="after")
    def _last_message_must_be_assistant(self) -> AgentResponse:
        if self.messages and self.messages[-1].role != TurnRole.ASSISTANT:
            raise ValueError("AgentResponse.messages must end with an assistant message")
        return self
