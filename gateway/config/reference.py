"""The configuration reference, `docs/reference/configuration.md`, written from the models themselves: every key's
path, type, default and description, so that the page cannot say what the code does not.

A field's description is its `Field(description=...)`, else the docstring below it, read from the source with
`ast` (pydantic's `use_attribute_docstrings` does the same at import, which cost every process about 20 ms).

    python -m gateway.config.reference           write the page (from the checkout's root)
    python -m gateway.config.reference --check   exit 1 if the page is not what it would write
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import sys
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gateway.config.settings import GatewayConfig

PAGE = Path("docs/reference/configuration.md")

HEADER = """\
# Configuration reference

<!-- Written by `python -m gateway.config.reference` from the configuration's models: edit those, not this page.
tests/test_docs.py fails when the page is not what the models say. -->

Every key a configuration file may hold, with its type, its default and what it does, section by section. Any
string may take values from the environment (`${VAR}`, `${VAR:-default}`), and a key that is not listed here is a
mistake the gateway refuses to start with. [Configuration](../configuration.md) shows them together, in one file.
"""


@dataclass(frozen=True)
class Section:
    path: str
    """Where the section is in the file: `routes[].upstream`, or "" for the top level."""
    model: type[BaseModel]


def sections(model: type[BaseModel] = GatewayConfig, path: str = "") -> Iterator[Section]:
    """The model's section, then each section nested in it, depth first, in the order the fields are declared."""
    yield Section(path, model)
    for name, field in model.model_fields.items():
        for nested, suffix in _models_in(field.annotation):
            yield from sections(nested, f"{_key(path, name)}{suffix}")


def missing_descriptions() -> list[str]:
    """Keys, and sections, that say nothing of what they are: the reference would have a hole there."""
    missing = []
    for section in sections():
        if not _docstring(section.model):
            missing.append(f"{section.path or 'the top level'} ({section.model.__name__}): no class docstring")
        missing += [_key(section.path, name) for name, field in section.model.model_fields.items()
                    if not description(section.model, name, field)]
    return missing


def page() -> str:
    parts = [HEADER]
    for section in sections():
        title = f"`{section.path}`" if section.path else "Top level"
        parts.append(f"## {title}\n\n{_cell(_docstring(section.model))}\n")
        rows = ["| key | type | default | description |", "|---|---|---|---|"]
        for name, field in section.model.model_fields.items():
            key = _key(section.path, name)
            cells = [f"`{key}`", _type_cell(key, field), _default(name, field),
                     description(section.model, name, field)]
            rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
        parts.append("\n".join(rows) + "\n")
    return "\n".join(parts)


def description(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    text = field.description or _attribute_docstrings(model).get(name, "")
    return " ".join(text.split())


def _cell(text: str) -> str:
    """Text for a table's cell: a `|` would end the cell, and a `<` outside code would start an HTML tag."""
    pieces = text.split("`")
    return "`".join(piece if n % 2 else piece.replace("<", "&lt;") for n, piece in enumerate(pieces)).replace(
        "|", "\\|")


def _key(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _anchor(path: str) -> str:
    """The heading's anchor, as both GitHub and MkDocs make it (punctuation dropped, lower case)."""
    return "".join(c for c in path.lower() if c.isalnum() or c in "-_")


def _models_in(annotation: Any) -> Iterator[tuple[type[BaseModel], str]]:
    """The models a field's values are, with how the path goes on into them: `` for one, `[]` for a list's items,
    `.NAME` for a map's values."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, ""
    elif get_origin(annotation) is list:
        for inner, suffix in _models_in(get_args(annotation)[0]):
            yield inner, f"[]{suffix}"
    elif get_origin(annotation) is dict:
        for inner, suffix in _models_in(get_args(annotation)[1]):
            yield inner, f".NAME{suffix}"
    elif get_origin(annotation) in (Union, types.UnionType):
        for arg in get_args(annotation):
            yield from _models_in(arg)


def _type_name(annotation: Any, key: str) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[`{key}`](#{_anchor(key)})"
    if origin is Literal:
        return " or ".join(f"`{_yaml(arg)}`" for arg in args)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(arg, key) for arg in args)
    if origin is list:
        return f"list of {_type_name(args[0], f'{key}[]')}"
    if origin is dict:
        return f"map of {_type_name(args[0], key)} to {_type_name(args[1], f'{key}.NAME')}"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if annotation in names:
        return names[annotation]
    raise TypeError(f"{key}: no name for the type {annotation!r}")


_BOUNDS: tuple[tuple[type, str], ...] = (
    (annotated_types.Gt, "> {0.gt}"), (annotated_types.Ge, "≥ {0.ge}"),
    (annotated_types.Lt, "< {0.lt}"), (annotated_types.Le, "≤ {0.le}"),
    (annotated_types.MinLen, "length ≥ {0.min_length}"), (annotated_types.MaxLen, "length ≤ {0.max_length}"),
)
"""Each constraint a setting may carry, and how the reference writes it."""


def _type_cell(key: str, field: FieldInfo) -> str:
    bounds = [_bound(key, rule) for rule in field.metadata]
    return ", ".join([_type_name(field.annotation, key), *bounds])


def _bound(key: str, rule: object) -> str:
    for kind, words in _BOUNDS:
        if isinstance(rule, kind):
            return words.format(rule)
    raise TypeError(f"{key}: no words for the constraint {rule!r}")


def _default(name: str, field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, BaseModel):
        return "its keys' defaults"
    text = f"`{_yaml(value)}`"
    if isinstance(value, int) and not isinstance(value, bool) and "bytes" in name and value >= 1024:
        text += f" ({_binary(value)})"
    return text


def _yaml(value: Any) -> str:
    """A value as it would be written in the file."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value and value.strip() == value and value[0] not in "[{*&!|>'\"%@`#":
        return value
    return json.dumps(value)


def _binary(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size / (1 << 20):.1f} MiB"


def _docstring(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").split())


@cache
def _attribute_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The docstrings written below a model's fields (its own and its bases'), by field name."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            source = inspect.getsource(cls)
        except OSError:  # made by `create_model` (the dialects' sections): its fields say what they are themselves
            continue
        body = ast.parse(textwrap.dedent(source)).body[0]
        assert isinstance(body, ast.ClassDef)
        for statement, after in zip(body.body, body.body[1:], strict=False):
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and \
                    isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and \
                    isinstance(after.value.value, str):
                found[statement.target.id] = inspect.cleandoc(after.value.value)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.config.reference", description=__doc__.split("\n")[0])
    parser.add_argument("page", nargs="?", type=Path, default=PAGE, help=f"where the page goes (default: {PAGE})")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not what would be written")
    args = parser.parse_args(argv)
    if missing := missing_descriptions():
        print("undocumented, so left out of the reference: add a docstring below each field (or a description):\n  "
              + "\n  ".join(missing), file=sys.stderr)
        return 1
    text = page()
    if args.check:
        current = args.page.read_text() if args.page.exists() else ""
        if current != text:
            print(f"{args.page} is stale: run `python -m gateway.config.reference`", file=sys.stderr)
            return 1
        return 0
    args.page.parent.mkdir(parents=True, exist_ok=True)
    args.page.write_text(text)
    print(f"wrote {args.page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
