"""The eval platform's rules for a reply to `POST /agent/respond`: a JSON `AgentResponse` whose last message is the
assistant's. An HTTP error status is the agent's own way to fail a turn (the platform records it as an error), so
only a 200's body is held to the contract."""

from __future__ import annotations

import orjson
from pydantic import ValidationError

from gateway.core.conformance import Answer, Violation, preview
from gateway.core.validation import explain

from .contract import AgentResponse


def judge(answer: Answer) -> list[Violation]:
    found: list[Violation] = []
    if answer.status != 200:
        return found
    body = preview(answer.body) if answer.body else None
    content_type = answer.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        found.append(Violation("convention-content-type", f"a reply is application/json, got {content_type!r}"))
    try:
        value = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        found.append(Violation("json", "the reply is not JSON", body, 0))
        return found
    try:
        AgentResponse.model_validate(value)
    except ValidationError as exc:
        for field, message in explain(exc, value):
            where = f"{field}: " if field else ""
            found.append(Violation("agent-response", f"{where}{message}", body, 0))
    return found
