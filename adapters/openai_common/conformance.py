"""What a client of either OpenAI API asks of a reply with an error status: an error object, `{error: {message,
type, param, code}}`, as the `openai` SDKs raise it."""

from __future__ import annotations

import orjson

from gateway.core.conformance import Answer, Violation, preview


def error_body(answer: Answer, named: str) -> list[Violation]:
    """The body of a reply with an error status; `named` is what the dialect's rules call its error object."""
    try:
        value = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        value = None
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return []
    return [Violation("error-object", f"an HTTP {answer.status} holds {named} {{error: {{message, type, param, "
                                      "code}}}", preview(answer.body) if answer.body else None)]
