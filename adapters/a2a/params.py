"""Request params as ProtoJSON reads them: a field by its camelCase JSON name or its proto field's snake_case one,
a number as a number or a string of digits."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.errors import InvalidRequest


def param(params: dict[str, Any], name: str) -> Any:
    """A param by its camelCase name or its proto field's snake_case one."""
    if name in params:
        return params[name]
    return params.get("".join(f"_{c.lower()}" if c.isupper() else c for c in name))


def count(params: dict[str, Any], name: str) -> int | None:
    """A count param: absent, or a whole number that is not negative (a string of digits too, as ProtoJSON)."""
    value = param(params, name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidRequest(f"params.{name} must be a whole number, 0 or more; got {orjson.dumps(value).decode()}")
    return value
