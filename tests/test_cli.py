from __future__ import annotations

import pytest
from helpers import FIXTURES

from gateway.cli import main


def test_translate_with_no_input_uses_the_built_in_sample(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["translate", "--to", "vercel"]) == 0
    out = capsysbinary.readouterr().out
    assert out.startswith(b'data: {"type":"start"}') and out.endswith(b"data: [DONE]\n\n")


def test_translate_a_recorded_stream_into_one_json_body(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    path = str(FIXTURES / "pydantic_vercel_weather.sse")
    assert main(["translate", path, "--from", "vercel", "--to", "agent-respond"]) == 0
    assert b'"name":"get_weather"' in capsysbinary.readouterr().out


def test_a_failed_run_exits_non_zero(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    path = str(FIXTURES / "pydantic_agui_fail.sse")
    assert main(["translate", path, "--from", "ag-ui", "--to", "agent-respond"]) == 1
