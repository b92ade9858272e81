"""A configuration read from its YAML file: `${VAR}` taken from the environment, then validated, each mistake
reported once with the file, the line and the key."""

from __future__ import annotations

import difflib
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gateway.config.settings import GatewayConfig
from gateway.core.validation import error_message, field_path


class ConfigError(ValueError):
    """The configuration is wrong; the message says where and how."""


@cache
def _keys() -> list[str]:
    """Every key a configuration may hold, for "did you mean": read from the models as the reference page is
    (imported here, not at the top, so that `python -m gateway.config.reference` runs a module not yet loaded)."""
    from gateway.config.reference import sections

    return sorted({name for section in sections() for name in section.model.model_fields})


def load_config(path: str | Path, environ: dict[str, str] | None = None) -> GatewayConfig:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc.strerror}") from None
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x}): save the file as UTF-8"
                          ) from None
    return parse_config(text, str(path), environ)


def parse_config(text: str, source: str = "<config>", environ: dict[str, str] | None = None) -> GatewayConfig:
    environ = dict(os.environ) if environ is None else environ
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    lines_of: dict[tuple[int | str, ...], int] = {}
    if node is not None:
        _index_lines(node, (), lines_of)
    data = _interpolate(data, (), environ, source, lines_of)
    try:
        return GatewayConfig.model_validate(data if data is not None else {})
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            line = _line_for(loc, lines_of)
            where = f"{source}:{line}" if line else source
            message = error_message(error)
            if message == "unknown key" and isinstance(loc[-1], str):
                close = difflib.get_close_matches(loc[-1], _keys(), n=1)
                message = f"unknown key{f'; did you mean {close[0]}?' if close else ''}"
            entry = f"{where}: {field_path(loc) if loc else 'the file'}: {message}"
            if entry not in lines:
                lines.append(entry)
        raise ConfigError("\n".join(lines)) from None


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _interpolate(value: Any, loc: tuple[int | str, ...], environ: dict[str, str], source: str,
                 lines: dict[tuple[int | str, ...], int]) -> Any:
    if isinstance(value, str):
        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            line = _line_for(loc, lines)
            where = f"{source}:{line}" if line else source
            raise ConfigError(f"{where}: {field_path(loc)}: environment variable {name} is not set")
        return _VAR.sub(replace, value)
    if isinstance(value, dict):
        return {k: _interpolate(v, (*loc, k), environ, source, lines) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, (*loc, i), environ, source, lines) for i, v in enumerate(value)]
    return value


def _index_lines(node: yaml.Node, loc: tuple[int | str, ...], lines: dict[tuple[int | str, ...], int]) -> None:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, child in node.value:
            lines[(*loc, key.value)] = key.start_mark.line + 1
            _index_lines(child, (*loc, key.value), lines)
            lines[(*loc, key.value)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, child in enumerate(node.value):
            _index_lines(child, (*loc, index), lines)


def _line_for(loc: tuple[int | str, ...], lines: dict[tuple[int | str, ...], int]) -> int | None:
    """The line of the deepest part of `loc` the file has (a missing key is reported where its parent is)."""
    for end in range(len(loc), -1, -1):
        clean = tuple(part for part in loc[:end] if not (isinstance(part, str) and part.startswith("function-")))
        if clean in lines:
            return lines[clean]
    return None
