"""`GET /v1/models`, where an OpenAI client lists the models it may name: each route the caller may use, a model."""

from __future__ import annotations

from typing import Any

from gateway.core.capabilities import AgentDescription

MODELS_PATH = "/v1/models"


def models(routes: list[AgentDescription]) -> dict[str, Any]:
    """The routes as OpenAI lists models."""
    return {"object": "list", "data": [{"id": route.name, "object": "model", "created": 0,
                                        "owned_by": "agent-gateway"} for route in routes]}
