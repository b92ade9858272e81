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


def test_demo_answers_the_printed_request_of_every_dialect() -> None:
    """What the README promises a newcomer: `agent-gateway demo`, then the curl commands it prints."""
    import os
    import subprocess
    import sys
    import time

    import httpx
    from helpers import ROOT, decode
    from servers import free_port

    from gateway.cli import DEMO_REQUESTS
    from gateway.events import RunFinished, TextDelta

    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "gateway", "demo", "--port", str(port)], cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and process.poll() is None, "demo did not start"
                time.sleep(0.05)
        for dialect, (path, body) in DEMO_REQUESTS.items():
            response = httpx.post(base + path, content=body, headers={"content-type": "application/json"}, timeout=10)
            events = decode(dialect, response.content)
            assert isinstance(events[-1], RunFinished), dialect
            assert "".join(e.delta for e in events if isinstance(e, TextDelta)), dialect
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=10)
    assert b"curl -N " + f"http://127.0.0.1:{port}/agui".encode() in out
