"""A small schema language for `@ag-ui/core`'s zod schemas: what each field must be, and the unknown keys and union
members the client strips with a warning."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gateway.core.conformance import json_type

from .common import Path


@dataclass(frozen=True, slots=True)
class Issue:
    path: Path
    problem: str
    missing: bool = False


@dataclass(frozen=True, slots=True)
class _Dropped:
    """What `stripUnknown` removes whole: a member of a tagged union the schema does not know."""

    why: str


@dataclass(frozen=True, slots=True)
class Stripped:
    path: Path
    why: str | None
    """Why a whole value went; None for an unknown key."""


class Node:
    """One zod schema: `strip` removes what it does not describe (the client warns), `check` is `parse` (fatal)."""

    def strip(self, value: Any, path: Path, stripped: list[Stripped]) -> Any:
        return value

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        raise NotImplementedError


class Str(Node):
    def __init__(self, pattern: str | None = None, meaning: str = "") -> None:
        self.pattern = re.compile(pattern) if pattern else None
        self.meaning = meaning

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if not isinstance(value, str):
            issues.append(Issue(path, f"must be a string, got {json_type(value)}"))
        elif self.pattern and not self.pattern.fullmatch(value):
            issues.append(Issue(path, f"must be {self.meaning}, got {value!r}"))


class Int(Node):
    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                isinstance(value, float) and not value.is_integer()):
            issues.append(Issue(path, f"must be an integer, got {json_type(value)}"))
        elif not self.low <= value <= self.high:
            issues.append(Issue(path, f"must be an integer from {self.low} to {self.high}, got {value!r}"))


class Bool(Node):
    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if not isinstance(value, bool):
            issues.append(Issue(path, f"must be true or false, got {json_type(value)}"))


class Json(Node):
    """Any JSON value; `null` too only where the schema says so."""

    def __init__(self, null: bool = False) -> None:
        self.null = null

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if value is None and not self.null:
            issues.append(Issue(path, "must not be null (leave an optional field out instead)"))


class Record(Node):
    """An open JSON object (`metadata`, activity content, a response schema): any keys, never null or an array."""

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if not isinstance(value, dict):
            issues.append(Issue(path, f"must be a JSON object, got {json_type(value)}"))


class Choice(Node):
    def __init__(self, *values: str) -> None:
        self.values = values

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if not isinstance(value, str) or value not in self.values:
            expected = " or ".join(repr(v) for v in self.values)
            got = repr(value) if isinstance(value, str) else json_type(value)
            issues.append(Issue(path, f"must be {expected}, got {got}"))


class Opt:
    def __init__(self, node: Node) -> None:
        self.node = node


class Obj(Node):
    """A `looseObject`: unknown keys are stripped with a warning, unless the spec leaves the object open (RFC 6902
    operations)."""

    def __init__(self, spec: dict[str, Node | Opt], open_: bool = False) -> None:
        self.fields = {key: (f.node, True) if isinstance(f, Opt) else (f, False) for key, f in spec.items()}
        self.required = frozenset(key for key, (_, optional) in self.fields.items() if not optional)
        self.open = open_

    def strip(self, value: Any, path: Path, stripped: list[Stripped]) -> Any:
        if not isinstance(value, dict):
            return value
        out = {}
        for key, item in value.items():
            spec = self.fields.get(key)
            if spec is None:
                if self.open:
                    out[key] = item
                else:
                    stripped.append(Stripped((*path, key), None))
                continue
            node, optional = spec
            mark = len(stripped)
            child = node.strip(item, (*path, key), stripped)
            if isinstance(child, _Dropped):
                del stripped[mark:]
                if not optional:
                    return _Dropped(f"its required '{key}' was dropped: {child.why}")
                stripped.append(Stripped((*path, key), child.why))
                continue
            out[key] = child
        return out

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if not isinstance(value, dict):
            issues.append(Issue(path, f"must be an object, got {json_type(value)}"))
            return
        for key, (node, optional) in self.fields.items():
            if key in value:
                node.check(value[key], (*path, key), issues)
            elif not optional:
                issues.append(Issue((*path, key), "is required", missing=True))


class Arr(Node):
    def __init__(self, item: Node, least: int = 0) -> None:
        self.item, self.least = item, least

    def strip(self, value: Any, path: Path, stripped: list[Stripped]) -> Any:
        if not isinstance(value, list):
            return value
        out = []
        for index, item in enumerate(value):
            mark = len(stripped)
            child = self.item.strip(item, (*path, index), stripped)
            if isinstance(child, _Dropped):
                del stripped[mark:]
                stripped.append(Stripped((*path, index), child.why))
            else:
                out.append(child)
        return out

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if not isinstance(value, list):
            issues.append(Issue(path, f"must be an array, got {json_type(value)}"))
            return
        if len(value) < self.least:
            issues.append(Issue(path, f"must hold at least {self.least} item(s)"))
        for index, item in enumerate(value):
            self.item.check(item, (*path, index), issues)


class Tagged(Node):
    """A discriminated union: a member whose tag the schema does not know is dropped with a warning, never fatal."""

    def __init__(self, key: str, *members: Obj) -> None:
        self.key = key
        self.members: dict[str, Obj] = {}
        for member in members:
            tag = member.fields[key][0]
            if not isinstance(tag, Choice):
                raise TypeError(f"a member of a union tagged by {key!r} must pin {key!r} to one value")
            self.members[tag.values[0]] = member

    def strip(self, value: Any, path: Path, stripped: list[Stripped]) -> Any:
        if not isinstance(value, dict):
            return value
        tag = value.get(self.key)
        member = self.members.get(tag) if isinstance(tag, str) else None
        if member is None:
            shown = repr(tag) if self.key in value else "missing"
            return _Dropped(f"its {self.key} is {shown}, not one of {', '.join(map(repr, self.members))}")
        return member.strip(value, path, stripped)

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if not isinstance(value, dict):
            issues.append(Issue(path, f"must be an object, got {json_type(value)}"))
            return
        tag = value.get(self.key)
        member = self.members.get(tag) if isinstance(tag, str) else None
        if member is None:
            issues.append(Issue((*path, self.key), f"must be one of {', '.join(map(repr, self.members))}"))
        else:
            member.check(value, path, issues)


class TextOrParts(Node):
    """`content`: a string or an array of content parts."""

    def __init__(self, parts: Arr) -> None:
        self.parts = parts

    def strip(self, value: Any, path: Path, stripped: list[Stripped]) -> Any:
        return self.parts.strip(value, path, stripped) if isinstance(value, list) else value

    def check(self, value: Any, path: Path, issues: list[Issue]) -> None:
        if isinstance(value, list):
            self.parts.check(value, path, issues)
        elif not isinstance(value, str):
            issues.append(Issue(path, f"must be a string or an array of content parts, got {json_type(value)}"))
