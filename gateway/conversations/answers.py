"""An answer to an interrupt that declares a `responseSchema`, from a client that answers with a message (A2A: the
next message to the task) and so cannot know the shape the upstream checks it against.

- an answer that fits the schema goes as it is (a data part's data, or the text);
- a yes or a no to a schema that asks for an approval (`{"approved": boolean}`, or a boolean) becomes
  `{"approved": true|false}` (or the boolean), as a useChat approval does;
- anything else is refused before the upstream sees it, naming what is expected: the run still waits for the
  answer, where the upstream would have failed it.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.errors import InvalidRequest
from gateway.core.turn import yes_or_no

_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
                                       "integer": (int,), "number": (int, float), "null": (type(None),)}


class AnswerNotExpected(InvalidRequest):
    """An answer to an interrupt that is not what its schema asks for: the run keeps waiting for one that is."""

    code = "answer_not_expected"


def shaped(payload: Any, schema: Any) -> Any:
    """The answer as the interrupt's schema takes it (raises `AnswerNotExpected`)."""
    if not isinstance(schema, dict):
        return payload
    if isinstance(payload, str) and (yes := yes_or_no(payload)) is not None:
        if schema.get("type") == "boolean":
            return yes
        approved = (schema.get("properties") or {}).get("approved") if schema.get("type") == "object" else None
        if isinstance(approved, dict) and approved.get("type") == "boolean":
            return {"approved": yes}
    problem = misfit(payload, schema, "the answer")
    if problem is not None:
        raise AnswerNotExpected(f"the agent asks for {orjson.dumps(schema).decode()[:500]} and {problem}: answer "
                                "with a data part that holds it" + (" (or yes or no)" if _asks_approval(schema)
                                                                      else ""))
    return payload


def misfit(value: Any, schema: dict[str, Any], where: str) -> str | None:
    """Why `value` does not fit `schema`, as far as its `type`, `enum`, `const`, `required`, `properties` and
    `items` say (other keywords are the upstream's to check); None when it fits."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if kinds and not any(_is(value, k) for k in kinds):
        return f"{where} is not {' or '.join(kinds)}"
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return f"{where} is none of {orjson.dumps(schema['enum']).decode()[:200]}"
    if "const" in schema and value != schema["const"]:
        return f"{where} is not {orjson.dumps(schema['const']).decode()[:200]}"
    if isinstance(value, dict):
        for name in schema.get("required") or ():
            if isinstance(name, str) and name not in value:
                return f"{where} has no {name}"
        for name, sub in (schema.get("properties") or {}).items():
            if name in value and isinstance(sub, dict) and (problem := misfit(value[name], sub, f"{where}.{name}")):
                return problem
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            if problem := misfit(item, schema["items"], f"{where}[{index}]"):
                return problem
    return None


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES.get(kind, (object,)))


def _asks_approval(schema: dict[str, Any]) -> bool:
    approved = (schema.get("properties") or {}).get("approved")
    return schema.get("type") == "boolean" or (isinstance(approved, dict) and approved.get("type") == "boolean")
