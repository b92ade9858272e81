"""Interrupts as LangGraph writes them: `{"id", "value", "response_schema"?}` under `__interrupt__`.

A graph's `interrupt(value)` puts any JSON value there. The gateway writes a canonical interrupt as a value holding
its `reason`, `message`, `tool_call_id`, `payload` and `expires_at`, and reads that shape back (and `expires_at` in
a graph's own object); any other value is the interrupt's payload, its text (a string, or a `question` / `message` /
`description`) its message.

LangChain's human-in-the-loop middleware (`HumanInTheLoopMiddleware`) asks a review of the tool calls it stops
(`{"action_requests", "review_configs"}`) and reads its answer as `{"decisions": [...]}`, one per action. It reads as
an approval whose schema takes those decisions or a yes or a no (`review_schema`); a yes or a no, as clients that
only approve answer (useChat, A2A), is written as the decisions (`answer_of`).
"""

from __future__ import annotations

from typing import Any

from gateway.core import events as canonical
from gateway.core.codec import drop_none
from gateway.core.decoding import str_or_none
from gateway.core.ids import new_id
from gateway.core.turn import Resume, approves

GENERIC_REASON = "interrupt"
"""The reason of an interrupt whose value gives none: LangGraph's interrupts have no reason of their own."""

_OWN_KEYS = frozenset({"reason", "message", "tool_call_id", "payload", "expires_at"})
REVIEWED = "tool_approval"
"""The reason of a review's interrupt."""
REVIEW = "HITLResponse"
"""The title of the schema of a review's answer (`review_schema`): what marks an interrupt as a review."""
_APPROVAL_KEYS = frozenset({"approved", "reason"})


def interrupt_of(item: dict[str, Any]) -> canonical.Interrupt:
    raw_id = item.get("id", item.get("interrupt_id"))
    interrupt_id = raw_id if isinstance(raw_id, str) and raw_id else new_id("int").replace("_", "-", 1)
    value = item.get("value")
    schema = item.get("response_schema")
    expires = str_or_none(value.get("expires_at")) if isinstance(value, dict) else None
    if isinstance(value, dict) and isinstance(value.get("reason"), str) and value.keys() <= _OWN_KEYS:
        return canonical.Interrupt(interrupt_id, reason=value["reason"], message=str_or_none(value.get("message")),
                                   payload=value.get("payload"), tool_call_id=str_or_none(value.get("tool_call_id")),
                                   response_schema=schema, expires_at=expires)
    if isinstance(value, dict) and isinstance(value.get("action_requests"), list):
        first = next((a for a in value["action_requests"] if isinstance(a, dict)), {})
        schema = schema if schema is not None else review_schema(len(value["action_requests"]))
        return canonical.Interrupt(interrupt_id, reason=REVIEWED, message=str_or_none(first.get("description")),
                                   payload=value, response_schema=schema, expires_at=expires)
    message = value if isinstance(value, str) else \
        next((text for key in ("question", "message", "description")
              if isinstance(value, dict) and isinstance(text := value.get(key), str)), None)
    return canonical.Interrupt(interrupt_id, reason=GENERIC_REASON, message=message, payload=value,
                               response_schema=schema, expires_at=expires)


def interrupt_item(event: canonical.Interrupt) -> dict[str, Any]:
    """A canonical interrupt as a LangGraph client reads one under `__interrupt__`: a graph's own value as the
    graph wrote it (what `interrupt_of` read as nothing more than a payload), any other in the gateway's shape."""
    payload = event.payload
    graphs_own = (event.reason in ("", GENERIC_REASON) and event.tool_call_id is None and payload is not None) or \
        (isinstance(payload, dict) and isinstance(payload.get("action_requests"), list))
    if not graphs_own:
        value = drop_none({"reason": event.reason or GENERIC_REASON, "message": event.message,
                           "tool_call_id": event.tool_call_id, "payload": payload, "expires_at": event.expires_at})
    elif event.expires_at is not None and isinstance(payload, dict):
        value = {**payload, "expires_at": event.expires_at}  # when it lapses, beside what the graph asked
    else:
        value = payload  # not an object: no room for when it lapses (the encoder counts it)
    return drop_none({"id": event.id, "value": value, "response_schema": event.response_schema})




def review_schema(actions: int) -> dict[str, Any]:
    """What a review's answer may be: the middleware's decisions, one per action; or a yes or a no (and why),
    which `answer_of` writes as the decisions."""
    return {"title": REVIEW, "type": "object", "properties": {
        "approved": {"type": "boolean"}, "reason": {"type": "string"},
        "decisions": {"type": "array", "minItems": actions, "maxItems": actions,
                      "items": {"type": "object", "required": ["type"]}}}}


def answer_of(resume: Resume) -> Any:
    """An answer as the graph reads it: a yes or a no to a review, as its decisions (`reject` with the reason);
    anything else as the client gave it, a cancelled one as `{"cancelled": true}`."""
    schema = resume.response_schema
    payload = resume.payload
    if isinstance(schema, dict) and schema.get("title") == REVIEW and (
            resume.status == "cancelled" or isinstance(payload, bool)
            or (isinstance(payload, dict) and "approved" in payload and payload.keys() <= _APPROVAL_KEYS)):
        actions = (schema.get("properties") or {}).get("decisions", {}).get("minItems", 1)
        reason = payload.get("reason") if isinstance(payload, dict) else None
        decision = {"type": "approve"} if approves(resume) else \
            drop_none({"type": "reject", "message": reason if isinstance(reason, str) and reason else None})
        return {"decisions": [decision] * actions}
    return payload if resume.status == "resolved" else {"cancelled": True}
