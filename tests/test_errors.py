"""The error tree's codes come from the one enum of codes, which metrics and telemetry read."""

from __future__ import annotations

from gateway.core import errors
from gateway.core.errors import UPSTREAM_CODES, ErrorCode, GatewayError


def _tree(cls: type[GatewayError]) -> list[type[GatewayError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _tree(child))]


def test_every_core_error_gives_a_code_of_the_enum() -> None:
    core = [cls for cls in _tree(GatewayError) if cls.__module__ == errors.__name__]
    assert len(core) > 20
    for cls in core:
        assert isinstance(cls.code, ErrorCode), cls


def test_codes_are_the_strings_on_the_wire() -> None:
    assert ErrorCode.UPSTREAM_ERROR == "upstream_error"
    assert f"{ErrorCode.UPSTREAM_TIMEOUT}" == "upstream_timeout"
    assert "upstream_bad_event" in UPSTREAM_CODES
    assert errors.UpstreamError("x").to_json() == {"error": {"code": "upstream_error", "message": "x"}}
