"""How deep the JSON a client sends may nest, wherever it is: its body (the route's `limits.max_json_depth`), JSON
its body carries encoded in a string (a Responses compaction's items: held to the same limit, as if written in
place), and JSON text the gateway reads out of a string (a tool call's arguments: kept as text past
`MAX_DEPTH_IN_TEXT`). What is read stays within what orjson writes back (254 levels) and what Python's stack holds,
so no walk over it fails.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

MAX_DEPTH_IN_TEXT = 200
"""The deepest JSON read out of a string: as deep as the deepest body a route may take (`limits.max_json_depth` is at
most 200), so that it can be written again inside the body that carries it on."""

_held: ContextVar[int] = ContextVar("json_depth_limit", default=64)
"""The depth limit the request being read was held to: each request is read in a task (and a context) of its own."""


def hold(limit: int) -> None:
    """The request being read is held to `limit` levels (`validation.load_json_object` says so as it reads it)."""
    _held.set(limit)


def held() -> int:
    """The depth limit the request being read was held to (64, the default, outside one)."""
    return _held.get()


def nests_deeper(value: Any, raw: bytes | str, limit: int) -> bool:
    """Whether `value`, read from `raw`, nests deeper than `limit` levels. JSON nests no deeper than it has brackets
    (strings' included): most is far from the limit by that count alone, which C makes, and only the rest is
    walked."""
    brackets = raw.count(b"{") + raw.count(b"[") if isinstance(raw, bytes) else raw.count("{") + raw.count("[")
    return brackets > limit and deeper_than(value, limit)


def deeper_than(value: Any, limit: int) -> bool:
    """Iterative, so a hostile value cannot exhaust the stack of whatever reads it next."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values() if isinstance(child, dict | list))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False
