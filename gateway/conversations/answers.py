"""An answer to an interrupt that declares a `responseSchema`, from a client that answers with a message (A2A: the
next message to the task) and so cannot know the shape the upstream checks it against.

- an answer that fits the schema goes as it is (a data part's data, or the text);
- a yes or a no to a schema that asks for an approval (`{"approved": boolean}`, or a boolean) becomes
  `{"approved": true|false}` (or the boolean), as a useChat approval does;
- a text to a form of one field fills that field (a yes or a no a boolean one, a number a number one); a yes or a
  no to a form whose one required field is a boolean (a confirmation, as an MCP server's often is) fills that;
- anything else is refused before the upstream sees it, saying what is asked: the run still waits for the answer,
  where the upstream would have failed it, and the client is asked again (`AnswerNotExpected`).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.errors import InvalidRequest
from gateway.core.turn import yes_or_no

_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
                                       "integer": (int,), "number": (int, float), "null": (type(None),)}


class AnswerNotExpected(InvalidRequest):
    """An answer to an interrupt that is not what its schema asks for: the run keeps waiting for one that is, and
    the client is asked again (the interrupt it answered, its schema, and the refusal as the question)."""

    code = "answer_not_expected"

    def __init__(self, message: str, schema: Any = None) -> None:
        super().__init__(message)
        self.schema = schema
        self.interrupt_id: str | None = None
        """The interrupt it answered (set by the conversation's mapper, which knows it)."""


def shaped(payload: Any, schema: Any) -> Any:
    """The answer as the interrupt's schema takes it (raises `AnswerNotExpected`)."""
    if not isinstance(schema, dict):
        return payload
    if isinstance(payload, str):
        payload = _from_text(payload, schema)
    problem = misfit(payload, schema, "the answer")
    if problem is not None:
        if isinstance(payload, str) and schema.get("type") == "object":
            problem = "a text alone does not fill it"
        raise AnswerNotExpected(f"The agent asks for {_asked(schema)}; {problem}: answer with a data part that "
                                "holds it" + (" (or yes or no)" if _asks_approval(schema) else ""), schema)
    return payload


def _from_text(text: str, schema: dict[str, Any]) -> Any:
    """A text answer as the schema takes it, where a text can say it (see the module); else the text."""
    yes = yes_or_no(text)
    if schema.get("type") == "boolean" and yes is not None:
        return yes
    properties = schema.get("properties") if schema.get("type") == "object" else None
    if not isinstance(properties, dict) or not properties:
        return text
    approved = properties.get("approved")
    if isinstance(approved, dict) and approved.get("type") == "boolean" and yes is not None:
        return {"approved": yes}
    if len(properties) == 1:
        name, field = next(iter(properties.items()))
        value = _as_field(text, field)
        return {name: value} if value is not None else text
    required = [name for name in schema.get("required") or () if isinstance(properties.get(name), dict)]
    if len(required) == 1 and properties[required[0]].get("type") == "boolean" and yes is not None:
        return {required[0]: yes}
    return text


def _as_field(text: str, field: Any) -> Any:
    """A text as one field's value: as it is for a string, a yes or a no for a boolean, a number for a number."""
    kind = field.get("type") if isinstance(field, dict) else None
    if kind in (None, "string"):
        return text
    if kind == "boolean":
        return yes_or_no(text)
    try:
        number = float(text.strip())
    except ValueError:
        return None
    if kind == "integer":
        return int(number) if number.is_integer() else None
    return number if kind == "number" else None


def _asked(schema: dict[str, Any]) -> str:
    """What a schema asks for, in words: a form's fields by name, type, whether required and their description."""
    properties = schema.get("properties") if schema.get("type") == "object" else None
    if not isinstance(properties, dict) or not properties:
        return orjson.dumps(schema).decode()[:500]
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    fields = []
    for name, field in list(properties.items())[:20]:
        field = field if isinstance(field, dict) else {}
        said = ", ".join(str(p) for p in (field.get("type"), "required" if name in required else None) if p)
        about = field.get("description") or field.get("title")
        fields.append(f'"{name}"' + (f" ({said}{': ' + str(about)[:100] if about else ''})" if said or about else ""))
    return f"{'a form of ' + str(len(fields)) + ' fields' if len(fields) > 1 else 'one field'}: {', '.join(fields)}"


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
