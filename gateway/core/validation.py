"""Turn request bodies into validated models, with errors a person can act on.

Every message names the field by its path as the client wrote it (`messages[2].toolCalls[0].function.name`) and
says what was expected there.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from gateway.core import depth
from gateway.core.errors import InvalidRequest, MalformedRequest
from gateway.core.turn import Turn

MAX_ID = 256
"""Longest conversation, run, message, tool call or interrupt id a client may send: ids are stored, logged and sent
upstream."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_LONG_DIGITS = b"0" * 19
"""A run of digits as long as the shortest integer orjson reads as a float, in or out of a string, once every digit
is `0` and every other byte a space (`_DIGITS_ALONE`): one pass of `bytes.translate` and a substring search, which
a regular expression's tries at every byte cost several times over."""
_DIGITS_ALONE = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))

ModelT = TypeVar("ModelT", bound=BaseModel)


def load_json_object(body: bytes, max_depth: int = 64) -> dict[str, Any]:
    depth.hold(max_depth)  # and so is what it carries encoded (`load_carried_json`)
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedRequest(_not_json(body, exc)) from None
    if not isinstance(value, dict):
        raise MalformedRequest(f"request body must be a JSON object, got {_json_type(value)}")
    if depth.nests_deeper(value, body, max_depth):
        raise MalformedRequest(_too_deep(max_depth))
    _check_integers(body)
    return value


def load_carried_json(data: bytes, at: int) -> Any:
    """JSON a request carries encoded in one of its strings (a Responses compaction's items), read as if written in
    place at depth `at` (the body's own fields are at 2): held to the depth limit the request was read under, and
    refused with the same 400 as the same JSON written out. What is not JSON is orjson's `ValueError`."""
    value = orjson.loads(data)
    limit = depth.held()
    if depth.nests_deeper(value, data, limit - at + 1):
        raise MalformedRequest(_too_deep(limit))
    _check_integers(data)
    return value


def _too_deep(limit: int) -> str:
    return f"request body is nested deeper than {limit} levels"


def _check_integers(body: bytes) -> None:
    if _LONG_DIGITS in body.translate(_DIGITS_ALONE) and (number := _integer_past_64_bits(body)) is not None:
        shown = number if len(number) <= 40 else number[:40] + "..."
        raise MalformedRequest(f"request body holds the integer {shown}, which is past 64 bits: it would not reach "
                               "the agent as written. Send it as a string")


def _integer_past_64_bits(body: bytes) -> str | None:
    """The first integer in `body` that orjson reads as a float (one past the signed and unsigned 64-bit ranges),
    as written. Read again with the standard library, which keeps every integer: only for bodies with long runs of
    digits."""
    found: list[str] = []

    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # past the digits Python reads by default: past 64 bits in any case
            value = 1 << 64
        if not found and not -(1 << 63) <= value < 1 << 64:
            found.append(text)
        return 0

    try:
        json.loads(body, parse_int=integer)
    except ValueError:
        return None
    return found[0] if found else None


def _not_json(body: bytes, exc: orjson.JSONDecodeError) -> str:
    """What is wrong with a body that does not parse, in words about the body rather than the parser."""
    if not body.strip():
        return "the request body is empty: send a JSON object"
    where = f"line {exc.lineno} column {exc.colno}"
    if "valid UTF-8" in exc.msg:
        return f"the request body is not UTF-8 text ({where})"
    if "surrogate" in exc.msg:
        return (f"the request body holds half of a UTF-16 surrogate pair, an escape between \\ud800 and \\udfff "
                f"with no partner ({where}): that is not text")
    return f"the request body is not valid JSON: {exc.msg} at {where}"


def validate(model: type[ModelT], value: Any, dialect: str) -> ModelT:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        details = [{"field": field, "message": message} for field, message in explain(exc, value)]
        summary = "; ".join(f"{d['field']}: {d['message']}" for d in details[:3])
        more = f" (and {len(details) - 3} more)" if len(details) > 3 else ""
        raise InvalidRequest(f"invalid {dialect} request: {summary}{more}", details) from None


def explain(exc: ValidationError, value: Any = None) -> list[tuple[str, str]]:
    """Each field that is wrong, once, in the words of the person who wrote it: the alternatives pydantic tried for
    one field ("a valid string", "a valid list") become one message, and its type names never show. `value` is
    what was validated, which tells the client's keys from the names pydantic gives union members."""
    merged: dict[str, list[str]] = {}
    for error in exc.errors():
        messages = merged.setdefault(field_path(error["loc"], value), [])
        message = error_message(error)
        if message not in messages:
            messages.append(message)
    return [(field, _either(messages)) for field, messages in merged.items()]


def listed(names: list[str]) -> str:
    """Alternatives as a sentence names them: `a`, `a or b`, `a, b or c`."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _either(messages: list[str]) -> str:
    wanted = [m.removeprefix("Input should be ") for m in messages if m.startswith("Input should be ")]
    if len(wanted) == len(messages) > 1:
        return "Input should be " + " or ".join(wanted)
    return "; ".join(messages)


def error_message(error: ErrorDetails) -> str:
    """pydantic's message, without the "Value error, " it puts before our own validators' words; an unknown key is
    named as such."""
    kind, context = error["type"], error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "union_tag_invalid":  # "Input tag 'human' found using 'role' does not match any of the expected tags"
        return f"{str(context['discriminator']).strip(chr(39))} must be one of {context['expected_tags']}, not " \
               f"{context['tag']!r}"
    if kind == "too_short" and context.get("min_length") == 1:
        return "must not be empty"
    if kind == "too_short":
        return f"must have at least {context.get('min_length')} items, not {context.get('actual_length')}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return "must be an object (keys and values)"
    message = error["msg"]
    return message.removeprefix("Value error, ")


def field_path(loc: tuple[int | str, ...], value: Any = None) -> str:
    """`loc` as the client wrote it. Walking `value` alongside tells a key of the client's from the tag pydantic
    puts in a location for the member of a tagged union (`messages.0.user.content`): a name the value does not
    have, before the location's end, is such a tag."""
    path = ""
    last = len(loc) - 1
    for index, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
            value = value[part] if isinstance(value, list) and -len(value) <= part < len(value) else None
            continue
        if part.startswith("function-") or _TYPE_TAG.fullmatch(part):
            continue  # pydantic's name for a type or a validator, not a field the client wrote
        if isinstance(value, dict):
            if part not in value and index < last:
                continue
            value = value.get(part)
        path += f".{part}" if path else part
    return path or "body"


# Type names pydantic puts in error locations for the members of a union (`str`, `list[...]`, `tagged-union[...]`).
_TYPE_TAG = re.compile(r"(str|int|float|bool|none|list|dict|bytes)|[a-z-]+\[.*\]")


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def bad_id(value: str) -> bool:
    """Whether a client's id is past `MAX_ID` characters or holds a control character (C0, DEL or C1)."""
    return len(value) > MAX_ID or _CONTROL.search(value) is not None


def check_ids(turn: Turn, dialect: str) -> None:
    """Every id a client chose is at most `MAX_ID` characters with no control characters, or the request is a 422
    naming each that is not."""
    named = [("conversation id", turn.conversation_id), ("run id", turn.run_id), ("parent run id", turn.parent_run_id)]
    for message in turn.messages:
        named.append(("message id", message.id))
        named.append(("tool call id", message.tool_call_id))
        named += [("tool call id", call.id) for call in message.tool_calls]
    named += [("interrupt id", resume.interrupt_id) for resume in turn.resume]
    named += [("previous run id", turn.follows), ("model", turn.model)]
    details = [{"field": what, "message": f"must be at most {MAX_ID} characters, without control characters"}
               for what, value in named if value is not None and bad_id(value)]
    if details:
        raise InvalidRequest(f"invalid {dialect} request: a {details[0]['field']} {details[0]['message']}", details)
