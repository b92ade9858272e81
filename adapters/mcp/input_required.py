"""A run that waits for a human, as 2026-07-28's `input_required` (multi round-trip requests, SEP-2322): a client
that declared `elicitation` is asked each open interrupt as an `elicitation/create` form, and answers by calling
the same tool again with `inputResponses` and the `requestState` it was given.

```
interrupt (id, message, responseSchema, toolCallId)
    ──▶ inputRequests {<interrupt id>: {method: elicitation/create, params: {mode: form, message, requestedSchema}}}
        requestedSchema: the interrupt's responseSchema when it is a flat form MCP allows;
                         else {approve: boolean} for a tool call to approve; else {answer: string}
        requestState:    v1.<base64url JSON {tool, conversation, asked: {<interrupt id>: schema|approval|answer}}>
a link to open (an interrupt whose payload is a URL), to a client that declared elicitation.url:
        {method: elicitation/create, params: {mode: url, message, url, elicitationId}}; its action comes back as
        the payload {action} (cancel: cancelled)
retry: inputResponses {<interrupt id>: {action, content}} ──▶ Resume(interrupt id, status, payload)
        accept   resolved: the content (approval: {approved: content.approve}; answer: content.answer)
        decline  an approval: resolved {approved: false}; else cancelled
        cancel   cancelled
```
`requestState` is the caller's to forge, and is not signed: it holds only what the caller was given (its
conversation's id, the ids of the interrupts it was asked) and how each question was put. A forged one reaches
nothing the caller could not reach anyway: the conversation is looked up under the route and the caller's principal,
and an answer is taken only for an interrupt that conversation has open (`ConversationMapper`).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from gateway.core.turn import Resume

from .url_elicitation import url_request, with_link

STATE_PREFIX = "v1."
MAX_STATE = 8192
"""Characters of `requestState` read: what the gateway writes is far shorter."""

SCHEMA, APPROVAL, ANSWER, URL = "schema", "approval", "answer", "url"
"""How an interrupt was asked: in its own schema, as a yes or no, as one line of text, or as a link to open."""
APPROVAL_FORM = {"type": "object", "properties": {"approve": {
    "type": "boolean", "title": "Approve", "description": "Let the agent go ahead"}}, "required": ["approve"]}
ANSWER_FORM = {"type": "object", "properties": {"answer": {
    "type": "string", "title": "Answer", "description": "Your answer to the agent"}}, "required": ["answer"]}

FORM_KEYS = ("$schema", "type", "properties", "required")
"""What a form's schema says at its top (a title or description the interrupt's schema has is left out)."""
STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
FIELD_KEYS = {
    "string": frozenset({"type", "title", "description", "minLength", "maxLength", "format", "default", "enum",
                         "enumNames", "oneOf"}),
    "number": frozenset({"type", "title", "description", "minimum", "maximum", "default"}),
    "integer": frozenset({"type", "title", "description", "minimum", "maximum", "default"}),
    "boolean": frozenset({"type", "title", "description", "default"}),
    "array": frozenset({"type", "title", "description", "minItems", "maxItems", "items", "default"}),
}
"""What an elicitation form's field may say, by its type (`PrimitiveSchemaDefinition`): no nesting, no `$ref`."""


class InvalidAnswer(ValueError):
    """A retry whose `inputResponses` or `requestState` the gateway cannot read as answers to what it asked."""


def input_required(interrupts: list[dict[str, Any]], tool: str, conversation_id: str | None, *,
                   links: bool = False) -> dict[str, Any]:
    """The result that asks the client each interrupt, and the state its retry echoes: a link to open in URL mode
    to a client that declared it (`links`)."""
    requests: dict[str, Any] = {}
    asked: dict[str, str] = {}
    for interrupt in interrupts:
        by_link = url_request(interrupt) if links else None
        if by_link is not None:
            asked[interrupt["id"]] = URL
            requests[interrupt["id"]] = {"method": "elicitation/create", "params": by_link}
            continue
        kind, schema = _form(interrupt)
        asked[interrupt["id"]] = kind
        requests[interrupt["id"]] = {"method": "elicitation/create", "params": {
            "mode": "form", "message": with_link(interrupt.get("message"), interrupt.get("url"))
            or "The agent waits for your answer.",
            "requestedSchema": schema}}
    state = orjson.dumps({"tool": tool, "conversation": conversation_id, "asked": asked})
    return {"inputRequests": requests,
            "requestState": STATE_PREFIX + base64.urlsafe_b64encode(state).decode().rstrip("=")}


def _form(interrupt: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    schema = interrupt.get("responseSchema")
    if isinstance(schema, dict) and elicitable(schema):
        return SCHEMA, {key: value for key, value in schema.items() if key in FORM_KEYS}
    if interrupt.get("toolCallId"):
        return APPROVAL, APPROVAL_FORM
    return ANSWER, ANSWER_FORM


def elicitable(schema: Any) -> bool:
    """Whether a schema is a form an MCP client can show: an object of named primitive fields (strings, numbers,
    booleans, enums of strings), as `ElicitRequestFormParams.requestedSchema` restricts it."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    if set(schema) - {*FORM_KEYS, "title", "description"}:
        return False
    properties, required = schema.get("properties"), schema.get("required", [])
    if not isinstance(properties, dict) or not properties or not isinstance(required, list):
        return False
    return all(isinstance(field, dict) and _primitive(field) for field in properties.values()) and \
        all(name in properties for name in required)


def _primitive(field: dict[str, Any]) -> bool:
    kind = field.get("type")
    allowed = FIELD_KEYS.get(kind) if isinstance(kind, str) else None
    if allowed is None or set(field) - allowed:
        return False
    if kind == "string":
        return field.get("format", "email") in STRING_FORMATS and _strings(field.get("enum", [])) and \
            _titled(field.get("oneOf", []))
    if kind == "array":
        items = field.get("items")
        return isinstance(items, dict) and (
            (items.get("type") == "string" and set(items) == {"type", "enum"} and _strings(items["enum"]))
            or (set(items) == {"anyOf"} and _titled(items["anyOf"])))
    return True


def _strings(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(value, str) for value in values)


def _titled(options: Any) -> bool:
    return isinstance(options, list) and all(
        isinstance(option, dict) and set(option) == {"const", "title"} and isinstance(option["const"], str)
        for option in options)


def answers(tool: str, conversation_id: str | None, responses: Any, state: Any) -> tuple[str, list[Resume]] | None:
    """The conversation a retry continues and its answers to the interrupts it was asked; None for a call that is
    no retry (neither `inputResponses` nor `requestState`)."""
    if responses is None and state is None:
        return None
    asked = _read_state(state, tool, conversation_id)
    if not isinstance(responses, dict):
        raise InvalidAnswer("params.inputResponses must answer each of the inputRequests, by its key")
    unknown = [key for key in responses if key not in asked["asked"]]
    if unknown:
        raise InvalidAnswer(f"params.inputResponses answers what was not asked: {', '.join(map(str, unknown[:5]))}")
    missing = [key for key in asked["asked"] if key not in responses]
    if missing:
        raise InvalidAnswer(f"params.inputResponses is missing the answer to: {', '.join(missing[:5])}")
    return asked["conversation"], [_resume(key, kind, responses[key]) for key, kind in asked["asked"].items()]


def _read_state(state: Any, tool: str, conversation_id: str | None) -> dict[str, Any]:
    if not isinstance(state, str) or not state.startswith(STATE_PREFIX) or len(state) > MAX_STATE:
        raise InvalidAnswer("params.requestState must be the one the input_required result gave, as it was")
    encoded = state[len(STATE_PREFIX):]
    try:
        read = orjson.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (binascii.Error, ValueError):
        raise InvalidAnswer("params.requestState is not one the gateway gave") from None
    asked = read.get("asked") if isinstance(read, dict) else None
    conversation = read.get("conversation") if isinstance(read, dict) else None
    if not isinstance(asked, dict) or not asked or not isinstance(conversation, str) or \
            not all(kind in (SCHEMA, APPROVAL, ANSWER, URL) for kind in asked.values()):
        raise InvalidAnswer("params.requestState is not one the gateway gave")
    if read.get("tool") != tool:
        raise InvalidAnswer(f"params.requestState was given for another tool than {tool}")
    if conversation_id is not None and conversation_id != conversation:
        raise InvalidAnswer("params.requestState was given for another conversation than "
                            "arguments.conversation_id")
    return {"conversation": conversation, "asked": asked}


def _resume(key: str, kind: str, response: Any) -> Resume:
    """One answer as the canonical resume: an approval by the form's boolean, a text by its one field."""
    action = response.get("action") if isinstance(response, dict) else None
    if action not in ("accept", "decline", "cancel"):
        raise InvalidAnswer(f"params.inputResponses.{key}.action must be accept, decline or cancel")
    if action == "cancel":
        return Resume(key, "cancelled")
    if kind == URL:  # an action alone, as the link's interrupt takes it back (`url_elicitation.url_answer`)
        return Resume(key, payload={"action": action})
    if action == "decline" and kind != APPROVAL:
        return Resume(key, "cancelled")
    if action == "decline":
        return Resume(key, payload={"approved": False})
    content = response.get("content")
    if not isinstance(content, dict):
        raise InvalidAnswer(f"params.inputResponses.{key}.content must hold the form's fields")
    if kind == APPROVAL:
        if not isinstance(content.get("approve"), bool):
            raise InvalidAnswer(f"params.inputResponses.{key}.content.approve must be true or false")
        return Resume(key, payload={"approved": content["approve"]})
    if kind == ANSWER:
        if not isinstance(content.get("answer"), str):
            raise InvalidAnswer(f"params.inputResponses.{key}.content.answer must be a string")
        return Resume(key, payload=content["answer"])
    return Resume(key, payload=content)
